"""One kernel: its signature, shared-memory tiles, prologue, for-loop and epilogue around the emitters.

A generated kernel follows the interpreter's §3.4 semantics exactly: ``blockIdx`` picks the
tiles by imap, loaders without a for-loop dim are hoisted before ``for (i < F)``, the others
read tile ``c·F + i`` along their fmap; accumulators live in fp32 shared memory (zeroed before
the loop, or seeded at i = 0 for max / rescale), are finalised after it, and post-loop ops and
savers run once at the end (storage and arithmetic: ``codegen.writer``; stages, barriers and
offsets: ``codegen.plan``).
"""

from __future__ import annotations

import math

from mirage_lab.codegen.accumulators import finalize, zero_accumulators
from mirage_lab.codegen.emit import EMIT, UNSUPPORTED
from mirage_lab.codegen.tiles import emit_prefetch
from mirage_lab.codegen.vectors import copy_vector
from mirage_lab.codegen.writer import KernelWriter, ctype
from mirage_lab.errors import UnsupportedOpError
from mirage_lab.ir.graph import loader_dtensor, saver_dtensor
from mirage_lab.ir.ops import Kind
from mirage_lab.optimize.hardware import HARDWARE
from mirage_lab.optimize.occupancy import BlockResources, occupancy
from mirage_lab.optimize.tensor_cores import MMA_ALIGN

#: the GPU whose waves ``__launch_bounds__`` sizes for: the most SMs (H100 / H200: 132)
WAVE_TARGET = max(HARDWARE.values(), key=lambda hw: hw.sms)
#: the fewest registers per thread ``__launch_bounds__`` may ask ptxas to fit in
MIN_REGISTERS = 64


def kernel_source(w: KernelWriter) -> str:
    """The kernel's whole source: signature, shared-memory tiles, prologue, the for-loop and the epilogue."""
    bg, sched, plan = w.bg, w.schedule, w.plan
    params = [f"const {ctype(loader_dtensor(bg.nodes[k]).dtype)}* __restrict__ {p}"
              for k, p in w.loader_param.items()]
    params += [f"{ctype(saver_dtensor(bg, bg.nodes[k]).dtype)}* __restrict__ {p}"
               for k, p in w.saver_param.items()]
    w.line(f"// grid {bg.grid}, {w.threads} threads, F = {bg.forloop_range}, "
           f"{plan.peak} B shared ({plan.strategy}; {plan.naive} B without reuse), {sched.barriers} barriers")
    # one alignment for every kernel: a source's kernels share this declaration, and wmma needs 32 bytes
    w.line(f"extern __shared__ __align__({MMA_ALIGN}) char smem[];")
    for b in plan.buffers:
        ty = ctype(bg.tensors[int(b.key[1:])].dtype) if b.key.startswith("s") else "float"
        w.line(f"{ty}* {b.key} = reinterpret_cast<{ty}*>(smem + {plan.offsets[b.key]});")
    for k, n in w.prefetched.items():  # first, so these loads fly during the hoisted ones
        d = loader_dtensor(bg.nodes[k])
        vtype = copy_vector(w.dims(bg.nodes[k].outputs[0]), d.dims, d.dtype.itemsize, w.strides.get(k))[1]
        w.line(f"{vtype} pf{k}[{n}];  // s{bg.nodes[k].outputs[0]}'s next tile")
        emit_node(w, k, "iteration 0, into registers", fetch="0")
    for st in sched.prologue:
        for k in st.nodes:
            emit_node(w, k, "hoisted: the same tile every iteration")
    zero_accumulators(w)
    if sched.prologue:
        w.barrier("hoisted tiles are read by every thread")
    with w.block(f"for (int i = 0; i < {bg.forloop_range}; ++i)"):
        for s, st in enumerate(sched.loop):
            for k in st.nodes:
                emit_node(w, k, "from the registers prefetched last iteration" if k in w.prefetched else "",
                          store=k in w.prefetched)
            w.barrier("next stage reads this one" if s + 1 < len(sched.loop)
                      else "the next iteration overwrites tiles still being read")
            if s == 0 and w.prefetched:
                with w.block(f"if (i + 1 < {bg.forloop_range})"):
                    for k in w.prefetched:
                        emit_node(w, k, "iteration i + 1, in flight during this one", fetch="i + 1")
    for s, st in enumerate(sched.epilogue):
        if s:
            w.barrier("next stage reads this one")
        for k in st.nodes:
            (finalize if bg.nodes[k].kind is Kind.ACCUM else emit_node)(w, k)
    body = "\n".join(w.lines)
    return f'extern "C" __global__ void {launch_bounds(w)} {w.name}(\n    ' \
           + ",\n    ".join(params) + ") {\n" + body + "\n}\n"


def launch_bounds(w: KernelWriter) -> str:
    """``__launch_bounds__(threads[, blocks per SM])``: asks ptxas to fit the registers of as many blocks per
    SM as put the whole grid in one wave on the largest target (``WAVE_TARGET``), where shared memory
    allows it and it leaves at least ``MIN_REGISTERS`` a thread."""
    hw = WAVE_TARGET
    room = occupancy(BlockResources(w.threads, MIN_REGISTERS, w.plan.peak), hw).blocks_per_sm
    blocks = min(-(-math.prod(w.bg.grid) // hw.sms), room)
    return f"__launch_bounds__({w.threads}, {blocks})" if blocks > 1 else f"__launch_bounds__({w.threads})"


def emit_node(w: KernelWriter, k: int, note: str = "", fetch: str | None = None, store: bool = False) -> None:
    """Node k's code; for a prefetched loader, ``fetch`` (the iteration) loads its tile into registers
    and ``store`` writes the registers to its shared-memory tile."""
    node = w.bg.nodes[k]
    if node.op not in EMIT:
        raise UnsupportedOpError(f"block op {node.op.value} (node {k}) is not supported by the CUDA backend"
                                 f"{': ' + UNSUPPORTED[node.op] if node.op in UNSUPPORTED else ''}")
    outs = ", ".join(f"s{t}" for t in node.outputs)
    ins = ", ".join(f"s{t}" for t in node.inputs)
    w.line(f"// {outs or 'saver'} = {node.op.value}({ins}){'  // ' + note if note else ''}")
    with w.block(""):
        if fetch is not None or store:
            emit_prefetch(w, k, fetch)
        else:
            EMIT[node.op](w, k)
