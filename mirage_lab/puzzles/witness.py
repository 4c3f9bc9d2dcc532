"""A witness a learner can read: a small concrete input, and the output elements where the learner's graph and
the program disagree, expected beside got.

Inputs are quarter steps in [−1, 1] without 0 (no row of zeros for an rms to divide by), then positive quarter
steps; both graphs run in float64 (``ml.interpret``). An element differs when either value is NaN or infinite
or they differ by more than 1e-9 + 1e-6·|expected|: a NaN is never "equal" to anything.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np

from mirage_lab.ir.graph import KernelGraph
from mirage_lab.semantics.interpret import interpret

#: the witness inputs' values: signed first, positive if that finds nothing
VALUE_SETS = ((-1.0, -0.75, -0.5, -0.25, 0.25, 0.5, 0.75, 1.0), (0.25, 0.5, 0.75, 1.0))
SEEDS_PER_SET = 3
SHOWN = 6  # differing elements listed
RTOL, ATOL = 1e-6, 1e-9


@dataclass(frozen=True)
class Difference:
    output: int
    index: tuple[int, ...]
    expected: float
    got: float


@dataclass(frozen=True)
class Witness:
    """Inputs (name → array) on which the graphs disagree, and the first differing output elements."""

    inputs: dict[str, np.ndarray]
    differences: tuple[Difference, ...]
    total: int  # differing elements in all

    def __str__(self) -> str:
        with np.printoptions(precision=2, suppress=True, linewidth=110, threshold=200, edgeitems=3):
            ins = [f"{n} =\n{a}" for n, a in self.inputs.items()]
        rows = [f"  O{d.output}{list(d.index)}: expected {d.expected:.6g}, got {d.got:.6g}" for d in self.differences]
        more = f"  … {self.total - len(rows)} more" if self.total > len(rows) else ""
        return "\n".join([f"on this input, {self.total} output element(s) differ:", *rows, *([more] if more else []),
                          "input:", *ins])

    def __repr__(self) -> str:
        first = self.differences[0]
        return (f"Witness({self.total} element(s) differ; first O{first.output}{list(first.index)}: "
                f"expected {first.expected:.6g}, got {first.got:.6g})")

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>O{d.output}{list(d.index)}</td><td>{d.expected:.6g}</td><td>{d.got:.6g}</td></tr>"
                       for d in self.differences)
        more = f"<p>… and {self.total - len(self.differences)} more</p>" if self.total > len(self.differences) else ""
        with np.printoptions(precision=2, suppress=True, linewidth=110, threshold=200, edgeitems=3):
            ins = "".join(f"<pre>{html.escape(n)} =\n{html.escape(str(a))}</pre>" for n, a in self.inputs.items())
        return (f"<table><tr><th>element</th><th>expected</th><th>got</th></tr>{rows}</table>{more}"
                f"<details><summary>input</summary>{ins}</details>")


def find_witness(program: KernelGraph, graph: KernelGraph, names: tuple[str, ...],
                 permutation: tuple[int, ...] | None = None) -> Witness | None:
    """The first small input on which ``graph`` and ``program`` disagree in float64, or None if none of the tried
    inputs shows it (a difference only the finite field sees)."""
    perm = permutation or tuple(range(len(program.outputs)))
    for values in VALUE_SETS:
        for seed in range(SEEDS_PER_SET):
            rng = np.random.default_rng(seed)
            ins = [rng.choice(values, t.dims) for t in program.input_types]
            with np.errstate(all="ignore"):
                want = interpret(program, ins, backend="numpy")
                got = interpret(graph, ins, backend="numpy")
            diffs = _differences(want, [got[j] for j in perm])
            if diffs:
                return Witness(dict(zip(names, ins, strict=True)), tuple(diffs[:SHOWN]), len(diffs))
    return None


def _differences(want: list[np.ndarray], got: list[np.ndarray]) -> list[Difference]:
    found = []
    for k, (w, g) in enumerate(zip(want, got, strict=True)):
        bad = ~np.isfinite(w) | ~np.isfinite(g) | (np.abs(g - w) > ATOL + RTOL * np.abs(w))
        for flat in np.flatnonzero(bad):
            idx = tuple(int(i) for i in np.unravel_index(flat, w.shape))
            found.append(Difference(k, idx, float(w[idx]), float(g[idx])))
    return found
