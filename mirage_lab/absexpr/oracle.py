"""The subexpression pruning oracle (SPEC §5.3) with verdicts a person can read.

One ``Oracle`` per search, built from that search's targets (no global state, §11 #4):

    >>> oracle = Oracle.for_program(ml.bench.programs.rmsnorm())
    >>> oracle.check(parse("sum(64, mul(v0, v1))"))
    Verdict(⊑ target 0: sum(64, mul(v0, v1)); rules sub_div_num, sub_partial_sum)

``check`` memoises per expression; ``oracle(e)`` is the boolean the search uses (a
limit keeps the prefix: pruning is a filter, and only a proof may discard).
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mirage_lab.absexpr.axioms import BY_NAME
from mirage_lab.absexpr.engine import Engine, Limits
from mirage_lab.absexpr.explain import explain_failure, explain_match
from mirage_lab.absexpr.normal import LimitReached, Match, Normal, Normalizer, Poly, find
from mirage_lab.absexpr.terms import Term
from mirage_lab.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

PASS, FAIL, LIMIT = "subexpression", "not a subexpression", "limit"


@dataclass(frozen=True)
class Verdict:
    """The answer to "is ``expr`` a subexpression of a target?", with the reasons."""

    expr: Term
    status: str  # PASS, FAIL or LIMIT
    reason: str
    rules: tuple[str, ...] = ()
    target: int | None = None  # which target it was found in
    path: tuple[str, ...] = ()  # where inside that target
    engine: str = "normal"
    elapsed_s: float = 0.0
    cached: bool = False

    @property
    def ok(self) -> bool | None:
        """True: a subexpression; False: proved not one; None: a limit stopped the check."""
        return {PASS: True, FAIL: False}.get(self.status)

    @property
    def keep(self) -> bool:
        """Whether the search keeps the prefix (also when a limit stopped the check)."""
        return self.status != FAIL

    def explain(self) -> str:
        head = {PASS: "✓ subexpression", FAIL: "✗ not a subexpression", LIMIT: "? undecided (limit)"}[self.status]
        lines = [f"{head}: {self.expr}", f"  {self.reason}"]
        if self.rules:
            label = "rules" if self.status == PASS else "the rule that cannot apply"
            lines.append(f"  {label}: " + "; ".join(str(BY_NAME[r]) for r in self.rules))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (for the search's event stream)."""
        return {"expr": str(self.expr), "status": self.status, "reason": self.reason, "rules": list(self.rules),
                "target": self.target, "path": list(self.path), "engine": self.engine,
                "elapsed_s": self.elapsed_s, "cached": self.cached}

    def __repr__(self) -> str:
        where = self.status
        if self.status == PASS:
            where = "⊑ a target" if self.target is None else f"⊑ target {self.target}"
        rules = f"; rules {', '.join(self.rules)}" if self.rules else ""
        return f"Verdict({where}: {self.expr}{rules})"

    def _repr_html_(self) -> str:
        colour = {PASS: "#1a7f37", FAIL: "#cf222e", LIMIT: "#9a6700"}[self.status]
        rules = "".join(f"<li><code>{html.escape(str(BY_NAME[r]))}</code></li>" for r in self.rules)
        return (f"<div><b style='color:{colour}'>{html.escape(self.status)}</b> "
                f"<code>{html.escape(str(self.expr))}</code><br>{html.escape(self.reason)}"
                f"{'<ul>' + rules + '</ul>' if rules else ''}</div>")


@dataclass
class OracleStats:
    queries: int = 0
    cache_hits: int = 0
    passed: int = 0
    failed: int = 0
    limited: int = 0
    seconds: float = 0.0


@dataclass
class Oracle:
    """``is e ⊑ some target`` for one search.

    ``engine`` is "normal" (the default: a normal form, with explanations), "egglog" or "z3" (the
    reference's e-graph and SMT designs, for cross-checks), or an ``Engine`` instance.
    ``reference_compatible`` adds the unsound ``sum_sum_mul`` rewrite to the e-graph engines; the normal
    form implies it anyway (docs/decisions.md).
    """

    targets: tuple[Term, ...]
    limits: Limits = field(default_factory=Limits)
    engine: Engine | str | None = None
    reference_compatible: bool = False
    stats: OracleStats = field(default_factory=OracleStats)

    def __post_init__(self) -> None:
        self.targets = tuple(self.targets)
        if not self.targets or not all(isinstance(t, Term) for t in self.targets):
            raise InputError("an oracle needs at least one target Term; build one with Oracle.for_program(program) "
                             "or absexpr.parse(...)")
        if isinstance(self.engine, str):
            from mirage_lab.absexpr.engines import make_engine

            self.engine = make_engine(self.engine, self.targets, self.limits,
                                      reference_compatible=self.reference_compatible)
        self._normalizer = Normalizer(self.limits)
        self._memo: dict[Term, Verdict] = {}
        self._pairs: dict[tuple[Poly, Poly], Match | None] = {}
        self._target_nf: list[Normal | None] = []
        for t in self.targets:
            try:
                self._target_nf.append(self._normalizer(t))
            except LimitReached:
                self._target_nf.append(None)

    @classmethod
    def for_program(cls, program: Any, **kw: Any) -> Oracle:
        """An oracle whose targets are the program's output expressions."""
        from mirage_lab.absexpr.of_graph import program_targets

        return cls(program_targets(program), **kw)

    def normal_form(self, expr: Term) -> Poly | None:
        """``expr``'s normal form (interned: equal forms are one object), or None past the limits."""
        try:
            return self._normalizer(expr).poly
        except LimitReached:
            return None

    def __call__(self, expr: Term) -> bool:
        return self.check(expr).keep

    def check(self, expr: Term) -> Verdict:
        """Is ``expr`` a subexpression of some target? Memoised per expression."""
        self.stats.queries += 1
        got = self._memo.get(expr)
        if got is not None:
            self.stats.cache_hits += 1
            return Verdict(got.expr, got.status, got.reason, got.rules, got.target, got.path, got.engine,
                           0.0, cached=True)
        t0 = time.perf_counter()
        v = self._decide(expr) if self.engine is None else self._decide_with_engine(expr)
        elapsed = time.perf_counter() - t0
        v = Verdict(v.expr, v.status, v.reason, v.rules, v.target, v.path, v.engine, elapsed)
        self._memo[expr] = v
        self.stats.seconds += elapsed
        self.stats.passed += v.status == PASS
        self.stats.failed += v.status == FAIL
        self.stats.limited += v.status == LIMIT
        return v

    def _decide(self, expr: Term) -> Verdict:
        try:
            e = self._normalizer(expr)
        except LimitReached as why:
            return Verdict(expr, LIMIT, f"the expression could not be normalised: {why}")
        for k, target in enumerate(self._target_nf):
            if target is None:
                continue
            m = find(target.poly, e.poly, self._pairs)
            if m is not None:
                rules = tuple(sorted(e.rules | target.rules | m.rules))
                return Verdict(expr, PASS, explain_match(k, m, e.poly), rules, k, m.path)
        if any(t is None for t in self._target_nf):
            return Verdict(expr, LIMIT, "a target could not be normalised within the limits, so nothing can be "
                           "ruled out; raise Limits.nodes / Limits.time_s")
        polys = [t.poly for t in self._target_nf if t is not None]
        reason, rules = explain_failure(e.poly, polys)
        return Verdict(expr, FAIL, reason, rules)

    def _decide_with_engine(self, expr: Term) -> Verdict:
        assert self.engine is not None and not isinstance(self.engine, str)
        got = self.engine.contains(expr)
        status = {True: PASS, False: FAIL, None: LIMIT}[got]
        return Verdict(expr, status, f"decided by the {self.engine.name} engine", engine=self.engine.name)

    def audit(self, graph: Any) -> pd.DataFrame:
        """Every tensor an op of ``graph`` produces, its expression, and this oracle's verdict on it."""
        import pandas as pd  # here, not at the top: search workers never load pandas

        from mirage_lab.absexpr.of_graph import graph_expressions

        rows = []
        for place, op, e in graph_expressions(graph).produced():
            v = self.check(e)
            rows.append({"tensor": str(place), "level": "kernel" if place.node is None else "block",
                         "op": op.value, "expression": str(e), "status": v.status, "reason": v.reason})
        return pd.DataFrame(rows, columns=["tensor", "level", "op", "expression", "status", "reason"])

    def frame(self) -> pd.DataFrame:
        """Every distinct expression checked so far, with its verdict."""
        import pandas as pd  # here, not at the top: search workers never load pandas
        return pd.DataFrame([{**v.to_dict(), "rules": ", ".join(v.rules)} for v in self._memo.values()])

    def __repr__(self) -> str:
        s = self.stats
        targets = "; ".join(str(t) for t in self.targets)
        return (f"Oracle({len(self.targets)} target(s): {targets[:120]}{'…' if len(targets) > 120 else ''} — "
                f"{s.queries} queries, {s.cache_hits} cached, {s.passed} ⊑, {s.failed} ✗, {s.limited} limit)")


def is_subexpression(expr: Term, target: Term, *, limits: Limits | None = None) -> Verdict:
    """Is ``expr`` ⊑ ``target`` modulo the axioms? A one-off query; searches keep an ``Oracle``."""
    return Oracle((target,), limits or Limits()).check(expr)


OracleFactory = Callable[[Sequence[Term]], Oracle]
