"""The op table: the single source of truth for every op at every level.

Each ``Op`` has one ``OpSpec`` row in ``OPS`` holding its levels and numeric codes
(SPEC §2, §3.3), arity, attributes, shape rule and evaluation rule. The evaluation
rule is written once against a number system (``mirage_lab.semantics.arith``), so
the float interpreter and the finite-field verifier share it.

Evaluation rules receive values whose *trailing* axes are the tensor's dims; any
leading axes (grid blocks, loop iterations) are batch axes. Rules therefore address
tensor dims with negative axes only.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mirage_lab.errors import ShapeError

Dims = tuple[int, ...]
AttrValue = int | float | str | tuple[int, ...]


class Level(enum.Enum):
    KERNEL = "kernel"
    BLOCK = "block"
    THREAD = "thread"


class Kind(enum.Enum):
    """Families of ops; passes dispatch on these rather than on individual ops."""

    IO = "io"
    UNARY = "unary"
    BINARY = "binary"
    MATMUL = "matmul"
    REDUCTION = "reduction"
    NORM = "norm"
    CONCAT = "concat"
    ACCUM = "accum"
    CUSTOMIZED = "customized"


class Op(enum.Enum):
    INPUT = "input"
    OUTPUT = "output"
    MATMUL = "matmul"
    EXP = "exp"
    SQUARE = "square"
    SQRT = "sqrt"
    MUL_SCALAR = "mul_scalar"
    SILU = "silu"
    SIGMOID = "sigmoid"
    GELU = "gelu"
    RELU = "relu"
    CLAMP = "clamp"
    LOG = "log"
    ADD = "add"
    MUL = "mul"
    DIV = "div"
    SUB = "sub"
    POW = "pow"
    REDUCTION = "reduction"
    REDUCTION_TO_DIMX = "reduction_to_dimx"
    REDUCTION_MAX = "reduction_max"
    RMS_NORM = "rms_norm"
    CONCAT = "concat"
    CONCAT_THEN_MATMUL = "concat_then_matmul"
    ACCUM_NO_RED = "accum_no_red"
    ACCUM_SUM = "accum_sum"
    ACCUM_MEAN = "accum_mean"
    ACCUM_RMS = "accum_rms"
    ACCUM_SUM_TODIMX = "accum_sum_todimx"
    ACCUM_NO_RED_RESCALE = "accum_no_red_rescale"
    ACCUM_SUM_RESCALE = "accum_sum_rescale"
    ACCUM_MAX = "accum_max"
    CUSTOMIZED = "customized"

    def __repr__(self) -> str:
        return f"Op.{self.name}"

    @property
    def spec(self) -> OpSpec:
        return OPS[self]


@dataclass(frozen=True)
class ShapeContext:
    """What a shape rule may need beyond its inputs: the level and the block graph's X."""

    level: Level
    reduction_dimx: int = 64


@dataclass(frozen=True)
class EvalArgs:
    """What an evaluation rule may need besides its input values."""

    attrs: Mapping[str, Any]
    in_dims: tuple[Dims, ...]
    reduction_dimx: int = 64
    forloop_range: int = 1  # only abstract rules read it (accumulators)

    def axis(self, dim: int, operand: int = 0) -> int:
        """The negative axis of tensor dim ``dim`` (values may carry leading batch axes)."""
        return dim - len(self.in_dims[operand])


ShapeRule = Callable[[ShapeContext, Sequence[Dims], Mapping[str, Any]], list[Dims]]
EvalRule = Callable[..., Any]
# (algebra, args, *input terms) -> output term, or a tuple of terms for multi-output ops (SPEC §5.2)
AbstractRule = Callable[..., Any]


@dataclass(frozen=True)
class AccumRule:
    """How a for-loop accumulator combines iterations (SPEC §3.3).

    ``contrib`` reduces one iteration's tile; ``combine`` is "sum", "max" or "rescale";
    ``finalize`` post-processes the combined value given ``count`` = F · (reduced last dim).
    """

    contrib: Callable[[Any, Any, int], Any]
    combine: str = "sum"
    finalize: Callable[[Any, Any, int], Any] | None = None


@dataclass(frozen=True)
class OpSpec:
    op: Op
    kind: Kind
    codes: Mapping[Level, int]
    arity: int
    shape: ShapeRule
    evaluate: EvalRule | None = None
    abstract: AbstractRule | None = None
    attrs: tuple[str, ...] = ()
    n_outputs: int = 1
    accum: AccumRule | None = None
    # §3.6: does this op's output occupy shared memory in the search-time heuristic?
    smem_counted: bool = True
    # dim-indexed ops (reductions, concat) add the dim to the base code
    code_adds_dim: bool = False
    # op(a, b) = op(b, a) exactly (in floats and in the field), with the same shape rule and cost either way
    commutative: bool = False
    doc: str = ""

    @property
    def levels(self) -> frozenset[Level]:
        return frozenset(self.codes)

    def code(self, level: Level, attrs: Mapping[str, Any] | None = None) -> int:
        base = self.codes[level]
        return base + int((attrs or {}).get("dim", 0)) if self.code_adds_dim else base


# --------------------------------------------------------------------------- shape rules


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


# --------------------------------------------------------------------------- evaluation rules
# ``ns`` is a number system (semantics.arith); values carry batch axes in front.


def _unary(method: str) -> EvalRule:
    return lambda ns, args, x: getattr(ns, method)(x)


def _binary(method: str) -> EvalRule:
    return lambda ns, args, a, b: getattr(ns, method)(a, b)


def eval_reduction(ns: Any, args: EvalArgs, x: Any) -> Any:
    """Strided grouping: ``out[j] = Σ_k x[j + k·s]`` over dim d (SPEC §2)."""
    return ns.sum_strided(x, args.axis(int(args.attrs["dim"])), int(args.attrs.get("group_size", 1)))


def eval_reduction_to_dimx(ns: Any, args: EvalArgs, x: Any) -> Any:
    return ns.sum_strided(x, args.axis(int(args.attrs["dim"])), args.reduction_dimx)


def eval_reduction_max(ns: Any, args: EvalArgs, x: Any) -> Any:
    """[lab decision] per-iteration max over dim d; the running part is done by the interpreter."""
    return ns.amax(x, args.axis(int(args.attrs["dim"])))


def eval_rms_norm(ns: Any, args: EvalArgs, x: Any) -> Any:
    norm = tuple(args.attrs.get("normalized_shape", args.in_dims[0][-1:]))
    axes = tuple(range(-len(norm), 0))
    return ns.div(x, ns.rms(x, axes, math.prod(norm)))


def eval_concat(ns: Any, args: EvalArgs, a: Any, b: Any) -> Any:
    return ns.concat([a, b], args.axis(int(args.attrs["dim"])))


def eval_concat_then_matmul(ns: Any, args: EvalArgs, a0: Any, a1: Any, b0: Any, b1: Any) -> Any:
    """``[A0 A1] @ [B0; B1]``: A0·B0 + A1·B1 when the split points agree (A0's columns = B0's rows); the
    shape rule only asks the concatenations to match, so otherwise the concatenations are multiplied."""
    if args.in_dims[0][-1] == args.in_dims[2][-2]:
        return ns.add(ns.matmul(a0, b0), ns.matmul(a1, b1))
    left = ns.concat([a0, a1], args.axis(len(args.in_dims[0]) - 1, 0))
    right = ns.concat([b0, b1], args.axis(len(args.in_dims[2]) - 2, 2))
    return ns.matmul(left, right)


def eval_mul_scalar(ns: Any, args: EvalArgs, x: Any) -> Any:
    return ns.mul_scalar(x, float(args.attrs["scalar"]))


def eval_clamp(ns: Any, args: EvalArgs, x: Any) -> Any:
    return ns.clamp(x, float(args.attrs["min"]), float(args.attrs["max"]))


def _contrib_identity(ns: Any, x: Any, dimx: int) -> Any:
    return x


def _contrib_row_sum(ns: Any, x: Any, dimx: int) -> Any:
    return ns.sum(x, -1)


def _contrib_row_sumsq(ns: Any, x: Any, dimx: int) -> Any:
    return ns.sum(ns.square(x), -1)


def _contrib_todimx(ns: Any, x: Any, dimx: int) -> Any:
    return ns.sum_strided(x, -1, dimx)


def _final_mean(ns: Any, acc: Any, count: int) -> Any:
    return ns.div_int(acc, count)


def _final_rms(ns: Any, acc: Any, count: int) -> Any:
    return ns.sqrt(ns.div_int(acc, count))



# --------------------------------------------------------------------------- abstract rules
# SPEC §5.2. ``alg`` is a term algebra (absexpr.terms.TermAlgebra); partitioning is invisible,
# only reduction degrees appear. Block-level in_dims are tile dims, so a block matmul sums over
# its *local* k. [lab] decisions for ops outside §5.2 are in docs/decisions.md.


def _abs_unary(name: str) -> AbstractRule:
    return lambda alg, args, x: alg.unary(name, x)


def _abs_binary(method: str) -> AbstractRule:
    return lambda alg, args, a, b: getattr(alg, method)(a, b)


def _abs_identity(alg: Any, args: EvalArgs, x: Any, *rest: Any) -> Any:
    return x


def abs_matmul(alg: Any, args: EvalArgs, a: Any, b: Any) -> Any:
    return alg.reduce("sum", args.in_dims[0][-1], alg.mul(a, b))


def abs_reduction(alg: Any, args: EvalArgs, x: Any) -> Any:
    """The full dim, whatever the group size (SPEC §5.2 [ref])."""
    return alg.reduce("sum", args.in_dims[0][int(args.attrs["dim"])], x)


def abs_reduction_to_dimx(alg: Any, args: EvalArgs, x: Any) -> Any:
    return alg.reduce("sum", args.in_dims[0][int(args.attrs["dim"])] // args.reduction_dimx, x)


def abs_reduction_max(alg: Any, args: EvalArgs, x: Any) -> Any:
    m = alg.reduce("max", args.in_dims[0][int(args.attrs["dim"])], x)
    return (m, m)


def abs_rms_norm(alg: Any, args: EvalArgs, x: Any) -> Any:
    norm = tuple(args.attrs.get("normalized_shape", args.in_dims[0][-1:]))
    return alg.div(x, alg.reduce("rms", math.prod(norm), x))


def abs_concat_then_matmul(alg: Any, args: EvalArgs, a0: Any, a1: Any, b0: Any, b1: Any) -> Any:
    k0, k1 = args.in_dims[0][-1], args.in_dims[1][-1]
    return alg.add(alg.reduce("sum", k0, alg.mul(a0, b0)), alg.reduce("sum", k1, alg.mul(a1, b1)))


def abs_clamp(alg: Any, args: EvalArgs, x: Any) -> Any:
    return alg.unary("clamp", x, (float(args.attrs["min"]), float(args.attrs["max"])))


def _abs_accum(name: str, per_row: bool = True, todimx: bool = False) -> AbstractRule:
    """An accumulator reduces over F iterations times what each iteration reduces of its tile."""

    def rule(alg: Any, args: EvalArgs, x: Any, *rescale: Any) -> Any:
        last = args.in_dims[0][-1]
        n = args.forloop_range * ((last // args.reduction_dimx if todimx else last) if per_row else 1)
        return alg.reduce(name, n, x)

    return rule

# --------------------------------------------------------------------------- the table

K, B = Level.KERNEL, Level.BLOCK


def _row(op: Op, kind: Kind, codes: dict[Level, int], arity: int, shape: ShapeRule, **kw: Any) -> OpSpec:
    return OpSpec(op=op, kind=kind, codes=codes, arity=arity, shape=shape, **kw)


_UNARY = [  # op, kernel code, block code
    (Op.EXP, 1100, 2100), (Op.SQUARE, 1101, 2101), (Op.SQRT, 1102, 2102), (Op.SILU, 1104, 2104),
    (Op.SIGMOID, 1105, 2105), (Op.GELU, 1106, 2106), (Op.RELU, 1150, 2150), (Op.LOG, 1160, 2160),
]
_BINARY = [(Op.ADD, 1200, 2200), (Op.MUL, 1201, 2201), (Op.DIV, 1202, 2202), (Op.POW, 1203, 2204)]

_ROWS: list[OpSpec] = [
    _row(Op.INPUT, Kind.IO, {K: 1001, B: 2001}, 0, shape_io, smem_counted=True,
         doc="kernel: a program input; block: a loader (imap, forloop_dim)"),
    _row(Op.OUTPUT, Kind.IO, {K: 1002, B: 2002}, 1, shape_io, smem_counted=False,
         doc="kernel: a marked output; block: a saver (omap)"),
    _row(Op.MATMUL, Kind.MATMUL, {K: 1003, B: 2003}, 2, shape_matmul, evaluate=_binary("matmul"),
         abstract=abs_matmul),
    *[_row(op, Kind.UNARY, {K: k, B: b}, 1, shape_same, evaluate=_unary(op.value), smem_counted=False,
           abstract=_abs_unary(op.value)) for op, k, b in _UNARY],
    _row(Op.MUL_SCALAR, Kind.UNARY, {K: 1103, B: 2103}, 1, shape_same, evaluate=eval_mul_scalar,
         attrs=("scalar",), smem_counted=False, abstract=_abs_identity, doc="abstract: constants are invisible"),
    _row(Op.CLAMP, Kind.UNARY, {K: 1151, B: 2151}, 1, shape_same, evaluate=eval_clamp,
         attrs=("min", "max"), smem_counted=False, abstract=abs_clamp),
    *[_row(op, Kind.BINARY, {K: k, B: b}, 2, shape_broadcast, evaluate=_binary(op.value),
           abstract=_abs_binary(op.value), commutative=op in (Op.ADD, Op.MUL)) for op, k, b in _BINARY],
    _row(Op.SUB, Kind.BINARY, {B: 2203}, 2, shape_broadcast, evaluate=_binary("sub"),
         abstract=_abs_binary("add"), doc="abstract: add (signs are constants, and constants are invisible)"),
    _row(Op.REDUCTION, Kind.REDUCTION, {K: 1300, B: 2301}, 1, shape_reduction, evaluate=eval_reduction,
         attrs=("dim",), code_adds_dim=True, abstract=abs_reduction, doc="kernel: optional group_size (strided)"),
    _row(Op.REDUCTION_TO_DIMX, Kind.REDUCTION, {B: 2304}, 1, shape_reduction_to_dimx,
         evaluate=eval_reduction_to_dimx, attrs=("dim",), code_adds_dim=True, abstract=abs_reduction_to_dimx),
    _row(Op.REDUCTION_MAX, Kind.REDUCTION, {B: 2307}, 1, shape_reduction_max, attrs=("dim",),
         evaluate=eval_reduction_max, abstract=abs_reduction_max,
         n_outputs=2, code_adds_dim=True,
         doc="running max over dim and loop iterations, and diff = previous max − new max"),
    _row(Op.RMS_NORM, Kind.NORM, {K: 1350, B: 2350}, 1, shape_rms_norm, evaluate=eval_rms_norm,
         abstract=abs_rms_norm),
    _row(Op.CONCAT, Kind.CONCAT, {B: 2400}, 2, shape_concat, evaluate=eval_concat, attrs=("dim",),
         code_adds_dim=True, abstract=_abs_binary("add"), doc="abstract: add of the parts"),
    _row(Op.CONCAT_THEN_MATMUL, Kind.MATMUL, {B: 2411}, 4, shape_concat_then_matmul,
         evaluate=eval_concat_then_matmul, abstract=abs_concat_then_matmul),
    _row(Op.ACCUM_NO_RED, Kind.ACCUM, {B: 2500}, 1, shape_accum, smem_counted=False,
         accum=AccumRule(_contrib_identity), abstract=_abs_accum("sum", per_row=False)),
    _row(Op.ACCUM_SUM, Kind.ACCUM, {B: 2501}, 1, shape_accum_red, accum=AccumRule(_contrib_row_sum),
         abstract=_abs_accum("sum")),
    _row(Op.ACCUM_MEAN, Kind.ACCUM, {B: 2502}, 1, shape_accum_red,
         accum=AccumRule(_contrib_row_sum, finalize=_final_mean), abstract=_abs_accum("sum")),
    _row(Op.ACCUM_RMS, Kind.ACCUM, {B: 2503}, 1, shape_accum_red,
         accum=AccumRule(_contrib_row_sumsq, finalize=_final_rms), abstract=_abs_accum("rms")),
    _row(Op.ACCUM_SUM_TODIMX, Kind.ACCUM, {B: 2504}, 1, shape_accum_todimx, accum=AccumRule(_contrib_todimx),
         abstract=_abs_accum("sum", todimx=True)),
    _row(Op.ACCUM_NO_RED_RESCALE, Kind.ACCUM, {B: 2505}, 2, shape_accum_rescale,
         accum=AccumRule(_contrib_identity, combine="rescale"), abstract=_abs_accum("sum", per_row=False),
         doc="abstract: the rescale factor is invisible"),
    _row(Op.ACCUM_SUM_RESCALE, Kind.ACCUM, {B: 2506}, 2, shape_accum_sum_rescale,
         accum=AccumRule(_contrib_row_sum, combine="rescale"), abstract=_abs_accum("sum"),
         doc="abstract: the rescale factor is invisible"),
    _row(Op.ACCUM_MAX, Kind.ACCUM, {B: 2507}, 1, shape_accum, accum=AccumRule(_contrib_identity, combine="max"),
         abstract=_abs_accum("max", per_row=False)),
    _row(Op.CUSTOMIZED, Kind.CUSTOMIZED, {K: 1999}, -1, shape_io),
]

OPS: dict[Op, OpSpec] = {spec.op: spec for spec in _ROWS}

# The user-facing accumulator names of ``tb.forloop_accum(t, acc=...)``.
ACCUM_NAMES: dict[str | None, Op] = {
    None: Op.ACCUM_NO_RED,
    "nored": Op.ACCUM_NO_RED,
    "sum": Op.ACCUM_SUM,
    "mean": Op.ACCUM_MEAN,
    "rms": Op.ACCUM_RMS,
    "sum_todimx": Op.ACCUM_SUM_TODIMX,
    "nored_rescale": Op.ACCUM_NO_RED_RESCALE,
    "sum_rescale": Op.ACCUM_SUM_RESCALE,
    "max": Op.ACCUM_MAX,
}


#: accumulator op → its ``forloop_accum`` name (None for NO_RED), the inverse of ACCUM_NAMES
ACCUM_KEY: dict[Op, str | None] = {}
for _name, _accum in ACCUM_NAMES.items():
    ACCUM_KEY.setdefault(_accum, _name)


def ops_at(level: Level) -> list[Op]:
    """Every op that exists at ``level``, in table order."""
    return [spec.op for spec in _ROWS if level in spec.codes]
