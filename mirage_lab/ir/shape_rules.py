"""Shape rules of the op table (SPEC §2, §3.3): output dims from input dims, or a ``ShapeError`` naming the fix."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mirage_lab.errors import ShapeError
from mirage_lab.ir.op_types import Dims, Level, ShapeContext


def _fail(msg: str) -> ShapeError:
    return ShapeError(msg)


def _rank_of(dims: Sequence[Dims], n: int) -> None:
    if len(dims) != n:
        raise _fail(f"expects {n} input(s), got {len(dims)}")


def shape_same(ctx: ShapeContext, dims: Sequence[Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    _rank_of(dims, 1)
    return [dims[0]]


def shape_broadcast(ctx: ShapeContext, dims: Sequence[Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    _rank_of(dims, 2)
    a, b = dims
    if len(a) != len(b):
        raise _fail(f"operands must have the same rank, got {a} (rank {len(a)}) and {b} (rank {len(b)}); "
                    "reshape one of them (size-1 broadcasting needs equal ranks)")
    out = []
    for d, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y and 1 not in (x, y):
            raise _fail(f"dim {d} sizes {x} and {y} are neither equal nor 1 (operands {a} and {b}); "
                        "make them equal, or one of them 1 to broadcast")
        out.append(max(x, y))
    return [tuple(out)]


def _matmul_dims(ctx: ShapeContext, a: Dims, b: Dims) -> Dims:
    if len(a) != len(b) or len(a) < 2:
        raise _fail(f"operands must have the same rank ≥ 2, got {a} and {b}")
    if a[-1] != b[-2]:
        raise _fail(f"inner dims differ: A{a}[-1] = {a[-1]} but B{b}[-2] = {b[-2]}; A's last dim must "
                    "equal B's second-to-last (check the operand order, or pass B transposed)")
    if ctx.level is Level.KERNEL:
        if a[:-2] != b[:-2]:
            raise _fail(f"batch dims must be equal (no broadcasting): A{a} vs B{b}; give both operands "
                        "the same leading dims")
    elif any(x != 1 for x in a[:-2] + b[:-2]):
        raise _fail(f"block-level matmul has no batch: every leading dim must be 1, got A{a} and B{b}; "
                    "split the batch dim fully across the grid (imap)")
    return (*a[:-2], a[-2], b[-1])


def shape_matmul(ctx: ShapeContext, dims: Sequence[Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    _rank_of(dims, 2)
    return [_matmul_dims(ctx, dims[0], dims[1])]


def _check_dim(dims: Dims, d: int, max_dim: int = 2) -> None:
    if not 0 <= d < len(dims):
        raise _fail(f"dim {d} is out of range for a rank-{len(dims)} tensor {dims}; use a dim in "
                    f"0..{len(dims) - 1} (or a negative index from the end)")
    if d > max_dim:
        raise _fail(f"dim {d} is not supported (reductions exist for dims 0..{max_dim}); "
                    "reorder the tensor's dims")


def shape_reduction(ctx: ShapeContext, dims: Sequence[Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    _rank_of(dims, 1)
    x, d = dims[0], int(attrs["dim"])
    _check_dim(x, d)
    s = int(attrs.get("group_size", 1))
    if s < 1 or x[d] % s:
        raise _fail(f"group size {s} must be ≥ 1 and divide dim {d} (size {x[d]}) of {x}")
    return [(*x[:d], s, *x[d + 1:])]


def shape_reduction_to_dimx(ctx: ShapeContext, dims: Sequence[Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    _rank_of(dims, 1)
    x, d, X = dims[0], int(attrs["dim"]), ctx.reduction_dimx
    _check_dim(x, d)
    if x[d] % X:
        raise _fail(f"dim {d} (size {x[d]}) of {x} is not a multiple of reduction_dimx = {X}; "
                    "pick a reduction_dimx that divides it")
    return [(*x[:d], X, *x[d + 1:])]


def shape_reduction_max(ctx: ShapeContext, dims: Sequence[Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    out = shape_reduction(ctx, dims, {"dim": attrs["dim"]})[0]
    return [out, out]


def shape_rms_norm(ctx: ShapeContext, dims: Sequence[Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    _rank_of(dims, 1)
    x = dims[0]
    norm = tuple(attrs.get("normalized_shape", x[-1:]))
    if not norm or len(norm) > len(x) or x[len(x) - len(norm):] != norm:
        raise _fail(f"normalized_shape {norm} must equal the trailing dims of {x}")
    return [x]


def shape_concat(ctx: ShapeContext, dims: Sequence[Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    _rank_of(dims, 2)
    a, b, d = dims[0], dims[1], int(attrs["dim"])
    _check_dim(a, d)
    if len(a) != len(b) or any(x != y for i, (x, y) in enumerate(zip(a, b, strict=True)) if i != d):
        raise _fail(f"concat along dim {d} needs all other dims equal, got {a} and {b}")
    return [(*a[:d], a[d] + b[d], *a[d + 1:])]


def shape_concat_then_matmul(ctx: ShapeContext, dims: Sequence[Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    _rank_of(dims, 4)
    a0, a1, b0, b1 = dims
    left = shape_concat(ctx, [a0, a1], {"dim": len(a0) - 1})[0]
    right = shape_concat(ctx, [b0, b1], {"dim": len(b0) - 2})[0]
    return [_matmul_dims(ctx, left, right)]


def _last_to(x: Dims, n: int) -> Dims:
    return (*x[:-1], n)


def shape_accum(ctx: ShapeContext, dims: Sequence[Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    _rank_of(dims, 1)
    return [dims[0]]


def shape_accum_red(ctx: ShapeContext, dims: Sequence[Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    _rank_of(dims, 1)
    return [_last_to(dims[0], 1)]


def shape_accum_todimx(ctx: ShapeContext, dims: Sequence[Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    _rank_of(dims, 1)
    x, X = dims[0], ctx.reduction_dimx
    if x[-1] % X or x[-1] <= X:
        raise _fail(f"the last dim (size {x[-1]}) of {x} must be a multiple of reduction_dimx = {X} "
                    "and larger than it")
    return [_last_to(x, X)]


def _check_rescale(x: Dims, s: Dims) -> None:
    if s != _last_to(x, 1):
        raise _fail(f"the rescale factor must hold one value per row, shape {_last_to(x, 1)}, got {s}")


def shape_accum_rescale(ctx: ShapeContext, dims: Sequence[Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    _rank_of(dims, 2)
    _check_rescale(*dims)
    return [dims[0]]


def shape_accum_sum_rescale(ctx: ShapeContext, dims: Sequence[Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    _rank_of(dims, 2)
    _check_rescale(*dims)
    return [_last_to(dims[0], 1)]


def shape_io(ctx: ShapeContext, dims: Sequence[Dims], attrs: Mapping[str, Any]) -> list[Dims]:
    raise AssertionError("input/output/customized shapes are derived by the graph builders")


