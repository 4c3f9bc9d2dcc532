"""When results agree: the tolerance of each storage type, and the rules every numeric check shares (issue 35).

A check that cannot fail is a defect. Two habits made checks unable to fail: Python's ``max`` over errors keeps
whichever of a NaN and a number came first (so one NaN output hid behind another's small error), and
``error <= tol`` rejects a NaN only by an accident of IEEE comparison. So the checks use ``worst_error`` (a NaN
counts as inf) and ``within`` (False for NaN and inf) on errors from ``harness.relative_error`` (inf, never NaN,
wherever a value is not finite on one side the way it is on the other), and ``agreement`` for several outputs.
A table row records its agreement in a ``result`` column (``verdict``), which ``wrong`` and ``no_speedup`` read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mirage_lab.bench.harness import relative_error
from mirage_lab.ir.graph import KernelGraph

if TYPE_CHECKING:
    import pandas as pd  # (tables are read here, never made: the engine's hot paths never load pandas)

#: the largest relative error, against the interpreter, that a backend's run may show for each storage type
TOLERANCE: dict[str, float] = {"float16": 2e-2, "bfloat16": 3e-2, "float32": 1e-4}


def worst_error(errors: Iterable[float]) -> float:
    """The largest of ``errors``, a NaN counted as inf wherever it stands; NaN when there are none (nothing was
    compared, and ``within`` then fails too)."""
    worst = math.nan
    for e in errors:
        e = math.inf if math.isnan(e) else float(e)
        worst = e if math.isnan(worst) or e > worst else worst
    return worst


def within(error: float, tolerance: float) -> bool:
    """Is ``error`` a finite number no larger than ``tolerance``? False for NaN and inf."""
    return math.isfinite(error) and error <= tolerance


def tolerance_for(graph: KernelGraph) -> tuple[str, float]:
    """(storage type, tolerance) for a run of ``graph``: the loosest among its tensors' types (fp16 storage
    bounds the error of a graph that also holds fp32 tensors)."""
    kinds = {t.dtype.value for t in graph.tensors} & set(TOLERANCE)
    return max(((k, TOLERANCE[k]) for k in kinds), key=lambda kt: kt[1], default=("float32", TOLERANCE["float32"]))


@dataclass(frozen=True)
class Agreement:
    """Several outputs against the ones they should equal: each one's relative error and why it failed."""

    errors: tuple[float, ...]
    tolerance: float
    kind: str = ""  # the storage type the tolerance is for ("float16"), when there is one
    failures: tuple[str, ...] = ()  # one line per output over the tolerance

    @property
    def worst(self) -> float:
        return worst_error(self.errors)

    @property
    def ok(self) -> bool:
        return within(self.worst, self.tolerance)

    def __str__(self) -> str:
        """``1.20e-03 (within the float16 tolerance 0.02)``, or ``inf (OVER …: output 1: 3 NaN of 64 entries)``."""
        limit = f"the {self.kind + ' ' if self.kind else ''}tolerance {self.tolerance:g}"
        if self.ok:
            return f"{self.worst:.2e} (within {limit})"
        return f"{self.worst:.2e} (OVER {limit}: {'; '.join(self.failures) or 'no outputs compared'})"


def agreement(got: Sequence[Any], want: Sequence[Any], tolerance: float, kind: str = "") -> Agreement:
    """``got`` against ``want``, output by output (arrays or anything ``np.asarray`` takes)."""
    if len(got) != len(want):
        return Agreement((math.inf,), tolerance, kind, (f"{len(got)} outputs where {len(want)} were expected",))
    errors, failures = [], []
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        g, w = np.asarray(g), np.asarray(w)
        e = relative_error(g, w)
        errors.append(e)
        if not within(e, tolerance):
            failures.append(f"output {i}: {_why(g, w, e)}")
    return Agreement(tuple(errors), tolerance, kind, tuple(failures))


def _why(got: np.ndarray, want: np.ndarray, error: float) -> str:
    if got.shape != want.shape:
        return f"dims {got.shape} where {want.shape} were expected"
    stray_inf = np.isinf(got) & (got != want)  # (an infinity the expected output holds alike is no failure)
    odd = [f"{n} {what}" for what, n in (("NaN", int(np.isnan(got).sum())), ("inf", int(stray_inf.sum()))) if n]
    if odd:
        return f"{' and '.join(odd)} of {got.size} entries"
    if not np.isfinite(want).all():
        return f"the expected output has {int((~np.isfinite(want)).sum())} NaN or inf entries"
    return f"relative error {error:.2e}"


# --------------------------------------------------------------------------- a table row's ``result``

#: ``result`` of a row whose outputs agree with what it should compute
OK = "ok"
#: ``result`` of a reference μGraph that computes something else than its program, its kernel agreeing with the
#: interpreter of that graph: the kernel is right, the saved graph is not the program
OTHER_GRAPH = "graph ≠ program"
#: how ``result`` starts for outputs that disagree with what they should be (the rest says how)
WRONG = "WRONG"


def verdict(agree: Agreement) -> str:
    """A row's ``result`` from its agreement with what it should compute."""
    return OK if agree.ok else f"{WRONG}: {agree}"


def _results(df: pd.DataFrame) -> pd.Series:
    """The ``result`` column as text; empty for a table from before the check (it had none)."""
    if "result" not in df.columns:
        return df.assign(result="")["result"]
    return df["result"].fillna("").astype(str)


def wrong(df: pd.DataFrame) -> pd.Series:
    """True for each row whose outputs were wrong."""
    return _results(df).str.startswith(WRONG)


def no_speedup(df: pd.DataFrame) -> pd.Series:
    """True for each row whose time is no speed-up of its program: wrong outputs, or a graph that is not the
    program."""
    return wrong(df) | (_results(df) == OTHER_GRAPH)
