"""Hand-written fused μGraphs of the known optimised structures (SPEC §9).

These are written by hand from the reference's saved results, for teaching, tests
and as baselines. The search never reads them: it must discover such graphs itself.
Each takes the same ``batch_size`` as its program in ``programs`` and consumes the
same inputs in the same order.
"""

from __future__ import annotations

from collections.abc import Callable

from mirage_lab.ir.builder import new_kernel_graph, new_threadblock_graph
from mirage_lab.ir.dtype import DType, float16
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.tensor import DTensor

PHI = -1


def rmsnorm(batch_size: int = 1, dtype: DType = float16) -> KernelGraph:
    """One kernel: ``(x·W) / rms(x)`` with the rms accumulated alongside the matmul."""
    g = new_kernel_graph()
    x = g.new_input(dims=(2 * batch_size, 4096), dtype=dtype)
    w = g.new_input(dims=(4096, 6144), dtype=dtype)
    tb = new_threadblock_graph(grid_dim=(256, 1, 1), forloop_range=32 if batch_size == 1 else 4)
    tx = tb.new_input(dtensor=x, input_map=(PHI, PHI, PHI), forloop_dim=1)
    tw = tb.new_input(dtensor=w, input_map=(1, PHI, PHI), forloop_dim=0)
    rms = tb.forloop_accum(tx, "rms")
    acc = tb.forloop_accum(tb.matmul(tx, tw))
    tb.new_output(stensor=tb.div(acc, rms), output_map=(1, PHI, PHI))
    (out,) = g.customized([x, w], tb)
    g.mark_output(out)
    return g.freeze()


def gated_mlp(batch_size: int = 1, dtype: DType = float16) -> KernelGraph:
    """One kernel: two tiled matmuls, two NO_RED accumulators, silu and mul after the loop."""
    g = new_kernel_graph()
    x = g.new_input(dims=(8 * batch_size, 4096), dtype=dtype)
    w1 = g.new_input(dims=(4096, 4096), dtype=dtype)
    w2 = g.new_input(dims=(4096, 4096), dtype=dtype)
    tb = new_threadblock_graph(grid_dim=(128, 1, 1), forloop_range=64)
    tx = tb.new_input(dtensor=x, input_map=(PHI, PHI, PHI), forloop_dim=1)
    t1 = tb.new_input(dtensor=w1, input_map=(1, PHI, PHI), forloop_dim=0)
    t2 = tb.new_input(dtensor=w2, input_map=(1, PHI, PHI), forloop_dim=0)
    a1 = tb.forloop_accum(tb.matmul(tx, t1))
    a2 = tb.forloop_accum(tb.matmul(tx, t2))
    tb.new_output(stensor=tb.mul(tb.silu(a1), a2), output_map=(1, PHI, PHI))
    (out,) = g.customized([x, w1, w2], tb)
    g.mark_output(out)
    return g.freeze()


def lora(batch_size: int = 1, dtype: DType = float16) -> KernelGraph:
    """One kernel over all four inputs: ``X·W + (X·A)·B`` per column block, F = 1."""
    g = new_kernel_graph()
    x = g.new_input(dims=(16 * batch_size, 256), dtype=dtype)
    w = g.new_input(dims=(256, 4096), dtype=dtype)
    a = g.new_input(dims=(256, 16), dtype=dtype)
    b = g.new_input(dims=(16, 4096), dtype=dtype)
    tb = new_threadblock_graph(grid_dim=(64, 1, 1), forloop_range=1)
    tx = tb.new_input(dtensor=x, input_map=(PHI, PHI, PHI), forloop_dim=PHI)
    tw = tb.new_input(dtensor=w, input_map=(1, PHI, PHI), forloop_dim=PHI)
    ta = tb.new_input(dtensor=a, input_map=(PHI, PHI, PHI), forloop_dim=PHI)
    tbb = tb.new_input(dtensor=b, input_map=(1, PHI, PHI), forloop_dim=PHI)
    xw = tb.matmul(tx, tw)
    xab = tb.matmul(tb.matmul(tx, ta), tbb)
    tb.new_output(stensor=tb.forloop_accum(tb.add(xab, xw)), output_map=(1, PHI, PHI))
    (out,) = g.customized([x, w, a, b], tb)
    g.mark_output(out)
    return g.freeze()


def gqa(batch_size: int = 1, dtype: DType = float16, split: tuple[int, int, int] | None = None) -> KernelGraph:
    """Two kernels, split-KV "flash decoding" without max subtraction.

    Kernel 1 computes ``exp(Q·K)`` per KV chunk and keeps both its running sum and its
    product with V; kernel 2 sums the chunks (RED_LD_SUM, REDTOX_LD_SUM) and divides.
    ``split = (gy, gz, F)`` overrides kernel 1's KV blocks, query blocks and loop count.
    """
    heads = 2 * batch_size
    gy, gz, forloop = split or ((8, 16, 4) if batch_size == 1 else (16, 4, 4))
    g = new_kernel_graph()
    q = g.new_input(dims=(heads, 256, 64), dtype=dtype)
    k = g.new_input(dims=(heads, 64, 4096), dtype=dtype)
    v = g.new_input(dims=(heads, 4096, 64), dtype=dtype)
    tb = new_threadblock_graph(grid_dim=(heads, gy, gz), forloop_range=forloop)
    tq = tb.new_input(dtensor=q, input_map=(0, PHI, 1), forloop_dim=PHI)
    tk = tb.new_input(dtensor=k, input_map=(0, 2, PHI), forloop_dim=2)
    tv = tb.new_input(dtensor=v, input_map=(0, 1, PHI), forloop_dim=1)
    e = tb.exp(tb.matmul(tq, tk))
    tb.new_output(stensor=tb.forloop_accum(e), output_map=(0, 2, 1))
    tb.new_output(stensor=tb.forloop_accum(tb.matmul(e, tv)), output_map=(0, 2, 1))
    sums, partial = g.customized([q, k, v], tb)
    g.mark_output(_normalise(sums, partial, heads))
    return g.freeze()


def _normalise(sums: DTensor, partial: DTensor, heads: int) -> DTensor:
    tb = new_threadblock_graph(grid_dim=(heads, 16, 1), forloop_range=1)
    ts = tb.new_input(dtensor=sums, input_map=(0, 1, PHI), forloop_dim=PHI)
    tp = tb.new_input(dtensor=partial, input_map=(0, 1, PHI), forloop_dim=PHI)
    s = tb.forloop_accum(ts, "sum")
    o = tb.forloop_accum(tp, "sum_todimx")
    tb.new_output(stensor=tb.div(o, s), output_map=(0, 1, PHI))
    (out,) = sums.builder.customized([sums, partial], tb)
    return out


#: program name → hand-written fused graph, for the programs that have one.
FUSED: dict[str, Callable[..., KernelGraph]] = {
    "rmsnorm": rmsnorm,
    "gated_mlp": gated_mlp,
    "lora": lora,
    "gqa": gqa,
}
