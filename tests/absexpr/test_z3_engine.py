"""The paper-era SMT subexpression engine (SPEC §5.4), on z3.

z3 proves true containments by E-matching within milliseconds, so PASS cases are asserted
True. It never finds a model of the quantified axioms, so a FAIL case may come back
False or None; what must never happen is True.
"""

from __future__ import annotations

import time

import pytest

pytest.importorskip("z3")

from mirage_lab.absexpr.axioms import Axiom
from mirage_lab.absexpr.engine import Limits
from mirage_lab.absexpr.engines.z3_engine import Z3Engine, _parse_pattern
from mirage_lab.absexpr.terms import parse

# short limits: a PASS proof takes ~1 ms, and without MBQI a FAIL saturates as fast
FAST = Limits(time_s=2.0)

RMS_MLP = "sum(4096, mul(div(v0, rms(4096, v0)), v1))"
RMS_MLP_PASS = ["sum(64, mul(v0, v1))", "sum(4096, mul(v0, v1))", "div(sum(4096, mul(v0, v1)), rms(4096, v0))",
                "rms(4096, v0)", "v0", "v1", "mul(v0, v1)", "div(v0, rms(4096, v0))"]
RMS_MLP_FAIL = ["exp(v0)", "sum(64, mul(v1, v1))", "rms(64, v0)", "v2", "add(v0, v1)"]

ATTENTION = "div(sum(512, mul(exp(sum(64, mul(v0, v1))), v2)), sum(512, exp(sum(64, mul(v0, v1)))))"
ATTENTION_PASS = ["exp(sum(64, mul(v0, v1)))", "sum(32, exp(sum(64, mul(v0, v1))))",
                  "sum(128, mul(exp(sum(64, mul(v0, v1))), v2))"]
ATTENTION_FAIL = ["exp(v0)", "sum(64, mul(v0, v2))", "exp(sum(64, mul(v1, v2)))"]


@pytest.fixture(scope="module")
def rms_mlp() -> Z3Engine:
    return Z3Engine([parse(RMS_MLP)], FAST)


@pytest.fixture(scope="module")
def attention() -> Z3Engine:
    return Z3Engine([parse(ATTENTION)], FAST)


@pytest.mark.parametrize("query", RMS_MLP_PASS)
def test_rms_mlp_subexpressions_are_proved(rms_mlp: Z3Engine, query: str) -> None:
    assert rms_mlp.contains(parse(query)) is True


@pytest.mark.parametrize("query", ATTENTION_PASS)
def test_attention_subexpressions_are_proved(attention: Z3Engine, query: str) -> None:
    assert attention.contains(parse(query)) is True


@pytest.mark.parametrize("query", RMS_MLP_FAIL)
def test_rms_mlp_non_subexpressions_are_never_proved(rms_mlp: Z3Engine, query: str) -> None:
    assert rms_mlp.contains(parse(query)) is not True


@pytest.mark.parametrize("query", ATTENTION_FAIL)
def test_attention_non_subexpressions_are_never_proved(attention: Z3Engine, query: str) -> None:
    assert attention.contains(parse(query)) is not True


def test_non_subexpression_saturates_instead_of_timing_out() -> None:
    # with MBQI off, z3 gives up as soon as E-matching runs dry: a None costs
    # milliseconds, not the whole timeout
    engine = Z3Engine([parse(RMS_MLP)], Limits(time_s=30.0))
    start = time.perf_counter()
    assert engine.contains(parse("exp(v0)")) is None
    assert time.perf_counter() - start < 5.0
    assert engine.stats["saturated"] == 1
    assert "incomplete quantifiers" in engine.last_reason


def test_tiling_degrees_multiply_and_partial_sums_divide() -> None:
    engine = Z3Engine([parse("sum(4096, mul(v0, v1))")], FAST)
    assert engine.contains(parse("sum(64, sum(64, mul(v0, v1)))")) is True  # 64·64 = 4096
    assert engine.contains(parse("mul(sum(64, v0), sum(64, v1))")) is True  # index-free
    assert engine.contains(parse("sum(8, mul(sum(64, v0), v1))")) is True  # 512 | 4096
    assert engine.contains(parse("sum(3, mul(v0, v1))")) is not True  # 3 ∤ 4096
    assert engine.contains(parse("sum(8192, mul(v0, v1))")) is not True


def test_any_target_counts() -> None:
    engine = Z3Engine([parse(RMS_MLP), parse(ATTENTION)], FAST)
    assert engine.contains(parse("rms(4096, v0)")) is True  # only in the first
    assert engine.contains(parse("exp(sum(64, mul(v0, v1)))")) is True  # only in the second
    assert engine.contains(parse("silu(v0)")) is not True


def test_clamp_bounds_are_part_of_the_function() -> None:
    engine = Z3Engine([parse("clamp(0, 6, sum(64, mul(v0, v1)))")], FAST)
    assert engine.contains(parse("clamp(0, 6, sum(64, mul(v1, v0)))")) is True
    assert engine.contains(parse("clamp(0, 5, sum(64, mul(v0, v1)))")) is not True


def test_answers_are_memoised_per_term(rms_mlp: Z3Engine) -> None:
    query = parse("mul(v1, v0)")
    first = rms_mlp.contains(query)
    calls = sum(rms_mlp.stats.values())
    assert rms_mlp.contains(parse("mul(v1, v0)")) is first is True
    assert sum(rms_mlp.stats.values()) == calls  # the interned term hit the memo


def test_engines_do_not_share_state() -> None:
    a = Z3Engine([parse(RMS_MLP)], FAST)
    b = Z3Engine([parse(ATTENTION)], FAST)
    assert a._solver.ctx is not b._solver.ctx
    # rms(4096, v0) is in a's target only, exp(sum(64, mul(v0, v1))) in b's only; asking
    # in interleaved order must not leak one engine's target or memo into the other
    rms_q, exp_q = parse("rms(4096, v0)"), parse("exp(sum(64, mul(v0, v1)))")
    assert a.contains(rms_q) is True
    assert b.contains(rms_q) is not True
    assert b.contains(exp_q) is True
    assert a.contains(exp_q) is not True
    assert set(a._memo) == {rms_q, exp_q} == set(b._memo)


def test_answer_does_not_depend_on_query_order() -> None:
    queries = [parse(q) for q in RMS_MLP_PASS + RMS_MLP_FAIL]
    forward = Z3Engine([parse(RMS_MLP)], FAST)
    backward = Z3Engine([parse(RMS_MLP)], FAST)
    ans_f = {q: forward.contains(q) for q in queries}
    ans_b = {q: backward.contains(q) for q in reversed(queries)}
    assert ans_f == ans_b


def test_reference_compatible_adds_a_derivable_rule_only() -> None:
    plain = Z3Engine([parse(ATTENTION)], FAST)
    compat = Z3Engine([parse(ATTENTION)], FAST, reference_compatible=True)
    assert {a.name for a in compat.axioms} - {a.name for a in plain.axioms} == {"sum_sum_mul"}
    for q in ATTENTION_PASS + ATTENTION_FAIL:
        assert compat.contains(parse(q)) == plain.contains(parse(q))


def test_no_targets_contain_nothing() -> None:
    assert Z3Engine([], FAST).contains(parse("v0")) is False


def test_axiom_patterns_parse_and_unknown_heads_are_rejected() -> None:
    pat = _parse_pattern("sum(?i*?j, ?a)")
    assert pat.name == "sum" and pat.args[0].kind == "arith" and pat.variables() == {"i", "j", "a"}
    engine = Z3Engine([parse("v0")], FAST)
    with pytest.raises(ValueError, match="not a binary op or reduction"):
        engine._compile(Axiom("bogus", "frob(?a)", "=", "?a", frozenset({"smt"}), "no such head"))
