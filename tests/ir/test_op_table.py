"""The op table is the single source of truth: every op is covered everywhere it claims to be."""

from __future__ import annotations

import pytest

from mirage_lab.ir import io
from mirage_lab.ir.ops import ACCUM_NAMES, OPS, Kind, Level, Op, ops_at


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
