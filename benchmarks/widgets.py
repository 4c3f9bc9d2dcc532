"""Widget responsiveness (issue 7): drawing the largest benchmark μGraph, and one explorer step on a
run of at least 100 000 events. Target: < 200 ms each.

* ``render``: ``MuGraphViewer(graph)`` (kernel level drawn), then opening its largest custom kernel
  (block graph drawn, tiling cards built) — with graphviz's cache cleared before every repeat, so each
  figure is a cold render. The graph is the largest (most tensors over all levels) of the reference
  μGraphs (../shared/reference_mugraphs) and the hand-written fused graphs.
* ``explorer``: on a real search run folder (``--run``, or a fresh RMSNorm+Linear bs1 search written to
  a temporary folder, ~364 000 events): the index build once, then ``step`` (next event), ``jump`` to the
  next oracle prune and ``select`` of random events (cold: each lands on a state whose drawing is not
  cached). Every step includes rebuilding the partial μGraph, its expression and its drawing. The run folder's
  size, per file, is reported beside it.

    .venv/bin/python benchmarks/widgets.py [--run runs/<folder>] [--repeats 30] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from interpret import hardware  # benchmarks/interpret.py, beside this script

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.bench.harness import find_reference_dir
from mirage_lab.search.config import preset
from mirage_lab.widgets.explorer import SearchExplorer
from mirage_lab.widgets.svg import have_dot, render_svg
from mirage_lab.widgets.viewer import MuGraphViewer

TARGET_MS = 200.0


def size(g: ml.KernelGraph) -> int:
    return len(g.tensors) + sum(len(b.tensors) for b in g.block_graphs)


def largest_graph() -> tuple[str, ml.KernelGraph]:
    found: list[tuple[int, str, ml.KernelGraph]] = []
    ref = find_reference_dir(None)
    for path in sorted(ref.glob("*.json")) if ref is not None else []:
        for i, g in enumerate(ml.load_reference_checkpoint(path)):
            found.append((size(g), f"{path.stem}[{i}]", g))
    for name in fused.FUSED:
        g = fused.FUSED[name](8)
        found.append((size(g), f"fused {name} bs8", g))
    best = max(found, key=lambda t: t[0])
    return best[1], best[2]


def times_ms(fn: Callable[[], Any], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e3)
    return out


def summary(ms: list[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(ms), 2), "p90_ms": round(float(np.percentile(ms, 90)), 2),
            "max_ms": round(max(ms), 2), "n": len(ms)}


def bench_render(repeats: int) -> dict[str, Any]:
    name, g = largest_graph()
    custom = max((k for k, n in enumerate(g.nodes) if n.body is not None),
                 key=lambda k: len(g.nodes[k].body.tensors))  # type: ignore[union-attr]

    def kernel_level() -> MuGraphViewer:
        render_svg.cache_clear()
        return MuGraphViewer(g)

    def open_block() -> None:
        v = kernel_level()
        render_svg.cache_clear()
        t = time.perf_counter()
        v.click(f"n{custom}")
        opened.append((time.perf_counter() - t) * 1e3)

    opened: list[float] = []
    kernel = times_ms(kernel_level, repeats)
    for _ in range(repeats):
        open_block()
    return {"graph": name, "tensors": size(g), "kernel_level": summary(kernel), "open_block": summary(opened)}


def make_run(root: Path) -> Path:
    res = ml.superoptimize(programs.rmsnorm(1), preset("mlp"), run_dir=root, progress=True)
    assert res.run_dir is not None
    return res.run_dir


def bench_explorer(run: Path, repeats: int) -> dict[str, Any]:
    t = time.perf_counter()
    x = SearchExplorer(run, progress=False)
    load_s = time.perf_counter() - t
    n = len(x.state.index)
    step = times_ms(lambda: x.step(1), repeats)
    jump = times_ms(lambda: x.jump("pruned:oracle"), repeats)
    rng = np.random.default_rng(0)
    picks = iter(rng.integers(0, n, size=repeats))
    select = times_ms(lambda: x.select(int(next(picks))), repeats)
    index_mb = x.state.index.nbytes() / 1e6
    files = {p.relative_to(run).parts[0]: 0 for p in run.rglob("*") if p.is_file()}
    for p in run.rglob("*"):
        if p.is_file():
            files[p.relative_to(run).parts[0]] += p.stat().st_size
    return {"run": str(run), "folder_mb": round(sum(files.values()) / 1e6, 1),
            "files_mb": {k: round(v / 1e6, 2) for k, v in sorted(files.items())},
            "events": n, "states": len(x.state.index.node_index), "load_s": round(load_s, 2),
            "index_arrays_mb": round(index_mb, 1), "step": summary(step), "jump_oracle_prune": summary(jump),
            "select_random": summary(select)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, help="an existing run folder (default: search RMSNorm+Linear bs1 afresh)")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    out: dict[str, Any] = {"hardware": hardware(), "graphviz_dot": have_dot(), "target_ms": TARGET_MS}
    out["render"] = bench_render(args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run if args.run is not None else make_run(Path(tmp))
        out["explorer"] = bench_explorer(run, args.repeats)
    r, e = out["render"], out["explorer"]
    print(f"largest μGraph: {r['graph']} ({r['tensors']} tensors)")
    print(f"  kernel level drawn: median {r['kernel_level']['median_ms']} ms (p90 {r['kernel_level']['p90_ms']})")
    print(f"  open its largest block graph: median {r['open_block']['median_ms']} ms (p90 {r['open_block']['p90_ms']})")
    print(f"run folder: {e['folder_mb']} MB ({', '.join(f'{k} {v}' for k, v in e['files_mb'].items())})")
    print(f"explorer on {e['events']:,} events ({e['states']:,} states): index built in {e['load_s']} s, "
          f"{e['index_arrays_mb']} MB of arrays")
    for key in ("step", "jump_oracle_prune", "select_random"):
        print(f"  {key}: median {e[key]['median_ms']} ms, p90 {e[key]['p90_ms']} ms, max {e[key]['max_ms']} ms")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
