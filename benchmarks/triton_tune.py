"""Tune the Triton backend's launch parameters (num_warps × num_stages × padding) on a GPU, and record them.

For the hand-fused μGraphs (``mirage_lab.bench.fused``, batch 1 and 8) and the best μGraph each benchmark search
found (``data/search_best``), every distinct kernel (by ``kernel_key``, a hash of its block graph; never by program
name) is timed with its default parameters, then with its other candidates nearest-first, round-robin over the
kernels, until ``--budget-s`` (90 s) is spent. Each time is the median of ``--repeats`` CUDA-event timings of the
whole μGraph with only that kernel's parameters changed. A kernel's fastest candidate is checked against the
interpreter before it is kept (else its defaults are). Writes ``data/timings/triton_tuned_<GPU>.json`` (read by
``TritonBackend`` on that GPU) and every trial beside it (``…trials.csv``).

    .venv/bin/python benchmarks/triton_tune.py [--budget-s 90] [--repeats 20] [--out PATH]
    .venv/bin/python benchmarks/triton_tune.py --dry-run    # no GPU: the kernels and how many candidates each
    .venv/bin/python benchmarks/triton_tune.py --aot        # no GPU: what Triton makes of each kernel (PTX, ptxas)
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

import mirage_lab as ml
from mirage_lab.bench.harness import input_scale, random_inputs, relative_error
from mirage_lab.bench.kernel_graphs import kernel_graphs
from mirage_lab.bench.tolerance import TOLERANCE, within, worst_error
from mirage_lab.codegen.triton.backend import TritonBackend
from mirage_lab.codegen.triton.launch import TritonLaunch
from mirage_lab.codegen.triton.module import triton_module
from mirage_lab.codegen.triton.report import triton_report
from mirage_lab.codegen.triton.sweep import TuneTarget, candidates, sweep, tune_targets
from mirage_lab.codegen.triton.tuned import TIMINGS_DIR, TunedKernel, TunedTable, current_gpu, tuned_path, write_tuned
from mirage_lab.errors import MirageError

BUDGET_S = 90.0


def program_of(where: str) -> str:
    """The benchmark program of a target's first place ("search_gqa_bs1/kernel_3" → "gqa"), for its input scale."""
    stem = where.split("/")[0].removeprefix("fused_").removeprefix("search_")
    return stem.rsplit("_b", 1)[0]


def signature(target: TuneTarget, launch: TritonLaunch) -> str:
    """What a candidate compiles to: the module's source (its kernels, LAUNCH and launcher)."""
    return hashlib.sha256(triton_module(target.graph, {target.key: launch}).source.encode()).hexdigest()


class DeviceTimer:
    """Times a target's graph on the GPU with one kernel's launch parameters changed; inputs made once per graph."""

    def __init__(self, warmup: int, repeats: int) -> None:
        self.backend = TritonBackend(tuned=None)
        self.warmup, self.repeats = warmup, repeats
        self.inputs: dict[str, list[Any]] = {}

    def _inputs(self, target: TuneTarget) -> list[Any]:
        if target.key not in self.inputs:
            self.inputs[target.key] = random_inputs(target.graph, seed=0, scale=input_scale(program_of(target.where)))
        return self.inputs[target.key]

    def __call__(self, target: TuneTarget, launch: TritonLaunch) -> float:
        try:
            compiled = self.backend.compile(self.backend.render(target.graph, {target.key: launch}))
            return self.backend.time(compiled, self._inputs(target), warmup=self.warmup,
                                     repeats=self.repeats).median_ms
        except MirageError:
            raise
        except Exception as e:  # Triton's compile and launch errors (out of shared memory, …) are of many types
            raise MirageError(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None

    def correct(self, target: TuneTarget, launch: TritonLaunch) -> bool:
        compiled = self.backend.compile(self.backend.render(target.graph, {target.key: launch}))
        inputs = self._inputs(target)
        got = self.backend.run(compiled, inputs)
        want = ml.interpret(target.graph, inputs)
        dtype = target.graph.tensors[0].dtype.value
        return within(worst_error(relative_error(g, w) for g, w in zip(got, want, strict=True)), TOLERANCE[dtype])


def checked(kernels: tuple[TunedKernel, ...], targets: list[TuneTarget], timer: DeviceTimer) -> list[TunedKernel]:
    """Each tuned kernel whose fastest launch computes the graph within tolerance; else its defaults."""
    by_key = {t.key: t for t in targets}
    out = []
    for k in kernels:
        target = by_key[k.key]
        if k.launch != target.default and not timer.correct(target, k.launch):
            print(f"  {k.where}: {k.launch!r} computes a wrong result; keeping the defaults", file=sys.stderr)
            k = TunedKernel(k.key, target.default, k.default_ms, k.default_ms, k.tried, k.where)
        out.append(k)
    return out


def dry_run(targets: list[TuneTarget]) -> pd.DataFrame:
    return pd.DataFrame([{"kernel": t.where, "key": t.key[:12], "default": repr(t.default), "loop": t.forloop_range,
                          "candidates": len(candidates(t.default, t.forloop_range))} for t in targets])


def aot_report() -> pd.DataFrame:
    frames = []
    for name, g in kernel_graphs().items():
        df = triton_report(g)
        df.insert(0, "graph", name)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget-s", type=float, default=BUDGET_S, help="seconds of timing (default 90)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--out", type=Path, help="the tuned table (default <timings-dir>/triton_tuned_<GPU>.json)")
    ap.add_argument("--timings-dir", type=Path, default=TIMINGS_DIR, help="where the default --out goes "
                    "(default data/timings)")
    ap.add_argument("--dry-run", action="store_true", help="list the kernels and their candidates; no GPU")
    ap.add_argument("--aot", action="store_true", help="PTX and ptxas figures per kernel for sm_80 and sm_90; no GPU")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", UserWarning)
    pd.set_option("display.width", 200)
    pd.set_option("display.max_columns", 30)
    pd.set_option("display.max_rows", 500)
    if args.aot:
        print(aot_report().drop(columns=["key"]).to_string())
        return 0
    targets = tune_targets(kernel_graphs())
    if args.dry_run:
        print(dry_run(targets).to_string())
        return 0
    gpu = current_gpu()
    if gpu is None:
        print("triton_tune: no CUDA device (CuPy finds none); use --dry-run or --aot here", file=sys.stderr)
        return 2
    start = time.perf_counter()
    timer = DeviceTimer(args.warmup, args.repeats)
    result = sweep(targets, timer, args.budget_s, signature=signature)
    print(result, file=sys.stderr)
    import triton

    table = TunedTable(gpu, triton.__version__, tuple(checked(result.tuned, targets, timer)))
    out = args.out or tuned_path(gpu, args.timings_dir)
    write_tuned(out, table)
    result.table().to_csv(out.with_suffix(".trials.csv"), index=False)
    summary = pd.DataFrame([{"kernel": k.where, "tuned": repr(k.launch), "ms": k.median_ms,
                             "default ms": k.default_ms, "speed-up": k.default_ms / k.median_ms, "tried": k.tried}
                            for k in table.kernels])
    print(summary.to_string())
    print(f"wrote {out} ({len(table.kernels)} kernels) in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
