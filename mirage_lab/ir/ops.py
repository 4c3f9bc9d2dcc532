"""The op table: every op declared once, with every aspect each layer reads.

Each ``Op`` has one ``OpSpec`` row in ``OPS``, its only definition. A row holds:

* its levels and numeric codes (SPEC §2, §3.3), arity and attributes, and its shape rule (``shape_rules``);
* its evaluation rule, written once against a number system so that floats and the finite field share it
  (``op_rules``), and its standing in the field (``FieldRule``: exact, or why not);
* its degree rule (SPEC §6.5) and its abstract expression (SPEC §5.2: the rule, and the head ``term`` it adds
  to the expression language, if any);
* how backends lower it (``lowering``: the emitter family; ``cuda``: the expression of an elementwise op);
* its mutation family (``verify/mutate.py`` replaces an op by a sibling of its family).

Every side table (the heuristic ops, the degree walk, the expression language's heads, the CUDA expressions,
the mutation siblings) is derived from these rows; ``tests/ir/test_op_table.py`` checks that each op declares
every aspect and that the derived tables agree. ``docs/adding_an_op.md`` walks through adding one.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mirage_lab.ir.op_rules import (
    abs_accum,
    abs_binary,
    abs_clamp,
    abs_concat_then_matmul,
    abs_matmul,
    abs_reduction,
    abs_reduction_max,
    abs_reduction_to_dimx,
    abs_rms_norm,
    abs_scale,
    abs_unary,
    binary_rule,
    check_clamp_bounds,
    contrib_identity,
    contrib_row_sum,
    contrib_row_sumsq,
    contrib_todimx,
    deg_concat_matmul,
    deg_double,
    deg_keep,
    deg_product,
    deg_square,
    eval_clamp,
    eval_concat,
    eval_concat_then_matmul,
    eval_mul_scalar,
    eval_reduction,
    eval_reduction_max,
    eval_reduction_to_dimx,
    eval_rms_norm,
    final_mean,
    final_rms,
    unary_rule,
)
from mirage_lab.ir.op_types import (
    EXACT,
    NOT_SEARCHED,
    AbstractRule,
    AccumRule,
    AttrValue,
    BuilderRule,
    DegreeRule,
    Dims,
    EvalArgs,
    EvalRule,
    FieldRule,
    Kind,
    Level,
    SearchUse,
    ShapeContext,
    ShapeRule,
)
from mirage_lab.ir.shape_rules import (
    shape_accum,
    shape_accum_red,
    shape_accum_rescale,
    shape_accum_sum_rescale,
    shape_accum_todimx,
    shape_broadcast,
    shape_concat,
    shape_concat_then_matmul,
    shape_io,
    shape_matmul,
    shape_reduction,
    shape_reduction_max,
    shape_reduction_to_dimx,
    shape_rms_norm,
    shape_same,
)

__all__ = ["ACCUM_KEY", "ACCUM_NAMES", "EXACT", "LOWERINGS", "OPS", "AccumRule", "AttrValue", "Dims", "EvalArgs",
           "FieldRule", "Kind", "Level", "Op", "OpSpec", "ShapeContext", "mutation_siblings", "ops_at",
           "search_defaults"]


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
    TANH = "tanh"
    ERF = "erf"

    def __repr__(self) -> str:
        return f"Op.{self.name}"

    @property
    def spec(self) -> OpSpec:
        return OPS[self]


#: the emitter families every backend implements; an op's ``lowering`` names one ("elementwise" ops give
#: their expression in ``cuda``). The kernel-level op is lowered as a whole kernel, never by a block emitter.
LOWERINGS = ("load", "save", "elementwise", "matmul", "reduction", "reduction_max", "rms_norm", "concat",
             "accumulate", "kernel")


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
    # -- the aspects below have no default that could stand for "forgotten": each row states them
    field: FieldRule | None = None
    degree: DegreeRule | None = None
    #: the head this op adds to the abstract-expression language (SPEC §5.1), None when it adds none
    term: str | None = None
    lowering: str | None = None
    #: an elementwise op's CUDA expression: ``{x}`` (or ``{a}``, ``{b}``) and its attributes by name
    cuda: str | None = None
    #: the same in Triton (fp32 tensors, ``tl`` in scope; Triton's CPU interpreter has no libdevice, so ``pow`` is
    #: exp2(b·log2 a): NaN for a negative base, where powf gives a real value for an integer exponent)
    triton: str | None = None
    #: ``verify/mutate.py`` replaces an op by the others of its family ("unary", "binary"), ``pairs`` first
    mutation_family: str | None = None
    mutation_pairs: tuple[Op, ...] = ()
    builder: BuilderRule | None = None  # its builder method (name, signature; generated or hand-written)
    search: SearchUse | None = None  # whether and where the search applies it (its default op lists derive from it)
    doc: str = ""

    @property
    def levels(self) -> frozenset[Level]:
        return frozenset(self.codes)

    def code(self, level: Level, attrs: Mapping[str, Any] | None = None) -> int:
        base = self.codes[level]
        return base + int((attrs or {}).get("dim", 0)) if self.code_adds_dim else base


# --------------------------------------------------------------------------- the table

K, B = Level.KERNEL, Level.BLOCK

#: the search's uses (``SearchUse``): offered by default at both levels, at one, or only when the program uses it
BOTH = SearchUse(default=frozenset({K, B}))
BLOCK_DEFAULT = SearchUse(default=frozenset({B}))
WHEN_USED = SearchUse(when_used=frozenset({K, B}))

_EXP_FIELD = "field rule built on exp's ω^(x_q), which loses the q-component"
_NO_ORDER = "the field has no order: a deterministic per-component stand-in, not an identity (SPEC §6.2)"
_SQRT = "x^((p+1)/4), a true square root only of quadratic residues"


def _unary(op: Op, k: int, b: int, field: FieldRule, cuda: str, pairs: tuple[Op, ...] = (), **kw: Any) -> OpSpec:
    """A one-operand elementwise op with no attributes: its own term, its number systems' method of its name."""
    return OpSpec(op, Kind.UNARY, {K: k, B: b}, 1, shape_same, evaluate=unary_rule(op.value),
                  abstract=abs_unary(op.value), smem_counted=False, field=field, degree=kw.pop("degree", deg_keep),
                  term=op.value, lowering="elementwise", cuda=cuda, mutation_family="unary", mutation_pairs=pairs,
                  builder=BuilderRule(op.value, ("A",)), search=kw.pop("search", BOTH), **kw)


def _binary(op: Op, codes: dict[Level, int], cuda: str, degree: DegreeRule = deg_keep, pairs: tuple[Op, ...] = (),
            **kw: Any) -> OpSpec:
    """A broadcasting two-operand elementwise op."""
    kw.setdefault("field", EXACT)
    kw.setdefault("abstract", abs_binary(op.value))
    kw.setdefault("term", op.value)
    kw.setdefault("builder", BuilderRule(op.value, ("A", "B")))
    kw.setdefault("search", BOTH)
    return OpSpec(op, Kind.BINARY, codes, 2, shape_broadcast, evaluate=binary_rule(op.value), degree=degree,
                  lowering="elementwise", cuda=cuda, mutation_family="binary", mutation_pairs=pairs, **kw)


def _accum(op: Op, code: int, arity: int, shape: ShapeRule, accum: AccumRule, abstract: AbstractRule,
           field: FieldRule = EXACT, degree: DegreeRule = deg_keep, **kw: Any) -> OpSpec:
    """A for-loop accumulator (SPEC §3.3): block level only, lowered by the accumulator emitter."""
    kw.setdefault("search", NOT_SEARCHED)
    return OpSpec(op, Kind.ACCUM, {B: code}, arity, shape, accum=accum, abstract=abstract, field=field,
                  degree=degree, lowering="accumulate", builder=BuilderRule("forloop_accum", generated=False), **kw)


_ROWS: list[OpSpec] = [
    OpSpec(Op.INPUT, Kind.IO, {K: 1001, B: 2001}, 0, shape_io, smem_counted=True, field=EXACT, degree=deg_keep,
           lowering="load", builder=BuilderRule("new_input", generated=False), search=NOT_SEARCHED,
           doc="kernel: a program input; block: a loader (imap, forloop_dim)"),
    OpSpec(Op.OUTPUT, Kind.IO, {K: 1002, B: 2002}, 1, shape_io, smem_counted=False, field=EXACT, degree=deg_keep,
           lowering="save", builder=BuilderRule("new_output", generated=False, kernel_name="mark_output"),
           search=NOT_SEARCHED,
           doc="kernel: a marked output; block: a saver (omap)"),
    OpSpec(Op.MATMUL, Kind.MATMUL, {K: 1003, B: 2003}, 2, shape_matmul, evaluate=binary_rule("matmul"),
           abstract=abs_matmul, field=EXACT, degree=deg_product, lowering="matmul",
           builder=BuilderRule("matmul", ("A", "B")), search=BOTH),
    _unary(Op.EXP, 1100, 2100, FieldRule("conjecture", "(ω^(x_q) mod p, 0): a homomorphism from (Z_q, +) into "
                                         "(Z_p*, ·); the q-component is lost, so nested exp is meaningless"),
           "expf({x})", pairs=(Op.SILU,), triton="tl.exp({x})"),
    _unary(Op.SQUARE, 1101, 2101, EXACT, "{x} * {x}", degree=deg_square, triton="{x} * {x}"),
    _unary(Op.SQRT, 1102, 2102, FieldRule("heuristic", _SQRT), "sqrtf({x})", triton="tl.sqrt({x})"),
    _unary(Op.SILU, 1104, 2104, FieldRule("heuristic", f"x·σ(x), σ by the {_EXP_FIELD}"), "mirage_silu({x})",
           pairs=(Op.EXP,), triton="{x} * tl.sigmoid({x})"),
    _unary(Op.SIGMOID, 1105, 2105, FieldRule("heuristic", f"e^x / (1 + e^x), by the {_EXP_FIELD}"),
           "mirage_sigmoid({x})", triton="tl.sigmoid({x})", search=WHEN_USED),
    _unary(Op.GELU, 1106, 2106, FieldRule("heuristic", f"x·σ(2x), σ by the {_EXP_FIELD}"), "mirage_gelu({x})",
           triton="0.5 * {x} * (1.0 + tl.erf({x} * 0.7071067811865476))"),
    _unary(Op.RELU, 1150, 2150, FieldRule("heuristic", f"max(x, ⌊m/2⌋): {_NO_ORDER}"), "fmaxf({x}, 0.f)",
           triton="tl.maximum({x}, 0.0)"),
    _unary(Op.LOG, 1160, 2160, FieldRule("unsupported", "it would need a discrete logarithm; graphs with log are "
                                         "decided by the float64 check alone"), "logf({x})", triton="tl.log({x})",
           search=WHEN_USED),
    OpSpec(Op.MUL_SCALAR, Kind.UNARY, {K: 1103, B: 2103}, 1, shape_same, evaluate=eval_mul_scalar,
           attrs=("scalar",), smem_counted=False, abstract=abs_scale, field=EXACT, degree=deg_keep, term="scale",
           lowering="elementwise", cuda="{x} * {scalar}", triton="{x} * {scalar}",
           builder=BuilderRule("mul_scalar", ("A",), (("scalar", "scalar"),)), search=WHEN_USED,
           doc="abstract: scale(c, x), an opaque function per constant, as clamp is per bound pair"),
    OpSpec(Op.CLAMP, Kind.UNARY, {K: 1151, B: 2151}, 1, shape_same, evaluate=eval_clamp,
           attrs=("min", "max"), smem_counted=False, abstract=abs_clamp,
           field=FieldRule("heuristic", f"clamps to [⌊m/3⌋, ⌊2m/3⌋], ignoring the bounds: {_NO_ORDER}"),
           degree=deg_keep, term="clamp", lowering="elementwise", cuda="fminf(fmaxf({x}, {min}), {max})",
           triton="tl.minimum(tl.maximum({x}, {min}), {max})",
           builder=BuilderRule("clamp", ("A",), (("min_val", "min"), ("max_val", "max")), check=check_clamp_bounds),
           search=BOTH),
    _binary(Op.ADD, {K: 1200, B: 2200}, "{a} + {b}", pairs=(Op.MUL,), commutative=True, triton="{a} + {b}"),
    _binary(Op.MUL, {K: 1201, B: 2201}, "{a} * {b}", deg_product, pairs=(Op.ADD, Op.DIV), commutative=True,
            triton="{a} * {b}"),
    _binary(Op.DIV, {K: 1202, B: 2202}, "{a} / {b}", deg_product, pairs=(Op.MUL,), triton="{a} / {b}"),
    _binary(Op.POW, {K: 1203, B: 2204}, "powf({a}, {b})", triton="tl.exp2({b} * tl.log2({a}))",
            field=FieldRule("heuristic", "a^(b_q): the exponent read through its q-component, as exp's")),
    _binary(Op.SUB, {B: 2203}, "{a} - {b}", abstract=abs_binary("add"), term=None, triton="{a} - {b}",
            search=SearchUse(when_used=frozenset({B})),
            doc="abstract: add (signs are constants, and constants are invisible)"),
    OpSpec(Op.REDUCTION, Kind.REDUCTION, {K: 1300, B: 2301}, 1, shape_reduction, evaluate=eval_reduction,
           attrs=("dim",), code_adds_dim=True, abstract=abs_reduction, field=EXACT, degree=deg_keep,
           lowering="reduction", builder=BuilderRule("reduction", generated=False),
           search=SearchUse(via=("accum_sum", "accum_sum_todimx")),
           doc="kernel: optional group_size (strided)"),
    OpSpec(Op.REDUCTION_TO_DIMX, Kind.REDUCTION, {B: 2304}, 1, shape_reduction_to_dimx,
           evaluate=eval_reduction_to_dimx, attrs=("dim",), code_adds_dim=True, abstract=abs_reduction_to_dimx,
           field=EXACT, degree=deg_keep, lowering="reduction",
           builder=BuilderRule("reduction_to_dimx", generated=False), search=SearchUse(via=("accum_sum_todimx",))),
    OpSpec(Op.REDUCTION_MAX, Kind.REDUCTION, {B: 2307}, 1, shape_reduction_max, attrs=("dim",),
           evaluate=eval_reduction_max, abstract=abs_reduction_max, n_outputs=2, code_adds_dim=True,
           field=FieldRule("heuristic", f"max: {_NO_ORDER}"), degree=deg_keep, lowering="reduction_max",
           builder=BuilderRule("reduction_max", generated=False), search=NOT_SEARCHED,
           doc="running max over dim and loop iterations, and diff = previous max − new max"),
    OpSpec(Op.RMS_NORM, Kind.NORM, {K: 1350, B: 2350}, 1, shape_rms_norm, evaluate=eval_rms_norm,
           abstract=abs_rms_norm, field=FieldRule("heuristic", f"x / rms(x), rms by {_SQRT}"), degree=deg_double,
           lowering="rms_norm", builder=BuilderRule("rms_norm", generated=False),
           search=SearchUse(default=frozenset({B}), via=("rms_norm", "accum_rms"))),
    OpSpec(Op.CONCAT, Kind.CONCAT, {B: 2400}, 2, shape_concat, evaluate=eval_concat, attrs=("dim",),
           code_adds_dim=True, abstract=abs_binary("add"), field=EXACT, degree=deg_keep, lowering="concat",
           builder=BuilderRule("concat", generated=False), search=NOT_SEARCHED,
           doc="abstract: add of the parts"),
    OpSpec(Op.CONCAT_THEN_MATMUL, Kind.MATMUL, {B: 2411}, 4, shape_concat_then_matmul,
           evaluate=eval_concat_then_matmul, abstract=abs_concat_then_matmul, field=EXACT,
           degree=deg_concat_matmul, lowering="matmul",
           builder=BuilderRule("concat_then_matmul", ("A0", "A1", "B0", "B1")),
           search=SearchUse(presets=("lora",))),
    _accum(Op.ACCUM_NO_RED, 2500, 1, shape_accum, AccumRule(contrib_identity), abs_accum("sum", per_row=False),
           smem_counted=False, search=BLOCK_DEFAULT),
    _accum(Op.ACCUM_SUM, 2501, 1, shape_accum_red, AccumRule(contrib_row_sum), abs_accum("sum"),
           search=BLOCK_DEFAULT),
    _accum(Op.ACCUM_MEAN, 2502, 1, shape_accum_red,
           AccumRule(contrib_row_sum, finalize=final_mean, cuda_finalize="{v} / {count}",
                     triton_finalize="{v} / {count}"), abs_accum("sum")),
    _accum(Op.ACCUM_RMS, 2503, 1, shape_accum_red,
           AccumRule(contrib_row_sumsq, linear=False, finalize=final_rms, cuda_finalize="sqrtf({v} / {count})",
                     triton_finalize="tl.sqrt({v} / {count})"), abs_accum("rms"),
           field=FieldRule("heuristic", f"the root of the mean square, by {_SQRT}"), search=BLOCK_DEFAULT),
    _accum(Op.ACCUM_SUM_TODIMX, 2504, 1, shape_accum_todimx, AccumRule(contrib_todimx),
           abs_accum("sum", todimx=True), search=SearchUse(presets=("attention",))),
    _accum(Op.ACCUM_NO_RED_RESCALE, 2505, 2, shape_accum_rescale, AccumRule(contrib_identity, combine="rescale"),
           abs_accum("sum", per_row=False), degree=deg_double, doc="abstract: the rescale factor is invisible"),
    _accum(Op.ACCUM_SUM_RESCALE, 2506, 2, shape_accum_sum_rescale, AccumRule(contrib_row_sum, combine="rescale"),
           abs_accum("sum"), degree=deg_double, doc="abstract: the rescale factor is invisible"),
    _accum(Op.ACCUM_MAX, 2507, 1, shape_accum, AccumRule(contrib_identity, combine="max"),
           abs_accum("max", per_row=False), field=FieldRule("heuristic", f"max: {_NO_ORDER}")),
    OpSpec(Op.CUSTOMIZED, Kind.CUSTOMIZED, {K: 1999}, -1, shape_io, field=EXACT, lowering="kernel",
           builder=BuilderRule("customized", generated=False), search=SearchUse(default=frozenset({K})),
           doc="degree: that of its block graph's savers"),
    # [lab] ops the reference lacks (its codes stop at 1106/2106 for this family): GELU's tanh and exact forms
    _unary(Op.TANH, 1107, 2107, FieldRule("heuristic", f"(e − 1)/(e + 1) with e = ω^(2x_q): 2σ(2x) − 1, by the "
                                          f"{_EXP_FIELD}"), "tanhf({x})", triton="2.0 * tl.sigmoid(2.0 * {x}) - 1.0",
           search=WHEN_USED),
    _unary(Op.ERF, 1108, 2108, FieldRule("heuristic", f"(e − 1)/(e + 1) with e = ω^(3x_q), a fingerprint of the "
                                         f"odd, bounded erf (no field identity defines it), by the {_EXP_FIELD}"),
           "erff({x})", triton="tl.erf({x})", search=WHEN_USED),
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
for _name, _accum_op in ACCUM_NAMES.items():
    ACCUM_KEY.setdefault(_accum_op, _name)


def ops_at(level: Level) -> list[Op]:
    """Every op that exists at ``level``, in table order."""
    return [spec.op for spec in _ROWS if level in spec.codes]


def search_defaults(level: Level, preset: str | None = None) -> tuple[str, ...]:
    """The search's default op list at ``level`` (SPEC §7.1): the ops whose row offers them there by default, in
    table order, then those ``preset`` adds (``SearchConfig``'s lists are these)."""
    uses = [(spec.op.value, spec.codes, spec.search) for spec in _ROWS if spec.search is not None]
    default = [name for name, _, use in uses if level in use.default]
    added = [name for name, codes, use in uses if preset in use.presets and level in codes]
    return (*default, *added)


def _canonical_rank(op: Op) -> int:
    spec = OPS[op]
    return spec.codes.get(Level.BLOCK, spec.codes.get(Level.KERNEL, 0))


def mutation_siblings(op: Op) -> tuple[Op, ...]:
    """The ops ``op`` may be replaced by in a mutant: its declared pairs first, then the rest of its family in
    the canonical (code) order."""
    family = OPS[op].mutation_family
    if family is None:
        return ()
    rest = sorted((o for o in Op if OPS[o].mutation_family == family and o is not op), key=_canonical_rank)
    return tuple(dict.fromkeys((*OPS[op].mutation_pairs, *rest)))


def missing_aspects(spec: OpSpec) -> list[str]:
    """The aspects ``spec`` fails to declare (empty for a complete row): ``tests/ir/test_op_table.py`` asks this of
    every row, so a new op cannot silently miss its field standing, degree, lowering or expression."""
    missing = []
    computing = spec.kind not in (Kind.IO, Kind.CUSTOMIZED)
    if spec.field is None:
        missing.append("field")
    if spec.degree is None and spec.kind is not Kind.CUSTOMIZED:
        missing.append("degree")
    if computing and spec.abstract is None:
        missing.append("abstract")
    if computing and (spec.evaluate if spec.kind is not Kind.ACCUM else spec.accum) is None:
        missing.append("accum" if spec.kind is Kind.ACCUM else "evaluate")
    if spec.lowering not in LOWERINGS:
        missing.append("lowering")
    if spec.lowering == "elementwise" and spec.cuda is None:
        missing.append("cuda")
    if spec.lowering == "elementwise" and spec.triton is None:
        missing.append("triton")
    if spec.accum is not None and (spec.accum.finalize is None) != (spec.accum.cuda_finalize is None):
        missing.append("accum.cuda_finalize")
    if spec.accum is not None and (spec.accum.finalize is None) != (spec.accum.triton_finalize is None):
        missing.append("accum.triton_finalize")
    if spec.kind in (Kind.UNARY, Kind.BINARY) and spec.lowering == "elementwise" and not spec.attrs \
            and spec.mutation_family is None:
        missing.append("mutation_family")
    if spec.builder is None:
        missing.append("builder")
    if spec.search is None:
        missing.append("search")
    return missing
