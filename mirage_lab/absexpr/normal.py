"""The normal-form engine: a canonical form modulo the equivalence axioms, and ⊑ on it.

A term normalises to a **polynomial**: a multiset of **monomials**, each

    sum(deg, n_1 · … · n_k) / sum(dden, d_1 · … · d_m)

over **atoms** n_i, d_j: inputs, unary functions, ``rms``/``max``/``pow`` (holding the
normal forms of their arguments) and denominators that are not a single plain monomial
(kept whole). The ``"normal"`` axioms of ``axioms.py`` make this canonical: AC sorts
the multisets, ``distrib``/``sum_add``/``div_add`` expand into monomials, ``sum_mul``/
``sum_div`` let a sum's degree float over a whole product (the abstraction cannot tell
which index is summed), ``sum_nest`` multiplies degrees, ``mul_div``/``div_div`` gather
numerators and denominators.

``e ⊑ E`` then has a direct characterisation (``find``): some sub-multiset J of E's
monomials equals ``C · e`` for one common context monomial C (extra factors, an outer
sum whose degree divides, extra denominator factors), or e ⊑ the normal form inside one
of E's atoms or denominators. Everything is interned, so equality is identity and the
search below is memoised on object pairs.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from mirage_lab.absexpr.engine import Limits
from mirage_lab.absexpr.terms import BINARY, REDUCE, Term, add, div, make, mul, reduce, var

_SERIAL = itertools.count()


class LimitReached(Exception):
    """A normal form grew past ``Limits.nodes`` monomials or took longer than ``Limits.time_s``."""


class Atom:
    """An opaque factor: ``head`` is ``input``, a unary name, ``rms``, ``max``, ``pow`` or ``den``."""

    __slots__ = ("head", "param", "polys", "serial")

    def __init__(self, head: str, polys: tuple[Poly, ...], param: tuple[int | float, ...]) -> None:
        self.head, self.polys, self.param = head, polys, param
        self.serial = next(_SERIAL)

    def __repr__(self) -> str:
        return f"Atom({to_term(Poly.of((Mono.of(1, (self,)),)))})"


class Mono:
    """``sum(deg, Π num) / sum(dden, Π den)``; num and den are sorted atom tuples (multisets)."""

    __slots__ = ("dden", "deg", "den", "num", "serial")

    def __init__(self, deg: int, num: tuple[Atom, ...], dden: int, den: tuple[Atom, ...]) -> None:
        self.deg, self.num, self.dden, self.den = deg, num, dden, den
        self.serial = next(_SERIAL)

    @staticmethod
    def of(deg: int, num: tuple[Atom, ...], dden: int = 1, den: tuple[Atom, ...] = ()) -> Mono:
        num, den = _sorted(num), _sorted(den)
        key = (deg, num, dden, den)
        m = _MONOS.get(key)
        if m is None:
            m = _MONOS[key] = Mono(deg, num, dden, den)
        return m

    @property
    def has_den(self) -> bool:
        return bool(self.den) or self.dden > 1

    def __mul__(self, other: Mono) -> Mono:
        return Mono.of(self.deg * other.deg, self.num + other.num, self.dden * other.dden, self.den + other.den)

    def inverse(self) -> Mono:
        return Mono.of(self.dden, self.den, self.deg, self.num)

    def __repr__(self) -> str:
        return f"Mono({to_term(Poly.of((self,)))})"


class Poly:
    """A multiset of monomials, sorted; interned."""

    __slots__ = ("monos", "serial")

    def __init__(self, monos: tuple[Mono, ...]) -> None:
        self.monos = monos
        self.serial = next(_SERIAL)

    @staticmethod
    def of(monos: tuple[Mono, ...]) -> Poly:
        monos = _sorted(monos)
        p = _POLYS.get(monos)
        if p is None:
            p = _POLYS[monos] = Poly(monos)
        return p

    def __len__(self) -> int:
        return len(self.monos)

    def __repr__(self) -> str:
        return f"Poly({to_term(self)})"


_ATOMS: dict[tuple[str, tuple[Poly, ...], tuple[int | float, ...]], Atom] = {}
_MONOS: dict[tuple[int, tuple[Atom, ...], int, tuple[Atom, ...]], Mono] = {}
_POLYS: dict[tuple[Mono, ...], Poly] = {}


_T = TypeVar("_T", Atom, Mono)


def _sorted(items: tuple[_T, ...]) -> tuple[_T, ...]:
    return tuple(sorted(items, key=lambda x: x.serial))


def atom(head: str, polys: tuple[Poly, ...] = (), param: tuple[int | float, ...] = ()) -> Atom:
    key = (head, polys, param)
    a = _ATOMS.get(key)
    if a is None:
        a = _ATOMS[key] = Atom(head, polys, param)
    return a


ONE = Mono.of(1, ())


def _single(a: Atom) -> Poly:
    return Poly.of((Mono.of(1, (a,)),))


# --------------------------------------------------------------------------- normalisation


@dataclass(frozen=True)
class Normal:
    """A term's normal form and the ``normal`` axioms that normalising it used."""

    poly: Poly
    rules: frozenset[str]


@dataclass
class Normalizer:
    """Normalises terms under limits, memoising per term (terms are interned)."""

    limits: Limits = field(default_factory=Limits)
    memo: dict[Term, Normal] = field(default_factory=dict)

    def __call__(self, t: Term) -> Normal:
        deadline = time.perf_counter() + self.limits.time_s
        return self._norm(t, deadline)

    def _norm(self, t: Term, deadline: float) -> Normal:
        got = self.memo.get(t)
        if got is not None:
            return got
        if time.perf_counter() > deadline:
            raise LimitReached(f"normalising took longer than {self.limits.time_s} s")
        kids = [self._norm(a, deadline) for a in t.args]
        if t.head == "div":
            poly, rules = _norm_div(kids[0].poly, self._den(t.args[1], deadline))
        else:
            poly, rules = _RULES[_kind(t.head)](t, [k.poly for k in kids])
        if len(poly) > self.limits.nodes:
            raise LimitReached(f"the normal form of a {t.head} has {len(poly)} monomials "
                               f"(limit {self.limits.nodes})")
        out = Normal(poly, frozenset(rules).union(*(k.rules for k in kids)))
        self.memo[t] = out
        return out

    def _den(self, t: Term, deadline: float) -> Mono:
        """The monomial a denominator term divides by, factored along its products (``div_div``).

        Products split into their factors' monomials, so ``a/(b·c)`` is ``(a/b)/c`` even when b and c
        are sums; a sum's content (common factors, gcd of degrees) is pulled out of it, and the rest
        stays one ``den`` atom. A fraction as denominator stays whole: no axiom splits ``x/(y/z)``.
        """
        if t.head == "mul":
            return self._den(t.args[0], deadline) * self._den(t.args[1], deadline)
        if t.head == "sum":
            m = self._den(t.args[0], deadline)
            return Mono.of(m.deg * t.degree, m.num, m.dden, m.den)
        p = self._norm(t, deadline).poly
        if len(p) == 1 and not p.monos[0].has_den:
            return p.monos[0]
        if any(m.has_den for m in p.monos):
            return Mono.of(1, (atom("den", (p,)),))
        return _content_split(p)


def _content_split(p: Poly) -> Mono:
    """``p = content · primitive``: common atoms and the gcd of degrees, times one ``den`` atom."""
    g = math.gcd(*(m.deg for m in p.monos))
    common = Counter(p.monos[0].num)
    for m in p.monos[1:]:
        common &= Counter(m.num)
    shared = tuple(common.elements())
    if any(len(m.num) == len(shared) for m in p.monos):
        shared = ()  # pulling them out would leave a bare 1, which the language cannot write
    rest = Poly.of(tuple(Mono.of(m.deg // g, _minus(m.num, shared) or (), 1, ()) for m in p.monos))
    return Mono.of(g, (*shared, atom("den", (rest,))))


def _kind(head: str) -> str:
    if head in ("add", "mul", "div", "sum"):
        return head
    return "atom"


def _norm_add(t: Term, ps: list[Poly]) -> tuple[Poly, set[str]]:
    a, b = ps
    out = Poly.of(a.monos + b.monos)
    rules = set()
    if len(a) > 1 or len(b) > 1:
        rules.add("add_assoc")
    if out.monos != a.monos + b.monos:
        rules.add("add_comm")
    return out, rules


def _norm_mul(t: Term, ps: list[Poly]) -> tuple[Poly, set[str]]:
    a, b = ps
    out = Poly.of(tuple(x * y for x in a.monos for y in b.monos))
    rules = set()
    if len(a) > 1 or len(b) > 1:
        rules.add("distrib")
    monos = a.monos + b.monos
    if any(m.deg > 1 for m in monos):
        rules.add("sum_mul")
    if any(m.has_den for m in monos):
        rules.add("mul_div")
    if any(len(m.num) > 1 for m in monos):
        rules.add("mul_assoc")
    return out, rules


def _norm_div(a: Poly, den: Mono) -> tuple[Poly, set[str]]:
    rules = set()
    if len(a) > 1:
        rules.add("div_add")
    if any(m.has_den for m in a.monos) or len(den.num) > 1:
        rules.add("div_div")
    if any(m.deg > 1 for m in a.monos):
        rules.add("sum_div")
    inv = den.inverse()
    return Poly.of(tuple(m * inv for m in a.monos)), rules


def _norm_sum(t: Term, ps: list[Poly]) -> tuple[Poly, set[str]]:
    (a,), n = ps, t.degree
    rules = set()
    if len(a) > 1:
        rules.add("sum_add")
    if any(m.deg > 1 for m in a.monos):
        rules.add("sum_nest")
    if any(len(m.num) > 1 for m in a.monos):
        rules.add("sum_mul")
    if any(m.has_den for m in a.monos):
        rules.add("sum_div")
    return Poly.of(tuple(Mono.of(m.deg * n, m.num, m.dden, m.den) for m in a.monos)), rules


def _norm_atom(t: Term, ps: list[Poly]) -> tuple[Poly, set[str]]:
    return _single(atom(t.head, tuple(ps), t.param)), set()


_RULES = {"add": _norm_add, "mul": _norm_mul, "sum": _norm_sum, "atom": _norm_atom}


# --------------------------------------------------------------------------- back to terms


def to_term(p: Poly) -> Term:
    """A readable term of a normal form (sums outermost, one division per monomial)."""
    terms = [_mono_term(m) for m in p.monos]
    out = terms[0]
    for t in terms[1:]:
        out = add(out, t)
    return out


def _product(atoms: tuple[Atom, ...]) -> Term | None:
    out: Term | None = None
    for a in atoms:
        t = _atom_term(a)
        out = t if out is None else mul(out, t)
    return out


def _mono_term(m: Mono) -> Term:
    num = _product(m.num)
    num_t = reduce("sum", m.deg, num if num is not None else _ONE_TERM)
    if not m.has_den:
        return num_t
    den = _product(m.den)
    return div(num_t, reduce("sum", m.dden, den if den is not None else _ONE_TERM))


def _atom_term(a: Atom) -> Term:
    if a.head == "input":
        return var(int(a.param[0]))
    if a.head == "den":
        return to_term(a.polys[0])
    args = tuple(to_term(p) for p in a.polys)
    if a.head in REDUCE:
        return reduce(a.head, int(a.param[0]), args[0])
    if a.head in BINARY:
        return make(a.head, args)
    return make(a.head, args, a.param)


# "1" has no term of its own in the language; a bare degree with no factors only shows up in
# contexts (an outer sum), which explanations print with a placeholder instead.
_ONE_TERM = make("input", (), (-1,))


# --------------------------------------------------------------------------- ⊑


@dataclass(frozen=True)
class Match:
    """How e sits inside E: where (``path``), and the common context C with E's part = C · e."""

    context: Mono
    used: int  # how many of the part's monomials e covers
    total: int  # monomials of the polynomial where it matched
    path: tuple[str, ...]
    rules: frozenset[str]


def find(big: Poly, small: Poly, memo: dict[tuple[Poly, Poly], Match | None]) -> Match | None:
    """A way ``small ⊑ big`` holds, or None. Memoised on the (interned) pair."""
    key = (big, small)
    if key in memo:
        return memo[key]
    memo[key] = None  # cycles are impossible (terms are finite), this just guards re-entry
    got = _match_here(big, small) or _match_inside(big, small, memo)
    memo[key] = got
    return got


def _quotient(big: Mono, small: Mono) -> Mono | None:
    if big.deg % small.deg or big.dden % small.dden:
        return None
    num, den = _minus(big.num, small.num), _minus(big.den, small.den)
    if num is None or den is None:
        return None
    c = Mono.of(big.deg // small.deg, num, big.dden // small.dden, den)
    # a denominator's degree cannot be pulled out alone: no rule moves a sum out of a denominator
    if c.dden > 1 and not c.den:
        return None
    return c


def _minus(big: tuple[Atom, ...], small: tuple[Atom, ...]) -> tuple[Atom, ...] | None:
    left = Counter(big)
    left.subtract(small)
    if any(v < 0 for v in left.values()):
        return None
    return tuple(left.elements())


def _match_here(big: Poly, small: Poly) -> Match | None:
    have = Counter(big.monos)
    for m in dict.fromkeys(big.monos):
        c = _quotient(m, small.monos[0])
        if c is None:
            continue
        need = Counter(c * s for s in small.monos)
        if all(have[x] >= k for x, k in need.items()):
            return Match(c, len(small), len(big), (), frozenset(_context_rules(c, len(small), len(big))))
    return None


def _context_rules(c: Mono, used: int, total: int) -> Iterator[str]:
    if used < total:
        yield "sub_add"
    if c.num:
        yield "sub_mul"
    if c.den:
        yield "sub_div_num"
    if c.deg > 1:
        yield "sub_partial_sum"
    if used > 1 and c is not ONE:
        yield "distrib"


_INSIDE_RULE = {"den": "sub_div_den", "rms": "sub_rms", "max": "sub_max", "input": "sub_refl"}


def _match_inside(big: Poly, small: Poly, memo: dict[tuple[Poly, Poly], Match | None]) -> Match | None:
    for m in big.monos:
        for a in m.num + m.den:
            for k, inner in enumerate(a.polys):
                got = find(inner, small, memo)
                if got is not None:
                    step = f"{a.head}(·)" if len(a.polys) == 1 else f"{a.head} argument {k}"
                    rule = _INSIDE_RULE.get(a.head, "sub_unary")
                    return _nest(got, step, rule)
        if m.has_den:
            for den in _denominator_forms(m):
                got = find(den, small, memo)
                if got is not None:
                    return _nest(got, "denominator", "sub_div_den")
    return None


_EXPAND_LIMIT = 256  # monomials; a denominator expanding past this is only searched factored


def _denominator_forms(m: Mono) -> Iterator[Poly]:
    """m's denominator factored (sums kept as ``den`` atoms), then multiplied out (``distrib``).

    A query that is itself a product of sums, e.g. ``mul(add(a, b), add(a, b))``, normalises
    expanded, so it can only meet a factored denominator ``(a+b)·(a+b)`` once that is expanded.
    """
    factored = Poly.of((Mono.of(m.dden, m.den),))
    yield factored
    sums = [a for a in m.den if a.head == "den"]
    if not sums:
        return
    rest = _minus(m.den, tuple(sums)) or ()
    monos: tuple[Mono, ...] = (Mono.of(m.dden, rest),)
    for a in sums:
        monos = tuple(x * y for x in monos for y in a.polys[0].monos)
        if len(monos) > _EXPAND_LIMIT:
            return
    if len(sums) > 1 or rest or m.dden > 1:
        yield Poly.of(monos)


def _nest(m: Match, step: str, rule: str) -> Match:
    return Match(m.context, m.used, m.total, (step, *m.path), m.rules | {rule, "sub_trans"})


def atoms_of(p: Poly) -> Iterator[Atom]:
    """Every atom anywhere inside p (nested ones included), each once."""
    seen: set[Atom] = set()
    stack = [p]
    while stack:
        q = stack.pop()
        for m in q.monos:
            for a in m.num + m.den:
                if a not in seen:
                    seen.add(a)
                    yield a
                    stack.extend(a.polys)


def polys_of(p: Poly) -> Iterator[Poly]:
    """p and every polynomial nested inside it (atom arguments and denominators)."""
    yield p
    for m in p.monos:
        if m.has_den:
            yield from polys_of(Poly.of((Mono.of(m.dden, m.den),)))
        for a in m.num + m.den:
            for q in a.polys:
                yield from polys_of(q)
