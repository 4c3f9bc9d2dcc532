"""Measured GPU times of the benchmark programs against their proxy costs (SPEC §8.1, §9; issue 6).

For each benchmark program and batch size, times on the GPU with device events (``warmup`` runs, then
``repeats`` timed runs; ``mirage_lab.codegen.run.time_callable``):

* ``unfused``: the program run op by op with CuPy (``mirage_lab.codegen.run.unfused_cupy``);
* ``fused``: the hand-written fused μGraph (``mirage_lab.bench.fused``), compiled with
  ``mirage_lab.codegen.run.compile``, where there is one; ``fused (no prefetch)``, ``fused (no tensor cores)``,
  ``fused (no padding)`` and ``fused (no async copies)`` (each where it changes the code) and
  ``fused (plain loops)``: the same kernels with one of the codegen options off, and with all of them off
  (``codegen.PLAIN``; the ablation);
* ``search best``: the best μGraph our own search found (``data/search_best``), where one is recorded;
* ``<file>[i]``: reference μGraphs of each checkpoint file for that program and batch (the proxy's best
  first, then graphs spread over the proxy ranking, up to ``--max-graphs``);
* the baselines a reader trusts (``mirage_lab.bench.baselines``, issue 36), when torch with CUDA is importable:
  ``torch eager`` (the program as a PyTorch user writes it, in fp16), ``SDPA``
  (``F.scaled_dot_product_attention``, attention programs) and, last, ``torch.compile`` of the eager function
  (``--no-compile`` leaves it out; its compilation is the run's slowest step);
* with ``--before-tree DIR`` (an older commit's ``mirage_lab``, ``scripts/prepare_before.sh``): ``fused (before)``
  and ``search best (before)``, the same graphs compiled by that tree's generator in a subprocess of its own.

Every row carries its point's DRAM floor (``dram_floor_us``: inputs + outputs at the GPU's DRAM bandwidth).

Before it is timed, each kernel's outputs are compared with the program's (the interpreter's, on the same inputs):
``result`` says ok, WRONG (with the output and the NaN, inf or error that failed it: no speed-up is shown for that
row, and the script exits 1 after writing the table) or, for a reference μGraph whose kernel agrees with the graph
but not with the program, "graph ≠ program".

Writes ``<out>/<gpu-name>.csv`` (default ``data/timings``; columns program, batch, graph, median_us,
p10_us, p90_us, proxy_us, hardware, error, rel_error, result, dram_floor_us) and its raw log
``<gpu-name>.raw.jsonl`` (per row: every timed run in µs and the first call's seconds, compilation included), both
rewritten after every row, and prints a table with speed-ups over ``unfused``. Every
``proxy_us`` is a proxy estimate on ``--hardware`` (default: the preset matching the GPU's name).
``--json`` prints the Spearman rank correlation between ``proxy_us`` and ``median_us`` per program and
batch and overall (of the rows of an existing CSV when ``--from-csv`` is given: no GPU needed).

Without CuPy or a GPU, or while ``mirage_lab.codegen`` is missing, it says so and exits 0 (skipped).

    python benchmarks/kernels.py [--programs gqa lora] [--batches 1 8] [--max-graphs 6] [--repeats 200]
                                 [--out data/timings] [--json] [--from-csv data/timings/H200.csv]
                                 [--no-compile] [--before-tree .before]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from mirage_lab.bench import baselines, before, programs
from mirage_lab.bench.timing import (  # the measuring lives in the package, shared with `mirage-lab bench`
    COLUMNS,
    check_results,
    correlations,
    gpu_modules,
    gpu_name,
    measure_gpu,
    pick,
    point_inputs,
    preset_for,
    raw_log_path,
    save_rows,
    with_speedups,
)
from mirage_lab.errors import PathError
from mirage_lab.optimize.cost import HARDWARE

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PROGRAMS = [p for p in programs.PROGRAMS if p != "moe"]
__all__ = ["COLUMNS", "correlations", "pick", "preset_for"]


def show(df: pd.DataFrame) -> None:
    df = with_speedups(df)
    print("measured median (device events) with the proxy estimate beside it (proxy_us is a PROXY)")
    print(df.drop(columns=["hardware"], errors="ignore").to_string(index=False, float_format=lambda v: f"{v:.3g}"))


def warm_compile(names: list[str], batches: list[int]) -> int:
    """Compile every point's torch.compile baseline once, on the inputs the timing run uses: inductor's on-disk
    caches (FX graphs, Triton kernels) then serve that run's compilations."""
    why = baselines.torch_cuda()
    if why is not None:
        print(f"skipped: {why}; nothing compiled", file=sys.stderr)
        return 0
    import torch

    for name in names:
        for batch in batches:
            tensors = [torch.as_tensor(x, device="cuda") for x in point_inputs(programs.PROGRAMS[name](batch), name)]
            start = time.perf_counter()
            baselines.compiled(name).fn(*tensors)
            torch.cuda.synchronize()
            print(f"  {name} b{batch}: torch.compile {time.perf_counter() - start:.1f} s", flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", nargs="*", default=DEFAULT_PROGRAMS, choices=list(programs.PROGRAMS))
    ap.add_argument("--batches", nargs="*", type=int, default=[1, 8])
    ap.add_argument("--max-graphs", type=int, default=6, help="reference graphs timed per checkpoint file")
    ap.add_argument("--warmup", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--hardware", choices=list(HARDWARE), help="proxy preset (default: from the GPU name)")
    ap.add_argument("--reference-dir")
    ap.add_argument("--out", default=str(ROOT / "data" / "timings"))
    ap.add_argument("--json", action="store_true", help="print the proxy/measured rank correlation as JSON")
    ap.add_argument("--from-csv", help="skip timing: read the rows of this CSV (for --json)")
    ap.add_argument("--no-compile", action="store_true", help="leave out the torch.compile baseline")
    ap.add_argument("--warm-compile", action="store_true",
                    help="only compile the torch.compile baselines once each, filling inductor's caches for a "
                         "later run (scripts/gpu_check.sh runs this beside the GPU tests)")
    ap.add_argument("--before-tree", help="also time the fused graphs and the search's best with the generator of "
                    "this older tree (scripts/prepare_before.sh)")
    args = ap.parse_args()
    if args.before_tree is not None:  # argument errors before the GPU is looked for
        if args.from_csv:
            ap.error("--before-tree times kernels and --from-csv reads a table: pass one of them")
        try:
            before.check_tree(args.before_tree)
        except PathError as e:
            ap.error(str(e))
    if args.warm_compile:
        return warm_compile(args.programs, args.batches)
    if args.from_csv:
        df = pd.read_csv(args.from_csv)
    else:
        mods = gpu_modules()
        if isinstance(mods, str):
            print(f"skipped: {mods}; no timings written", file=sys.stderr)
            return 0
        cupy, run = mods
        name = gpu_name(cupy)
        hw = args.hardware or preset_for(name)
        print(f"timing on {name}; proxy preset {hw}", flush=True)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        csv = out / f"{name}.csv"

        raw: list[dict[str, Any]] = []
        rows = measure_gpu(cupy, run, hw, args.programs, args.batches, max_graphs=args.max_graphs, warmup=args.warmup,
                           repeats=args.repeats, reference_dir=args.reference_dir, compile=not args.no_compile,
                           before_tree=args.before_tree, raw=raw, on_row=lambda rows: save_rows(rows, raw, csv))
        df = pd.DataFrame(rows, columns=COLUMNS)
        save_rows(rows, raw, csv)
        print(f"wrote {csv} and {raw_log_path(csv).name}")
    show(df)
    if args.json:
        print(json.dumps(correlations(df), indent=1))
    return check_results(df)


if __name__ == "__main__":
    raise SystemExit(main())
