"""Block reductions: sums along a dim (strided groups, SPEC §2), the running max, and rms_norm."""

from __future__ import annotations

import math

from mirage_lab.codegen.expressions import cfloat, coords, flat
from mirage_lab.codegen.writer import KernelWriter
from mirage_lab.ir.ops import Op
from mirage_lab.ir.tensor import contiguous_strides


def _reduce_lines(w: KernelWriter, x: int, dim: int, group: int, cs: list[str], op: str) -> list[str]:
    """``v = op over r of x[.., j + r·group, ..]`` along ``dim`` (strided grouping, SPEC §2)."""
    dims = w.dims(x)
    stride = contiguous_strides(dims)[dim] * group
    if dim == len(dims) - 1:  # the terms share a row: its (padded) offset once, then plain steps
        base, first, step = w.offset(x, flat(dims, cs)), w.ld_at(x, "base"), w.ld_at(x, f"base + r * {stride}")
    else:
        base, first, step = flat(dims, cs), w.ld(x, "base"), w.ld(x, f"base + r * {stride}")
    acc = f"v += {step};" if op == "sum" else f"v = fmaxf(v, {step});"
    return [f"const int base = {base};", f"float v = {first};",
            f"for (int r = 1; r < {dims[dim] // group}; ++r) {acc}"]


def emit_reduction(w: KernelWriter, k: int) -> None:
    node = w.bg.nodes[k]
    dim = int(node.attr("dim"))
    group = w.bg.reduction_dimx if node.op is Op.REDUCTION_TO_DIMX else int(node.attr("group_size", 1))
    w.elementwise(k, lambda cs: _reduce_lines(w, node.inputs[0], dim, group, cs, "sum"))


def emit_reduction_max(w: KernelWriter, k: int) -> None:
    """[lab] the running max over the loop and diff = previous max − new max (0 at i = 0, or post-loop)."""
    node = w.bg.nodes[k]
    big, diff = node.outputs
    post = w.bg.tensors[node.inputs[0]].post_loop
    with w.for_each(w.bg.tensors[big].numel):
        for s in _reduce_lines(w, node.inputs[0], int(node.attr("dim")), 1, coords(w.dims(big), "idx"), "max"):
            w.line(s)
        if post:
            w.st(big, "idx", "v")
            w.st(diff, "idx", "0.f")
            return
        w.line(f"const float prev = max{k}[idx], run = i == 0 ? v : fmaxf(prev, v);")
        w.line(f"max{k}[idx] = run;")
        w.st(big, "idx", "run")
        w.st(diff, "idx", "i == 0 ? 0.f : prev - run")


def emit_rms_norm(w: KernelWriter, k: int) -> None:
    node = w.bg.nodes[k]
    x = node.inputs[0]
    dims = w.dims(x)
    n = math.prod(tuple(node.attr("normalized_shape", dims[-1:])))
    with w.for_each(math.prod(dims) // n, "row"):
        w.line("float ss = 0.f;")
        e = w.ld(x, f"row * {n} + j") if n != dims[-1] else w.ld_at(x, f"row * {w.pitch(x)} + j")
        w.line(f"for (int j = 0; j < {n}; ++j) {{ const float e = {e}; ss += e * e; }}")
        w.line(f"rms{k}[row] = sqrtf(ss / {cfloat(n)});")
    w.barrier("every thread reads the row statistics")
    w.elementwise(k, lambda cs: [f"float v = {w.ld(x, 'idx')} / rms{k}[idx / {n}];"])
