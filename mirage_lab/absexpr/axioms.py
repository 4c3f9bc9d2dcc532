"""The axioms of SPEC §5.4 as named data.

Every rule an engine may use is one ``Axiom`` row, so a pruning decision can say which
rules made it (DESIGN principle 6). Patterns use the term syntax with ``?x``
variables for terms and ``?i``/``?j`` for reduction degrees. ``relation`` is ``"="``
(bidirectional), ``"->"`` (one direction) or ``"<="`` (the subexpression relation ⊑).

Rule sets:

* ``"egraph"`` — the current reference's e-graph rewrites (§5.4), used by the e-graph
  engines. Includes the unsound ``sum_sum_mul`` only when ``reference_compatible``.
* ``"smt"`` — the earlier SMT-era equivalence axioms A_eq.
* ``"normal"`` — what the normal-form engine implements structurally.
* ``"sub"`` — the subexpression axioms A_sub, shared by all engines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Axiom:
    name: str
    lhs: str
    relation: str
    rhs: str
    sets: frozenset[str]
    doc: str
    sound: bool = True

    def __str__(self) -> str:
        sym = {"=": "=", "->": "→", "<=": "⊑"}[self.relation]
        return f"{self.name}: {self.lhs} {sym} {self.rhs}"


def _ax(name: str, lhs: str, rel: str, rhs: str, sets: str, doc: str, sound: bool = True) -> Axiom:
    return Axiom(name, lhs, rel, rhs, frozenset(sets.split()), doc, sound)


AXIOMS: tuple[Axiom, ...] = (
    # ---- equivalence: AC and distributivity
    _ax("add_comm", "add(?a, ?b)", "=", "add(?b, ?a)", "egraph smt normal", "add is commutative"),
    _ax("add_assoc", "add(add(?a, ?b), ?c)", "=", "add(?a, add(?b, ?c))", "egraph smt normal",
        "add is associative"),
    _ax("mul_comm", "mul(?a, ?b)", "=", "mul(?b, ?a)", "egraph smt normal", "mul is commutative"),
    _ax("mul_assoc", "mul(mul(?a, ?b), ?c)", "=", "mul(?a, mul(?b, ?c))", "egraph smt normal",
        "mul is associative"),
    _ax("distrib", "mul(?a, add(?b, ?c))", "=", "add(mul(?a, ?b), mul(?a, ?c))", "egraph smt normal",
        "mul distributes over add (products of sums are expanded)"),
    # ---- equivalence: division
    _ax("div_add", "add(div(?a, ?b), div(?c, ?b))", "=", "div(add(?a, ?c), ?b)", "egraph smt normal",
        "fractions over one denominator add"),
    _ax("mul_div", "mul(?a, div(?b, ?c))", "=", "div(mul(?a, ?b), ?c)", "egraph smt normal",
        "a factor moves into a numerator"),
    _ax("div_div", "div(div(?a, ?b), ?c)", "=", "div(?a, mul(?b, ?c))", "egraph normal",
        "nested denominators multiply"),
    # ---- equivalence: reductions
    _ax("sum_swap", "sum(?i, sum(?j, ?a))", "->", "sum(?j, sum(?i, ?a))", "egraph",
        "nested sums commute"),
    _ax("sum_nest", "sum(?i, sum(?j, ?a))", "=", "sum(?i*?j, ?a)", "smt normal",
        "nested sums merge; degrees multiply (the e-graph gets this from sum_factor)"),
    _ax("sum_factor", "sum(?n, ?a)", "=", "sum(?p, sum(?n/?p, ?a))", "egraph",
        "split off the smallest prime factor ?p of a degree ?n that occurs in the target"),
    _ax("sum_add", "sum(?i, add(?a, ?b))", "=", "add(sum(?i, ?a), sum(?i, ?b))", "egraph smt normal",
        "a sum distributes over add"),
    _ax("sum_mul", "sum(?i, mul(?a, ?b))", "=", "mul(sum(?i, ?a), ?b)", "egraph smt normal",
        "a sum moves onto either factor: the abstraction cannot tell which index is summed"),
    _ax("sum_mul_right", "sum(?i, mul(?a, ?b))", "->", "mul(sum(?i, ?b), ?a)", "egraph",
        "the mirrored form of sum_mul"),
    _ax("sum_div", "sum(?i, div(?a, ?b))", "=", "div(sum(?i, ?a), ?b)", "egraph smt normal",
        "a sum moves into a numerator"),
    _ax("sum_sum_mul", "sum(?i, sum(?j, mul(?a, ?b)))", "=", "mul(sum(?i, ?a), sum(?j, ?b))",
        "reference_compatible",
        "not an identity; derivable from sum_mul in the index-free abstraction anyway", sound=False),
    # ---- subexpression axioms A_sub
    _ax("sub_refl", "?x", "<=", "?x", "sub", "⊑ is reflexive"),
    _ax("sub_trans", "?x", "<=", "?z", "sub", "⊑ is transitive: x ⊑ y and y ⊑ z"),
    _ax("sub_add", "?x", "<=", "add(?x, ?y)", "sub", "a summand is a subexpression"),
    _ax("sub_mul", "?x", "<=", "mul(?x, ?y)", "sub", "a factor is a subexpression"),
    _ax("sub_div_num", "?x", "<=", "div(?x, ?y)", "sub", "a numerator is a subexpression"),
    _ax("sub_div_den", "?y", "<=", "div(?x, ?y)", "sub", "a denominator is a subexpression"),
    _ax("sub_unary", "?x", "<=", "f(?x)", "sub", "the argument of a unary function (and of pow)"),
    _ax("sub_rms", "?x", "<=", "rms(?i, ?x)", "sub", "the argument of rms"),
    _ax("sub_max", "?x", "<=", "max(?i, ?x)", "sub", "[lab] the argument of max"),
    _ax("sub_sum", "?x", "<=", "sum(?i, ?x)", "sub", "the argument of a sum"),
    _ax("sub_partial_sum", "sum(?i, ?x)", "<=", "sum(?j, ?x)", "sub",
        "a partial sum is a subexpression of the full sum when ?i divides ?j"),
    _ax("distinct_inputs", "v_i", "<=", "v_j only if i = j", "sub",
        "distinct inputs are unequal and neither is a subexpression of the other"),
)

BY_NAME: dict[str, Axiom] = {a.name: a for a in AXIOMS}


def rule_set(name: str, *, reference_compatible: bool = False) -> tuple[Axiom, ...]:
    """The axioms of one rule set (see the module doc)."""
    extra = {"reference_compatible"} if reference_compatible and name == "egraph" else set()
    return tuple(a for a in AXIOMS if name in a.sets or a.sets & extra)


def axioms_frame() -> pd.DataFrame:
    """All axioms as a table, for notebooks and docs."""
    import pandas as pd  # here, not at the top: search workers never load pandas
    return pd.DataFrame([{"name": a.name, "rule": f"{a.lhs} {a.relation} {a.rhs}", "sets": " ".join(sorted(a.sets)),
                          "sound": a.sound, "meaning": a.doc} for a in AXIOMS])
