"""The oracle: verdicts, explanations, memoisation, limits, and no state shared between searches."""

from __future__ import annotations

import json

import pytest

import mirage_lab as ml
from mirage_lab.absexpr import Limits, Oracle, is_subexpression, parse
from mirage_lab.absexpr.oracle import FAIL, LIMIT, PASS
from mirage_lab.errors import InputError

RMSNORM = "sum(4096, mul(div(v0, rms(4096, v0)), v1))"
ATTENTION = "div(sum(512, mul(exp(sum(64, mul(v0, v1))), v2)), sum(512, exp(sum(64, mul(v0, v1)))))"
SQUARED_SUM = "div(v0, mul(add(v0, v0), add(v0, v1)))"
LORA = "add(sum(4096, mul(v0, v1)), sum(16, mul(sum(4096, mul(v0, v2)), v3)))"

CASES = [  # target, expression, expected, words the explanation must contain
    (RMSNORM, "sum(64, mul(v0, v1))", True, "partial sum"),
    (RMSNORM, "div(sum(4096, mul(v0, v1)), rms(4096, v0))", True, "whole term"),
    (RMSNORM, "rms(4096, v0)", True, "denominator"),
    (RMSNORM, "div(v0, rms(4096, v0))", True, "times v1"),
    (RMSNORM, "exp(v0)", False, "no target applies exp"),
    (RMSNORM, "sum(64, mul(v1, v1))", False, "combines v1 · v1"),
    (RMSNORM, "sum(48, mul(v0, v1))", False, "48 divides none"),
    (RMSNORM, "rms(64, v0)", False, "rms only as: rms(4096, v0)"),
    (RMSNORM, "v2", False, "reads v2"),
    (RMSNORM, "add(v0, v1)", False, "never all of them together"),
    (ATTENTION, "sum(32, exp(sum(64, mul(v0, v1))))", True, "partial sum"),
    (ATTENTION, "sum(128, mul(exp(sum(64, mul(v0, v1))), v2))", True, "partial sum"),
    (ATTENTION, "sum(16, mul(v0, v1))", True, "inside exp(·)"),
    (ATTENTION, "div(sum(128, mul(exp(sum(64, mul(v0, v1))), v2)), sum(512, exp(sum(64, mul(v0, v1)))))", True, ""),
    (ATTENTION, "div(sum(128, mul(exp(sum(64, mul(v0, v1))), v2)), sum(128, exp(sum(64, mul(v0, v1)))))", False,
     "cannot be split off"),
    (ATTENTION, "exp(sum(64, mul(v1, v2)))", False, "exp only as: exp(sum(64, mul(v0, v1)))"),
    (ATTENTION, "sum(64, mul(v0, v2))", False, "combines v0 · v2"),
    (LORA, "sum(64, mul(v0, v2))", True, "times v3"),
    (LORA, "sum(16, mul(v2, v3))", True, "1 of the 2 summands"),  # X(AB) = (XA)B: associativity of matmul
    (LORA, "add(sum(64, mul(v0, v1)), sum(16, mul(sum(64, mul(v0, v2)), v3)))", True, "partial sum"),
    (LORA, "add(sum(64, mul(v0, v1)), sum(16, mul(sum(32, mul(v0, v2)), v3)))", False, "common factor"),
    (LORA, "sum(4096, mul(v0, v3))", True, "times v2"),  # index-free: X·B sits in the monomial X·A·B
    (LORA, "sum(4096, mul(v1, v2))", False, "combines v1 · v2"),
    # a denominator that is a product of sums meets a query that the normal form multiplies out
    (SQUARED_SUM, "mul(add(v0, v0), add(v0, v1))", True, "denominator"),
    (SQUARED_SUM, "mul(v0, add(v0, v1))", True, "denominator"),
    (SQUARED_SUM, "mul(v1, v1)", False, "combines v1 · v1"),
]


@pytest.mark.parametrize("target, expr, expected, words", CASES)
def test_verdicts_and_their_reasons(target: str, expr: str, expected: bool, words: str) -> None:
    v = is_subexpression(parse(expr), parse(target))
    assert v.ok is expected, v.explain()
    assert words in v.reason, v.reason
    assert v.keep is expected and v.status == (PASS if expected else FAIL)
    if expected:
        assert v.rules and v.target == 0
        assert any(r.startswith("sub_") for r in v.rules) or v.reason.endswith("whole term there")


def test_verdicts_are_readable_and_serialisable() -> None:
    v = is_subexpression(parse("sum(64, mul(v0, v1))"), parse(RMSNORM))
    assert repr(v).startswith("Verdict(⊑ target 0: sum(64, mul(v0, v1)); rules ")
    assert "sub_partial_sum: sum(?i, ?x) ⊑ sum(?j, ?x)" in v.explain()
    assert "subexpression" in v._repr_html_() and "&lt;" not in str(v.expr)
    record = json.loads(json.dumps(v.to_dict()))
    assert record["status"] == PASS and record["expr"] == "sum(64, mul(v0, v1))"


def test_queries_are_memoised_per_oracle() -> None:
    o = Oracle.for_program(ml.bench.programs.rmsnorm())
    e = parse("sum(64, mul(v0, v1))")
    first, second = o.check(e), o.check(e)
    assert not first.cached and second.cached and second.status == first.status
    assert o.stats.queries == 2 and o.stats.cache_hits == 1 and o.stats.passed == 1
    assert o(e) is True and o(parse("exp(v0)")) is False
    assert "4 queries, 2 cached, 1 ⊑, 1 ✗" in repr(o)
    frame = o.frame()
    assert list(frame["status"]) == [PASS, FAIL]


def test_no_state_is_shared_between_oracles() -> None:
    """SPEC §11 #4: the reference kept every search's targets in one global list."""
    attention = Oracle((parse(ATTENTION),))
    assert attention(parse("exp(sum(64, mul(v0, v1)))"))
    rmsnorm = Oracle((parse(RMSNORM),))
    assert not rmsnorm(parse("exp(sum(64, mul(v0, v1)))"))
    fresh = Oracle((parse(RMSNORM),))
    assert fresh.check(parse("exp(sum(64, mul(v0, v1)))")).status == FAIL


def test_any_target_may_contain_the_expression() -> None:
    o = Oracle((parse("sum(64, mul(v0, v1))"), parse("exp(v2)")))
    v = o.check(parse("v2"))
    assert v.ok and v.target == 1


def test_a_limit_keeps_the_prefix() -> None:
    big = parse("mul(add(v0, v1), mul(add(v2, v3), add(v4, v5)))")
    o = Oracle((big,), Limits(nodes=4))
    v = o.check(parse("v9"))
    assert v.status == LIMIT and v.keep and v.ok is None
    small = Oracle((parse("v0"),), Limits(nodes=4))
    assert small.check(big).status == LIMIT


def test_bad_targets_are_refused() -> None:
    with pytest.raises(InputError, match="at least one target"):
        Oracle(())
    with pytest.raises(InputError, match="at least one target"):
        Oracle(("sum(64, v0)",))  # type: ignore[arg-type]


def test_audit_lists_every_produced_tensor_with_its_verdict() -> None:
    program = ml.bench.programs.rmsnorm()
    frame = Oracle.for_program(program).audit(ml.bench.fused.rmsnorm())
    assert list(frame.columns) == ["tensor", "level", "op", "expression", "status", "reason"]
    assert len(frame) == 5 and set(frame["status"]) == {PASS}
    assert frame.iloc[-1]["op"] == "customized" and frame.iloc[0]["expression"] == "rms(4096, v0)"
    other = Oracle((parse("exp(v0)"),)).audit(ml.bench.fused.rmsnorm())
    assert set(other["status"]) == {FAIL}
