"""The calibrated cost model: the time terms of ``features.py``, weighed by constants fitted on measured tables.

``predict(graph, options)`` is ``Σ weight[term] × term`` (seconds) with the constants of ``fitted.py``, which
``benchmarks/cost.py --fit`` writes from ``data/timings/*.csv``. Unlike the roofline proxy (``cost.py``, which the
search's branch and bound needs as a lower bound), this model is meant to *rank* the kernels the CUDA backend
generates: it sees the codegen options, access widths, bytes in flight, waves, launches and tensor cores.

``fit(samples)``: least squares in log time — ``Σ (log predicted − log measured)²`` — over the non-negative
weights (Gauss–Newton from the non-negative least-squares fit of the relative error, on an active set), for each
pair of the two shape constants (DRAM latency, burst exponent) on a small grid, keeping the best. Everything is
deterministic: the same table gives the same constants to the bit.

``choice_quality(frame)``: per point (program, batch), the candidate the model picks against the measured best
(within ``WITHIN`` of it?), and the pairs of candidates that measure ``TIE_APART`` or more apart yet share a
predicted figure. ``leave_one_out(samples)``: each program predicted by the model fitted on the others.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from mirage_lab.errors import ArgumentError
from mirage_lab.ir.builder import KernelGraphBuilder
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.optimize import fitted
from mirage_lab.optimize.features import TERMS, GeneratorOptions, Terms, time_terms
from mirage_lab.optimize.hardware import Hardware

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BURSTS",
    "LATENCIES_S",
    "Calibration",
    "Sample",
    "choice_quality",
    "default_calibration",
    "fit",
    "leave_one_out",
    "predict",
]

#: the shape constants tried by ``fit``
LATENCIES_S: tuple[float, ...] = (250e-9, 400e-9, 600e-9, 800e-9, 1000e-9, 1500e-9)
BURSTS: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0)
#: the model's pick is good when it measures within this factor of the point's measured best
WITHIN = 1.15
#: two candidates this far apart (measured) must not share a predicted figure
TIE_APART = 1.3
#: relative difference under which two predictions count as the same figure
SAME_FIGURE = 1e-9
#: the least weight of each term: a count costs at least a microsecond (a kernel launch on one stream takes
#: more), and no resource runs faster than ten times its datasheet rate. Without floors a term the training
#: programs do not exercise gets weight 0, and candidates that differ only there tie
COUNT_FLOOR_S = 1e-6
RATE_FLOOR = 0.1
COUNT_TERMS = ("calls", "library")
#: a launch costs between a third of and three times the preset's [uncertain] ``launch_s``: where every
#: training graph has one kernel, launches and calls cannot be told apart and the fit would trade one for the other
LAUNCH_RANGE = (1 / 3, 3.0)


def bounds() -> tuple[np.ndarray, np.ndarray]:
    """(least, greatest) weight of each term."""
    low = np.array([LAUNCH_RANGE[0] if t == "launch" else COUNT_FLOOR_S if t in COUNT_TERMS else RATE_FLOOR
                    for t in TERMS])
    high = np.array([LAUNCH_RANGE[1] if t == "launch" else np.inf for t in TERMS])
    return low, high


@dataclass(frozen=True)
class Calibration:
    """Fitted constants: ``weights`` (term → factor on its datasheet time, or seconds per count), the two shape
    constants, and where they came from (``provenance``: the table, its sha256, rows, programs, the fit's
    log-RMSE)."""

    weights: dict[str, float]
    latency_s: float
    burst: float
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.weights) - set(TERMS)
        if unknown:
            raise ArgumentError(f"Calibration weights name unknown terms {sorted(unknown)}; the terms are {TERMS}")

    def seconds(self, terms: Terms) -> float:
        return math.fsum(self.weights.get(t, 0.0) * getattr(terms, t) for t in TERMS)

    def to_dict(self) -> dict[str, Any]:
        return {"weights": dict(self.weights), "latency_s": self.latency_s, "burst": self.burst,
                "provenance": dict(self.provenance)}


@dataclass(frozen=True)
class Sample:
    """One measured candidate: the graph as the backend prepared it, its codegen options, its median time."""

    program: str
    batch: int
    label: str
    graph: KernelGraph
    options: GeneratorOptions | None
    measured_s: float


def predict(graph: KernelGraph | KernelGraphBuilder, options: GeneratorOptions | None = None,
            hardware: str | Hardware = "H100", calibration: Calibration | None = None) -> float:
    """Predicted seconds of ``graph`` (as the CUDA backend prepares it) under ``options`` (default: the
    constants in ``fitted.py``)."""
    cal = calibration or default_calibration()
    return cal.seconds(time_terms(graph, options, hardware, latency_s=cal.latency_s, burst=cal.burst))


def default_calibration() -> Calibration:
    """The constants ``benchmarks/cost.py --fit`` wrote to ``fitted.py``."""
    return Calibration(dict(fitted.WEIGHTS), fitted.LATENCY_S, fitted.BURST, dict(fitted.PROVENANCE))


# --------------------------------------------------------------------------- the fit


TermTable = dict[tuple[float, float], np.ndarray]  # (latency, burst) → samples × terms


def term_table(samples: Sequence[Sample], hardware: str | Hardware, latencies: Sequence[float] = LATENCIES_S,
               bursts: Sequence[float] = BURSTS) -> TermTable:
    """Every sample's terms at every pair of shape constants (computed once, shared by the folds)."""
    return {(lat, b): np.array([time_terms(s.graph, s.options, hardware, latency_s=lat, burst=b).vector_of()
                                for s in samples], dtype=float).reshape(len(samples), len(TERMS))
            for lat, b in itertools.product(latencies, bursts)}


def fit(samples: Sequence[Sample], hardware: str | Hardware, *, table: TermTable | None = None,
        rows: Sequence[int] | None = None, provenance: dict[str, Any] | None = None) -> Calibration:
    """The constants that minimise the squared log error over ``samples`` (``rows``: only those, by index).
    ``table``: the precomputed ``term_table`` of ``samples``."""
    if not samples:
        raise ArgumentError("fit needs at least one measured sample")
    table = table if table is not None else term_table(samples, hardware)
    idx = np.array(list(range(len(samples)) if rows is None else rows), dtype=int)
    y = np.array([samples[i].measured_s for i in idx], dtype=float)
    if not np.all(np.isfinite(y) & (y > 0)):
        raise ArgumentError("measured times must be positive and finite")
    best: tuple[float, tuple[float, float], np.ndarray] | None = None
    for key in sorted(table):
        beta = _log_least_squares(table[key][idx], y, *bounds())
        loss = _log_rmse(table[key][idx] @ beta, y)
        if best is None or loss < best[0] - 1e-12:
            best = (loss, key, beta)
    assert best is not None
    loss, (lat, burst), beta = best
    prov = {**(provenance or {}), "rows": len(idx), "log_rmse": round(loss, 6)}
    return Calibration({t: float(b) for t, b in zip(TERMS, beta, strict=True)}, lat, burst, prov)


def _log_rmse(pred: np.ndarray, y: np.ndarray) -> float:
    if np.any(pred <= 0):
        return math.inf
    return float(np.sqrt(np.mean((np.log(pred) - np.log(y)) ** 2)))


def _bounded_lstsq(a: np.ndarray, b: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """min ‖a x − b‖ over low ≤ x ≤ high, by pinning the most violating coefficient to its bound until none is
    left (an active set for a handful of terms)."""
    free = list(range(a.shape[1]))
    x = np.clip(np.zeros(a.shape[1]), low, high)
    while free:
        fixed = [j for j in range(a.shape[1]) if j not in free]
        sol, *_ = np.linalg.lstsq(a[:, free], b - a[:, fixed] @ x[fixed], rcond=None)
        over = np.maximum(low[free] - sol, sol - high[free]) / np.maximum(np.abs(sol), 1e-300)
        if np.all(over <= 0):
            x[free] = sol
            return x
        j = int(np.argmax(over))
        x[free[j]] = np.clip(sol[j], low[free[j]], high[free[j]])
        free.pop(j)
    return x


def _log_least_squares(x: np.ndarray, y: np.ndarray, low: np.ndarray, high: np.ndarray,
                       iterations: int = 60) -> np.ndarray:
    """Weights within [low, high] minimising Σ (log(x·β) − log y)²: the bounded least squares of the relative
    error, then Gauss–Newton steps on the weights off their bounds (or pulling away from them), halved until the
    loss drops, projected onto the bounds."""
    scale = np.where(x.max(axis=0) > 0, x.max(axis=0), 1.0)
    xs, lows, highs = x / scale, low * scale, high * scale
    beta = _bounded_lstsq(xs / y[:, None], np.ones_like(y), lows, highs)
    if not np.all(xs @ beta > 0):
        return beta / scale
    loss = _log_rmse(xs @ beta, y)
    for _ in range(iterations):
        pred = xs @ beta
        r = np.log(pred) - np.log(y)
        grad = (xs / pred[:, None]).T @ r
        free = [j for j in range(len(beta))
                if lows[j] < beta[j] < highs[j] or (beta[j] <= lows[j] and grad[j] < 0)
                or (beta[j] >= highs[j] and grad[j] > 0)]
        if not free:
            break
        jac = xs[:, free] / pred[:, None]
        step, *_ = np.linalg.lstsq(jac, -r, rcond=None)
        t = 1.0
        improved = False
        while t > 1e-6:
            trial = beta.copy()
            trial[free] = np.clip(beta[free] + t * step, lows[free], highs[free])
            new = _log_rmse(xs @ trial, y)
            if new < loss - 1e-12:
                beta, loss, improved = trial, new, True
                break
            t /= 2
        if not improved:
            break
    return beta / scale


# --------------------------------------------------------------------------- evaluation


def leave_one_out(samples: Sequence[Sample], hardware: str | Hardware, *, table: TermTable | None = None,
                  progress: Callable[[Iterable[str]], Iterable[str]] | None = None) -> list[float]:
    """Each sample's prediction by the model fitted on the samples of every *other* program."""
    table = table if table is not None else term_table(samples, hardware)
    programs = sorted({s.program for s in samples})
    out = [math.nan] * len(samples)
    for program in (progress or iter)(programs):
        train = [i for i, s in enumerate(samples) if s.program != program]
        test = [i for i, s in enumerate(samples) if s.program == program]
        if not train:
            raise ArgumentError("leave_one_out needs samples of at least two programs")
        cal = fit(samples, hardware, table=table, rows=train)
        terms = table[(cal.latency_s, cal.burst)]
        for i in test:
            out[i] = cal.seconds(Terms(*terms[i]))
    return out


def choice_quality(frame: pd.DataFrame, predicted: str = "predicted_s", measured: str = "measured_s"
                   ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Per point (``program``, ``batch``): the candidate the ``predicted`` column picks, its measured time
    against the point's best (``ratio``, ``within`` ``WITHIN``), and ``ties``: pairs measuring ``TIE_APART`` or
    more apart with the same predicted figure. Returns (the per-point frame, a summary: points with two or more
    candidates, how many picks are within, the share, the ties)."""
    import pandas as pd

    rows = []
    for (program, batch), df in frame.groupby(["program", "batch"], sort=True):
        pick = df.loc[df[predicted].idxmin()]
        best = float(df[measured].min())
        p, m = df[predicted].to_numpy(float), df[measured].to_numpy(float)
        ties = sum(1 for i, j in itertools.combinations(range(len(df)), 2)
                   if max(m[i], m[j]) >= TIE_APART * min(m[i], m[j])
                   and abs(p[i] - p[j]) <= SAME_FIGURE * max(abs(p[i]), abs(p[j])))
        rows.append({"program": program, "batch": int(batch), "candidates": len(df), "pick": pick["graph"],
                     "pick_us": float(pick[measured]) * 1e6, "best": df.loc[df[measured].idxmin()]["graph"],
                     "best_us": best * 1e6, "ratio": float(pick[measured]) / best,
                     "within": float(pick[measured]) <= WITHIN * best, "ties": ties})
    points = pd.DataFrame(rows)
    scored = points[points["candidates"] >= 2] if len(points) else points
    summary = {"points": len(scored), "within": int(scored["within"].sum()) if len(scored) else 0,
               "share_within": float(scored["within"].mean()) if len(scored) else math.nan,
               "ties": int(points["ties"].sum()) if len(points) else 0, "within_factor": WITHIN,
               "tie_apart": TIE_APART}
    return points, summary
