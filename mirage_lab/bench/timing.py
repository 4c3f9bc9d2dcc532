"""Timing the benchmark programs: on a GPU with device events, on the CPU with the numpy interpreter.

``measure_gpu`` is what ``benchmarks/kernels.py`` and ``mirage-lab bench`` record on a GPU (issue 6): the
unfused program op by op with CuPy, the hand-written fused μGraph (and its codegen ablation), the best
μGraph our search found and reference μGraphs, compiled by ``mirage_lab.codegen``, and PyTorch when
installed. ``measure_cpu`` is the CPU-only fallback: the interpreter's wall time for the unfused program
and the fused μGraph — a measure of the *interpreter*, labelled as such, never of a kernel. Every row
carries the proxy estimate beside the measurement, and the result check (``result``): before a kernel is timed, its
outputs are compared with the interpreter's, so that a kernel computing something wrong (or NaN) is never reported
as a timing like any other (issue 35): its row says WRONG, it has no speed-up, and ``check_results`` names it.
"""

from __future__ import annotations

import importlib
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pandas as pd

from mirage_lab.bench import baselines, before, fused, programs
from mirage_lab.bench.harness import CHECKPOINTS, find_reference_dir, input_scale, random_inputs
from mirage_lab.bench.kernel_graphs import SEARCH_BEST_DIR as SEARCH_BEST_DIR
from mirage_lab.bench.tolerance import (
    OK,
    OTHER_GRAPH,
    TOLERANCE,
    agreement,
    no_speedup,
    tolerance_for,
    verdict,
    wrong,
)
from mirage_lab.bounds import check_timed_runs, timed_runs
from mirage_lab.codegen.cuda import PLAIN, CodegenOptions, generate_cuda
from mirage_lab.errors import InputError
from mirage_lab.ir.checkpoint import load_reference_checkpoint
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.io import load, write_atomic
from mirage_lab.optimize.cost import proxy_cost
from mirage_lab.optimize.ranking import rank_correlation
from mirage_lab.semantics.backend import gpu_name as gpu_name
from mirage_lab.semantics.backend import to_numpy
from mirage_lab.semantics.interpret import interpret

#: the best μGraph each benchmark search found, in a checkout (``benchmarks/search.py --save-best``)

COLUMNS = ["program", "batch", "graph", "median_us", "p10_us", "p90_us", "proxy_us", "hardware", "error", "rel_error",
           "result", "dram_floor_us"]


def gpu_modules() -> tuple[Any, Any] | str:
    """(cupy, mirage_lab.codegen.run), or why they cannot be used."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (pip install -e '.[gpu]')"
    try:
        if not cupy.is_available():
            return "CuPy finds no CUDA device"
    except Exception as e:  # any driver error means "no GPU"
        return f"CuPy cannot reach a device: {e}"
    try:
        run = importlib.import_module("mirage_lab.codegen.run")
    except ImportError as e:
        return f"mirage_lab.codegen.run is not available yet ({e})"
    return cupy, run


def preset_for(name: str) -> str:
    for hw in ("H200", "H100", "A100"):
        if hw.lower() in name.lower():
            return hw
    return "H100"


def torch_baseline(program: str) -> Callable[..., Any] | None:
    """The program as a PyTorch user writes it (``baselines.eager_function``), or None without a CUDA build of
    torch and a device (a CPU-only torch, as the test environment installs, cannot time a GPU row)."""
    if baselines.torch_cuda() is not None:
        return None
    return baselines.eager_function(program)


def pick(graphs: list[KernelGraph], proxies: list[float], limit: int) -> list[int]:
    """The proxy's best graph, then graphs spread evenly over the proxy ranking."""
    order = sorted(range(len(graphs)), key=proxies.__getitem__)
    if len(order) <= limit:
        return order
    return sorted({order[round(j * (len(order) - 1) / max(limit - 1, 1))] for j in range(limit)},
                  key=proxies.__getitem__)


def point_inputs(program: KernelGraph, name: str) -> list[np.ndarray]:
    """The fp16 host inputs every GPU row of a point is timed on (benchmarks/kernels_before.py makes the same)."""
    rng = np.random.default_rng(0)
    return [(rng.standard_normal(t.dims) * input_scale(name)).astype(np.float16) for t in program.input_types]


class _Point:
    """One (program, batch) of a GPU table: its inputs on the device, its expected outputs, its DRAM floor."""

    def __init__(self, cupy: Any, name: str, batch: int, hw: str) -> None:
        self.name, self.batch = name, batch
        self.program = programs.PROGRAMS[name](batch)
        self.inputs = [cupy.asarray(x) for x in point_inputs(self.program, name)]
        self.want = _Expected(self.program, self.inputs)
        self.floor_us = baselines.dram_floor_s(self.program, hw) * 1e6

    def __repr__(self) -> str:
        return f"_Point({self.name} b{self.batch})"


def measure_gpu(cupy: Any, run: Any, hw: str, programs_: Sequence[str], batches: Sequence[int], *,
                max_graphs: int = 6, warmup: int = 16, repeats: int = 200, reference_dir: str | None = None,
                search_best_dir: Path | None = SEARCH_BEST_DIR, log: Callable[[str], None] = print,
                on_row: Callable[[list[dict[str, Any]]], None] | None = None, compile: bool = True,
                before_tree: str | Path | None = None, torch_device: str = "cuda",
                raw: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Device-event timings of every (program, batch), one row per graph (COLUMNS), each checked first against the
    program's interpreter (``result``), in the order that puts what matters most first (a time limit then cuts
    the least): for every point our kernels (the unfused program with CuPy op by op, the hand-fused μGraph and
    its codegen ablation, the best μGraph our search found in ``search_best_dir/<program>_bs<batch>.json``, up
    to ``max_graphs`` reference μGraphs per checkpoint file); then the PyTorch baselines (``bench.baselines``:
    eager, SDPA for attention) on ``torch_device``; then, with ``before_tree``, the hand-fused graphs and the
    search's best compiled by that older tree's generator (``bench.before``); then ``torch.compile`` (unless
    ``compile`` is False), last because its compilation is the slowest step. Every row carries the point's
    DRAM floor (``dram_floor_us``). ``raw``, when given, gets the raw log's record of each row (RAW_FIELDS: every
    timed run in ``samples_us``, and ``first_s``, the wall seconds to make the callable and run it once,
    compilation included) before ``on_row(rows)`` runs, after every row (to save them as they come: a time limit
    then loses nothing)."""
    check_timed_runs(warmup, repeats)  # before anything is compiled; each graph's total is bounded as it is timed
    if before_tree is not None:
        before.check_tree(before_tree)
    ref_dir = find_reference_dir(reference_dir)
    rows: list[dict[str, Any]] = []

    def add(row: dict[str, Any]) -> None:
        timed = {k: row.pop(k) for k in ("first_s", "samples_us") if k in row}  # the raw log's, not the table's
        if raw is not None:
            raw.append({k: (timed | row).get(k) for k in RAW_FIELDS})
        rows.append(row)
        log(f"  {row['program']} b{row['batch']} {row['graph']}: {row.get('median_us', float('nan')):.2f} µs "
            f"{row['error']}" + (f" {row['result']}" if row["result"] not in ("", OK) else ""))
        if on_row is not None:
            on_row(rows)

    def record(p: _Point, label: str, make: Callable[[], Callable[..., Any]], proxy_us: float | None,
               graph: KernelGraph | None = None, saved: bool = False) -> None:
        row: dict[str, Any] = {"program": p.name, "batch": p.batch, "graph": label, "proxy_us": proxy_us,
                               "hardware": hw, "error": "", "result": "", "dram_floor_us": p.floor_us}
        try:
            start = time.perf_counter()
            fn = make()
            outputs = fn(*p.inputs)
            row["first_s"] = time.perf_counter() - start  # (asynchronous kernels: the check below waits for them)
            row.update(p.want.judge(outputs, graph or p.program, saved))  # checked before it is timed
            t = run.time_callable(fn, p.inputs, warmup=warmup, repeats=repeats)  # a Timing, in ms
            row.update(median_us=t.median_ms * 1e3, p10_us=t.p10_ms * 1e3, p90_us=t.p90_ms * 1e3,
                       samples_us=[s * 1e3 for s in t.samples_ms])
        except Exception as e:  # one failing graph must not stop the table
            row["error"] = f"{type(e).__name__}: {e}"[:200]
        add(row)

    points = [_Point(cupy, name, batch, hw) for name in programs_ for batch in batches]
    found: dict[tuple[str, int], Path] = {}
    for p in points:
        best = _kernel_rows(p, run, hw, record, ref_dir, max_graphs, search_best_dir, log)
        if best is not None:
            found[(p.name, p.batch)] = best
    torch_why = baselines.torch_cuda() if torch_device == "cuda" else None
    tensors = {p: _torch_inputs(p.inputs, torch_device) for p in points} if torch_why is None else {}
    for p in points:
        for b in baselines.baselines(p.name, compile=False) if torch_why is None else []:
            record(p, b.label, partial(_bound, b.fn, b.prepare, tensors[p]), None)
        if torch_why is not None:
            for label in (baselines.EAGER, baselines.SDPA) if p.name in baselines.ATTENTION else (baselines.EAGER,):
                add({"program": p.name, "batch": p.batch, "graph": label, "hardware": hw, "error": torch_why,
                     "result": "", "dram_floor_us": p.floor_us})
    if before_tree is not None:
        by_point = {(p.name, p.batch): p for p in points}
        for row in before.before_rows(before_tree, list(by_point),
                                      {k: {"search best": v} for k, v in found.items()},
                                      warmup=warmup, repeats=repeats):
            add(row | {"hardware": hw, "proxy_us": None,
                       "dram_floor_us": by_point[(row["program"], row["batch"])].floor_us})
    for p in points if compile and torch_why is None else []:
        b = baselines.compiled(p.name)
        record(p, b.label, partial(_bound, b.fn, b.prepare, tensors[p]), None)
    return rows


def _kernel_rows(p: _Point, run: Any, hw: str, record: Callable[..., None], ref_dir: Path | None, max_graphs: int,
                 search_best_dir: Path | None, log: Callable[[str], None]) -> Path | None:
    """Our kernels' rows of one point (see ``measure_gpu``); the search's best μGraph file when there is one."""
    name, batch = p.name, p.batch
    record(p, "unfused", partial(run.unfused_cupy, p.program), proxy_cost(p.program, hw).seconds * 1e6)
    if name in fused.FUSED:
        g = fused.FUSED[name](batch)
        proxy = proxy_cost(g, hw).seconds * 1e6
        record(p, "fused", partial(run.compile, g), proxy, g)
        # the codegen ablation (codegen.cuda): without the ring of loop tiles copied ahead; without tensor cores,
        # padding and asynchronous copies, where that changes the generated source; then all off (plain loops)
        record(p, "fused (no prefetch)", partial(run.compile, g, prefetch=False), proxy, g)
        default = generate_cuda(g)
        for option in ("tensor_cores", "padding", "async_copies"):
            off = CodegenOptions(**{option: False})
            if generate_cuda(g, off) != default:
                record(p, f"fused (no {option.replace('_', ' ')})", partial(run.compile, g, off), proxy, g)
        record(p, "fused (plain loops)", partial(run.compile, g, PLAIN), proxy, g)
        record(p, "fused (triton)", partial(triton_callable, g), proxy, g)  # issue 22: the Triton backend
    best = search_best_dir / f"{name}_bs{batch}.json" if search_best_dir is not None else None
    if best is not None and best.is_file():
        found = load(best)
        if not isinstance(found, KernelGraph):
            raise InputError(f"{best} should hold one μGraph; rewrite it with benchmarks/search.py --save-best")
        record(p, "search best", partial(run.compile, found), proxy_cost(found, hw).seconds * 1e6, found)
    else:
        best = None
    for stem, (prog, b) in CHECKPOINTS.items():
        if ref_dir is None or prog != name or b != batch:
            continue
        if not (ref_dir / f"{stem}.json").is_file():  # folders need not hold every checkpoint: say which
            log(f"  {name} b{batch}: {ref_dir} holds no {stem}.json; no reference μGraphs of it timed")
            continue
        graphs = load_reference_checkpoint(ref_dir / f"{stem}.json")
        proxies = [proxy_cost(g, hw).seconds * 1e6 for g in graphs]
        for i in pick(graphs, proxies, max_graphs):
            record(p, f"{stem}[{i}]", partial(run.compile, graphs[i]), proxies[i], graphs[i], saved=True)
    return best


def _torch_inputs(inputs: list[Any], device: str) -> list[Any]:
    """The point's inputs as torch tensors on ``device`` (CuPy arrays are shared, not copied)."""
    import torch

    return [torch.as_tensor(x, device=device) for x in inputs]


class _Expected:
    """The program's outputs on one set of device inputs (the float32 interpreter on their fp16 values, computed
    at the first row that needs them), and the check of a row against them."""

    def __init__(self, program: KernelGraph, inputs: list[Any]) -> None:
        self.program = program
        self.inputs = [_host(x).astype(np.float32) for x in inputs]
        self._outputs: list[np.ndarray] | None = None

    def program_outputs(self) -> list[np.ndarray]:
        if self._outputs is None:
            self._outputs = interpret(self.program, self.inputs, dtype="float32")
        return self._outputs

    def judge(self, outputs: Any, graph: KernelGraph, saved: bool = False) -> dict[str, Any]:
        """``rel_error`` and ``result`` of a kernel of ``graph`` that gave ``outputs``: OK when they agree with the
        program's; for a ``saved`` (reference) graph, OTHER_GRAPH when they do not but agree with that graph's
        own; WRONG otherwise (a graph of ours that is not the program is as wrong as a kernel that miscomputes)."""
        got = [_host(o) for o in (outputs if isinstance(outputs, list | tuple) else [outputs])]
        kind, tol = tolerance_for(graph)
        against_program = agreement(got, self.program_outputs(), tol, kind)
        if against_program.ok:
            return {"rel_error": against_program.worst, "result": OK}
        own = saved and agreement(got, interpret(graph, self.inputs, dtype="float32"), tol, kind).ok
        return {"rel_error": against_program.worst, "result": OTHER_GRAPH if own else verdict(against_program)}


def _host(a: Any) -> np.ndarray:
    """A CuPy array, a torch tensor or a numpy array as a numpy array."""
    if hasattr(a, "detach"):  # torch (bf16 has no numpy type)
        return np.asarray(a.detach().float().cpu().numpy())
    return to_numpy(a)


#: the raw log's fields: every timed run of a row, and the seconds its first call took (compilation included)
RAW_FIELDS = ("program", "batch", "graph", "hardware", "first_s", "samples_us", "error", "result")


def raw_log_path(csv: Path) -> Path:
    """Where the raw log of the table ``csv`` goes: ``<GPU>.raw.jsonl`` beside ``<GPU>.csv``."""
    return csv.with_name(csv.stem + ".raw.jsonl")


def save_rows(rows: Sequence[dict[str, Any]], raw: Sequence[dict[str, Any]], csv: Path) -> None:
    """Write ``rows`` as the table ``csv`` (COLUMNS) and ``raw`` (``measure_gpu``'s records) as its raw log
    (``raw_log_path``: one JSON line per row), each atomically: called after every row, a time limit keeps what
    ran."""
    write_atomic(csv, pd.DataFrame(list(rows), columns=COLUMNS).to_csv(index=False))
    write_atomic(raw_log_path(csv), "".join(json.dumps(r) + "\n" for r in raw))


def check_results(df: pd.DataFrame, out: TextIO | None = None) -> int:
    """0 when no row of ``df`` computed a wrong result; else 1, after naming each such row on ``out`` (stderr)."""
    lines = [f"{r.program} b{r.batch} {r.graph}: {r.result}" for r in df[wrong(df)].itertuples()]
    if lines:
        print(f"{len(lines)} kernel(s) computed a wrong result (their times are no speed-up):\n  " + "\n  ".join(lines),
              file=out or sys.stderr)
    return 1 if lines else 0


def triton_callable(graph: KernelGraph) -> Callable[..., Any]:
    """``graph``'s Triton module as a callable on CuPy arrays (handed to torch by DLPack, without copies), with the
    launch parameters tuned for this GPU where its table holds them (``benchmarks/triton_tune.py``); needs torch
    with CUDA and Triton on the device."""
    import torch

    from mirage_lab.codegen.triton.backend import TritonBackend
    from mirage_lab.codegen.triton.toolchain import load_module

    module = load_module(TritonBackend().render(graph).source)
    return lambda *arrays: module.run(*[torch.from_dlpack(a) for a in arrays])


def _bound(fn: Callable[..., Any], prepare: Callable[[Sequence[Any]], list[Any]], tensors: list[Any]
           ) -> Callable[..., Any]:
    """``fn`` on ``prepare(tensors)`` (prepared once, here), ignoring the timer's arguments (a PyTorch baseline
    keeps its own tensors)."""
    args = prepare(tensors)
    return lambda *_: fn(*args)


def correlations(df: pd.DataFrame) -> dict[str, Any]:
    """Spearman ρ between proxy_us and median_us, per (program, batch) and over all rows."""
    ok = df.dropna(subset=["proxy_us", "median_us"])
    per = {f"{p} b{b}": rank_correlation(g["proxy_us"], g["median_us"])
           for (p, b), g in ok.groupby(["program", "batch"])}
    return {"kind": "rank correlation (Spearman) of proxy_us against measured median_us",
            "overall": rank_correlation(ok["proxy_us"], ok["median_us"]), "rows": len(ok),
            "per_program": {k: (None if v != v else v) for k, v in per.items()}}


def cpu_name() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux), for labelling CPU measurements."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def measure_cpu(programs_: Sequence[str], batches: Sequence[int], *, hardware: str = "H100", repeats: int = 3,
                log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """The numpy interpreter's wall time (float32) of each unfused program and its hand-fused μGraph, with the
    fused outputs' relative error against the unfused ones (``result``: within the float32 tolerance?) and the
    proxy estimate on ``hardware``."""
    label = f"numpy interpreter on {cpu_name()}"
    rows: list[dict[str, Any]] = []
    for name in programs_:
        for batch in batches:
            program = programs.PROGRAMS[name](batch)
            inputs = random_inputs(program, seed=0, scale=input_scale(name))
            graphs = {"unfused": program} | ({"fused": fused.FUSED[name](batch)} if name in fused.FUSED else {})
            want = None
            for graph_name, g in graphs.items():
                got, seconds = _timed_interpret(g, inputs, repeats)
                want = got if want is None else want
                agree = agreement(got, want, TOLERANCE["float32"], "float32")
                rows.append({"program": name, "batch": batch, "graph": graph_name, "median_us": seconds * 1e6,
                             "proxy_us": proxy_cost(g, hardware).seconds * 1e6, "hardware": label,
                             "rel_error": agree.worst, "result": verdict(agree), "error": ""})
                log(f"  {name} b{batch} {graph_name}: {seconds * 1e3:.1f} ms (interpreter)")
    return rows


def _timed_interpret(graph: KernelGraph, inputs: list[np.ndarray], repeats: int) -> tuple[list[np.ndarray], float]:
    """The outputs of ``graph`` on ``inputs`` and the median wall time of ``repeats`` runs (bounded:
    ``bounds.timed_runs``)."""
    outs: list[np.ndarray] = []

    def once() -> float:
        start = time.perf_counter()
        outs[:] = interpret(graph, inputs, dtype="float32")
        return time.perf_counter() - start

    times = timed_runs(once, 0, repeats, "the interpreter")
    return outs, statistics.median(times)


def with_speedups(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``speed-up vs unfused``: the unfused row's median over each row's, per program and batch; none
    for a row that does not compute the program (``tolerance.no_speedup``)."""
    df = df.copy()
    unfused = df[df["graph"] == "unfused"].set_index(["program", "batch"])["median_us"]
    df["speed-up vs unfused"] = [unfused.get((p, b), np.nan) / m if m == m and m and not w else np.nan
                                 for p, b, m, w in zip(df["program"], df["batch"], df["median_us"], no_speedup(df),
                                                       strict=True)]
    return df
