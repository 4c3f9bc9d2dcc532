"""The op table is the single source of truth: every op is covered everywhere it claims to be."""

from __future__ import annotations

import dataclasses
import string
from typing import Any

import pytest

from mirage_lab.ir import io
from mirage_lab.ir.ops import ACCUM_NAMES, OPS, EvalArgs, Kind, Level, Op, missing_aspects, mutation_siblings, ops_at


def test_every_op_has_one_row() -> None:
    assert set(OPS) == set(Op)


@pytest.mark.parametrize("op", list(Op), ids=lambda o: o.value)
def test_every_computing_op_has_an_evaluation_rule(op: Op) -> None:
    spec = OPS[op]
    if spec.kind in (Kind.IO, Kind.CUSTOMIZED):
        assert spec.evaluate is None
    elif spec.kind is Kind.ACCUM:
        assert spec.accum is not None
    else:
        assert spec.evaluate is not None


@pytest.mark.parametrize("op", list(Op), ids=lambda o: o.value)
def test_every_computing_op_has_an_abstract_rule(op: Op) -> None:
    """SPEC §5.2: the search asks every op it proposes for its abstract expression."""
    spec = OPS[op]
    assert (spec.abstract is None) == (spec.kind in (Kind.IO, Kind.CUSTOMIZED))


@pytest.mark.parametrize("op", [o for o in Op if o not in (Op.INPUT, Op.OUTPUT, Op.CUSTOMIZED)],
                         ids=lambda o: o.value)
def test_every_op_can_be_replayed_from_json(op: Op) -> None:
    for level in OPS[op].levels:
        assert io._replay_for(op, kernel=level is Level.KERNEL) is not None


def test_codes_are_unique_per_level() -> None:
    for level in (Level.KERNEL, Level.BLOCK):
        codes: dict[int, str] = {}
        for op in ops_at(level):
            spec = OPS[op]
            for dim in range(3) if spec.code_adds_dim else (0,):
                code = spec.code(level, {"dim": dim})
                assert code not in codes, (op, codes.get(code))
                codes[code] = op.value


def test_reference_codes() -> None:
    """SPEC §2/§3.3: the canonical-order tie-break compares these numbers."""
    assert OPS[Op.MATMUL].code(Level.KERNEL) == 1003
    assert OPS[Op.SILU].code(Level.KERNEL) == 1104
    assert OPS[Op.MUL_SCALAR].code(Level.BLOCK) == 2103
    assert OPS[Op.REDUCTION].code(Level.KERNEL, {"dim": 2}) == 1302
    assert OPS[Op.REDUCTION].code(Level.BLOCK, {"dim": 0}) == 2301
    assert OPS[Op.REDUCTION_TO_DIMX].code(Level.BLOCK, {"dim": 1}) == 2305
    assert OPS[Op.ACCUM_RMS].code(Level.BLOCK) == 2503
    assert OPS[Op.ACCUM_MAX].code(Level.BLOCK) == 2507
    assert OPS[Op.CUSTOMIZED].code(Level.KERNEL) == 1999


def test_every_accumulator_kind_has_a_user_name() -> None:
    assert {op for op in Op if OPS[op].kind is Kind.ACCUM} == set(ACCUM_NAMES.values())


# ---- one declaration per op (issue 20): every aspect declared, every side table derived from it

ASPECTS = ("field", "degree", "abstract", "evaluate", "accum", "lowering", "cuda", "mutation_family", "builder")


@pytest.mark.parametrize("op", list(Op), ids=lambda o: o.value)
def test_every_op_declares_every_aspect(op: Op) -> None:
    assert missing_aspects(OPS[op]) == []


@pytest.mark.parametrize("op", list(Op), ids=lambda o: o.value)
def test_removing_any_declared_aspect_is_caught(op: Op) -> None:
    """The check is not vacuous: take away any aspect a row declares and it is named."""
    spec = OPS[op]
    for aspect in ASPECTS:
        if getattr(spec, aspect) is None:
            continue
        removed: dict[str, Any] = {aspect: None}
        assert aspect in missing_aspects(dataclasses.replace(spec, **removed)), (op, aspect)


def test_cuda_expressions_name_only_their_operands_and_attributes() -> None:
    for op, spec in OPS.items():
        if spec.cuda is None:
            continue
        names = {f for _, f, _, _ in string.Formatter().parse(spec.cuda) if f}
        operands = {"x"} if spec.arity == 1 else {"a", "b"}
        assert names <= operands | set(spec.attrs) and names & operands, (op, spec.cuda)
    for spec in OPS.values():
        if spec.accum is not None and spec.accum.cuda_finalize is not None:
            assert {f for _, f, _, _ in string.Formatter().parse(spec.accum.cuda_finalize) if f} == {"v", "count"}


def test_mutation_families_hold_like_ops() -> None:
    for op in Op:
        spec = OPS[op]
        for sib in mutation_siblings(op):
            assert OPS[sib].mutation_family == spec.mutation_family and OPS[sib].arity == spec.arity, (op, sib)
        assert set(spec.mutation_pairs) <= set(mutation_siblings(op))


def test_side_tables_are_the_declarations() -> None:
    from mirage_lab.absexpr.terms import BINARY, UNARY
    from mirage_lab.codegen.cuda import BINARY_EXPR, EMIT, FINAL_EXPR, UNARY_EXPR
    from mirage_lab.semantics.field import OP_RULES
    from mirage_lab.verify.degree import HEURISTIC_OPS, UNSUPPORTED_OPS
    from mirage_lab.verify.mutate import SIBLINGS

    standing = {op: spec.field.standing for op, spec in OPS.items() if spec.field is not None}
    assert {op for op in Op if standing[op] != "exact"} == HEURISTIC_OPS
    assert {op for op in Op if standing[op] == "unsupported"} == UNSUPPORTED_OPS
    assert all(OP_RULES[op.value] == standing[op] for op in Op if op.value in OP_RULES)
    assert set(UNARY_EXPR) | set(BINARY_EXPR) == {op for op in Op if OPS[op].cuda is not None}
    assert set(FINAL_EXPR) == {op for op, spec in OPS.items() if spec.accum and spec.accum.finalize}
    assert set(EMIT) == set(ops_at(Level.BLOCK))
    assert {OPS[op].term for op in Op if OPS[op].term} == UNARY | BINARY
    assert {op: mutation_siblings(op) for op in Op if mutation_siblings(op)} == SIBLINGS


@pytest.mark.parametrize("op", [o for o in Op if OPS[o].term], ids=lambda o: o.value)
def test_an_ops_term_is_the_head_its_abstract_rule_builds(op: Op) -> None:
    from mirage_lab.absexpr.terms import ALGEBRA, var

    spec = OPS[op]
    assert spec.abstract is not None
    dims = ((4, 4),) * spec.arity
    attrs = {"min": 0.0, "max": 1.0, "scalar": 0.5}
    out = spec.abstract(ALGEBRA, EvalArgs(attrs, dims), *(var(i) for i in range(spec.arity)))
    assert out.head == spec.term


@pytest.mark.parametrize("op", list(Op), ids=lambda o: o.value)
def test_every_ops_builder_method_exists_under_its_declared_name(op: Op) -> None:
    """Each level's builder has the row's method; a generated one takes the row's tensors, then its scalars."""
    import inspect

    import mirage_lab as ml

    rule = OPS[op].builder
    assert rule is not None
    builders = {Level.KERNEL: ml.new_kernel_graph(), Level.BLOCK: ml.new_threadblock_graph((1, 1, 1), forloop_range=1)}
    for level in OPS[op].codes:
        method = getattr(builders[level], rule.method_name(level))
        if rule.generated:
            params = list(inspect.signature(method).parameters)
            assert params == [*rule.tensors, *(p for p, _ in rule.scalars)], (op, params)


def test_generated_methods_take_the_references_names() -> None:
    import inspect

    import mirage_lab as ml

    g = ml.new_kernel_graph()
    assert list(inspect.signature(g.clamp).parameters) == ["A", "min_val", "max_val"]
    assert list(inspect.signature(g.add).parameters) == ["A", "B"]
    tb = ml.new_threadblock_graph((1, 1, 1), forloop_range=1)
    assert list(inspect.signature(tb.mul_scalar).parameters) == ["A", "scalar"]
    assert not hasattr(g, "sub") and hasattr(tb, "sub")  # block level only, as its row says
    x = g.new_input(dims=(4, 4), dtype=ml.float16)
    assert g.clamp(A=x, min_val=0, max_val=6).dims == (4, 4)
    with pytest.raises(ml.MirageError, match=r"min_vall.*did you mean 'min_val'"):
        g.clamp(x, min_vall=0, max_val=6)
