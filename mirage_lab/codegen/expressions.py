"""C expressions: fp32 literals, row-major coordinates and offsets, and each elementwise op's expression from its
template in the op table (``OpSpec.cuda``), with the device functions those templates call."""

from __future__ import annotations

import math
from collections.abc import Callable

from mirage_lab.ir.graph import Node
from mirage_lab.ir.ops import Op
from mirage_lab.ir.tensor import Dims, contiguous_strides

#: the device functions the op table's CUDA templates call (a new op's helper goes here)
DEVICE_FUNCTIONS = """\
#ifndef MIRAGE_LAB_HELPERS  // guarded, so that several generated sources can share one file
#define MIRAGE_LAB_HELPERS
__device__ __forceinline__ float mirage_sigmoid(float x) { return 1.f / (1.f + expf(-x)); }
__device__ __forceinline__ float mirage_silu(float x) { return x * mirage_sigmoid(x); }
__device__ __forceinline__ float mirage_gelu(float x) { return 0.5f * x * (1.f + erff(x * 0.70710678118654752f)); }
#endif
"""


def cfloat(x: float) -> str:
    if math.isinf(x):
        return "INFINITY" if x > 0 else "-INFINITY"
    r = repr(float(x))
    return r + "f" if ("." in r or "e" in r) else r + ".f"


def coords(dims: Dims, idx: str) -> list[str]:
    """C expressions of the row-major coordinates of flat index ``idx`` (which is < numel)."""
    out = []
    for d, (n, s) in enumerate(zip(dims, contiguous_strides(dims), strict=True)):
        c = idx if s == 1 else f"{idx} / {s}"
        outermost = all(x == 1 for x in dims[:d])  # no modulo needed: idx / s < n already
        out.append("0" if n == 1 else c if outermost else f"({c}) % {n}" if s != 1 else f"{c} % {n}")
    return out


def flat(dims: Dims, cs: list[str], strides: Dims | None = None) -> str:
    """The flat row-major index of coordinates ``cs`` (size-1 dims broadcast: they read index 0), or the offset
    under ``strides`` (a DTensor's declared layout; in 64-bit arithmetic when its span passes 32 bits)."""
    st = contiguous_strides(dims) if strides is None else strides
    wide = strides is not None and sum((n - 1) * s for n, s in zip(dims, st, strict=True)) >= 2**31
    terms = [f"(long long)({c}) * {s}" if wide else c if s == 1 else f"({c}) * {s}" if " " in c else f"{c} * {s}"
             for c, n, s in zip(cs, dims, st, strict=True) if n > 1 and c != "0" and s != 0]
    return " + ".join(terms) or "0"


def _expression(op: Op) -> Callable[..., str]:
    """An elementwise op's CUDA expression, from its template in the op table (``OpSpec.cuda``)."""
    spec = op.spec
    template = spec.cuda
    assert template is not None, f"{op.value} declares no CUDA expression"
    if spec.arity == 1:
        return lambda x, n: template.format(x=x, **{a: cfloat(n.attr(a)) for a in spec.attrs})
    return lambda a, b: template.format(a=a, b=b)


_ELEMENTWISE = [op for op in Op if op.spec.lowering == "elementwise"]
UNARY_EXPR: dict[Op, Callable[[str, Node], str]] = {op: _expression(op) for op in _ELEMENTWISE if op.spec.arity == 1}
BINARY_EXPR: dict[Op, Callable[[str, str], str]] = {op: _expression(op) for op in _ELEMENTWISE if op.spec.arity == 2}
