"""Grading: ``check(name, graph)`` → ``CheckResult`` (passed, witness, explanation, hints).

The graph may be a frozen kernel graph, a builder, or a function that builds one (so that an error raised while
building — a shape, map or phase error — becomes an explanation instead of an exception). Order of the checks:
the graph can be built → inputs as the program's → outputs of the program's shapes → equal values (``verify``:
finite-field trials and a float64 check) → the goals. The first failing step explains.
"""

from __future__ import annotations

import functools
import html
from dataclasses import dataclass, field
from typing import Any

from mirage_lab.absexpr import Oracle
from mirage_lab.errors import MirageError
from mirage_lab.ir.builder import KernelGraphBuilder
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.puzzles.catalog import Puzzle, get
from mirage_lab.puzzles.explain import input_problem, output_problem, value_problem
from mirage_lab.puzzles.witness import Witness, find_witness
from mirage_lab.verify import VerificationResult, verify

TRIALS = 2  # field trials per check; the float64 check runs as well


@dataclass(frozen=True)
class CheckResult:
    """The verdict on a learner's graph. ``witness`` is None when passed (and when the graphs cannot be compared,
    for example outputs of the wrong shape)."""

    puzzle: str
    passed: bool
    explanation: str
    witness: Witness | None = None
    goals_unmet: tuple[str, ...] = ()
    verification: VerificationResult | None = field(default=None, repr=False)

    def hint(self, level: int = 1) -> str:
        """Hint ``level`` 1 (a nudge) to 3 (nearly the answer)."""
        return get(self.puzzle).hint(level)

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        head = f"{self.puzzle}: {'PASSED' if self.passed else 'not yet'} — {self.explanation}"
        return head + (f"\n{self.witness}" if self.witness is not None else "")

    def __repr__(self) -> str:
        return f"CheckResult({self.puzzle!r}, passed={self.passed}: {self.explanation})"

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.passed else "#cf222e"
        verdict = "passed" if self.passed else "not yet"
        table = self.witness._repr_html_() if self.witness is not None else ""
        return (f"<div><b style='color:{colour}'>{html.escape(self.puzzle)}: {verdict}</b>"
                f"<p>{html.escape(self.explanation)}</p>{table}</div>")


def check(name: str, graph: Any) -> CheckResult:
    """Grade ``graph`` (a kernel graph, a builder, or a function of no arguments returning one) for puzzle
    ``name``. Never raises for a wrong graph: every problem comes back as ``.explanation``."""
    puzzle = get(name)
    built = _build(graph)
    if isinstance(built, str):
        return CheckResult(name, False, built)
    problem = input_problem(puzzle.program, built, puzzle.inputs) or output_problem(puzzle.program, built)
    if problem is not None:
        return CheckResult(name, False, problem)
    try:
        result = verify(built, puzzle.program, trials=TRIALS, float_check=True)
    except MirageError as e:
        return CheckResult(name, False, f"your graph could not be run: {e}")
    if not result.equivalent:
        return _wrong_values(puzzle, built, result)
    unmet = tuple(u for g in puzzle.goals if (u := g.unmet(built)) is not None)
    if unmet:
        listed = unmet[0] if len(unmet) == 1 else " ".join(f"({k}) {u};" for k, u in enumerate(unmet, 1))[:-1]
        return CheckResult(name, False, f"your graph computes the right values, but {listed}",
                           goals_unmet=unmet, verification=result)
    return CheckResult(name, True, f"equal to the program ({_evidence(result)}) and every goal met", None, (), result)


def _build(graph: Any) -> KernelGraph | str:
    """The frozen graph, or the sentence saying why there is none."""
    try:
        if callable(graph) and not isinstance(graph, KernelGraphBuilder | KernelGraph):
            graph = graph()
        if isinstance(graph, KernelGraphBuilder):
            graph = graph.freeze()
    except MirageError as e:
        return f"building your graph failed: {e}"
    if not isinstance(graph, KernelGraph):
        return (f"expected a kernel graph (ml.new_kernel_graph(), or a function that builds one), got "
                f"{type(graph).__name__}")
    return graph


def _wrong_values(puzzle: Puzzle, graph: KernelGraph, result: VerificationResult) -> CheckResult:
    witness = find_witness(puzzle.program, graph, puzzle.inputs, result.permutation)
    reason = value_problem(puzzle.program, graph, puzzle.inputs, _oracle(puzzle.name))
    if witness is None:
        reason += f" (the float64 inputs tried agree; the finite-field test differs: {result.reason})"
    return CheckResult(puzzle.name, False, f"your graph computes different values: {reason}", witness,
                       verification=result)


def _evidence(result: VerificationResult) -> str:
    bound = f"error probability ≤ {result.error_bound:.0e}" if result.error_bound is not None else result.reason
    return f"{len(result.trials)} finite-field trials, {bound}, float64 check passed"


@functools.cache
def _oracle(name: str) -> Oracle:
    return Oracle.for_program(get(name).program)
