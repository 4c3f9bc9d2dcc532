"""The normal form implements exactly the axioms it claims (axioms.py, set "normal")."""

from __future__ import annotations

import re
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirage_lab.absexpr.axioms import AXIOMS, rule_set
from mirage_lab.absexpr.engine import Limits
from mirage_lab.absexpr.normal import LimitReached, Normalizer, to_term
from mirage_lab.absexpr.oracle import is_subexpression
from mirage_lab.absexpr.terms import Term, parse
from tests.absexpr.strategies import terms

#: operands to instantiate the axioms with: atoms, products, sums, fractions, nested reductions
OPERANDS = ["v0", "v1", "exp(v2)", "mul(v0, v1)", "add(v1, v2)", "sum(8, mul(v0, v3))", "div(v1, v3)",
            "add(mul(v0, v1), div(v2, v3))", "rms(64, v0)"]
DEGREES = [2, 4, 64]


def instantiate(pattern: str, binding: dict[str, str]) -> Term:
    text = re.sub(r"\?[a-z]\*\?[a-z]", lambda m: str(int(binding[m.group()[:2]]) * int(binding[m.group()[3:]])),
                  pattern)
    return parse(re.sub(r"\?[a-z]", lambda m: binding[m.group()], text))


def bindings(seed: int, count: int) -> list[dict[str, str]]:
    import random

    rng = random.Random(seed)
    return [{**{v: rng.choice(OPERANDS) for v in ("?a", "?b", "?c")},
             **{v: str(rng.choice(DEGREES)) for v in ("?i", "?j")}} for _ in range(count)]


NORMAL_EQUALITIES = [a for a in rule_set("normal") if a.relation == "="]


def test_the_normal_set_is_what_the_normal_form_implements() -> None:
    names = {a.name for a in NORMAL_EQUALITIES}
    assert names == {"add_comm", "add_assoc", "mul_comm", "mul_assoc", "distrib", "div_add", "mul_div", "div_div",
                     "sum_nest", "sum_add", "sum_mul", "sum_div"}


@pytest.mark.parametrize("axiom", NORMAL_EQUALITIES, ids=lambda a: a.name)
def test_each_axiom_holds_in_the_normal_form(axiom) -> None:  # type: ignore[no-untyped-def]
    norm = Normalizer()
    for b in bindings(zlib.crc32(axiom.name.encode()), 40):
        lhs, rhs = instantiate(axiom.lhs, b), instantiate(axiom.rhs, b)
        assert norm(lhs).poly is norm(rhs).poly, (axiom.name, str(lhs), str(rhs))


@pytest.mark.parametrize("a, b", [
    ("add(v0, v1)", "mul(v0, v1)"),
    ("sum(64, v0)", "sum(32, v0)"),
    ("div(v0, div(v1, v2))", "div(mul(v0, v2), v1)"),  # no axiom inverts a denominator's fraction
    ("exp(add(v0, v1))", "mul(exp(v0), exp(v1))"),  # functions are opaque
    ("rms(64, v0)", "sum(64, v0)"),
    ("div(sum(4, v0), v1)", "sum(4, div(v0, v1))"),  # equal, as the control for the next line
    ("div(v0, sum(4, v1))", "sum(4, div(v0, v1))"),  # but a sum never leaves a denominator
    ("add(v0, v0)", "v0"),  # no constants: x + x is not x
])
def test_inequivalent_terms_stay_apart(a: str, b: str) -> None:
    same = Normalizer()(parse(a)).poly is Normalizer()(parse(b)).poly
    assert same == (a == "div(sum(4, v0), v1)")


@settings(max_examples=200, deadline=None)
@given(terms())
def test_normal_form_is_a_term_of_the_same_class(t: Term) -> None:
    """Printing a normal form back as a term and normalising again is the identity."""
    norm = Normalizer()
    p = norm(t).poly
    assert norm(to_term(p)).poly is p


@settings(max_examples=200, deadline=None)
@given(terms(), st.data())
def test_every_syntactic_subterm_passes(t: Term, data: st.DataObject) -> None:
    """Completeness on the simplest case: a subterm is a subexpression (``sub_*`` axioms, sub_trans)."""
    s = data.draw(st.sampled_from(sorted(t.subterms(), key=lambda x: x.serial)))
    v = is_subexpression(s, t)
    assert v.ok, v.explain()


def test_limits_stop_expansion() -> None:
    big = parse("mul(add(v0, v1), mul(add(v2, v3), mul(add(v4, v5), add(v6, v7))))")  # 16 monomials
    assert len(Normalizer()(big).poly) == 16
    with pytest.raises(LimitReached, match="16 monomials"):
        Normalizer(Limits(nodes=10))(big)
    v = is_subexpression(parse("v0"), big, limits=Limits(nodes=10))
    assert v.ok is None and v.keep and "raise Limits.nodes" in v.reason


def test_every_axiom_is_documented_and_named_once() -> None:
    assert len({a.name for a in AXIOMS}) == len(AXIOMS)
    assert all(a.doc and a.relation in ("=", "->", "<=") for a in AXIOMS)
    assert [a.name for a in AXIOMS if not a.sound] == ["sum_sum_mul"]
    assert "sum_sum_mul" in {a.name for a in rule_set("egraph", reference_compatible=True)}
    assert "sum_sum_mul" not in {a.name for a in rule_set("egraph")}
