"""Heavy tasks split into sub-tasks, and put back together.

A task that its first slice does not finish (``runner``: ``SLICE_STATES``) is heavy, and what makes it heavy is
the kernels it opens after its own root closes: GQA b1's task 933 opens a second customized op 28 863 times,
and those openings' subtrees are 99 % of its 73 854 states. Its continuation therefore walks with ``split``
(``Enumerator.run``): each of those openings is recorded as a *sub-task*, as the frontier records tasks, with a
``task`` event where it opens; workers walk the sub-tasks (``task.run_batch``), and the parent joins them into
the task's one result (``join_split``), with each sub-task's events spliced in at its ``task`` event
(``splice_subtasks``). The joined result is the one the task would have had unsplit, but for its node ids
(a sub-task's are ``<task>.<sub>.<n>``), what the cost bound's incumbent was when each part ran, and duplicate
μGraphs across sub-tasks recorded as verified in each (the ranking keeps the first, as across tasks).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mirage_lab.search.event_blocks import encode, events_of
from mirage_lab.search.events import merge_verdicts


def splice_subtasks(events: bytes, parts: list[bytes]) -> bytes:
    """A split walk's packed events with each ``task`` event replaced by that sub-task's packed events, copied byte
    for byte (event blocks concatenate, ``event_blocks``). The one place that reads a task's log back: the split
    walk's own events are few (its root's block graph and the kernel states between openings)."""
    out: list[bytes] = []
    pending: list[dict[str, Any]] = []
    for ev in events_of(events, "a split task's events"):
        if ev["e"] != "task":
            pending.append(ev)
            continue
        out.extend(encode(pending))
        pending = []
        out.append(parts[int(ev["task"])])
    out.extend(encode(pending))
    return b"".join(out)


def join_split(head: dict[str, Any], parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The result of a task walked with ``split`` (``head``, whose ``subtasks`` are done as ``parts``, in order):
    that of one walk. Counts, verdicts, candidates and times add up; it stopped early when any part did."""
    out = dict(head)
    out.pop("subtasks", None)
    out.update(summed([head, *parts]))
    if head.get("events_gz") is not None:
        out["events_gz"] = splice_subtasks(head["events_gz"], [p.get("events_gz") or b"" for p in parts])
    stops = [p["stop_reason"] for p in parts if p["stop_reason"] != "complete"]
    if stops and out["stop_reason"] == "complete":
        out["stop_reason"] = stops[0]
    bests = [x for x in (head.get("incumbent"), *(p.get("incumbent") for p in parts)) if x is not None]
    out["incumbent"] = min(bests) if bests else None
    out["parts_wall"] = [p["wall"] for p in parts]  # (``benchmarks/scaling.py`` records them)
    return out


def summed(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What the results of one walk's parts, in order, add up to: the summary's counts, the verdicts, the
    candidates, the seconds, states and wall time, and the files written (``join_split``, ``task.join_slice``)."""
    first = results[0]
    summary = dict(first["summary"])
    verdicts = {e: dict(v) for e, v in first["verdicts"].items()}
    seconds = dict(first["seconds"])
    for r in results[1:]:
        summary = {"states": summary["states"] + r["summary"]["states"],
                   **{k: added(summary[k], r["summary"][k]) for k in ("oracle_rules", "pruned", "candidates")}}
        merge_verdicts(verdicts, r["verdicts"])
        seconds = added(seconds, r["seconds"])
    return {"summary": summary, "verdicts": verdicts, "seconds": seconds,
            "candidates": [c for r in results for c in r["candidates"]],
            "states": sum(r["states"] for r in results), "wall": sum(r["wall"] for r in results),
            "files": {k: v for r in results for k, v in r.get("files", {}).items()}}


def added(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two count (or seconds) dicts added key by key."""
    return {k: a.get(k, 0) + b.get(k, 0) for k in {**a, **b}}


def batch_size(pending: int, workers: int, most: int, each_s: float | None = None, least_s: float = 0.0) -> int:
    """How many of ``pending`` tasks one worker call takes (guided self-scheduling): a share of what is left per
    worker, so that the hand-outs shrink as the queue does and the last ones balance, at most ``most``. With
    ``each_s`` (what such a call's items took lately, each), no more than fill ``call_budget_s``: fused-first order
    hands the heavy roots out first (MQA b1's first slices take seconds each, its last milliseconds), and a batch of
    heavy slices would be the longest call of the search; and no fewer than fill ``least_s`` and ``served_s``, so that
    a call is worth its hand-out (a split task's sub-tasks average about a millisecond: GQA b1's 102 339 took 124 s
    in all) and the parent keeps every worker busy."""
    n = pending // (4 * max(1, workers))
    if each_s is not None:
        each = max(each_s, 1e-6)
        least = max(least_s, served_s(workers))
        n = max(min(n, int(call_budget_s(workers) / each)), math.ceil(least / each))
    return max(1, min(most, pending, n))


#: the seconds one batched call aims at: a few hundred times a cluster scheduler's hand-out
CALL_S = 0.25
#: the seconds a batch of sub-tasks is worth at least: fifty hand-outs of a cluster's scheduler (about 1 ms each)
SUB_CALL_S = 0.05
#: the parent's seconds per call of a cluster's: its scheduler's hand-out (about 1 ms) and taking the call's results
#: (0.5–0.8 ms: ``fit_parent`` on the records in ``data/task_costs/xeon``). It serves one call at a time.
PARENT_CALL_S = 0.0015
#: the most sub-tasks of a split task one worker call takes before any sub-task came back, and after
BATCH_SUBTASKS, MOST_SUBTASKS = 64, 1024


def served_s(workers: int) -> float:
    """The seconds a call must last for the parent, serving one call at a time, to keep ``workers`` busy: GQA b1's
    slices at a share of the queue each took 0.1 s at 256 workers, against the parent's 0.38 s to hand out and take
    a call for every worker, and the replay ran 14.6× there against 20.3× at 64 (issue 37)."""
    return workers * PARENT_CALL_S


def call_budget_s(workers: int) -> float:
    """The seconds after which a call of slices starts no more (``task.run_batch``'s budget), for ``workers``."""
    return max(CALL_S, served_s(workers))


def sub_batch_size(left: int, workers: int, each_s: float | None) -> int:
    """How many of a split task's ``left`` sub-tasks the next call takes (``runner._sub_batch``, and the replay in
    ``benchmarks/scaling.py``): once sub-tasks came back (``each_s``, their recent seconds), a call worth at least
    ``SUB_CALL_S``; before, a share of those left."""
    most = BATCH_SUBTASKS if each_s is None else MOST_SUBTASKS
    return batch_size(left, workers, most, each_s, SUB_CALL_S)
#: how fast the runner's estimate of a slice's seconds follows the latest ones (an exponential average)
EACH_WEIGHT = 0.1


def averaged(each_s: float | None, seconds: float) -> float:
    """The running estimate of one item's seconds, after one more took ``seconds``."""
    return seconds if each_s is None else each_s + EACH_WEIGHT * (seconds - each_s)
