"""Search scaling beyond one machine (issue 19): the recorded task costs of real runs, replayed through a
scheduling simulation for 1 to 256 workers.

A search is a serial frontier (the parent enumerates the kernel-level states and cuts the block-graph
subtrees into tasks) followed by its tasks, handed out in order to whichever worker is free (the runner's
dynamic window). ``--record`` runs a search serially and writes its frontier time and every task's
measured wall time to ``data/task_costs/<program>_bs<batch>.json``. The replay then assigns those tasks
greedily, in order, to the earliest free of W workers. Two more costs apply:
* the scheduler spends ``--overhead-ms`` on each task, one task after another (Dask's scheduler:
  about 1 ms);
* each worker starts once, in ``--worker-start-s`` (interpreter, imports, the verifier's inputs).

It prints the projected wall time and speed-up per W, and the bound that flattens the curve: the frontier
(serial work), the longest task, or the scheduler. ``--html`` also writes the plot; notebook 06 draws it.

    .venv/bin/python benchmarks/scaling.py --record rmsnorm:1 --time-limit 600   # a recorded run
    .venv/bin/python benchmarks/scaling.py [--workers 1,2,8,...,256] [--json out.json] [--html plot.html]
"""

from __future__ import annotations

import argparse
import heapq
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
COSTS = ROOT / "data" / "task_costs"
WORKERS = (1, 2, 8, 16, 32, 64, 128, 256)
FORMAT = "mirage-lab/task-costs"


@dataclass(frozen=True)
class Recorded:
    """One real search: its serial frontier, each task's wall time in dispatch order, and how it ended."""

    name: str
    frontier_s: float
    tasks_s: tuple[float, ...]
    complete: bool
    measured_wall_s: float

    @classmethod
    def load(cls, path: Path) -> Recorded:
        doc = json.loads(path.read_text())
        if doc.get("format") != FORMAT:
            raise SystemExit(f"{path} is not a task-cost record (format {doc.get('format')!r}); re-record it with "
                             "benchmarks/scaling.py --record")
        return cls(doc["name"], float(doc["frontier_s"]), tuple(float(t) for t in doc["tasks_s"]),
                   bool(doc["complete"]), float(doc["measured_wall_s"]))


def simulate(run: Recorded, workers: int, overhead_s: float, start_s: float) -> float:
    """The projected wall time of ``run`` on ``workers`` workers (greedy in-order list scheduling)."""
    free = [(run.frontier_s + start_s, w) for w in range(workers)]  # every worker starts once the tasks exist
    heapq.heapify(free)
    scheduler = run.frontier_s  # when the scheduler can hand out the next task
    end = run.frontier_s
    for cost in run.tasks_s:
        ready, w = heapq.heappop(free)
        scheduler = max(scheduler, ready) + overhead_s
        done = scheduler + cost
        end = max(end, done)
        heapq.heappush(free, (done, w))
    return end


def bounds(run: Recorded, workers: int, overhead_s: float, start_s: float) -> dict[str, float]:
    """Lower bounds of the wall time: the serial frontier plus, after it, the work shared out, the longest
    task and the scheduler's hand-outs."""
    after = {"work": sum(run.tasks_s) / workers + start_s, "longest task": max(run.tasks_s, default=0.0) + start_s,
             "scheduler": len(run.tasks_s) * overhead_s}
    return {k: run.frontier_s + v for k, v in after.items()}


def table(runs: list[Recorded], workers: tuple[int, ...], overhead_s: float, start_s: float) -> pd.DataFrame:
    rows = []
    for run in runs:
        one = simulate(run, 1, overhead_s, start_s)
        for w in workers:
            wall = simulate(run, w, overhead_s, start_s)
            b = bounds(run, w, overhead_s, start_s)
            limit = max(b, key=lambda k: b[k])
            rows.append({"run": run.name, "tasks": len(run.tasks_s), "complete": run.complete, "workers": w,
                         "projected_s": round(wall, 2), "speedup": round(one / wall, 2),
                         "efficiency": round(one / wall / w, 3), "bound": limit,
                         "frontier_s": round(run.frontier_s, 2),
                         "longest_task_s": round(max(run.tasks_s, default=0.0), 2)})
    return pd.DataFrame(rows)


def record(spec: str, time_limit: float, out_dir: Path) -> Path:
    """Search ``name:batch`` serially into a fresh run folder and keep its frontier and task times."""
    import mirage_lab as ml
    from mirage_lab.bench import programs
    from mirage_lab.search.run_folder import RunFolder

    name, _, batch = spec.partition(":")
    sys.path.insert(0, str(Path(__file__).parent))
    from search import PRESET  # benchmarks/search.py: each benchmark's preset

    runs = tempfile.mkdtemp(prefix="scaling-")
    try:
        t = time.time()
        res = ml.superoptimize(programs.PROGRAMS[name](int(batch or 1)), PRESET[name], executor="serial",
                               run_dir=runs, progress=False, time_limit_s=time_limit)
        wall = time.time() - t
        assert res.run_dir is not None
        folder = RunFolder(res.run_dir)
        tasks = [folder.task(i) for i in range(res.report.tasks_total)]
        done = [doc for doc in tasks if doc is not None]
    finally:
        shutil.rmtree(runs, ignore_errors=True)
    frontier = max(0.0, wall - sum(float(d["wall"]) for d in done))  # the parent's own (serial) part
    doc = {"format": FORMAT, "name": f"{name}_bs{batch or 1}", "frontier_s": frontier,
           "tasks_s": [float(d["wall"]) for d in done], "complete": res.report.stop_reason == "complete",
           "tasks_total": res.report.tasks_total, "measured_wall_s": wall, "stop": res.report.stop_reason,
           "states": res.report.states, "verified": res.report.verified, "executor": "serial",
           "time_limit_s": time_limit}
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{doc['name']}.json"
    path.write_text(json.dumps(doc, indent=0) + "\n")
    return path


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
    ap.add_argument("--costs", default=str(COSTS), help="folder of recorded task costs")
    ap.add_argument("--workers", default=",".join(map(str, WORKERS)), help="comma-separated worker counts")
    ap.add_argument("--overhead-ms", type=float, default=1.0, help="scheduler time per task, in ms")
    ap.add_argument("--worker-start-s", type=float, default=2.0, help="seconds for a worker to start, once")
    ap.add_argument("--json", help="also write the table to this JSON file")
    ap.add_argument("--html", help="also write the plot to this HTML file")
    args = ap.parse_args()
    if args.record:
        print(f"wrote {record(args.record, args.time_limit, Path(args.costs))}", file=sys.stderr)
        return 0
    paths = sorted(Path(args.costs).glob("*.json"))
    if not paths:
        print(f"no recorded task costs in {args.costs}; record some with --record rmsnorm:1", file=sys.stderr)
        return 1
    runs = [Recorded.load(p) for p in paths]
    frame = table(runs, tuple(int(w) for w in args.workers.split(",")), args.overhead_ms / 1e3, args.worker_start_s)
    print(frame.to_string(index=False))
    for run in runs:
        part = frame[frame["run"] == run.name]
        best = part.loc[part["speedup"].idxmax()]
        print(f"{run.name}: at most {best['speedup']}× ({best['workers']} workers), bounded by the "
              f"{best['bound']}; serial frontier {run.frontier_s:.1f} s, longest task {max(run.tasks_s):.1f} s, "
              f"{len(run.tasks_s)} tasks{'' if run.complete else ' (an incomplete run: the rest is unknown)'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"settings": vars(args), "rows": frame.to_dict("records")}, indent=1))
    if args.html:
        figure(frame).write_html(args.html, include_plotlyjs="cdn")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
