"""Projected time to finish a search its time limit stopped (issue 19, item 2: the spaces that do not complete).

    .venv/bin/python benchmarks/projection.py RUN_FOLDER [RUN_FOLDER …] [--sample 8] [--task-limit 300]
        [--processes 2] [--json out.json]

A RUN_FOLDER is a kept run folder of a search stopped by its time limit (``benchmarks/search.py --keep-runs DIR``
keeps them; ``mirage-lab runs`` lists them). What the search finished is measured from its task log: the tasks
and their wall times on its workers. Of the tasks it did not finish, ``--sample`` evenly spaced ones (in task
order) are run again from their roots, ``--processes`` at a time as the search ran them, each with the run's best
proxy cost as its incumbent (what the runner hands a task once that μGraph is known) and for at most
``--task-limit`` seconds. Then

    remaining worker-seconds ≈ unfinished tasks × mean seconds of the sample
    projected wall          ≈ the search's wall time + remaining worker-seconds / processes

The projection is a *lower bound* when a sampled task hit ``--task-limit`` (its real cost is larger), and it
assumes the sample is typical: the unfinished tasks are the heavy ones whose first slice did not finish, so the
spread of the sample is printed too (its median and maximum).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import as_completed
from pathlib import Path
from typing import Any

import pandas as pd

from mirage_lab.ir.io import graph_to_dict
from mirage_lab.search.enumerate import Enumerator
from mirage_lab.search.load import load_run
from mirage_lab.search.pool import process_pool
from mirage_lab.search.run_list import benchmark_names
from mirage_lab.search.task import run_task, task_context
from mirage_lab.task_log import TaskLog


def run_sample(pool: Any, pdoc: dict[str, Any], cdoc: dict[str, Any], front: Any, picks: list[int],
               processes: int, task_limit: float, incumbent: float | None) -> list[dict[str, Any]]:
    """Run the picked tasks from their roots, ``processes`` at a time so that each starts as it is handed out
    (its time limit counts from then)."""
    runs = []
    for at in range(0, len(picks), processes):
        t = time.time()
        futures = {pool.submit(run_task, pdoc, cdoc, i, *front.tasks[i], None, t + task_limit, t, incumbent): i
                   for i in picks[at:at + processes]}
        for f in as_completed(futures):
            res = f.result()
            runs.append({"task": futures[f], "seconds": round(time.time() - t, 2), "states": res["states"],
                         "stop": res["stop_reason"], "verified": len(res["candidates"])})
            print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    return sorted(runs, key=lambda r: r["task"])


def project(folder: Path, sample: int, task_limit: float, processes: int) -> dict[str, Any]:
    """The projection for one run folder (a row), with its sampled tasks."""
    result = load_run(folder)
    report = result.report
    if report.stop_reason == "complete":
        raise SystemExit(f"{folder} is a complete search ({report.tasks_done}/{report.tasks_total} tasks): "
                         "nothing to project")
    log = folder / "tasks.gz"
    if not log.is_file():
        raise SystemExit(f"{folder} has no tasks.gz: projections read the current run-folder format only")
    tasks = TaskLog(log)
    finished = {i: rec for i in tasks.entries() if (rec := tasks.record(i)) is not None}
    pdoc, cdoc = graph_to_dict(result.program), result.config.to_dict()
    prog, config, oracle, verifier = task_context(pdoc, cdoc)
    front = Enumerator(prog, config, oracle, verifier, ids="f").run(frontier=True)
    unfinished = [i for i in range(len(front.tasks)) if i not in finished]
    picks = sorted({unfinished[round(k * (len(unfinished) - 1) / max(1, sample - 1))]
                    for k in range(min(sample, len(unfinished)))})
    best = result.best
    incumbent = result.costs.get(best.hash) if best is not None and config.cost_bound else None
    pool = process_pool(processes)
    if pool is None:
        raise SystemExit("no process pool could start here (see the line above)")
    try:
        runs = run_sample(pool, pdoc, cdoc, front, picks, processes, task_limit, incumbent)
    finally:
        pool.shutdown()
    secs = [r["seconds"] for r in runs]
    capped = sum(r["stop"] == "time limit" for r in runs)
    mean = statistics.fmean(secs) if secs else 0.0
    remaining = len(unfinished) * mean
    elapsed = report.seconds["wall"]
    name = benchmark_names().get(result.program.canonical_hash(), "a program that is no benchmark")
    return {"run": name, "folder": str(folder), "tasks": f"{len(finished)}/{len(front.tasks)}",
            "finished_worker_s": round(sum(r["wall"] for r in finished.values()), 1),
            "elapsed_s": round(elapsed, 1), "best_proxy_us": None if incumbent is None else round(incumbent * 1e6, 2),
            "unfinished": len(unfinished), "sampled": len(runs), "sample_capped": capped,
            "sample_median_s": round(statistics.median(secs), 2) if secs else None,
            "sample_max_s": max(secs) if secs else None, "remaining_worker_s": round(remaining),
            "projected_wall_s": round(elapsed + remaining / processes),
            "projection_is_lower_bound": capped > 0, "processes": processes, "task_limit_s": task_limit,
            "samples": runs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path, help="kept run folders of searches stopped by their time limit")
    ap.add_argument("--sample", type=int, default=8, help="unfinished tasks to run again (evenly spaced)")
    ap.add_argument("--task-limit", type=float, default=300.0, help="seconds at most per sampled task")
    ap.add_argument("--processes", type=int, default=2, help="tasks run at once (the search's worker count)")
    ap.add_argument("--json", help="also write the rows and a hardware block to this JSON file")
    args = ap.parse_args()
    rows = [project(f, args.sample, args.task_limit, args.processes) for f in args.folders]
    print(pd.DataFrame([{k: v for k, v in r.items() if k not in ("samples", "folder")} for r in rows])
          .to_markdown(index=False))
    if args.json:
        sys.path.insert(0, str(Path(__file__).parent))
        from interpret import hardware  # benchmarks/interpret.py, beside this script

        with open(args.json, "w") as f:
            json.dump({"hardware": hardware(), "projections": rows, "command": " ".join(sys.argv)}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
