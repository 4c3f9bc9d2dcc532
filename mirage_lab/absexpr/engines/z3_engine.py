"""The paper-era SMT subexpression engine (SPEC §5.4, first paragraphs), on z3.

The earlier Mirage decided "is e ⊑ E?" by refutation: assert the axioms A_eq and A_sub
as quantified formulas over an uninterpreted sort of expressions, assert ``¬(e ⊑ E)``
and ask the solver. *unsat* means e ⊑ E holds under the axioms; *sat* means there is a
model of the axioms in which it does not; *unknown* (a timeout, or z3 giving up on the
quantifiers) is reported as ``None``. This engine rebuilds that design:

* **Signature.** One uninterpreted sort ``Expr``; each input ``v_i`` is a constant; each
  binary head (add, mul, div, pow) and each unary function is an uninterpreted function
  ``Expr → Expr``. ``clamp(lo, hi, ·)`` gets one function per (lo, hi), its parameters
  folded into the name (``clamp[0.0,6.0]``), since the axioms never look inside them.
  ``sum``, ``rms`` and ``max`` are ``Int × Expr → Expr``. ``subexpr`` is a predicate
  ``Expr × Expr → Bool``.
* **Degrees are the reduction sizes n themselves, and nesting multiplies them**
  (``sum(i, sum(j, x)) = sum(i·j, x)``, the ``sum_nest`` row). The SMT-era code stored
  ⌈log2 n⌉ and added, which is exact only for powers of two (3·5 = 15 but
  ⌈log2 3⌉ + ⌈log2 5⌉ = 5 ≠ ⌈log2 15⌉ = 4) and made sum(3, ·) and sum(4, ·)
  indistinguishable. Under E-matching the products are of numerals only (``i`` and
  ``j`` are bound to the literals of existing terms), so no nonlinear reasoning is needed.
* **Partial sums** ``sum(i, x) ⊑ sum(j, x)`` hold when **i divides j**, the
  ``sub_partial_sum`` row of ``axioms.py`` (the SMT-era code used i ≤ j on log-degrees).
  Divisibility is what a tiled reduction produces (a tile of k_tile out of K, then F
  tiles); i ≤ j would also admit, e.g., sum(3, x) ⊑ sum(4, x).
* **Axioms are generated from the rows of** :mod:`mirage_lab.absexpr.axioms`
  (``rule_set("smt")`` and ``rule_set("sub")``): their pattern strings are parsed into
  quantified z3 formulas. Five rows cannot be read off their strings and are compiled by
  name: ``sub_refl`` (a bare variable cannot trigger; it triggers on ``subexpr(x, x)``),
  ``sub_trans`` (its text says only "x ⊑ z"), ``sub_unary`` (``f`` ranges over every
  unary function, and over both operands of pow, i.e. every syntactic argument),
  ``sub_partial_sum`` (its side condition lives in the doc) and ``distinct_inputs``
  (ground facts about the inputs that occur). A row this module cannot compile raises,
  so a new axiom is never silently dropped. ``sum(1, x) = x`` is added as the
  definition of the language (terms.py already applies it when building terms).
* **Triggers.** Every quantifier gets explicit patterns so that E-matching only
  instantiates over terms already present: an equation triggers on each side that
  is a plain application (not a bare variable, no arithmetic — z3 rejects ``*`` in a
  pattern, so ``sum_nest`` fires only left to right, which merges nests and never
  invents factorisations); ``x ⊑ f(x)`` triggers on ``f(x)``; transitivity and partial
  sums use multi-patterns. No axiom has a unit or a cancellation, so the terms E-matching
  can create from the target and the query are finitely many rearrangements of them
  and the closure saturates — but AC closure of a large term is exponential, hence the
  limits: ``limits.time_s`` per query and ``limits.nodes`` quantifier instances per query
  (deterministic, unlike the clock; ``limits.iterations`` is unused).
* **MBQI is off** (class attribute ``mbqi``; the SMT-era code had it on, with a small
  ``rlimit``). Model-based instantiation is what could in principle produce *sat*, but
  on these axioms it never did in our runs (not even for ``v1 ⊑ v0``, 30 s; nor with the
  ``Expr`` sort bounded to 3–6 elements, where a 4-element countermodel exists): it only
  burned the whole timeout and proved nothing E-matching did not. With it off, z3 stops as
  soon as E-matching saturates and says "incomplete quantifiers".
* **Queries.** Each engine has its own ``z3.Context`` and ``Solver`` (no global state).
  The axioms and target facts sit at the base level; one query pushes a scope, asserts
  ``¬(e ⊑ E_k)`` for every target ``E_k`` (unsat ⇔ e ⊑ some target), checks under
  ``limits.time_s`` and pops, so an answer does not depend on earlier queries' terms.
  Answers (including ``None``) are memoised per interned :class:`Term`.

Limitations: true containments are proved in about a millisecond, but a refutation
needs a model of the quantified axioms, which z3 does not find, so in practice the
engine answers True or ``None``, never False. ``stats`` separates the two kinds of
``None``: ``saturated`` (E-matching exhausted every instance without a proof: "not a
subexpression as far as the triggers can see", also in about a millisecond) and
``limit`` (a resource limit hit first). The SMT-era code returned ``check() == unsat``,
i.e. pruned on *unknown*; a pruner that wants that behaviour treats ``None`` as False,
one that wants to keep everything not refuted treats it as True. E-matching never
invents a term, so ``sum_nest`` is never used to *split* a degree; the tiling cases the
e-graph's factor rules exist for still pass here, because the query's own nest merges
(``sum(64, sum(64, x)) = sum(4096, x)``) and ``sub_partial_sum`` relates the rest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

import z3

from mirage_lab.absexpr.axioms import AXIOMS, Axiom, rule_set
from mirage_lab.absexpr.engine import Limits
from mirage_lab.absexpr.terms import BINARY, PARAMETRISED, REDUCE, UNARY, Term

#: rows compiled by name, because their pattern strings do not carry their meaning
_SPECIAL: Final = frozenset({"sub_refl", "sub_trans", "sub_unary", "sub_partial_sum", "distinct_inputs"})

_TOKEN = re.compile(r"\s*(\?[a-z]\w*|[a-z_]+|\d+|[(),*/])")


# --------------------------------------------------------------------------- pattern strings


@dataclass(frozen=True)
class _Pat:
    """A parsed pattern string: a variable, an integer, ``op(args)`` or degree arithmetic."""

    kind: str  # "var" | "int" | "app" | "arith"
    name: str  # variable name, head, or "*"/"/"
    args: tuple[_Pat, ...] = ()
    value: int = 0

    def variables(self) -> set[str]:
        if self.kind == "var":
            return {self.name}
        return set().union(*(a.variables() for a in self.args)) if self.args else set()

    def has_arith(self) -> bool:
        return self.kind == "arith" or any(a.has_arith() for a in self.args)


def _parse_pattern(text: str) -> _Pat:
    tokens = _TOKEN.findall(text)
    if "".join(tokens) != re.sub(r"\s+", "", text):
        raise ValueError(f"cannot read axiom pattern {text!r}")
    pos, pat = _parse_degree(tokens, 0, text)
    if pos != len(tokens):
        raise ValueError(f"trailing {tokens[pos:]} in axiom pattern {text!r}")
    return pat


def _parse_degree(tokens: list[str], pos: int, text: str) -> tuple[int, _Pat]:
    """``atom (('*' | '/') atom)*`` — arithmetic only appears in reduction degrees."""
    pos, left = _parse_atom(tokens, pos, text)
    while pos < len(tokens) and tokens[pos] in "*/":
        op = tokens[pos]
        pos, right = _parse_atom(tokens, pos + 1, text)
        left = _Pat("arith", op, (left, right))
    return pos, left


def _parse_atom(tokens: list[str], pos: int, text: str) -> tuple[int, _Pat]:
    if pos >= len(tokens):
        raise ValueError(f"axiom pattern {text!r} ends too early")
    tok = tokens[pos]
    if tok.startswith("?"):
        return pos + 1, _Pat("var", tok[1:])
    if tok.isdigit():
        return pos + 1, _Pat("int", tok, value=int(tok))
    if pos + 1 >= len(tokens) or tokens[pos + 1] != "(":
        raise ValueError(f"{tok!r} must be followed by '(' in axiom pattern {text!r}")
    pos += 2
    args: list[_Pat] = []
    while True:
        pos, a = _parse_degree(tokens, pos, text)
        args.append(a)
        if pos >= len(tokens):
            raise ValueError(f"missing ')' in axiom pattern {text!r}")
        if tokens[pos] == ")":
            return pos + 1, _Pat("app", tok, tuple(args))
        if tokens[pos] != ",":
            raise ValueError(f"expected ',' or ')' in axiom pattern {text!r}")
        pos += 1


# --------------------------------------------------------------------------- the signature


@dataclass
class _Signature:
    """The z3 symbols of one engine, all in that engine's own context."""

    ctx: z3.Context
    expr: z3.SortRef
    subexpr: z3.FuncDeclRef
    binary: dict[str, z3.FuncDeclRef]
    reduce: dict[str, z3.FuncDeclRef]
    unary: dict[str, z3.FuncDeclRef] = field(default_factory=dict)  # keyed by z3 name
    inputs: dict[int, z3.ExprRef] = field(default_factory=dict)

    @classmethod
    def create(cls) -> _Signature:
        ctx = z3.Context()
        expr = z3.DeclareSort("Expr", ctx)
        integer = z3.IntSort(ctx)
        return cls(
            ctx=ctx,
            expr=expr,
            subexpr=z3.Function("subexpr", expr, expr, z3.BoolSort(ctx)),
            binary={h: z3.Function(h, expr, expr, expr) for h in sorted(BINARY)},
            reduce={h: z3.Function(h, integer, expr, expr) for h in sorted(REDUCE)},
        )

    def var(self, name: str, degree: bool) -> z3.ExprRef:
        return z3.Int(name, self.ctx) if degree else z3.Const(name, self.expr)

    def int(self, n: int) -> z3.ArithRef:
        return z3.IntVal(n, self.ctx)


def _unary_name(t: Term) -> str:
    # parameters (clamp's (lo, hi), scale's factor) are folded into the symbol: the axioms treat each as an
    # opaque function, and two clamps with different bounds must not be congruent
    return f"{t.head}[{','.join(repr(float(p)) for p in t.param)}]" if t.param else t.head


# --------------------------------------------------------------------------- the engine


class Z3Engine:
    """``contains(e)``: is e ⊑ some target under the SMT-era axioms? See the module doc."""

    name = "z3"
    #: model-based quantifier instantiation (the SMT-era code enabled it); see the module doc
    mbqi: bool = False

    def __init__(self, targets: Sequence[Term], limits: Limits = Limits(),  # noqa: B008 (frozen, shared safely)
                 *, reference_compatible: bool = False) -> None:
        self.targets: tuple[Term, ...] = tuple(targets)
        self.limits = limits
        self.reference_compatible = reference_compatible
        self._sig = _Signature.create()
        self._solver = z3.Solver(ctx=self._sig.ctx)
        self._solver.set("timeout", max(1, int(limits.time_s * 1000)))
        # a deterministic companion to the timeout: each instance adds a few e-nodes
        self._solver.set("smt.qi.max_instances", limits.nodes)
        self._solver.set("smt.mbqi", self.mbqi)
        self._encoded: dict[Term, z3.ExprRef] = {}
        self._memo: dict[Term, bool | None] = {}
        #: solver calls by outcome (cache hits are not counted): ``proved`` (unsat),
        #: ``refuted`` (sat), ``saturated`` (unknown: E-matching ran out of instances
        #: without a proof and MBQI is off) and ``limit`` (unknown: timeout or z3 gave up)
        self.stats: dict[str, int] = {"proved": 0, "refuted": 0, "saturated": 0, "limit": 0}
        self.last_reason: str = ""  # z3's reason_unknown() of the last solver call
        self._sub_unary = False  # set by _add_special when the rows include them
        self._distinct_inputs = False

        rows = rule_set("smt") + rule_set("sub")
        if reference_compatible:
            # sum_sum_mul is derivable here from sum_mul, mul_comm and sum_nest (the
            # degrees multiply, so nest order is immaterial); adding it changes only
            # how soon a proof is found, never the answer
            rows += tuple(a for a in AXIOMS if "reference_compatible" in a.sets)
        self.axioms: tuple[Axiom, ...] = rows
        for ax in rows:
            if ax.name not in _SPECIAL:
                self._solver.add(self._compile(ax))
        s, x = self._sig, self._sig.var("x", degree=False)
        # sum(1, x) = x is the language's definition (SPEC §5.1), not an axiom row
        self._solver.add(z3.ForAll([x], s.reduce["sum"](s.int(1), x) == x,
                                   patterns=[s.reduce["sum"](s.int(1), x)], qid="sum_one"))
        self._add_special(rows)
        self._target_exprs = [self._encode(t) for t in self.targets]

    # ---- queries

    def contains(self, expr: Term) -> bool | None:
        """True: expr ⊑ some target (unsat); False: refuted (sat); None: undecided."""
        if expr in self._memo:
            return self._memo[expr]
        if not self.targets:
            self._memo[expr] = False
            return False
        e = self._encode(expr)  # new inputs / clamps add their facts at the base level
        solver, sub = self._solver, self._sig.subexpr
        solver.push()
        try:
            solver.add(*[z3.Not(sub(e, t)) for t in self._target_exprs])
            outcome = solver.check()
            self.last_reason = solver.reason_unknown() if outcome == z3.unknown else ""
        finally:
            solver.pop()
        answer = True if outcome == z3.unsat else False if outcome == z3.sat else None
        if answer is None:
            kind = "saturated" if "incomplete quantifiers" in self.last_reason else "limit"
        else:
            kind = "proved" if answer else "refuted"
        self.stats[kind] += 1
        self._memo[expr] = answer
        return answer

    # ---- encoding terms

    def _encode(self, t: Term) -> z3.ExprRef:
        done = self._encoded.get(t)
        if done is not None:
            return done
        s = self._sig
        args = [self._encode(a) for a in t.args]
        if t.head == "input":
            out = self._input(int(t.param[0]))
        elif t.head in BINARY:
            out = s.binary[t.head](*args)
        elif t.head in REDUCE:
            out = s.reduce[t.head](s.int(t.degree), *args)
        elif t.head in UNARY:
            out = self._unary(_unary_name(t))(*args)
        else:  # terms.make admits no other head
            raise AssertionError(f"unexpected head {t.head!r}")
        self._encoded[t] = out
        return out

    def _input(self, i: int) -> z3.ExprRef:
        s = self._sig
        if i not in s.inputs:
            v = z3.Const(f"v{i}", s.expr)
            # distinct_inputs, for each pair of inputs that occur (ground facts; the
            # solver needs them only to build refuting models)
            for w in s.inputs.values() if self._distinct_inputs else ():
                self._solver.add(v != w, z3.Not(s.subexpr(v, w)), z3.Not(s.subexpr(w, v)))
            s.inputs[i] = v
        return s.inputs[i]

    def _unary(self, name: str) -> z3.FuncDeclRef:
        s = self._sig
        if name not in s.unary:
            f = z3.Function(name, s.expr, s.expr)
            s.unary[name] = f
            x = s.var("x", degree=False)
            if self._sub_unary:
                self._solver.add(z3.ForAll([x], s.subexpr(x, f(x)), patterns=[f(x)], qid=f"sub_unary:{name}"))
        return s.unary[name]

    # ---- compiling axiom rows

    def _build(self, p: _Pat, env: dict[str, z3.ExprRef], degree: bool = False) -> z3.ExprRef:
        s = self._sig
        if p.kind == "var":
            if p.name not in env:
                env[p.name] = s.var(p.name, degree)
            elif z3.is_int(env[p.name]) != degree:
                raise ValueError(f"?{p.name} is used both as a degree and as a term")
            return env[p.name]
        if p.kind == "int":
            return s.int(p.value)
        if p.kind == "arith":
            left, right = (self._build(a, env, degree=True) for a in p.args)
            return left * right if p.name == "*" else left / right
        if p.name in s.binary and len(p.args) == 2:
            return s.binary[p.name](*(self._build(a, env) for a in p.args))
        if p.name in s.reduce and len(p.args) == 2:
            return s.reduce[p.name](self._build(p.args[0], env, degree=True), self._build(p.args[1], env))
        raise ValueError(f"axiom pattern head {p.name!r} is not a binary op or reduction")

    def _compile(self, ax: Axiom) -> z3.BoolRef:
        """One quantified formula for an axiom row read from its pattern strings."""
        lhs, rhs = _parse_pattern(ax.lhs), _parse_pattern(ax.rhs)
        env: dict[str, z3.ExprRef] = {}
        left, right = self._build(lhs, env), self._build(rhs, env)
        if ax.relation in ("=", "->"):
            # a one-way rewrite is still an equation to a solver; its direction only
            # decides the trigger
            body = left == right
            sides = [(lhs, left)] if ax.relation == "->" else [(lhs, left), (rhs, right)]
        elif ax.relation == "<=":
            body = self._sig.subexpr(left, right)
            sides = [(lhs, left), (rhs, right)]
        else:
            raise ValueError(f"axiom {ax.name}: unknown relation {ax.relation!r}")
        return self._quantify(ax.name, env, body, sides)

    def _quantify(self, qid: str, env: dict[str, z3.ExprRef], body: z3.BoolRef,
                  sides: Iterable[tuple[_Pat, z3.ExprRef]]) -> z3.BoolRef:
        """``∀ env. body`` triggered by the sides that can serve as E-matching patterns."""
        wanted = set(env)
        usable = [(p, e) for p, e in sides if p.kind == "app" and not p.has_arith()]
        single = [e for p, e in usable if p.variables() >= wanted]
        patterns: list[z3.PatternRef | z3.ExprRef] = []
        for e in single:  # one trigger per side; dedupe add(?a,?b) = add(?b,?a)
            if not any(e.eq(q) for q in patterns):
                patterns.append(e)
        if not patterns:
            if not usable or set().union(*(p.variables() for p, _ in usable)) < wanted:
                raise ValueError(f"axiom {qid}: no side can trigger it")
            patterns = [z3.MultiPattern(*(e for _, e in usable))]
        return z3.ForAll(list(env.values()), body, patterns=patterns, qid=qid)

    def _add_special(self, rows: Sequence[Axiom]) -> None:
        s, add, sub = self._sig, self._solver.add, self._sig.subexpr
        x, y, z = (s.var(n, degree=False) for n in "xyz")
        i, j = s.var("i", degree=True), s.var("j", degree=True)
        total = s.reduce["sum"]
        for ax in rows:
            if ax.name == "sub_refl":
                # z3 matches sub(x, x) modulo equality, so this fires once the goal's two
                # sides have been proved equal
                add(z3.ForAll([x], sub(x, x), patterns=[sub(x, x)], qid=ax.name))
            elif ax.name == "sub_trans":
                add(z3.ForAll([x, y, z], z3.Implies(z3.And(sub(x, y), sub(y, z)), sub(x, z)),
                              patterns=[z3.MultiPattern(sub(x, y), sub(y, z))], qid=ax.name))
            elif ax.name == "sub_unary":
                # unary heads are declared on first use (clamp bounds and scale factors are open-ended)
                # and get this axiom with the declaration; pow's operands are arguments too
                self._sub_unary = True
                for u in sorted(UNARY - set(PARAMETRISED)):
                    self._unary(u)
                pow_ = s.binary["pow"]
                for k, v in enumerate((x, y)):
                    add(z3.ForAll([x, y], sub(v, pow_(x, y)), patterns=[pow_(x, y)], qid=f"{ax.name}:pow{k}"))
            elif ax.name == "sub_partial_sum":
                add(z3.ForAll([i, j, x], z3.Implies(j % i == 0, sub(total(i, x), total(j, x))),
                              patterns=[z3.MultiPattern(total(i, x), total(j, x))], qid=ax.name))
            elif ax.name == "distinct_inputs":
                self._distinct_inputs = True  # ground facts, added as inputs appear (_input)
