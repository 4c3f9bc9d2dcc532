"""Hash-consed terms: identity equality, the text form, and hostile input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from mirage_lab.absexpr.terms import div, mul, parse, reduce, rms, sum_, unary, var
from mirage_lab.errors import InputError
from tests.absexpr.strategies import terms


def test_equal_terms_are_one_object() -> None:
    a = sum_(64, mul(var(0), var(1)))
    b = parse("sum(64, mul(v0, v1))")
    assert a is b and a == b and hash(a) == hash(b)
    assert a is not sum_(64, mul(var(1), var(0)))  # interning is syntactic; the axioms are the oracle's job


def test_sum_over_one_element_is_the_term() -> None:
    assert sum_(1, var(3)) is var(3)
    assert rms(1, var(3)) is not var(3)  # rms(1, x) = |x|, not x


def test_readable_forms() -> None:
    t = div(var(0), rms(4096, var(0)))
    assert str(t) == "div(v0, rms(4096, v0))" and repr(t) == "Term(div(v0, rms(4096, v0)))"
    assert str(unary("clamp", var(0), (-1.5, 2.0))) == "clamp(-1.5, 2, v0)"
    assert t.inputs() == {0} and t.size == 3 and rms(4096, var(0)).degree == 4096


@settings(max_examples=150, deadline=None)
@given(terms())
def test_text_round_trip(t) -> None:  # type: ignore[no-untyped-def]
    assert parse(str(t)) is t


@pytest.mark.parametrize("text, words", [
    ("", "ends too early"),
    ("sum(64, mul(v0, v1)", "missing ')'"),
    ("mul(v0)", "takes 0 number(s) and 2"),
    ("sum(v0)", "takes 1 number(s) and 1"),
    ("frobnicate(v0)", "unknown function 'frobnicate'"),
    ("input(v0)", "unknown function 'input'"),
    ("sum(0, v0)", "degree must be ≥ 1"),
    ("v0 v1", "unexpected 'v1'"),
    ("mul(v0; v1)", "cannot read"),
    ("__import__('os')", "cannot read"),
    ("x" * 200_000, "at most"),
])
def test_bad_text_names_the_problem(text: str, words: str) -> None:
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")):
        parse(text)


def test_unknown_unary_is_refused() -> None:
    with pytest.raises(InputError, match="not a unary function"):
        unary("cosh", var(0))
    with pytest.raises(InputError, match="≥ 1"):
        reduce("sum", -4, var(0))
