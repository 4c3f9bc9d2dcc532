"""Search scaling beyond one machine (issues 19 and 37): the recorded task costs of real runs, replayed through a
simulation of the runner's scheduling for 1 to 256 workers.

A search is a serial frontier (the parent enumerates the kernel-level states and cuts the block-graph subtrees
into tasks), then its tasks, handed out to whichever worker is free, then the parent's merge. The runner
(``search/runner.py``) first runs every task as a slice of ``SLICE_STATES`` states, in order (a cluster's
executor takes several slices per call, ``split.batch_size``, and the call stops starting them after
``split.call_budget_s``, where a slice with others behind it yields: the rest of it goes out again first, alone,
``slices_in_call``); a task its slice does not finish is heavy and goes to the back of the queue, and its
continuation hands the kernels it opens after its root closes back as sub-tasks, which go out first, in batches
sized as they go out (``search/split.py``, ``runner._sub_batch``). Calls are sized to the parent's time per call,
which the runner measures as it goes (``split.ParentCost``). The replay imports those rules, and measures what it
charges its parent as the runner would (``--parent-call-ms`` fixes it instead).

``--record`` runs a search serially into a fresh run folder and writes, per task in dispatch order, the wall time
of its slice, of its continuation and of each sub-task (whether it checked a candidate, and how many μGraphs it
verified), the frontier, the parent's time per result (and, fitted to the gaps between calls, per call, per task
result and per sub-task: ``fit_parent``) and its merge, and the seconds the program's trials took, to
``<costs>/<program>_bs<batch>.json.gz`` (format version 2, compact JSON; ``.json`` records and version-1 records,
one time per task, still replay). The replay follows the runner's policy, event by event, with these costs:
* the parent is one serial thread: it hands out each call in ``--overhead-ms`` (a cluster scheduler's order:
  about 1 ms) and spends its recorded time on each returned call;
* each worker starts once, in ``--worker-start-s``;
* ``--trials worker`` (what the code does): each worker evaluates the program's trials at its first call that
  verifies a candidate; ``once``: the trials are evaluated once and shared, overlapped with the workers' start.

* ``--call-ms``: what each call costs its worker beyond its recorded seconds (an executor's own work: arguments,
  results); ``--cores``: the workers and the parent share that many cores (a local cluster), so the wall time is at
  least their CPU seconds over the cores.

It prints the projected wall time and speed-up per W, and the bound that flattens the curve: the work shared
out, the longest task (its slice, continuation and longest sub-task, one after another), or the parent (frontier,
hand-outs, results, merge); and the *ceiling*, the speed-up no hand-out policy could pass with these tasks
(``ceiling``). Records that say how many μGraphs each call verified (since issue 37's item 3) also give when the
first verified one comes back (``first_found_s``): for a space too big to finish, the time to a fused kernel is the
figure that matters.

``--cluster NAME:BATCH`` runs the search on a 2-worker Dask ``LocalCluster`` beside the replay of its record (made
on the same machine) and measures the parent's and the workers' CPU; for a complete record it gives the executor's
own costs per call (``calibration``), the ``--overhead-ms`` and ``--call-ms`` to replay another program with.

    .venv/bin/python benchmarks/scaling.py --record gqa:1 --time-limit 600   # a recorded run
    .venv/bin/python benchmarks/scaling.py [--workers 1,2,8,...,256] [--json out.json] [--html plot.html]
    .venv/bin/python benchmarks/scaling.py --cluster ntrans:1 --costs data/task_costs/xeon   # per-call costs
    .venv/bin/python benchmarks/scaling.py --cluster lora:1 --costs data/task_costs/xeon --overhead-ms 3.7 \
        --call-ms 3.7 --cores 2
"""

from __future__ import annotations

import argparse
import gzip
import heapq
import itertools
import json
import logging
import math
import os
import resource
import shutil
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from mirage_lab.search.run_log import Segments
from mirage_lab.search.runner import BATCH_TASKS
from mirage_lab.search.split import ParentCost, averaged, batch_size, call_budget_s, sub_batch_size

ROOT = Path(__file__).resolve().parent.parent
COSTS = ROOT / "data" / "task_costs"
WORKERS = (1, 2, 8, 16, 32, 64, 128, 256)
FORMAT = "mirage-lab/task-costs"

#: one call's recorded part: (seconds, whether it checked a candidate) and, in records since issue 37's item 3,
#: how many μGraphs it verified (``found``)
Unit = tuple[float, bool] | tuple[float, bool, int]


def found(unit: Unit) -> int:
    """How many μGraphs a recorded part verified (0 where the record does not say)."""
    return unit[2] if len(unit) > 2 else 0  # type: ignore[misc]


@dataclass(frozen=True)
class Task:
    """One task's recorded calls: its slice (the whole task when the slice finished it; the parts of a slice that
    yielded its call, added up: the replay cuts it where its own calls' budgets fall), its continuation, and
    its sub-tasks, each as (seconds, whether it checked a candidate[, how many μGraphs it verified]): ``Unit``.
    Trials are not in these seconds."""

    slice: Unit
    cont: Unit | None = None
    subs: tuple[Unit, ...] = ()

    def units(self) -> list[float]:
        return [self.slice[0], *([self.cont[0]] if self.cont else []), *(u[0] for u in self.subs)]

    @property
    def chain_s(self) -> float:
        """The seconds of its calls that must run one after another: the continuation starts where the slice
        stopped, and the sub-tasks are what the continuation hands back (they run side by side)."""
        return self.slice[0] + (self.cont[0] if self.cont else 0.0) + max((u[0] for u in self.subs), default=0.0)


@dataclass(frozen=True)
class Recorded:
    """One real search: its serial frontier, each task's calls in dispatch order, and how it ended."""

    name: str
    frontier_s: float
    tasks: tuple[Task, ...]
    complete: bool
    measured_wall_s: float
    parent_s: float = 0.0  # the parent's time per result
    finish_s: float = 0.0  # the parent's merge, after the last task
    trials_s: float = 0.0  # one evaluation of the program's trials
    # (records since issue 37's item 4) the parent's time per call, per task result and per sub-task, fitted to the
    # gaps between the recorded calls (``fit_parent``); None: ``parent_s`` per result of either kind
    parent_fit: tuple[float, float, float] | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def parent_own_s(self) -> float:
        """The parent's recorded time apart from its hand-outs and its time per call: frontier, results, merge."""
        if self.parent_fit is None:
            return self.frontier_s + len(self.tasks_s) * self.parent_s + self.finish_s
        _, task_s, sub_s = self.parent_fit
        subs = sum(len(t.subs) for t in self.tasks)
        return self.frontier_s + (len(self.tasks_s) - subs) * task_s + subs * sub_s + self.finish_s

    @property
    def per_call_s(self) -> float:
        """The parent's time per returned call beyond its results (0 where the record does not tell them apart)."""
        return 0.0 if self.parent_fit is None else self.parent_fit[0]

    def taking_s(self, parts: int, subs: bool) -> float:
        """The parent's time to take one call's results: ``parts`` sub-tasks (``subs``) or tasks' slices and
        continuations."""
        if self.parent_fit is None:
            return self.parent_s * parts
        call_s, task_s, sub_s = self.parent_fit
        return call_s + (sub_s if subs else task_s) * parts

    @property
    def tasks_s(self) -> tuple[float, ...]:
        """Every call's seconds (slices, continuations, sub-tasks)."""
        return tuple(u for t in self.tasks for u in t.units())

    @classmethod
    def load(cls, path: Path) -> Recorded:
        raw = path.read_bytes()
        doc = json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)
        if doc.get("format") != FORMAT:
            raise SystemExit(f"{path} is not a task-cost record (format {doc.get('format')!r}); re-record it with "
                             "benchmarks/scaling.py --record")
        if doc.get("version", 1) == 1:
            tasks = tuple(Task((float(t), False)) for t in doc["tasks_s"])
            return cls(doc["name"], float(doc["frontier_s"]), tasks, bool(doc["complete"]),
                       float(doc["measured_wall_s"]), extra={"version": 1})
        tasks = tuple(Task(tuple(t["slice"]), tuple(t["cont"]) if t.get("cont") else None,  # type: ignore[arg-type]
                           tuple(tuple(s) for s in t.get("subs", ()))) for t in doc["tasks"])
        return cls(doc["name"], float(doc["frontier_s"]), tasks, bool(doc["complete"]),
                   float(doc["measured_wall_s"]), float(doc["parent_s"]), float(doc["finish_s"]),
                   float(doc["trials_s"]), tuple(doc["parent_fit"]) if doc.get("parent_fit") else None,
                   extra={"version": 2, "stop": doc.get("stop"), "states": doc.get("states")})


def records(folder: Path) -> list[Path]:
    """The task-cost records in ``folder``: ``<name>.json``, or ``.json.gz`` as ``--record`` writes them."""
    return sorted([*folder.glob("*.json"), *folder.glob("*.json.gz")])


def record_of(folder: Path, stem: str) -> Path:
    """The record of ``stem`` (``gqa_bs1``) in ``folder``."""
    for path in (folder / f"{stem}.json.gz", folder / f"{stem}.json"):
        if path.exists():
            return path
    raise SystemExit(f"no task-cost record {stem} in {folder}; record one with --record")


@dataclass(frozen=True)
class Replay:
    """What ``replay`` projects: the wall time, the calls handed out, the CPU seconds of the workers (their
    calls) and of the parent (frontier, hand-outs, results, merge), when the first call that verified a μGraph
    returned (None when the record holds none, or does not say), and how many slices yielded their call."""

    wall_s: float
    calls: int
    workers_cpu_s: float
    parent_cpu_s: float
    first_found_s: float | None = None
    resumes: int = 0  # slices that yielded their call, and were resumed (``slices_in_call``)


def simulate(run: Recorded, workers: int, overhead_s: float, start_s: float, trials: str = "worker",
             batched: bool | None = None, *, call_s: float = 0.0, cores: int | None = None,
             parent_call_s: float | None = None) -> float:
    """``replay(...).wall_s``."""
    return replay(run, workers, overhead_s, start_s, trials, batched, call_s=call_s, cores=cores,
                  parent_call_s=parent_call_s).wall_s


def replay(run: Recorded, workers: int, overhead_s: float, start_s: float, trials: str = "worker",
           batched: bool | None = None, *, call_s: float = 0.0, cores: int | None = None,
           parent_call_s: float | None = None) -> Replay:
    """The projected run of ``run`` on ``workers`` workers: the runner's hand-out replayed event by event
    (slices in order, several per call when ``batched``, those a call did not start back at the front when it
    returns; continuations at the back; sub-tasks first, in batches),
    the parent one serial thread (``overhead_s`` per hand-out, ``run.taking_s`` per returned call), each call costing
    its worker ``call_s`` beyond its recorded seconds (an executor's own work per call: arguments, results). With
    ``cores``, the workers and the parent share that many cores, so the wall time is at least their CPU seconds
    over ``cores`` (a 2-worker cluster on a 2-core machine); without, each has a core of its own. Calls are sized
    to the parent's seconds per call as the runner measures them (``split.ParentCost``: here, what the replay
    charges it), or to ``parent_call_s``. A version-1 record (the runner before issue 37) replays one task per call
    unless ``batched`` says otherwise."""
    if batched is None:
        batched = run.extra.get("version", 2) == 2
    frontier = run.frontier_s + (max(0.0, run.trials_s - start_s) if trials == "once" else 0.0)
    # (when, tie-break, worker, the tasks' calls it finished, the parts it returns, what they are ("slices", "cont"
    # or "subs"), what it did not start or finish: slices or a range of sub-tasks, handed out again when it returns)
    events: list[tuple[float, int, int, list[Any], list[Unit], str, Any]] = [
        (frontier + start_s, w, w, [], [], "", None) for w in range(workers)]
    heapq.heapify(events)
    seq = workers
    queue: deque[tuple[int, int]] = deque((i, 0) for i in range(len(run.tasks)))  # (task, 0 slice / 1 continuation)
    subq: deque[list[int]] = deque()  # [task, its next sub-task to hand out, the end] (``runner._sub_batch``)
    paid: set[int] = set()  # workers that evaluated the trials
    rests: dict[int, float] = {}  # the seconds left of slices that yielded their call (``slices_in_call``)
    each: float | None = None  # the runner's running estimate of a batched slice's seconds
    sub_each: float | None = None  # and of a sub-task's
    idle: list[int] = []  # workers with nothing to take, since a time no later than the event at hand
    sched, end = frontier, frontier
    calls, work, resumes = 0, 0.0, 0
    first_found = math.inf
    measured = ParentCost() if parent_call_s is None else None  # (the runner's measure, or a fixed figure)
    fixed = parent_call_s or 0.0

    def parent_s() -> float:
        return fixed if measured is None else measured.per_call_s

    while events:
        t, _, w, done, parts, kind, again = heapq.heappop(events)
        if again and isinstance(again[0], tuple):  # (``task.run_batch``'s budget: handed out again, first)
            queue.extendleft(reversed(again))
        elif again:
            subq.appendleft(again)
        if parts:  # the parent takes the results (``runner._task_result``), which may queue more calls
            taking = run.taking_s(len(parts), kind == "subs")
            sched = max(sched, t) + taking
            if measured is not None:  # (and its hand-out)
                measured.add(taking + overhead_s, 1, len(parts))
        for u in parts:  # (the runner's estimates: ``runner._sub_results``, ``_drive``)
            if kind == "subs":
                sub_each = averaged(sub_each, u[0])
            elif kind == "slices" and batched:
                each = averaged(each, u[0])
        for i, stage in done:
            task = run.tasks[i]
            if stage == 0 and task.cont is not None:
                queue.append((i, 1))
            elif stage == 1 and task.subs:
                subq.append([i, 0, len(task.subs)])
        idle.append(w)
        while idle and (subq or queue):
            w = idle.pop()
            units: list[Unit]
            again: Any = None
            kind = "slices"
            if subq:
                kind = "subs"
                i, first, stop = subq[0]
                n = sub_batch_size(stop - first, workers, sub_each, parent_s())
                units, finished = list(run.tasks[i].subs[first:first + n]), []
                subq[0][1] += n
                if first + n == stop:
                    subq.popleft()
            elif queue[0][1] == 1:
                i, _ = queue.popleft()
                cont = run.tasks[i].cont
                assert cont is not None
                units, finished, kind = [cont], [(i, 1)], "cont"
            else:
                finished = [queue.popleft()]
                most = batch_size(len(queue) + 1, workers, BATCH_TASKS, math.inf if each is None else each,
                                  parent_s=parent_s()) if batched else 1
                while finished[0][0] not in rests and queue and queue[0][1] == 0 and queue[0][0] not in rests \
                        and len(finished) < most:
                    finished.append(queue.popleft())
                units, finished, again, yielded = slices_in_call(
                    run, finished, rests, call_budget_s(workers, parent_s()) if batched else None)
                resumes += yielded
            sched = max(sched, t) + overhead_s
            cost = sum(u[0] for u in units) + call_s
            if trials == "worker" and w not in paid and any(u[1] for u in units):
                paid.add(w)
                cost += run.trials_s
            seq += 1
            calls += 1
            work += cost
            heapq.heappush(events, (sched + cost, seq, w, finished, units, kind, again))
            end = max(end, sched + cost)
            if any(found(u) for u in units):
                first_found = min(first_found, sched + cost + run.taking_s(len(units), kind == "subs"))
    wall = max(end, sched) + run.finish_s  # (the parent takes the last results, then merges)
    parent = run.parent_own_s + calls * (overhead_s + run.per_call_s)
    if trials == "once":
        work += run.trials_s
    if cores is not None:
        wall = max(wall, (work + parent) / cores)
    return Replay(wall, calls, work, parent, first_found if math.isfinite(first_found) else None, resumes)


def slices_in_call(run: Recorded, items: list[tuple[int, int]], rests: dict[int, float],
                   budget_s: float | None) -> tuple[list[Unit], list[tuple[int, int]], list[tuple[int, int]], bool]:
    """What one call of slices walks (``task.run_batch``): each item's slice, or what is left of it (``rests``),
    until the call has run ``budget_s``, and always the first; a slice with others behind it stops there (it
    yields; what is left of it, plus ``RESUME_S``, goes into ``rests``). Returns the calls' parts, the items
    finished, those handed out again when it returns (the yielded one first, then those not started), and whether
    one yielded."""
    units: list[Unit] = []
    spent = 0.0
    for k, (i, _) in enumerate(items):
        if units and budget_s is not None and spent >= budget_s:
            return units, items[:k], items[k:], False
        whole = run.tasks[i].slice
        left = rests.pop(i, whole[0])
        if budget_s is not None and k + 1 < len(items) and spent + left > budget_s:
            ran = max(budget_s - spent, 0.0)
            rests[i] = left - ran + RESUME_S
            units.append((ran, whole[1], 0))  # (what it verified counts where it finishes)
            return units, items[:k], items[k:], True
        units.append((left, whole[1], found(whole)))
        spent += left
    return units, items, [], False


#: what resuming a slice where it yielded costs (re-entering its path, ``Enumerator._resume_at``): 4-10 ms, the
#: median over 30 slices of LoRA, MQA and GQA b1 each cut at 1 000 states (the most 66 ms; issue 37)
RESUME_S = 0.01


def serial_part(run: Recorded, workers: int, overhead_s: float) -> float:
    """The parent's own time, a lower bound on any number of workers: frontier, hand-outs (slices in full
    batches; sub-tasks in batches sized at their mean seconds), results, merge."""
    subs = [u[0] for t in run.tasks for u in t.subs]
    each = sum(subs) / len(subs) if subs else None
    calls = -(-len(run.tasks) // BATCH_TASKS) + sum(1 for t in run.tasks if t.cont) + sum(
        -(-len(t.subs) // sub_batch_size(len(t.subs), workers, each))
        for t in run.tasks if t.subs)
    return run.parent_own_s + calls * (overhead_s + run.per_call_s)


def bounds(run: Recorded, workers: int, overhead_s: float, start_s: float) -> dict[str, float]:
    """Lower bounds of the wall time: the serial frontier and merge and the worker start plus the work shared out,
    or plus the longest task (its calls that run one after another, ``Task.chain_s``); and the parent's own time."""
    after = {"work": sum(run.tasks_s) / workers + start_s,
             "longest task": max((t.chain_s for t in run.tasks), default=0.0) + start_s}
    out = {k: run.frontier_s + run.finish_s + v for k, v in after.items()}
    out["parent"] = serial_part(run, workers, overhead_s)
    return out


def ceiling(run: Recorded, workers: int, start_s: float) -> float:
    """The wall time no scheduler can beat with this record's tasks, frontier, merge and results, on ``workers``
    workers that each start in ``start_s``: the work shared out evenly, the longest task's chain of calls, and the
    parent's own time (frontier, results, merge), whatever the hand-outs cost. The speed-up it allows is the
    ceiling of any change to the hand-out policy; raising it takes smaller tasks or a faster frontier and merge."""
    b = bounds(run, workers, 0.0, start_s)
    return max(b["work"], b["longest task"], run.parent_own_s)


def table(runs: list[Recorded], workers: tuple[int, ...], overhead_s: float, start_s: float,
          trials: str = "worker", call_s: float = 0.0, parent_call_s: float | None = None) -> pd.DataFrame:
    rows = []
    for run in runs:
        one = simulate(run, 1, overhead_s, start_s, trials, call_s=call_s, parent_call_s=parent_call_s)
        for w in workers:
            got = replay(run, w, overhead_s, start_s, trials, call_s=call_s, parent_call_s=parent_call_s)
            wall = got.wall_s
            b = bounds(run, w, overhead_s, start_s)
            limit = max(b, key=lambda k: b[k])
            rows.append({"run": run.name, "tasks": len(run.tasks), "calls": len(run.tasks_s),
                         "complete": run.complete, "workers": w, "trials": trials,
                         "projected_s": round(wall, 2), "speedup": round(one / wall, 2),
                         "efficiency": round(one / wall / w, 3), "bound": limit,
                         "ceiling": round(one / ceiling(run, w, start_s), 2),
                         "vs_measured_serial": round(run.measured_wall_s / wall, 2),
                         "frontier_s": round(run.frontier_s, 2), "parent_s": round(serial_part(run, w, overhead_s), 2),
                         "longest_task_s": round(max(run.tasks_s, default=0.0), 2),
                         "first_found_s": None if got.first_found_s is None else round(got.first_found_s, 2)})
    return pd.DataFrame(rows)


def record(spec: str, time_limit: float, out_dir: Path, overrides: dict[str, Any] | None = None) -> Path:
    """Search ``name:batch`` serially into a fresh run folder and keep every call's time (``Recorder``), with the
    benchmark's preset and ``overrides`` (``--set``)."""
    import mirage_lab as ml
    from mirage_lab.bench import programs
    from mirage_lab.search import preset

    name, _, batch = spec.partition(":")
    sys.path.insert(0, str(Path(__file__).parent))
    from search import PRESET  # benchmarks/search.py: each benchmark's preset

    runs = tempfile.mkdtemp(prefix="scaling-")
    rec = Recorder()
    Segments.threaded = False  # (the parent's encoding in the gaps between calls, as its time, not in the calls)
    try:
        t = time.perf_counter()
        config = preset(PRESET[name], **(overrides or {}))
        res = ml.superoptimize(programs.PROGRAMS[name](int(batch or 1)), config, executor=rec, run_dir=runs,
                               progress=False, time_limit_s=time_limit)
        wall = time.perf_counter() - t
    finally:
        Segments.threaded = True
        shutil.rmtree(runs, ignore_errors=True)
    doc = {"format": FORMAT, "version": 2, "name": f"{name}_bs{batch or 1}", **rec.costs(t, wall),
           "complete": res.report.stop_reason == "complete", "tasks_total": res.report.tasks_total,
           "tasks_done": res.report.tasks_done, "measured_wall_s": wall, "stop": res.report.stop_reason,
           "states": res.report.states, "verified": res.report.verified,
           "best": res.best.hash if res.best is not None else None, "executor": "serial (one call at a time)",
           "time_limit_s": time_limit, "settings": overrides or {}}
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{doc['name']}.json.gz"  # (compact and gzipped: QKNorm b1's 1.1 M sub-tasks take 2 MB)
    path.write_bytes(gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), 9))
    return path


def cluster(spec: str, time_limit: float, costs: Path, overhead_s: float, call_s: float = 0.0,
            cores: int | None = None) -> dict[str, Any]:
    """Search ``name:batch`` on a 2-worker Dask ``LocalCluster`` and set its wall time beside the replay's figure
    for 2 workers of the recorded run (``costs/<name>_bs<batch>.json``, recorded serially on the same machine),
    replayed with ``overhead_s`` per hand-out, ``call_s`` per call and ``cores`` shared. It also gives what this
    run measured per call (``calibration``): the figures to replay *another* program's run with."""
    from dask.distributed import Client, LocalCluster

    import mirage_lab as ml
    from mirage_lab.bench import programs

    name, _, batch = spec.partition(":")
    sys.path.insert(0, str(Path(__file__).parent))
    from search import PRESET

    run = Recorded.load(record_of(costs, f"{name}_bs{batch or 1}"))
    runs = tempfile.mkdtemp(prefix="scaling-cluster-")
    try:
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc, \
                Client(lc) as client:
            client.run(lambda: __import__("mirage_lab.search.task"))  # (the workers' imports: their start, not timed)
            executor, calls = _counting(client.get_executor())
            workers_cpu, parent_cpu = client.run(_cpu_s), _cpu_s()  # (the parent holds the client and the scheduler)
            told = _told_by_runner()
            t = time.perf_counter()
            res = ml.superoptimize(programs.PROGRAMS[name](int(batch or 1)), PRESET[name], executor=executor,
                                   run_dir=runs, progress=False, time_limit_s=time_limit)
            wall = time.perf_counter() - t
            logging.getLogger("mirage_lab.search.runner").removeHandler(told)
            parent_cpu = _cpu_s() - parent_cpu
            workers_cpu = sum(client.run(_cpu_s).values()) - sum(workers_cpu.values())
    finally:
        shutil.rmtree(runs, ignore_errors=True)
    projected = replay(run, 2, overhead_s, 0.0, "once", call_s=call_s, cores=cores)  # (workers started; trials shared)
    return {"run": run.name, "workers": 2, "executor": "dask LocalCluster(n_workers=2, threads_per_worker=1)",
            "measured_s": round(wall, 2), "replay_s": round(projected.wall_s, 2),
            "off_by": round(wall / projected.wall_s - 1, 3),
            "replay": {"overhead_ms": overhead_s * 1e3, "call_ms": call_s * 1e3, "cores": cores,
                       "calls": projected.calls, "workers_cpu_s": round(projected.workers_cpu_s, 1),
                       "parent_cpu_s": round(projected.parent_cpu_s, 1)},
            "stop": res.report.stop_reason, "states": res.report.states, "verified": res.report.verified,
            "best": res.best.hash if res.best is not None else None, "recorded_states": run.extra.get("states"),
            "tasks": f"{res.report.tasks_done}/{res.report.tasks_total}", "time_limit_s": time_limit,
            "calls": calls[0], "parent_cpu_s": round(parent_cpu, 1), "workers_cpu_s": round(workers_cpu, 1),
            "calibration": calibration(run, calls[0], parent_cpu, workers_cpu) if run.complete else None,
            "runner_measured": told.said,  # (``split.ParentCost``: what the calls were sized to)
            "load_average": [round(x, 2) for x in os.getloadavg()]}


class _Told(logging.Handler):
    """Keeps the runner's debug lines (what it measured of the parent's time per call)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.said: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.said.append(record.getMessage())


def _told_by_runner() -> _Told:
    told = _Told()
    log = logging.getLogger("mirage_lab.search.runner")
    log.setLevel(logging.DEBUG)
    log.addHandler(told)
    return told


def calibration(run: Recorded, calls: int, parent_cpu: float, workers_cpu: float) -> dict[str, float]:
    """The executor's own CPU per call, from a cluster run of a completely recorded program: the parent's beyond
    its recorded frontier, results and merge (``--overhead-ms``), the workers' beyond the recorded calls and one
    evaluation of the trials (``--call-ms``)."""
    parent = parent_cpu - run.parent_own_s - calls * run.per_call_s
    work = workers_cpu - sum(run.tasks_s) - run.trials_s
    return {"overhead_ms": round(max(0.0, parent) / max(1, calls) * 1e3, 3),
            "call_ms": round(max(0.0, work) / max(1, calls) * 1e3, 3)}


def _counting(executor: Any) -> tuple[Any, list[int]]:
    """``executor`` counting its calls (its own type kept: the runner knows a Dask executor by it)."""
    count = [0]
    submit = executor.submit

    def counted(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return submit(*args, **kwargs)

    executor.submit = counted
    return executor, count


def _cpu_s() -> float:
    """This process's CPU seconds, user and system."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Recorder:
    """A serial executor that times every call the runner makes and keeps what each returned (a cluster's
    executor to the runner: slices go out several per call)."""

    def __new__(cls) -> Any:
        from mirage_lab.search.executor import SerialExecutor

        class _Recorder(SerialExecutor):
            def __init__(self) -> None:
                self.calls: list[tuple[str, float, float, list[dict[str, Any]]]] = []  # (kind, start, seconds, items)

            def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
                t = time.perf_counter()
                f = super().submit(fn, *args, **kwargs)
                took = time.perf_counter() - t
                if f.exception() is None:
                    out = f.result()
                    items = out if isinstance(out, list) else [out]
                    self.calls.append((fn.__name__, t, took, [_item(r) for r in items]))
                return f

            def costs(self, t0: float, wall: float) -> dict[str, Any]:
                return _costs(self.calls, t0, wall)

        return _Recorder()


def _item(res: dict[str, Any]) -> dict[str, Any]:
    return {"index": res["index"], "sub": res.get("sub"), "wall": float(res["wall"]),
            "trials_s": float(res.get("trials_s", 0.0)), "verifies": res["seconds"]["verification"] > 0,
            "found": len(res["candidates"]), "yielded": bool(res.get("yielded")),
            "stop": res["stop_reason"], "subtasks": len(res.get("subtasks") or ())}


def _costs(calls: list[tuple[str, float, float, list[dict[str, Any]]]], t0: float, wall: float) -> dict[str, Any]:
    """The record's costs from the calls: per task its slice, continuation and sub-tasks, in dispatch order."""
    tasks: dict[int, dict[str, Any]] = {}
    trials = 0.0
    for _, _, _, items in calls:
        for it in items:
            trials = max(trials, it["trials_s"])
            unit = [round(max(0.0, it["wall"] - it["trials_s"]), 6), bool(it["verifies"]), int(it["found"])]
            task = tasks.setdefault(it["index"], {"slice": None, "cont": None, "subs": {}, "yielded": False})
            if it["sub"] is not None:
                task["subs"][it["sub"]] = unit
            elif task["slice"] is None or task["yielded"]:  # (a slice that yielded its call: its parts, as one)
                task["slice"] = unit if task["slice"] is None else [
                    round(task["slice"][0] + unit[0], 6), task["slice"][1] or unit[1], task["slice"][2] + unit[2]]
                task["yielded"] = it.get("yielded", False)
            else:
                task["cont"] = unit
    in_calls = sum(took for _, _, took, _ in calls)
    frontier = (calls[0][1] - t0) if calls else wall
    finish = (t0 + wall - (calls[-1][1] + calls[-1][2])) if calls else 0.0
    results = sum(len(items) for *_, items in calls)
    parent = max(0.0, wall - frontier - finish - in_calls) / max(1, results)
    return {"frontier_s": frontier, "finish_s": finish, "parent_s": parent, "parent_fit": fit_parent(calls),
            "trials_s": trials,
            "tasks": [{"slice": t["slice"], "cont": t["cont"], "subs": [t["subs"][k] for k in sorted(t["subs"])]}
                      for t in tasks.values() if t["slice"] is not None]}


def fit_parent(calls: list[tuple[str, float, float, list[dict[str, Any]]]]) -> list[float] | None:
    """The parent's seconds per returned call, per task result (a slice or continuation) and per sub-task: a
    least-squares fit, with no negative terms, of the gap after each recorded call (the parent taking its results
    and handing out the next) to the numbers of each it returned. The record's mean per result (``parent_s``)
    charges a batch of 64 one-millisecond sub-tasks as 64 task results; the fit tells them apart. None with too
    few calls to fit."""
    import numpy as np

    rows = [(1.0, sum(it["sub"] is None for it in items), sum(it["sub"] is not None for it in items))
            for _, _, _, items in calls[:-1]]
    gaps = [b[1] - (a[1] + a[2]) for a, b in itertools.pairwise(calls)]
    if len(gaps) < 10:
        return None
    x, y = np.array(rows), np.array(gaps)
    keep = [0, 1, 2]
    while True:  # (an active set: drop a term the fit makes negative, and fit the others again)
        coef, *_ = np.linalg.lstsq(x[:, keep], y, rcond=None)
        if (coef >= 0).all() or len(keep) == 1:
            out = [0.0, 0.0, 0.0]
            for k, c in zip(keep, coef, strict=True):
                out[k] = max(0.0, float(c))
            return out
        keep.pop(int(np.argmin(coef)))


def figure(frame: pd.DataFrame) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, part in frame.groupby("run", sort=False):
        fig.add_trace(go.Scatter(x=part["workers"], y=part["speedup"], mode="lines+markers", name=str(name),
                                 customdata=part[["bound", "projected_s"]],
                                 hovertemplate="%{x} workers: %{y}× (%{customdata[1]} s; bound: %{customdata[0]})"))
    top = int(frame["workers"].max())
    fig.add_trace(go.Scatter(x=[1, top], y=[1, top], mode="lines", name="linear", line={"dash": "dot"}))
    fig.update_layout(title="Projected search speed-up (recorded task costs, simulated scheduling)",
                      xaxis={"title": "workers", "type": "log"}, yaxis={"title": "speed-up", "type": "log"})
    return fig


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", help="search name:batch serially and write its task costs to data/task_costs/")
    ap.add_argument("--time-limit", type=float, default=600.0, help="seconds for --record's search")
    ap.add_argument("--set", help="--record's config overrides as JSON, e.g. '{\"free_loader_norms\": 2}'")
    ap.add_argument("--cluster", help="search name:batch on a 2-worker Dask LocalCluster and compare its wall time "
                    "with the replay's of its record")
    ap.add_argument("--costs", default=str(COSTS), help="folder of recorded task costs")
    ap.add_argument("--workers", default=",".join(map(str, WORKERS)), help="comma-separated worker counts")
    ap.add_argument("--overhead-ms", type=float, default=1.0, help="scheduler time per task, in ms")
    ap.add_argument("--call-ms", type=float, default=0.0,
                    help="a worker's own time per call beyond the recorded seconds (--cluster's calibration)")
    ap.add_argument("--cores", type=int, help="cores the workers and the parent share (default: one each)")
    ap.add_argument("--worker-start-s", type=float, default=2.0, help="seconds for a worker to start, once")
    ap.add_argument("--trials", choices=("worker", "once"), default="worker",
                    help="the program's trials evaluated by every worker (the code), or once and shared")
    ap.add_argument("--parent-call-ms", type=float,
                    help="the parent's time per call that calls are sized to (default: what the replay charges it, as "
                         "the runner measures it, split.ParentCost); 0 replays the policy before calls were sized to "
                         "the parent's round")
    ap.add_argument("--json", help="also write the table to this JSON file")
    ap.add_argument("--html", help="also write the plot to this HTML file")
    args = ap.parse_args()
    if args.record:
        overrides = json.loads(args.set) if args.set else None
        print(f"wrote {record(args.record, args.time_limit, Path(args.costs), overrides)}", file=sys.stderr)
        return 0
    if args.cluster:
        row = cluster(args.cluster, args.time_limit, Path(args.costs), args.overhead_ms / 1e3, args.call_ms / 1e3,
                      args.cores)
        print(json.dumps(row))
        if args.json:
            Path(args.json).write_text(json.dumps(row, indent=1))
        return 0
    paths = records(Path(args.costs))
    if not paths:
        print(f"no recorded task costs in {args.costs}; record some with --record rmsnorm:1", file=sys.stderr)
        return 1
    runs = [Recorded.load(p) for p in paths]
    frame = table(runs, tuple(int(w) for w in args.workers.split(",")), args.overhead_ms / 1e3, args.worker_start_s,
                  args.trials, args.call_ms / 1e3, None if args.parent_call_ms is None else args.parent_call_ms / 1e3)
    print(frame.to_string(index=False))
    for run in runs:
        part = frame[frame["run"] == run.name]
        best = part.loc[part["speedup"].idxmax()]
        print(f"{run.name}: at most {best['speedup']}× ({best['workers']} workers), bounded by the "
              f"{best['bound']}; serial frontier {run.frontier_s:.1f} s, merge {run.finish_s:.1f} s, longest call "
              f"{max(run.tasks_s):.1f} s, longest task {max(t.chain_s for t in run.tasks):.1f} s, "
              f"{len(run.tasks)} tasks in {len(run.tasks_s)} calls"
              f"{'' if run.complete else ' (an incomplete run: the rest is unknown)'}")
        print(f"{run.name}: the ceiling, what no hand-out policy beats with these tasks: " + ", ".join(
            f"{r.ceiling}× ({r.workers} workers)" for r in part.itertuples()))
        if part["first_found_s"].notna().any():
            print(f"{run.name}: the first verified μGraph returns at " + ", ".join(
                f"{r.first_found_s} s ({r.workers} workers)" for r in part.itertuples()))
    if args.json:
        Path(args.json).write_text(json.dumps({"settings": vars(args), "rows": frame.to_dict("records")}, indent=1))
    if args.html:
        figure(frame).write_html(args.html, include_plotlyjs="cdn")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
