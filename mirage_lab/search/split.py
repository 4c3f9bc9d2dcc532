"""Heavy tasks split into sub-tasks, and put back together.

A task that its first slice does not finish (``runner``: ``SLICE_STATES``) is heavy, and what makes it heavy is
the kernels it opens after its own root closes: GQA b1's task 933 opens a second customized op 28 863 times,
and those openings' subtrees are 99 % of its 73 854 states. Its continuation therefore walks with ``split``
(``Enumerator.run``): each of those openings is recorded as a *sub-task*, as the frontier records tasks, with a
``task`` event where it opens; workers walk the sub-tasks (``task.run_batch``), and the parent joins them into
the task's one result (``Family``), with each sub-task's events spliced in at its ``task`` event. The joined
result is the one the task would have had unsplit, but for its node ids (a sub-task's are ``<task>.<sub>.<n>``),
what the cost bound's incumbent was when each part ran, and duplicate μGraphs across sub-tasks recorded as
verified in each (the ranking keeps the first, as across tasks).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from mirage_lab.search.event_blocks import events_of
from mirage_lab.search.events import merge_verdicts
from mirage_lab.search.run_log import Segments


class Family:
    """A task walked with ``split`` (its ``head``, whose ``subtasks`` are the parts) and its parts' results, each
    folded in as it comes back (``add``), so that joining them when the last returns (``joined``) only
    concatenates: joined all at once, GQA b1's task with 35 368 sub-tasks took the parent 1.15 s, and its 26 split
    tasks 3.6 s in all, while every worker of a cluster waits for its next call. The head's own events are cut at
    its ``task`` events by a thread as soon as it returns (``run_log.Segments``); each part's events go in at its
    ``task`` event, copied byte for byte (event blocks concatenate)."""

    def __init__(self, head: dict[str, Any]) -> None:
        self.head = head
        self.subtasks: list[Any] = head["subtasks"]
        n = len(self.subtasks)
        self.parts_done = 0
        self._total = summed([{**head, "candidates": []}])  # (candidates go in by part, in order, when joined)
        self._candidates: list[list[Any]] = [[] for _ in range(n)]
        self._events: list[bytes] = [b""] * n
        self._walls = [0.0] * n
        self._parts_s: dict[str, float] = {}
        self._stops: dict[int, str] = {}
        self._bests = [] if head.get("incumbent") is None else [head["incumbent"]]
        raw = head.get("events_gz")
        self._segments = None if raw is None else Segments(events_of(raw, "a split task's events")).start()

    def __repr__(self) -> str:
        return f"Family(task {self.head.get('index')}, {self.parts_done}/{len(self.subtasks)} sub-tasks done)"

    @property
    def complete(self) -> bool:
        return self.parts_done == len(self.subtasks)

    def add(self, k: int, res: dict[str, Any]) -> None:
        """Fold in sub-task ``k``'s result."""
        fold(self._total, {**res, "candidates": []})
        self._candidates[k] = res["candidates"]
        self._events[k] = res.get("events_gz") or b""
        self._walls[k] = res["wall"]
        self._parts_s = added(self._parts_s, res["seconds"])
        if res["stop_reason"] != "complete":
            self._stops[k] = res["stop_reason"]
        if res.get("incumbent") is not None:
            self._bests.append(res["incumbent"])
        self.parts_done += 1

    def so_far(self) -> dict[str, Any]:
        """What the parts done so far verified and the seconds they took (a search stopped before the last)."""
        return {"candidates": [c for part in self._candidates for c in part], "seconds": self._parts_s}

    def joined(self) -> dict[str, Any]:
        """The result of the task (every part done): that of one walk. Counts, verdicts, candidates and times add
        up; it stopped early when any part did."""
        out = dict(self.head)
        out.pop("subtasks", None)
        out.update(self._total, candidates=[*self.head["candidates"], *(c for part in self._candidates for c in part)])
        if self._segments is not None:
            front = self._segments.done()
            out["events_gz"] = b"".join(piece for segment, k in itertools.zip_longest(front.segments, front.tasks)
                                        for piece in (segment, b"" if k is None else self._events[int(k)]))
        if self._stops and out["stop_reason"] == "complete":
            out["stop_reason"] = self._stops[min(self._stops)]
        out["incumbent"] = min(self._bests) if self._bests else None
        out["parts_wall"] = self._walls  # (``benchmarks/scaling.py`` records them)
        return out


def summed(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What the results of one walk's parts, in order, add up to: the summary's counts, the verdicts, the
    candidates, the seconds, states and wall time, and the files written (``Family``, ``task.join_slice``)."""
    first = results[0]
    out = {"summary": dict(first["summary"]), "verdicts": {e: dict(v) for e, v in first["verdicts"].items()},
           "seconds": dict(first["seconds"]), "candidates": list(first["candidates"]), "states": first["states"],
           "wall": first["wall"], "files": dict(first.get("files", {}))}
    for r in results[1:]:
        fold(out, r)
    return out


def fold(into: dict[str, Any], r: dict[str, Any]) -> None:
    """Add one more part's result ``r`` to ``into`` (``summed``'s form)."""
    s = into["summary"]
    into["summary"] = {"states": s["states"] + r["summary"]["states"],
                       **{k: added(s[k], r["summary"][k]) for k in ("oracle_rules", "pruned", "candidates")}}
    merge_verdicts(into["verdicts"], r["verdicts"])
    into["seconds"] = added(into["seconds"], r["seconds"])
    into["candidates"].extend(r["candidates"])
    into["states"] += r["states"]
    into["wall"] += r["wall"]
    into["files"].update(r.get("files", {}))


def added(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two count (or seconds) dicts added key by key."""
    return {k: a.get(k, 0) + b.get(k, 0) for k in {**a, **b}}


#: the seconds one batched call aims at: a few hundred times a cluster scheduler's hand-out
CALL_S = 0.25
#: the seconds a batch of sub-tasks is worth at least: fifty hand-outs of a cluster's scheduler (about 1 ms each)
SUB_CALL_S = 0.05
#: the parent's seconds per call of a cluster's, at least: its scheduler's hand-out (about 1 ms) and taking the call's
#: results (0.5–0.8 ms: ``fit_parent`` on the records in ``data/task_costs/xeon``). It serves one call at a time.
#: What it spends beyond that is measured as the search goes (``ParentCost``).
PARENT_CALL_S = 0.0015
#: the most sub-tasks of a split task one worker call takes before any sub-task came back, and after
BATCH_SUBTASKS, MOST_SUBTASKS = 64, 1024


def batch_size(pending: int, workers: int, most: int, each_s: float | None = None, least_s: float = 0.0,
               parent_s: float = PARENT_CALL_S) -> int:
    """How many of ``pending`` tasks one worker call takes (guided self-scheduling): a share of what is left per
    worker, so that the hand-outs shrink as the queue does and the last ones balance, at most ``most``. With
    ``each_s`` (what such a call's items took lately, each), no more than fill ``call_budget_s``: fused-first order
    hands the heavy roots out first (MQA b1's first slices take seconds each, its last milliseconds), and a batch of
    heavy slices would be the longest call of the search; and no fewer than fill ``least_s`` and ``served_s``, so that
    a call is worth its hand-out (a split task's sub-tasks average about a millisecond: GQA b1's 102 339 took 124 s
    in all) and the parent keeps every worker busy. ``parent_s``: the parent's seconds per call (``ParentCost``)."""
    n = pending // (4 * max(1, workers))
    if each_s is not None:
        each = max(each_s, 1e-6)
        least = max(least_s, served_s(workers, parent_s))
        n = max(min(n, int(call_budget_s(workers, parent_s) / each)), math.ceil(least / each))
    return max(1, min(most, pending, n))


def served_s(workers: int, parent_s: float = PARENT_CALL_S) -> float:
    """The seconds a call must last for the parent, serving one call at a time in ``parent_s``, to keep ``workers``
    busy: GQA b1's slices at a share of the queue each took 0.1 s at 256 workers, against the parent's 0.38 s to hand
    out and take a call for every worker, and the replay ran 14.6× there against 20.3× at 64 (issue 37)."""
    return workers * parent_s


def call_budget_s(workers: int, parent_s: float = PARENT_CALL_S) -> float:
    """The seconds after which a call of slices starts no more (``task.run_batch``'s budget), for ``workers``."""
    return max(CALL_S, served_s(workers, parent_s))


class ParentCost:
    """The parent's seconds per call, as measured while the search runs. The parent of a 2-worker Dask
    ``LocalCluster`` spent about 10 ms of CPU a call (LoRA b1: the scheduler, unpickling each task's verdicts, the
    run folder), not ``PARENT_CALL_S``; calls sized to 1.5 ms there would leave 64 workers waiting on it.

    Part of that time is per call (a hand-out, a message) and part per item the call returns (a result to unpickle
    and save); only the first shrinks as calls grow, so only it sizes them (``per_call_s``, never below
    ``PARENT_CALL_S``: a scheduler elsewhere spends that much). ``add`` is told what the parent spent (its CPU, in a
    runner; what the replay charges it, in ``benchmarks/scaling.py``) and the calls and items it took meanwhile;
    every ``WINDOW`` calls that window is one observation of ``spent = per_call × calls + per_item × items``, and
    the two are fitted by least squares over the windows, the older ones weighing less (``WINDOW_WEIGHT``). While
    every window had the same items per call, the two cannot be told apart and the whole time counts as per call."""

    #: calls an observation spans: the first results (imports, the documents shared) do not set it alone
    WINDOW = 32

    def __init__(self) -> None:
        self.per_call_s = PARENT_CALL_S
        self.per_item_s = 0.0
        self._spent, self._calls, self._items = 0.0, 0, 0  # (this window's)
        self._sums = [0.0] * 5  # (weighted) calls², calls·items, items², spent·calls, spent·items

    def __repr__(self) -> str:
        return f"ParentCost({self.per_call_s * 1e3:.2f} ms a call, {self.per_item_s * 1e3:.3f} ms an item)"

    def add(self, spent_s: float, calls: int = 1, items: int = 1) -> None:
        """The parent spent ``spent_s`` since the last ``add``, and took ``calls`` calls' results, ``items`` in all."""
        self._spent += spent_s
        self._calls += calls
        self._items += items
        if self._calls >= self.WINDOW:
            self._fit(self._spent, self._calls, self._items)
            self._spent, self._calls, self._items = 0.0, 0, 0

    def _fit(self, spent: float, calls: int, items: int) -> None:
        keep = 1.0 - WINDOW_WEIGHT
        self._sums = [keep * old + new for old, new in zip(self._sums, (
            calls * calls, calls * items, items * items, spent * calls, spent * items), strict=True)]
        cc, ci, ii, sc, si = self._sums
        det = cc * ii - ci * ci
        call, item = sc / cc, 0.0  # (windows alike: all of it per call)
        if det > 1e-3 * cc * ii:
            call, item = (sc * ii - si * ci) / det, (si * cc - sc * ci) / det
            if item < 0:
                call, item = sc / cc, 0.0
            elif call < 0:
                call, item = 0.0, si / ii
        self.per_call_s, self.per_item_s = max(PARENT_CALL_S, call), item


def sub_batch_size(left: int, workers: int, each_s: float | None, parent_s: float = PARENT_CALL_S) -> int:
    """How many of a split task's ``left`` sub-tasks the next call takes (``runner._sub_batch``, and the replay in
    ``benchmarks/scaling.py``): once sub-tasks came back (``each_s``, their recent seconds), a call worth at least
    ``SUB_CALL_S``; before, a share of those left."""
    most = BATCH_SUBTASKS if each_s is None else MOST_SUBTASKS
    return batch_size(left, workers, most, each_s, SUB_CALL_S, parent_s)


#: how fast the runner's estimate of a slice's seconds follows the latest ones (an exponential average)
EACH_WEIGHT = 0.1
#: how much less each older window of calls weighs in ``ParentCost``'s fit
WINDOW_WEIGHT = 0.25


def averaged(each_s: float | None, seconds: float) -> float:
    """The running estimate of one item's seconds, after one more took ``seconds``."""
    return seconds if each_s is None else each_s + EACH_WEIGHT * (seconds - each_s)
