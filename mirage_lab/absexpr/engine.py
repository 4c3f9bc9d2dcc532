"""The interface every subexpression engine implements, and its limits.

An engine is built once per search from that search's targets (SPEC §5.3, §11 #4: no
global state) and answers ``contains(e)``: is ``e`` a subexpression of some target
modulo the axioms? ``None`` means a limit stopped it before it could decide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from mirage_lab.absexpr.terms import Term


@dataclass(frozen=True)
class Limits:
    """Resource limits of one engine. The defaults are the reference's e-graph budget (§5.4)."""

    nodes: int = 100_000  # e-nodes (e-graphs) or monomials of one normal form
    time_s: float = 10.0  # per target saturation, or per query
    iterations: int = 100_000  # saturation iterations (e-graph engines)


class Engine(Protocol):
    name: str

    def contains(self, expr: Term) -> bool | None: ...


class EngineFactory(Protocol):
    def __call__(self, targets: Sequence[Term], limits: Limits, *, reference_compatible: bool = False) -> Engine:
        ...
