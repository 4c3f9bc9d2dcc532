"""Search benchmarks (issue 5): discovery time, states, verified graphs, pruning, and process scaling.

For each benchmark program of SPEC §9, searched from its *unfused* program under its preset:
states explored, complete graphs checked, verified μGraphs, time to the first verified graph and to
the first *single-kernel* one (one customized op doing the fused work), total time and stop reason, the
best μGraph (kernels, proxy µs, hash, when it was found) and the states the cost bound cut (``cost_bound``) —
once per process count in ``--processes``.

``--pruning`` also measures what the abstract-expression oracle saves: for an evenly spaced sample of
block-graph roots (tasks), the subtree is explored with pruning (to completion) and without it (up to
``--unpruned-cap`` states per root); the ratio of explored states is a lower bound whenever the
unpruned walk hit its cap. ``--block-ops`` sets the block-op cap for that comparison (the paper's
claim is at 11).

    .venv/bin/python benchmarks/search.py [--programs rmsnorm:1,gated_mlp] [--processes 1,2]
        [--time-limit 600] [--pruning] [--json out.json] [--save-best data/search_best] [--keep-runs DIR]

Each search writes a fresh run folder (its MB and files are reported, then it is removed, or kept under
``--keep-runs``); with several process counts, ``speedup_vs_serial`` compares each with the serial run.

``--root`` explores a single block-graph root, e.g. the one holding the reference's GQA kernel 1:
``--programs gqa:1 --root '["c", [0, 1, 2], [2, 16, 4], [[0, -1, 1], [0, 2, -1], [0, 1, -1]], [-1, 2, 1], 4]'``
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
from interpret import hardware  # benchmarks/interpret.py, beside this script

from mirage_lab.bench import programs
from mirage_lab.ir.io import graph_to_dict, save
from mirage_lab.ir.ops import Op
from mirage_lab.optimize.cost import proxy_cost
from mirage_lab.search import preset, superoptimize
from mirage_lab.search.enumerate import Enumerator
from mirage_lab.search.pool import process_pool
from mirage_lab.search.run_list import folder_usage
from mirage_lab.search.task import run_task, task_context

PRESET = {"rmsnorm": "mlp", "gated_mlp": "mlp", "lora": "lora", "ntrans": "default", "gqa": "attention",
          "mqa": "attention", "mha": "attention", "qknorm_gqa": "attention", "moe": "default"}
DEFAULT = "rmsnorm:1,rmsnorm:8,gated_mlp:1,lora:1,ntrans:1,ntrans:8,gqa:1,mqa:1,mha:1"


def search_row(name: str, batch: int, processes: int, time_limit: float,
               overrides: dict[str, Any] | None = None, save_best: str | None = None,
               keep_runs: str | None = None) -> dict[str, Any]:
    program = programs.PROGRAMS[name](batch)
    config = preset(PRESET[name], time_limit_s=time_limit, **(overrides or {}))
    # a fresh run folder, measured, then removed unless kept (``benchmarks/projection.py`` reads kept ones)
    runs = tempfile.mkdtemp(prefix=f"{name}_bs{batch}_p{processes}-", dir=keep_runs)
    if keep_runs:
        Path(runs).chmod(0o700)
    t0 = time.time()  # (starting the pool counts, as it does for executor="process")
    executor = "serial" if processes == 1 else _pool(processes)
    try:
        res = superoptimize(program, config, executor=executor, run_dir=runs, progress=False)
        wall = time.time() - t0
        folder_bytes, folder_files, _ = folder_usage(Path(runs))
    finally:
        if not keep_runs:
            shutil.rmtree(runs, ignore_errors=True)
        if executor != "serial":
            executor.shutdown()
    if save_best and res.best is not None:  # the codegen snapshots compile these (tests/codegen)
        Path(save_best).mkdir(parents=True, exist_ok=True)
        save(res.best.graph, Path(save_best) / f"{name}_bs{batch}.json")
    single = [c.found_s for c in res.candidates if len(c.graph.compute_nodes) == 1 and c.graph.block_graphs]
    # LoRA's reference kernel computes X·W, X·A and (XA)·B as three matmuls (SPEC §9: no concat_then_matmul)
    plain = [c.found_s for c in res.candidates if len(c.graph.compute_nodes) == 1 and c.graph.block_graphs
             and not any(n.op is Op.CONCAT_THEN_MATMUL for n in c.graph.block_graphs[0].nodes)]
    # the split-reduction shape of SPEC §9's attention graphs: only custom kernels, at least two of them
    split = [c.found_s for c in res.candidates
             if len(c.graph.compute_nodes) >= 2 and len(c.graph.block_graphs) == len(c.graph.compute_nodes)]
    r = res.report
    return {"program": name, "batch": batch, "preset": repr(config).replace(f", time_limit_s={time_limit}", ""),
            "processes": processes,
            "states": r.states, "tasks": f"{r.tasks_done}/{r.tasks_total}",
            "checked": sum(r.candidates.values()), "verified": r.verified,
            "first_verified_s": r.first_verified_s, "first_single_kernel_s": min(single) if single else None,
            "first_single_kernel_without_concat_matmul_s": round(min(plain), 1) if plain else None,
            "first_all_custom_multi_kernel_s": round(min(split), 1) if split else None,
            "first_split_kv_s": round(min(kv), 1) if (kv := [c.found_s for c in res.candidates
                                                           if name in ATTENTION and _splits_kv(c.graph)]) else None,
            "total_s": round(wall, 1), "stop": r.stop_reason,
            "oracle_s": round(r.seconds["oracle"], 1), "verification_s": round(r.seconds["verification"], 1),
            "best_kernels": len(res.best.graph.compute_nodes) if res.best else None,
            "best_proxy_us": round(res.costs[res.best.hash] * 1e6, 2) if res.best else None,
            "best_hash": res.best.hash[:12] if res.best else None,
            "best_found_s": round(res.best.found_s, 1) if res.best else None,
            "pruned_by_bound": r.pruned.get("bound", 0),
            "unfused_proxy_us": round(proxy_cost(program).seconds * 1e6, 2),
            "run_folder_MB": round(folder_bytes / 1e6, 2), "run_folder_files": folder_files,
            **({"kept_run": str(res.run_dir)} if keep_runs and res.run_dir else {})}


def with_speedups(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row's speed-up over the serial search of the same program and batch (total wall time)."""
    serial = {(r["program"], r["batch"]): r["total_s"] for r in rows if r["processes"] == 1}
    return [{**r, "speedup_vs_serial": round(serial[key] / r["total_s"], 2)
             if (key := (r["program"], r["batch"])) in serial and r["total_s"] else None} for r in rows]


ATTENTION = ("gqa", "mqa", "mha", "qknorm_gqa")


def _splits_kv(g: Any) -> bool:
    """SPEC §9's split reduction: only custom kernels, the first splitting K's and V's sequence axis
    (K = input 1, dim 2; V = input 2, dim 1) over the grid, so a later kernel must reduce the parts."""
    kernels = [n for n in g.nodes if n.body is not None]
    if len(kernels) < 2 or len(kernels) != len(g.compute_nodes):
        return False
    first = kernels[0]
    grid = first.body.grid
    imaps = {t: tuple(loader.attr("imap")) for t, loader in zip(first.inputs, first.body.loaders, strict=True)}
    return all(t in imaps and any(e == dim and grid[axis] > 1 for axis, e in enumerate(imaps[t]))
               for t, dim in ((1, 2), (2, 1)))


def _pool(n: int) -> Any:
    """The pool ``executor="process"`` makes (one BLAS thread per worker, workers die with this process)."""
    pool = process_pool(n)
    if pool is None:
        raise SystemExit(f"cannot start a process pool of {n} here")
    return pool


def pruning_row(name: str, batch: int, block_ops: int, sample: int, cap: int) -> dict[str, Any]:
    """Explored states with and without the oracle, over an evenly spaced sample of block-graph roots."""
    program = programs.PROGRAMS[name](batch)
    out: dict[str, Any] = {"program": name, "batch": batch, "max_block_ops": block_ops, "roots": 0}
    on_states = off_states = capped = 0
    t_on = t_off = 0.0
    pdoc = graph_to_dict(program)
    docs = {p: preset(PRESET[name], max_block_ops=block_ops, pruning=p, state_limit=None if p else cap).to_dict()
            for p in (True, False)}
    # the same roots for both: sampled from the pruned frontier (each root is valid without pruning too)
    prog, config, oracle, verifier = task_context(pdoc, docs[True])
    front = Enumerator(prog, config, oracle, verifier, ids="f").run(frontier=True)
    picks = list(range(0, len(front.tasks), max(1, len(front.tasks) // sample)))[:sample]
    out["roots"], out["tasks"] = len(picks), len(front.tasks)
    for i in picks:
        parent, prefix = front.tasks[i]
        for pruning in (True, False):
            t = time.time()
            r = run_task(pdoc, docs[pruning], i, parent, prefix, None, None, time.time())
            if pruning:
                on_states += r["states"]
                t_on += time.time() - t
            else:
                off_states += r["states"]
                capped += r["stop_reason"] == "state limit"
                t_off += time.time() - t
    out.update({"states_pruned": on_states, "states_unpruned": off_states, "unpruned_capped_roots": capped,
                "ratio": round(off_states / max(1, on_states), 1), "ratio_is_lower_bound": capped > 0,
                "seconds_pruned": round(t_on, 1), "seconds_unpruned": round(t_off, 1)})
    return out


def root_row(name: str, batch: int, root: str, time_limit: float,
             overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Explore the one block-graph root whose customized decision is ``root`` (JSON), on one core."""
    program = programs.PROGRAMS[name](batch)
    pdoc, cdoc = graph_to_dict(program), preset(PRESET[name], **(overrides or {})).to_dict()
    prog, config, oracle, verifier = task_context(pdoc, cdoc)
    front = Enumerator(prog, config, oracle, verifier, ids="f").run(frontier=True)
    want = json.loads(root)
    index = next((i for i, (_, prefix) in enumerate(front.tasks) if prefix[-1] == want), None)
    if index is None:
        raise SystemExit(f"no root {root} among the {len(front.tasks)} roots of {name}:{batch} (pruned, or a "
                         f"grid/imap the generators do not produce; e.g. first root {front.tasks[0][1][-1]})")
    t = time.time()
    r = run_task(pdoc, cdoc, index, *front.tasks[index], None, time.time() + time_limit, time.time())
    if r["candidates"]:
        from mirage_lab.ir.io import graph_from_dict

        print(graph_from_dict(r["candidates"][0]["graph"]), file=sys.stderr)
    return {"program": name, "batch": batch, "root": root, "task": index, "tasks": len(front.tasks),
            "states": r["states"], "stop": r["stop_reason"], "verified": len(r["candidates"]),
            "seconds": round(time.time() - t, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", default=DEFAULT, help="comma-separated name[:batch]")
    ap.add_argument("--processes", default="2", help="comma-separated process counts (1 = serial)")
    ap.add_argument("--time-limit", type=float, default=600.0, help="seconds per search")
    ap.add_argument("--pruning", action="store_true", help="also measure pruning on vs off")
    ap.add_argument("--block-ops", type=int, default=11, help="block-op cap for the pruning comparison")
    ap.add_argument("--sample", type=int, default=12, help="block-graph roots sampled for the pruning comparison")
    ap.add_argument("--unpruned-cap", type=int, default=50_000, help="states per root without pruning")
    ap.add_argument("--no-search", action="store_true", help="only the pruning comparison")
    ap.add_argument("--root", help="only explore this customized-op root (the decision as JSON) of the first "
                    "program, e.g. GQA's reference kernel 1")
    ap.add_argument("--set", default="{}", help='config overrides as JSON, e.g. \'{"normalise_imaps": true}\'')
    ap.add_argument("--json", help="also write the rows and a hardware block to this JSON file")
    ap.add_argument("--save-best", help="write each search's best μGraph to DIR/<program>_bs<batch>.json")
    ap.add_argument("--keep-runs", help="keep each search's run folder under DIR (for benchmarks/projection.py)")
    args = ap.parse_args()
    cases = [(p.split(":")[0], int(p.split(":")[1]) if ":" in p else 1) for p in args.programs.split(",")]
    rows, prune_rows = [], []
    if args.keep_runs:
        Path(args.keep_runs).mkdir(parents=True, exist_ok=True)
    if args.root:
        row = root_row(*cases[0], args.root, args.time_limit, json.loads(args.set))
        print(json.dumps(row))
        return 0
    for name, batch in cases:
        for n in ([] if args.no_search else [int(x) for x in args.processes.split(",")]):
            rows.append(search_row(name, batch, n, args.time_limit, json.loads(args.set), args.save_best,
                                   args.keep_runs))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        if args.pruning and name in ("rmsnorm", "gated_mlp", "ntrans"):
            prune_rows.append(pruning_row(name, batch, args.block_ops, args.sample, args.unpruned_cap))
            print(json.dumps(prune_rows[-1]), file=sys.stderr, flush=True)
    rows = with_speedups(rows)
    if rows:
        print(pd.DataFrame(rows).to_markdown(index=False))
    if prune_rows:
        print(pd.DataFrame(prune_rows).to_markdown(index=False))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"hardware": hardware(), "search": rows, "pruning": prune_rows, "command": " ".join(sys.argv)},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
