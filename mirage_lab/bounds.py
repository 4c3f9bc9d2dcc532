"""Upper bounds on what a user can ask for: trial counts and timed runs, checked before the work starts.

A count is work: each verification trial evaluates the program once and keeps that evaluation for the next
candidate, each timed run calls the graph once. ``verify(..., trials=10**7)`` once grew memory by ~29 MB/s
for hours. So every such count is an integer with a ceiling, checked where the API takes it (the command
line passes its numbers through to the same functions, so both refuse the same values with the same
message), and work whose size is known is checked against time and memory:

* trials: at most ``MAX_TRIALS``; and the evaluations kept (``trials`` × inputs and outputs) must fit in
  the memory available (``Verifier``).
* timed runs (warm-up and repeats): at most ``MAX_TIMED_RUNS`` each; and once a run is timed, all of them
  must fit in ``TIME_BUDGET_S`` (``timed_runs``) — refused then, before the other runs. The projection uses
  the second run: the first may include compiling.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mirage_lab.errors import InputError, ResourceError

#: Each trial multiplies the chance that a different graph passes by degree/p (about 1e-7 for the benchmark
#: programs, p = 16 774 463): a thousand trials is past any confidence a check needs.
MAX_TRIALS = 1000
#: A median settles within a few hundred runs; 100 000 is far beyond what a timing needs.
MAX_TIMED_RUNS = 100_000
#: The longest a timing may take, projected from its first run.
TIME_BUDGET_S = 3600.0


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_count(name: str, value: Any, *, low: int, high: int, why: str, low_note: str = "") -> int:
    """``value`` as an integer in [low, high], or an ``InputError`` naming ``name``, the bounds and ``why``
    there is a ceiling."""
    if not _is_int(value) or value < low:
        raise InputError(f"{name} must be an integer ≥ {low}{low_note}, got {value!r}")
    if value > high:
        raise InputError(f"{name}={value} is more than mirage-lab runs (at most {high:,}): {why}; ask for fewer")
    return int(value)


def check_trials(trials: Any) -> int:
    """Verification trials: 0 (the float64 check alone) up to ``MAX_TRIALS``."""
    return check_count("trials", trials, low=0, high=MAX_TRIALS, low_note=" (0: the float64 check alone)",
                       why="each trial multiplies the chance that a different graph passes by degree/p (about "
                           "1e-7 for the benchmark programs; a result's error_bound says it), and each trial "
                           "evaluates the program once and keeps that evaluation in memory")


def check_timed_runs(warmup: Any, repeats: Any, names: tuple[str, str] = ("warmup", "repeats")) -> tuple[int, int]:
    """Warm-up runs (≥ 0) and timed repeats (≥ 1), each at most ``MAX_TIMED_RUNS``; ``names`` are the caller's
    names for the two (the drop-in's ``warmup_iters`` and ``profile_iters``)."""
    why = "a median settles within a few hundred runs"
    return (check_count(names[0], warmup, low=0, high=MAX_TIMED_RUNS, why=why),
            check_count(names[1], repeats, low=1, high=MAX_TIMED_RUNS, why=why))


def size(n: float) -> str:
    """Bytes as people read them: 512 B, 3.2 MiB, 1.5 TiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def require_room(need: int, have: int | None, what: str, fix: str) -> None:
    """Refuse ``what`` when it needs more than ``have`` bytes (None: unknown, nothing refused)."""
    if have is not None and need > have:
        raise ResourceError(f"{what} needs {size(need)} of memory but {size(have)} is available; {fix}")


def timed_runs(run_once: Callable[[], float], warmup: Any, repeats: Any, what: str) -> list[float]:
    """Call ``run_once`` (it returns the seconds it took) ``warmup`` times, then ``repeats`` times; return the
    repeats' seconds. Refuses counts over ``MAX_TIMED_RUNS`` before the first call, and after the second call
    a total projected over ``TIME_BUDGET_S``."""
    warmup, repeats = check_timed_runs(warmup, repeats)
    runs = warmup + repeats
    samples = []
    for k in range(runs):
        seconds = run_once()
        if k == 1:
            _within_budget(seconds, runs, what)
        if k >= warmup:
            samples.append(seconds)
    return samples


def wall_time(fn: Callable[[], Any]) -> float:
    """The seconds one call of ``fn`` takes (a ``run_once`` for ``timed_runs``)."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _within_budget(seconds: float, runs: int, what: str) -> None:
    projected = seconds * runs
    if projected > TIME_BUDGET_S:
        most = max(1, int(TIME_BUDGET_S / max(seconds, 1e-12)))
        raise ResourceError(f"timing {what}: {runs:,} runs of {seconds:.3g} s each would take about "
                            f"{_duration(projected)}, more than the {_duration(TIME_BUDGET_S)} a timing may take; "
                            f"ask for fewer runs (at most about {most:,} here)")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
