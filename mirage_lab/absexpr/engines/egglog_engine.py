"""E-graph subexpression engine after the current reference's design (SPEC §5.4), on ``egglog``.

Design (what the reference does, and where this engine differs):

* **One e-graph per target**, built in ``__init__``: the target is inserted and saturated with the
  ``"egraph"`` rule set of :mod:`mirage_lab.absexpr.axioms`. The rewrites are generated from the
  ``Axiom`` rows' pattern strings (``_parse_pattern`` → egglog ``rewrite`` commands); ``"="`` rows give
  both directions, ``"->"`` rows one. The ``sum_factor`` row is a schema: it is instantiated once per
  step of the smallest-prime factor chain of every ``sum`` degree of *that* target, as the reference
  does (degrees of ``rms``/``max`` do not take part; query degrees cannot, as the e-graph is built
  before any query).
* **Budget** (``Limits``): saturation runs one egglog iteration per call, and stops at ``iterations``
  iterations, ``nodes`` e-nodes or ``time_s`` seconds, checked between iterations (like egg's
  ``Runner``: one iteration that explodes is not interrupted).
* **Query** ``contains(e)`` is the reference's ``lookup_expr``: e passes iff every node of e is an e-node
  of the e-graph, bottom-up (so e is represented by some e-class). No rewriting happens on the query
  side and the e-graph is never modified after the build, so the class ids found are memoised per Term.
  Every e-class of a target's e-graph is reachable from the target's root (a rewrite only ever adds its
  right-hand side under an already reachable class), so "represented" is "a subterm of an equivalent
  form of the target", and the A_sub rules ``x ⊑ f(x)``, ``x ⊑ x+y``, …, reflexivity and transitivity
  hold by construction. Distinct inputs are distinct ``V`` e-nodes and never merge (no rule equates them).
  In a saturated e-graph the lookup decides exactly; rewriting the query first would add nothing,
  because every rule here is (effectively) reversible.
* **[lab] additions**, which only ever turn a reference "no" into "yes" (the engine accepts a superset of
  what the reference accepts, so ``reference_compatible`` reachability still covers the reference's):

  - *partial sums* (A_sub ``sub_partial_sum``): ``sum(i1, x)`` also passes when ``sum(i2, x)`` is
    represented for a degree i2 of the e-graph that i1 divides. The reference relies on the factor chain
    alone, which misses e.g. ``sum(4, x)`` against ``sum(3072, x)`` (3072's chain is 1536, 768, …, 6, 3);
  - *merged nests*: if ``e`` itself is not represented, its form with every nest ``sum(a, sum(b, x))``
    merged to ``sum(a·b, x)`` (the A_eq rule ``sum_nest``) is tried too, with the partial-sum relaxation.
    The smallest-prime factor rules cannot split 3072 as 48·64, so the reference prunes a tiled matmul
    ``sum(48, sum(64, mul(a, b)))`` against ``sum(3072, mul(a, b))``; this engine keeps it.

* **Answers at a limit**: a represented e is a definite ``True`` even in an unsaturated e-graph (it only
  holds forms equivalent to the target). A miss is a definite ``False`` only when every target's e-graph
  saturated; otherwise ``contains`` answers ``None`` ("a limit stopped it"). The reference treats that case
  as "no" (it looks up whatever the e-graph holds at the limit); callers that want the reference's
  behaviour map ``None`` to ``False``. ``reports`` records, per target, why saturation stopped.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from egglog import bindings

from mirage_lab.absexpr.axioms import Axiom, rule_set
from mirage_lab.absexpr.engine import Limits
from mirage_lab.absexpr.terms import BINARY, REDUCE, UNARY, Term, make, sum_

#: egglog constructor of each Term head; unary functions share ``Un`` with the function's name (and
#: parametrised ones' parameters) as a string, so adding a unary function to the language needs no change here
_CTOR: Final = {"input": "V", "add": "Add", "mul": "Mul", "div": "Div", "pow": "Pow",
                "sum": "Sum", "rms": "Rms", "max": "Max"}
_UNARY_CTOR: Final = "Un"
_DATATYPE: Final = ("(datatype Expr (V i64) (Add Expr Expr) (Mul Expr Expr) (Div Expr Expr) (Pow Expr Expr)"
                    f" ({_UNARY_CTOR} String Expr) (Sum i64 Expr) (Rms i64 Expr) (Max i64 Expr))")
_RULESET: Final = "eq"
_RUN_ONE: Final = f"(run-schedule (run {_RULESET}))"
_REFERENCE_LIMITS: Final = Limits()  # the reference's budget (10 s, 100 000 nodes, 100 000 iterations)

#: A_sub rows that the lookup realises structurally (see the module doc); a new row of the "sub" set must
#: be looked at before this engine can claim to implement the set
_SUB_REALISED: Final = frozenset({
    "sub_refl", "sub_trans", "sub_add", "sub_mul", "sub_div_num", "sub_div_den", "sub_unary", "sub_rms",
    "sub_max", "sub_sum", "sub_partial_sum", "distinct_inputs",
})
#: the schema row, instantiated per factor-chain step (m, p) by fixing its variables ?n = m and ?p = p
_FACTOR_SCHEMA: Final = "sum_factor"


# --------------------------------------------------------------------------- axiom patterns → egglog


@dataclass(frozen=True)
class _Pat:
    """A parsed axiom pattern: ``var`` (``?x``), ``num``, ``arith`` (degree ``*``/``/``) or ``call``."""

    kind: str
    name: str = ""  # variable name, call head, or arith operator
    value: int = 0
    args: tuple[_Pat, ...] = ()


_PAT_TOKEN = re.compile(r"\s*(?:(\?[a-z]\w*)|([a-z_]+)|(\d+)|([()*/,]))")


def _parse_pattern(text: str) -> _Pat:
    """Read an ``Axiom`` pattern such as ``sum(?p, sum(?n/?p, ?a))``."""
    tokens: list[str] = []
    pos, text = 0, text.strip()
    while pos < len(text):
        m = _PAT_TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot read axiom pattern {text!r} at {text[pos:pos + 10]!r}")
        tokens.append(m.group().strip())
        pos = m.end()

    def primary(i: int) -> tuple[int, _Pat]:
        tok = tokens[i]
        if tok.startswith("?"):
            return i + 1, _Pat("var", tok[1:])
        if tok.isdigit():
            return i + 1, _Pat("num", value=int(tok))
        if i + 1 < len(tokens) and tokens[i + 1] == "(":
            args: list[_Pat] = []
            i += 2
            while True:
                i, a = expr(i)
                args.append(a)
                if tokens[i] == ")":
                    return i + 1, _Pat("call", tok, args=tuple(args))
                if tokens[i] != ",":
                    raise ValueError(f"expected ',' or ')' in axiom pattern {text!r}")
                i += 1
        raise ValueError(f"unexpected {tok!r} in axiom pattern {text!r}")

    def expr(i: int) -> tuple[int, _Pat]:
        i, left = primary(i)
        while i < len(tokens) and tokens[i] in "*/":
            op = tokens[i]
            i, right = primary(i + 1)
            left = _Pat("arith", op, args=(left, right))
        return i, left

    try:
        end, pat = expr(0)
    except IndexError:
        raise ValueError(f"axiom pattern {text!r} ends too early") from None
    if end != len(tokens):
        raise ValueError(f"unexpected {tokens[end]!r} after axiom pattern {text!r}")
    return pat


def _substitute(p: _Pat, values: dict[str, int]) -> _Pat:
    """Fix schema variables to numbers and fold the degree arithmetic that becomes constant."""
    if p.kind == "var":
        return _Pat("num", value=values[p.name]) if p.name in values else p
    if p.kind == "num":
        return p
    args = tuple(_substitute(a, values) for a in p.args)
    if p.kind == "arith" and all(a.kind == "num" for a in args):
        x, y = args[0].value, args[1].value
        if p.name == "/" and x % y:
            raise ValueError(f"schema instance {x}/{y} is not an integer degree")
        return _Pat("num", value=x * y if p.name == "*" else x // y)
    return _Pat(p.kind, p.name, p.value, args)


def _to_egglog(p: _Pat, names: dict[str, str], *, lhs: bool) -> str:
    """egglog s-expression of a pattern; ``names`` renames pattern variables (canonically, for dedup)."""
    if p.kind == "var":
        return names.setdefault(p.name, f"x{len(names)}")
    if p.kind == "num":
        return str(p.value)
    if p.kind == "arith":
        if lhs:  # egglog cannot match on computed primitives
            raise ValueError("degree arithmetic may only appear on a rule's right-hand side")
        op = "*" if p.name == "*" else "/"
        return f"({op} {_to_egglog(p.args[0], names, lhs=lhs)} {_to_egglog(p.args[1], names, lhs=lhs)})"
    args = " ".join(_to_egglog(a, names, lhs=lhs) for a in p.args)
    if p.name in _CTOR:
        return f"({_CTOR[p.name]} {args})"
    if p.name in UNARY:
        return f'({_UNARY_CTOR} "{p.name}" {args})'
    raise ValueError(f"axiom pattern head {p.name!r} has no egglog constructor")


def _rewrites(ax: Axiom, values: dict[str, int] | None = None) -> list[str]:
    """The egglog rewrite commands of one axiom row (or one instance of a schema row)."""
    lhs, rhs = _parse_pattern(ax.lhs), _parse_pattern(ax.rhs)
    if values is not None:
        lhs, rhs = _substitute(lhs, values), _substitute(rhs, values)
    directions = [(lhs, rhs)] + ([(rhs, lhs)] if ax.relation == "=" else [])
    out = []
    for a, b in directions:
        names: dict[str, str] = {}
        left = _to_egglog(a, names, lhs=True)
        out.append(f"(rewrite {left} {_to_egglog(b, names, lhs=False)} :ruleset {_RULESET})")
    return out


def _smallest_prime(n: int) -> int:
    for p in range(2, math.isqrt(n) + 1):
        if n % p == 0:
            return p
    return n


def _factor_chain(n: int) -> list[tuple[int, int]]:
    """``[(m, p), …]``: m = n, then each successive quotient m/p, while m is composite; p its smallest prime."""
    chain = []
    while n > 1 and (p := _smallest_prime(n)) != n:
        chain.append((n, p))
        n //= p
    return chain


def _sum_degrees(t: Term) -> set[int]:
    return {s.degree for s in t.subterms() if s.head == "sum"}


# --------------------------------------------------------------------------- one target's e-graph


@dataclass
class SaturationReport:
    """How one target's e-graph was built."""

    target: Term
    rules: int  # egglog rewrite commands
    iterations: int
    nodes: int  # e-nodes (rows of the constructor tables) at the end
    seconds: float
    stop: str  # "saturated", "iterations", "nodes" or "time"
    matches: dict[str, int] = field(default_factory=dict)  # axiom name → rule matches over the run

    @property
    def saturated(self) -> bool:
        return self.stop == "saturated"


class _TargetGraph:
    """A saturated (or budget-stopped) e-graph of one target and a memoised bottom-up lookup into it."""

    def __init__(self, target: Term, axioms: Sequence[Axiom], limits: Limits) -> None:
        self.egraph = bindings.EGraph()
        # every degree a Sum e-node can carry: the target's own and the factor chains' quotients and primes
        self.sum_degrees: set[int] = set()
        rule_of: dict[str, str] = {}  # rewrite text → axiom name (egglog reports matches by rule text)
        for ax in axioms:
            if ax.name == _FACTOR_SCHEMA:
                for n in _sum_degrees(target):
                    for m, p in _factor_chain(n):
                        self.sum_degrees.update((m, p, m // p))
                        for r in _rewrites(ax, {"n": m, "p": p}):
                            rule_of.setdefault(r, ax.name)
            else:
                for r in _rewrites(ax):
                    rule_of.setdefault(r, ax.name)  # a symmetric row (add_comm) yields one rule, not two
        self.sum_degrees |= _sum_degrees(target)
        self.program = "\n".join([_DATATYPE, f"(ruleset {_RULESET})", *rule_of, _insert_program(target)])
        self._run(self.program)
        self._i64: dict[int, bindings.Value] = {}
        self._str: dict[str, bindings.Value] = {}
        self._classes: dict[Term, bindings.Value | None] = {}
        self.report = self._saturate(target, rule_of, limits)

    def _run(self, program: str) -> list[bindings._CommandOutput]:
        return self.egraph.run_program(*self.egraph.parse_program(program))

    def _size(self) -> int:
        (out,) = self._run("(print-size)")
        assert isinstance(out, bindings.PrintAllFunctionsSize)
        return sum(n for name, n in out.sizes if name in _CTOR.values() or name == _UNARY_CTOR)

    def _saturate(self, target: Term, rule_of: dict[str, str], limits: Limits) -> SaturationReport:
        start = time.perf_counter()
        iterations, nodes, stop = 0, self._size(), "saturated"
        matches: dict[str, int] = {}
        while True:
            if iterations >= limits.iterations:
                stop = "iterations"
                break
            if nodes >= limits.nodes:
                stop = "nodes"
                break
            if time.perf_counter() - start >= limits.time_s:
                stop = "time"
                break
            (out,) = self._run(_RUN_ONE)
            assert isinstance(out, bindings.RunScheduleOutput)
            iterations += 1
            for rule, k in out.report.num_matches_per_rule.items():
                name = rule_of.get(rule, rule)
                matches[name] = matches.get(name, 0) + k
            nodes = self._size()
            if not out.report.updated:
                break
        return SaturationReport(target, len(rule_of), iterations, nodes, time.perf_counter() - start, stop, matches)

    # ---- lookup: the reference's `lookup_expr`

    def _int(self, n: int) -> bindings.Value:
        v = self._i64.get(n)
        if v is None:
            v = self._i64[n] = self.egraph.eval_expr(bindings.Lit(bindings.PanicSpan(), bindings.Int(n)))[1]
        return v

    def _string(self, s: str) -> bindings.Value:
        v = self._str.get(s)
        if v is None:
            v = self._str[s] = self.egraph.eval_expr(bindings.Lit(bindings.PanicSpan(), bindings.String(s)))[1]
        return v

    def eclass(self, t: Term) -> bindings.Value | None:
        """The e-class representing t, or None when some node of t is not in the e-graph."""
        if t in self._classes:
            return self._classes[t]
        cls: bindings.Value | None = None
        if t.head == "input":
            cls = self.egraph.lookup_function("V", [self._int(int(t.param[0]))])
        else:
            kids = [self.eclass(a) for a in t.args]
            if all(k is not None for k in kids):
                key: list[bindings.Value] = [k for k in kids if k is not None]
                if t.head in REDUCE:
                    cls = self.egraph.lookup_function(_CTOR[t.head], [self._int(t.degree), *key])
                elif t.head in UNARY:
                    cls = self.egraph.lookup_function(_UNARY_CTOR, [self._string(_unary_key(t)), *key])
                else:
                    cls = self.egraph.lookup_function(_CTOR[t.head], key)
        self._classes[t] = cls
        return cls

    def has_partial_sum(self, t: Term) -> bool:
        """t = sum(i1, x) and sum(i2, x) is represented for a degree i2 ≠ i1 of the e-graph that i1 divides."""
        if t.head != "sum":
            return False
        x = self.eclass(t.args[0])
        if x is None:
            return False
        return any(d != t.degree and d % t.degree == 0 and self.egraph.lookup_function("Sum", [self._int(d), x])
                   is not None for d in self.sum_degrees)


def _unary_key(t: Term) -> str:
    return t.head if not t.param else f"{t.head}({','.join(repr(p) for p in t.param)})"


def _insert_program(target: Term) -> str:
    """egglog actions that add the target, one ``let`` per distinct subterm so shared subterms stay shared."""
    names: dict[Term, str] = {}
    lines = []

    def visit(t: Term) -> None:  # post-order, so children are named before their parents
        if t in names:
            return
        for a in t.args:
            visit(a)
        if t.head == "input":
            body = f"(V {int(t.param[0])})"
        elif t.head in REDUCE:
            body = f"({_CTOR[t.head]} {t.degree} {names[t.args[0]]})"
        elif t.head in UNARY:
            body = f'({_UNARY_CTOR} "{_unary_key(t)}" {names[t.args[0]]})'
        else:
            assert t.head in BINARY
            body = f"({_CTOR[t.head]} {' '.join(names[a] for a in t.args)})"
        names[t] = f"$t{len(names)}"
        lines.append(f"(let {names[t]} {body})")

    visit(target)
    return "\n".join(lines)


def _merge_nests(t: Term, memo: dict[Term, Term]) -> Term:
    """t with every ``sum(a, sum(b, x))`` merged into ``sum(a·b, x)`` (A_eq ``sum_nest``)."""
    out = memo.get(t)
    if out is None:
        args = tuple(_merge_nests(a, memo) for a in t.args)
        if t.head == "sum" and args[0].head == "sum":
            out = sum_(t.degree * args[0].degree, args[0].args[0])
        elif args == t.args:
            out = t
        else:
            out = make(t.head, args, t.param)
        memo[t] = out
    return out


# --------------------------------------------------------------------------- the engine


class EgglogEngine:
    """``contains(e)``: is e a subexpression of some target, by the reference's e-graph design (module doc)."""

    name = "egglog"

    def __init__(self, targets: Sequence[Term], limits: Limits = _REFERENCE_LIMITS, *,
                 reference_compatible: bool = False) -> None:
        axioms = rule_set("egraph", reference_compatible=reference_compatible)
        unknown = {a.name for a in rule_set("sub")} - _SUB_REALISED
        if unknown:
            raise ValueError(f"EgglogEngine does not implement the subexpression axioms {sorted(unknown)}")
        self.limits = limits
        self.reference_compatible = reference_compatible
        self.targets = tuple(targets)
        self._graphs = [_TargetGraph(t, axioms, limits) for t in self.targets]
        self.reports: list[SaturationReport] = [g.report for g in self._graphs]
        self._complete = all(r.saturated for r in self.reports)
        self._memo: dict[Term, bool | None] = {}
        self._merged: dict[Term, Term] = {}
        self.hits = 0  # memoised answers, for the benchmarks

    def contains(self, expr: Term) -> bool | None:
        if expr in self._memo:
            self.hits += 1
            return self._memo[expr]
        found = self._found(expr)
        answer: bool | None = True if found else (False if self._complete else None)
        self._memo[expr] = answer
        return answer

    def _found(self, expr: Term) -> bool:
        forms = [expr]
        merged = _merge_nests(expr, self._merged)
        if merged is not expr:
            forms.append(merged)
        return any(g.eclass(f) is not None or g.has_partial_sum(f) for f in forms for g in self._graphs)
