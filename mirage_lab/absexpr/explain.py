"""Sentences a person can read for the oracle's verdicts (the search-tree widget shows them)."""

from __future__ import annotations

from collections.abc import Sequence

from mirage_lab.absexpr.normal import ONE, Atom, Match, Mono, Poly, _minus, atoms_of, polys_of, to_term


def atom_text(a: Atom) -> str:
    return str(to_term(Poly.of((Mono.of(1, (a,)),))))


def _factors(atoms: tuple[Atom, ...]) -> str:
    return " · ".join(atom_text(a) for a in atoms)


def explain_match(target: int, m: Match, e: Poly) -> str:
    where = f"target {target}" + (f", inside {' › '.join(m.path)}" if m.path else "")
    c = m.context
    parts = []
    if m.used < m.total:
        parts.append(f"as {m.used} of the {m.total} summands there")
    if c.deg > 1:
        parts.append(f"as a partial sum ({c.deg}× fewer elements than the target sums)")
    if c.num:
        parts.append(f"times {_factors(c.num)}")
    if c.den:
        den = _factors(c.den)
        parts.append(f"divided by {f'sum({c.dden}, {den})' if c.dden > 1 else den}")
    if c is ONE and m.used == m.total:
        parts.append("as the whole term there")
    return f"found in {where}: {', '.join(parts)}"


def explain_failure(e: Poly, targets: Sequence[Poly]) -> tuple[str, tuple[str, ...]]:
    """Why no axiom relates ``e`` to any target, and the axiom that would have had to apply."""
    reason = _failure(e, targets)
    return reason, (_FAILED_RULE[next(k for k in _FAILED_RULE if k in reason)],)


#: words of a failure reason → the subexpression axiom it shows cannot apply
_FAILED_RULE = {
    "which no target reads": "distinct_inputs",
    "no target applies": "sub_unary",
    "occurs in no target": "sub_unary",
    "in one product": "sub_mul",
    "partial sum": "sub_partial_sum",
    "denominators sum": "sum_div",
    "never all of them together": "sub_add",
    "cannot be split off": "sum_div",
}


def _failure(e: Poly, targets: Sequence[Poly]) -> str:
    """The first missing ingredient, innermost first."""
    target_atoms = {a for t in targets for a in atoms_of(t)}
    inputs = {a for a in target_atoms if a.head == "input"}
    stray = [a for a in atoms_of(e) if a.head == "input" and a not in inputs]
    if stray:
        read = ", ".join(sorted(atom_text(a) for a in inputs))
        return (f"it reads {', '.join(sorted(atom_text(a) for a in stray))}, which no target reads "
                f"(targets read {read})")
    missing = [a for a in atoms_of(e) if a not in target_atoms]
    if missing:
        return _missing_atom(_innermost(missing), target_atoms)
    return _monomial_failure(e, [p for t in targets for p in polys_of(t)])


def _innermost(missing: list[Atom]) -> Atom:
    for a in reversed(missing):  # atoms_of lists parents first
        inner = {b for p in a.polys for b in atoms_of(p)}
        if not inner & set(missing):
            return a
    return missing[-1]


def _missing_atom(a: Atom, target_atoms: set[Atom]) -> str:
    same = sorted(atom_text(b) for b in target_atoms if b.head == a.head)
    name = "a denominator" if a.head == "den" else a.head
    if not same:
        return f"{atom_text(a)} occurs in no target: no target applies {name} at all"
    shown = "; ".join(same[:3]) + (f" (and {len(same) - 3} more)" if len(same) > 3 else "")
    return f"{atom_text(a)} occurs in no target, which has {name} only as: {shown}"


def _monomial_failure(e: Poly, polys: list[Poly]) -> str:
    for s in e.monos:
        hosts = [m for p in polys for m in p.monos
                 if _minus(m.num, s.num) is not None and _minus(m.den, s.den) is not None]
        text = str(to_term(Poly.of((s,))))
        if not hosts:
            together = _factors(s.num) + (f" / {_factors(s.den)}" if s.den else "")
            return f"{text}: no target combines {together} in one product"
        if not any(m.deg % s.deg == 0 and m.dden % s.dden == 0 for m in hosts):
            degs = sorted({m.deg for m in hosts})
            dens = sorted({m.dden for m in hosts})
            if all(m.deg % s.deg for m in hosts):
                return (f"{text}: the targets sum this product over {_list(degs)} elements, and a partial sum "
                        f"over {s.deg} divides none of them")
            return (f"{text}: the targets' denominators sum over {_list(dens)} elements, and {s.dden} divides "
                    f"none of them")
    if len(e) > 1:
        return ("every summand occurs in a target, but never all of them together with one common factor and "
                "partial-sum degree")
    return ("its factors occur together, but only with a denominator degree that cannot be split off "
            "(no rule moves a sum out of a denominator)")


def _list(xs: list[int]) -> str:
    return ", ".join(map(str, xs[:5])) + (" …" if len(xs) > 5 else "")
