"""Test corpora for the oracle: relevant prefixes (must pass) and irrelevant ones (must fail).

Relevant prefixes are the intermediate tensors of μGraphs known to compute a program
(its own unfused graph, hand-written fused graphs, saved reference graphs). Irrelevant
prefixes are *built* to be irrelevant, one category at a time, and each carries a
certificate checked on the target terms by code that does not use the normal form —
so a test that the oracle rejects them is not the oracle grading itself:

* ``foreign_input`` — reads an input the program does not have;
* ``never_exponentiated`` / ``foreign_function`` — exp (or another function) of a term
  whose inputs differ from those of every argument the program applies it to;
* ``reduction_size`` — a sum whose degree has a prime factor no target degree has, or an
  rms over a size the program never normalises over;
* ``wrong_denominator`` — divides by an input that no denominator of the program reads;
* ``foreign_add`` — an add in a program that adds nothing;
* ``wrong_pairing`` — a matmul (or product) of two inputs that no mul of the program puts
  into one product, e.g. K with V in attention (K only ever appears inside exp).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

from mirage_lab.absexpr.of_graph import graph_expressions, program_targets
from mirage_lab.absexpr.terms import PARAMETRISED, UNARY, Term, div, mul, reduce, sum_, unary, var
from mirage_lab.absexpr.terms import add as add_


@dataclass(frozen=True)
class Prefix:
    program: str
    expr: Term
    category: str
    why: str = ""


def relevant_prefixes(name: str, graphs: Sequence[Any]) -> list[Prefix]:
    """Every intermediate tensor of ``graphs`` (all computing program ``name``), deduplicated."""
    seen: dict[Term, Prefix] = {}
    for g in graphs:
        for place, op, e in graph_expressions(g).produced():
            seen.setdefault(e, Prefix(name, e, "relevant", f"{op.value} at {place}"))
    return list(seen.values())


def _heads(targets: Sequence[Term]) -> set[str]:
    return {s.head for t in targets for s in t.subterms()}


def _args_of(targets: Sequence[Term], head: str) -> list[Term]:
    return [s.args[0] for t in targets for s in t.subterms() if s.head == head]


def _degrees(targets: Sequence[Term], head: str = "sum") -> set[int]:
    return {s.degree for t in targets for s in t.subterms() if s.head == head}


def _primes(n: int) -> set[int]:
    out, p = set(), 2
    while p * p <= n:
        while n % p == 0:
            out.add(p)
            n //= p
        p += 1
    return out | ({n} if n > 1 else set())


def irrelevant_prefixes(name: str, program: Any) -> list[Prefix]:
    """Prefixes of ``program`` that cannot be part of an equivalent μGraph, each with its certificate."""
    targets = program_targets(program)
    ge = graph_expressions(program)
    n_in = len(ge.graph.inputs)
    pieces = _pieces(targets, n_in)
    out: dict[Term, Prefix] = {}
    for category, gen in _GENERATORS.items():
        for expr, why in gen(targets, pieces, n_in, ge.graph):
            out.setdefault(expr, Prefix(name, expr, category, why))
    return list(out.values())


def _pieces(targets: Sequence[Term], n_in: int) -> list[Term]:
    """Small relevant terms to build on: the inputs and the targets' subterms, smallest first."""
    subs = {s for t in targets for s in t.subterms()}
    return sorted(subs | {var(i) for i in range(n_in)}, key=lambda s: (s.size, s.serial))[:12]


Gen = Iterator[tuple[Term, str]]


def _foreign_input(targets: Sequence[Term], pieces: list[Term], n_in: int, g: Any) -> Gen:
    stray = var(n_in)
    for p in pieces[:8]:
        yield mul(p, stray), f"v{n_in} is not an input of the program"
        yield sum_(64, mul(stray, p)), f"v{n_in} is not an input of the program"
        yield add_(p, stray), f"v{n_in} is not an input of the program"


def _never_exponentiated(targets: Sequence[Term], pieces: list[Term], n_in: int, g: Any) -> Gen:
    for f in sorted(UNARY - set(PARAMETRISED)):
        used = [a.inputs() for a in _args_of(targets, f)]
        for p in pieces:
            if p.inputs() and p.inputs() not in used:
                yield unary(f, p), (f"the program applies {f} only to terms reading "
                                    f"{[sorted(u) for u in used]}" if used else f"the program never applies {f}")


def _reduction_size(targets: Sequence[Term], pieces: list[Term], n_in: int, g: Any) -> Gen:
    degrees = _degrees(targets) | {1}
    primes = set().union(*(_primes(d) for d in degrees))
    odd = next(p for p in (3, 5, 7, 11, 13) if p not in primes)
    for s in {s for t in targets for s in t.subterms() if s.head == "sum"}:
        for m in (odd, odd * 16, odd * s.degree):
            yield reduce("sum", m, s.args[0]), f"{m} has the prime factor {odd}, which no target degree has"
    rms_degrees = _degrees(targets, "rms")
    for p in pieces[:6]:
        for m in (2, 32, 64, 256, 1024, 4096, 8192):
            if m not in rms_degrees and p.inputs():
                yield reduce("rms", m, p), f"the program normalises only over {sorted(rms_degrees) or 'nothing'}"


def _wrong_denominator(targets: Sequence[Term], pieces: list[Term], n_in: int, g: Any) -> Gen:
    den_inputs = set().union(*(s.args[1].inputs() for t in targets for s in t.subterms() if s.head == "div"))
    for i in range(n_in):
        if i not in den_inputs:
            for p in pieces[:8]:
                yield div(p, var(i)), f"no denominator of the program reads v{i}"


def _foreign_add(targets: Sequence[Term], pieces: list[Term], n_in: int, g: Any) -> Gen:
    if "add" in _heads(targets):
        return
    for a, b in product(pieces[:6], repeat=2):
        yield add_(a, b), "the program adds nothing"


def _factors(t: Term) -> frozenset[int]:
    """Inputs that can be direct factors of t's products: functions, rms, max and pow are opaque scopes."""
    if t.head == "input":
        return frozenset(t.param[:1])  # type: ignore[arg-type]
    if t.head in ("add", "mul"):
        return _factors(t.args[0]) | _factors(t.args[1])
    if t.head in ("div", "sum"):
        return _factors(t.args[0])
    return frozenset()


def _paired(targets: Sequence[Term]) -> set[tuple[int, int]]:
    """Input pairs some mul of the program puts into one product (the only way two inputs meet in one)."""
    out: set[tuple[int, int]] = set()
    for s in (s for t in targets for s in t.subterms() if s.head == "mul"):
        left, right = _factors(s.args[0]), _factors(s.args[1])
        out |= {(i, j) for i in left for j in right} | {(j, i) for i in left for j in right}
    return out


def _wrong_pairing(targets: Sequence[Term], pieces: list[Term], n_in: int, g: Any) -> Gen:
    """matmul(v_i, v_j) for shape-compatible input pairs that no product of the program combines."""
    paired = _paired(targets)
    dims = [g.tensors[i].dims for i in g.inputs]
    for i, j in product(range(n_in), repeat=2):
        a, b = dims[i], dims[j]
        if (i, j) in paired or not (len(a) == len(b) >= 2 and a[-1] == b[-2] and a[:-2] == b[:-2]):
            continue
        x, y = var(i), var(j)
        why = f"no product of the program combines v{i} with v{j}"
        for k in (a[-1], a[-1] // 4, a[-1] // 64):
            if k >= 1 and a[-1] % k == 0:
                yield sum_(k, mul(x, y)), why
                yield mul(x, y), why


_GENERATORS = {
    "foreign_input": _foreign_input,
    "never_exponentiated": _never_exponentiated,
    "reduction_size": _reduction_size,
    "wrong_denominator": _wrong_denominator,
    "foreign_add": _foreign_add,
    "wrong_pairing": _wrong_pairing,
}


def random_compositions(targets: Sequence[Term], count: int, seed: int = 0, max_size: int = 40) -> list[Term]:
    """Unlabelled queries for engine agreement: ops applied at random to the targets' subterms and to earlier
    compositions, with reduction degrees drawn from the targets' (and their divisors)."""
    rng = random.Random(seed)
    pool = sorted({s for t in targets for s in t.subterms()}, key=lambda s: s.serial)
    sums = sorted(_degrees(targets)) or [2]
    divisors = sorted({d for n in sums for d in (2, 4, 8, 16, 64, 256, 1024, 4096) if n % d == 0}) or [2]
    rmss = sorted(_degrees(targets, "rms")) or [2]
    make = {
        "add": lambda a, b: add_(a, b), "mul": lambda a, b: mul(a, b), "div": lambda a, b: div(a, b),
        "sum": lambda a, b: sum_(rng.choice(divisors), a), "exp": lambda a, b: unary("exp", a),
        "rms": lambda a, b: reduce("rms", rng.choice(rmss), a),
    }
    out: dict[Term, None] = {}
    while len(out) < count:
        t = make[rng.choice(list(make))](rng.choice(pool), rng.choice(pool))
        if t.size <= max_size:
            pool.append(t)
            out[t] = None
    return list(out)
