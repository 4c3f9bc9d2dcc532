"""The tuner's logic, kept apart from the device so that it is tested on the CPU with a fake timer.

``tune_targets`` finds the distinct kernels of a set of μGraphs (by ``kernel_key``: a kernel shared by two programs
is tuned once); ``candidates`` orders a kernel's launch parameters, defaults first, then by distance from them;
``sweep`` times them round-robin (every kernel's defaults, then every kernel's second candidate, …) until the time
budget is spent, so that a budget that runs out leaves every kernel equally explored, and returns each kernel's
fastest launch with its default time, ready for ``tuned.write_tuned``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from mirage_lab.codegen.triton.launch import TritonLaunch
from mirage_lab.codegen.triton.module import triton_module
from mirage_lab.codegen.triton.tuned import TunedKernel
from mirage_lab.errors import InputError, MirageError
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.node import plural

__all__ = ["SweepResult", "Trial", "TuneTarget", "candidates", "sweep", "tune_targets"]

WARPS = (2, 4, 8)
STAGES = (1, 2, 3, 4)
EXTENTS = (16, 32, 64)


@dataclass(frozen=True)
class TuneTarget:
    """One distinct kernel: its key, where it was met first ("fused_rmsnorm_b1/kernel_2"), a μGraph that holds it
    (the tuner times that graph with only this kernel's parameters changed), its defaults and its loop length."""

    key: str
    where: str
    graph: KernelGraph = field(repr=False)
    default: TritonLaunch
    forloop_range: int


def tune_targets(graphs: Mapping[str, KernelGraph]) -> list[TuneTarget]:
    """The distinct kernels of ``graphs`` (name → μGraph), in order of first appearance."""
    seen: dict[str, TuneTarget] = {}
    for name, graph in graphs.items():
        module = triton_module(graph)
        for k, kern in module.kernels.items():
            body = module.graph.nodes[k].body
            assert body is not None
            if kern.key not in seen:
                seen[kern.key] = TuneTarget(kern.key, f"{name}/{kern.name}", graph, kern.launch, body.forloop_range)
    return list(seen.values())


def candidates(default: TritonLaunch, forloop_range: int, warps: Sequence[int] = WARPS,
               stages: Sequence[int] = STAGES, extents: Sequence[int] = EXTENTS) -> list[TritonLaunch]:
    """Launch parameters to try for a kernel: ``default`` first, then the others nearest it first (one step of
    warps, stages or padding counts 1). Stages beyond the loop's length buy nothing, so a loop of F iterations gets
    at most F stages (1 for a loop that runs once)."""
    def distance(c: TritonLaunch) -> tuple[float, int, int, int]:
        d = (abs(math.log2(c.num_warps / default.num_warps)) + abs(c.num_stages - default.num_stages)
             + abs(math.log2(c.min_extent / default.min_extent)))
        return d, c.num_warps, c.num_stages, c.min_extent

    grid = {TritonLaunch(w, s, e) for w in warps for s in stages for e in extents if s <= max(1, forloop_range)}
    grid.discard(default)
    return [default, *sorted(grid, key=distance)]


@dataclass(frozen=True)
class Trial:
    """One timed candidate: its median ms, or why it could not run (then ``ms`` is None)."""

    key: str
    launch: TritonLaunch
    ms: float | None
    error: str | None = None


@dataclass(frozen=True)
class SweepResult:
    """Every trial, each kernel's best, the seconds spent, and whether every candidate was timed in the budget."""

    trials: tuple[Trial, ...]
    tuned: tuple[TunedKernel, ...]
    seconds: float
    complete: bool

    def table(self) -> pd.DataFrame:
        """One row per trial: key (12 digits), warps, stages, padding, ms, error."""
        return pd.DataFrame([{"key": t.key[:12], "num_warps": t.launch.num_warps, "num_stages": t.launch.num_stages,
                              "min_extent": t.launch.min_extent, "ms": t.ms, "error": t.error} for t in self.trials])

    def __repr__(self) -> str:
        done = "complete" if self.complete else "cut by the budget"
        kernels, trials = plural(len(self.tuned), "kernel"), plural(len(self.trials), "trial")
        return f"SweepResult({kernels}, {trials}, {self.seconds:.1f} s, {done})"


def sweep(targets: Sequence[TuneTarget], measure: Callable[[TuneTarget, TritonLaunch], float], budget_s: float,
          *, plans: Mapping[str, Sequence[TritonLaunch]] | None = None,
          signature: Callable[[TuneTarget, TritonLaunch], Hashable] | None = None,
          clock: Callable[[], float] = time.perf_counter) -> SweepResult:
    """Time each target's candidates round-robin within ``budget_s`` seconds of ``clock``.

    ``measure(target, launch)`` returns the median ms (raising a ``MirageError`` when the candidate cannot be
    rendered, compiled or run: it is recorded and skipped). ``plans`` overrides a target's candidate list (by key);
    ``signature`` names what a candidate compiles to, so that a candidate identical to one already timed (a padding
    that changes no tile) reuses that time instead of being timed again. A target whose defaults could not be
    timed is left out of the result."""
    if budget_s <= 0:
        raise InputError(f"the tuning budget must be positive seconds, got {budget_s!r}")
    lists = {t.key: list((plans or {}).get(t.key) or candidates(t.default, t.forloop_range)) for t in targets}
    start = clock()
    trials: list[Trial] = []
    timed: dict[tuple[str, Hashable], tuple[float | None, str | None]] = {}
    rank, complete = 0, True
    while any(rank < len(lists[t.key]) for t in targets):
        for target in targets:
            if rank >= len(lists[target.key]):
                continue
            if clock() - start >= budget_s:
                complete = False
                break
            launch = lists[target.key][rank]
            trials.append(_trial(target, launch, measure, signature, timed))
        if not complete:
            break
        rank += 1
    tuned = tuple(k for t in targets if (k := _best(t, [x for x in trials if x.key == t.key])) is not None)
    return SweepResult(tuple(trials), tuned, clock() - start, complete)


def _trial(target: TuneTarget, launch: TritonLaunch, measure: Callable[[TuneTarget, TritonLaunch], float],
           signature: Callable[[TuneTarget, TritonLaunch], Hashable] | None,
           timed: dict[tuple[str, Hashable], tuple[float | None, str | None]]) -> Trial:
    same = (target.key, signature(target, launch)) if signature is not None else None
    if same is not None and same in timed:
        return Trial(target.key, launch, *timed[same])
    ms: float | None
    try:
        ms, error = float(measure(target, launch)), None
        if not ms > 0:
            raise MirageError(f"the timer returned {ms} ms")
    except MirageError as e:
        ms, error = None, f"{type(e).__name__}: {e}"
    if same is not None:
        timed[same] = (ms, error)
    return Trial(target.key, launch, ms, error)


def _best(target: TuneTarget, trials: Sequence[Trial]) -> TunedKernel | None:
    ok = [t for t in trials if t.ms is not None]
    default = next((t for t in ok if t.launch == target.default), None)
    if default is None or default.ms is None:
        return None
    best = min(ok, key=lambda t: t.ms if t.ms is not None else math.inf)  # ties keep the first: the defaults
    assert best.ms is not None
    return TunedKernel(target.key, best.launch, best.ms, default.ms, len(trials), target.where)
