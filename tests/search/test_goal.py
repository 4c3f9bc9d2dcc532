"""Ops no target can use (search/goal.py): only what the oracle would reject everywhere is dropped."""

from __future__ import annotations

import pytest

from mirage_lab.absexpr import parse
from mirage_lab.ir.ops import Op
from mirage_lab.search.goal import foreign_function, function_heads

ATTENTION = parse("div(sum(512, mul(exp(sum(64, mul(v0, v1))), v2)), sum(512, exp(sum(64, mul(v0, v1)))))")


@pytest.mark.parametrize("op, expected", [
    (Op.SILU, "silu"), (Op.RMS_NORM, "rms"), (Op.ACCUM_RMS, "rms"), (Op.RELU, "relu"),
    (Op.EXP, None), (Op.MATMUL, None), (Op.DIV, None), (Op.ACCUM_SUM, None), (Op.ACCUM_NO_RED, None),
])
def test_foreign_functions_of_attention(op: Op, expected: str | None) -> None:
    heads = function_heads([ATTENTION])
    assert heads == {"exp"}
    assert foreign_function(op, {}, op.spec.arity, heads, 64) == expected


def test_a_program_applying_the_function_keeps_the_op() -> None:
    heads = function_heads([parse("sum(64, mul(silu(v0), v1))")])
    assert foreign_function(Op.SILU, {}, 1, heads, 64) is None
    assert foreign_function(Op.EXP, {}, 1, heads, 64) == "exp"
