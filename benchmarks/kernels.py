"""Measured GPU times of the benchmark programs against their proxy costs (SPEC §8.1, §9; issue 6).

For each benchmark program and batch size, times on the GPU with device events (``warmup`` runs, then
``repeats`` timed runs; ``mirage_lab.codegen.run.time_callable``):

* ``unfused``: the program run op by op with CuPy (``mirage_lab.codegen.run.unfused_cupy``);
* ``fused``: the hand-written fused μGraph (``mirage_lab.bench.fused``), compiled with
  ``mirage_lab.codegen.run.compile``, where there is one;
* ``<file>[i]``: reference μGraphs of each checkpoint file for that program and batch (the proxy's best
  first, then graphs spread over the proxy ranking, up to ``--max-graphs``);
* ``torch``: the same formula in PyTorch, when torch is importable.

Writes ``<out>/<gpu-name>.csv`` (default ``data/timings``; columns program, batch, graph, median_us,
p10_us, p90_us, proxy_us, hardware, error) and prints a table with speed-ups over ``unfused``. Every
``proxy_us`` is a proxy estimate on ``--hardware`` (default: the preset matching the GPU's name).
``--json`` prints the Spearman rank correlation between ``proxy_us`` and ``median_us`` per program and
batch and overall (of the rows of an existing CSV when ``--from-csv`` is given: no GPU needed).

Without CuPy or a GPU, or while ``mirage_lab.codegen`` is missing, it says so and exits 0 (skipped).

    python benchmarks/kernels.py [--programs gqa lora] [--batches 1 8] [--max-graphs 6] [--repeats 200]
                                 [--out data/timings] [--json] [--from-csv data/timings/H200.csv]
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.bench.harness import CHECKPOINTS, find_reference_dir, input_scale
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.optimize.cost import HARDWARE, proxy_cost
from mirage_lab.optimize.ranking import rank_correlation

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ["program", "batch", "graph", "median_us", "p10_us", "p90_us", "proxy_us", "hardware", "error"]
DEFAULT_PROGRAMS = [p for p in programs.PROGRAMS if p != "moe"]


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


def gpu_name(cupy: Any) -> str:
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")


def preset_for(name: str) -> str:
    for hw in ("H200", "H100", "A100"):
        if hw.lower() in name.lower():
            return hw
    return "H100"


def torch_baseline(program: str) -> Callable[..., Any] | None:
    """The SPEC §9 formula in PyTorch (softmax without max subtraction), or None without torch."""
    try:
        import torch
    except ImportError:
        return None

    def rms(x: Any) -> Any:
        return x / torch.sqrt((x.float() * x.float()).mean(-1, keepdim=True)).to(x.dtype)

    def attn(q: Any, k: Any, v: Any) -> Any:
        e = torch.exp(q @ k)
        return (e / e.sum(-1, keepdim=True)) @ v

    table: dict[str, Callable[..., Any]] = {
        "rmsnorm": lambda x, w: rms(x) @ w,
        "gated_mlp": lambda x, w1, w2: torch.nn.functional.silu(x @ w1) * (x @ w2),
        "lora": lambda x, w, a, b: x @ w + (x @ a) @ b,
        "gqa": attn, "mha": attn, "mqa": attn,
        "qknorm_gqa": lambda q, k, v: attn(rms(q), k, rms(v)),
        "ntrans": lambda h, x, a: rms(x + a * (rms(h) + x)),
        "moe": lambda x, a, b: torch.exp(x @ a) @ b,
    }
    return table.get(program)


def pick(graphs: list[KernelGraph], proxies: list[float], limit: int) -> list[int]:
    """The proxy's best graph, then graphs spread evenly over the proxy ranking."""
    order = sorted(range(len(graphs)), key=proxies.__getitem__)
    if len(order) <= limit:
        return order
    return sorted({order[round(j * (len(order) - 1) / max(limit - 1, 1))] for j in range(limit)},
                  key=proxies.__getitem__)


def measure(cupy: Any, run: Any, args: argparse.Namespace, hw: str) -> list[dict[str, Any]]:
    ref_dir = find_reference_dir(args.reference_dir)
    rows: list[dict[str, Any]] = []
    for name in args.programs:
        for batch in args.batches:
            program = programs.PROGRAMS[name](batch)
            rng = np.random.default_rng(0)
            scale = input_scale(name)
            inputs = [cupy.asarray((rng.standard_normal(t.dims) * scale).astype(np.float16))
                      for t in program.input_types]

            def record(label: str, make: Callable[[], Callable[..., Any]], proxy_us: float | None,
                       name: str = name, batch: int = batch, inputs: list[Any] = inputs) -> None:
                row: dict[str, Any] = {"program": name, "batch": batch, "graph": label, "proxy_us": proxy_us,
                                       "hardware": hw, "error": ""}
                try:
                    fn = make()
                    t = run.time_callable(lambda: fn(*inputs), warmup=args.warmup, repeats=args.repeats)
                    row.update(median_us=t.median_s * 1e6, p10_us=t.p10_s * 1e6, p90_us=t.p90_s * 1e6)
                except Exception as e:  # one failing graph must not stop the table
                    row["error"] = f"{type(e).__name__}: {e}"[:200]
                rows.append(row)
                print(f"  {name} b{batch} {label}: {row.get('median_us', float('nan')):.2f} µs {row['error']}",
                      flush=True)

            record("unfused", lambda p=program: run.unfused_cupy(p), proxy_cost(program, hw).seconds * 1e6)
            if name in fused.FUSED:
                g = fused.FUSED[name](batch)
                record("fused", lambda g=g: run.compile(g), proxy_cost(g, hw).seconds * 1e6)
            for stem, (prog, b) in CHECKPOINTS.items():
                if ref_dir is None or prog != name or b != batch:
                    continue
                graphs = ml.load_reference_checkpoint(ref_dir / f"{stem}.json")
                proxies = [proxy_cost(g, hw).seconds * 1e6 for g in graphs]
                for i in pick(graphs, proxies, args.max_graphs):
                    record(f"{stem}[{i}]", lambda g=graphs[i]: run.compile(g), proxies[i])
            base = torch_baseline(name)
            if base is not None:
                import torch
                tin = [torch.as_tensor(x, device="cuda") for x in inputs]
                record("torch", lambda base=base, tin=tin: (lambda *_: base(*tin)), None)
    return rows


def correlations(df: pd.DataFrame) -> dict[str, Any]:
    """Spearman ρ between proxy_us and median_us, per (program, batch) and over all rows."""
    ok = df.dropna(subset=["proxy_us", "median_us"])
    per = {f"{p} b{b}": rank_correlation(g["proxy_us"], g["median_us"])
           for (p, b), g in ok.groupby(["program", "batch"])}
    return {"kind": "rank correlation (Spearman) of proxy_us against measured median_us",
            "overall": rank_correlation(ok["proxy_us"], ok["median_us"]), "rows": len(ok),
            "per_program": {k: (None if v != v else v) for k, v in per.items()}}


def show(df: pd.DataFrame) -> None:
    df = df.copy()
    unfused = df[df["graph"] == "unfused"].set_index(["program", "batch"])["median_us"]
    df["speed-up vs unfused"] = [unfused.get((p, b), np.nan) / m if m == m and m else np.nan
                                 for p, b, m in zip(df["program"], df["batch"], df["median_us"], strict=True)]
    print("measured median (device events) with the proxy estimate beside it (proxy_us is a PROXY)")
    print(df.drop(columns=["hardware"], errors="ignore").to_string(index=False, float_format=lambda v: f"{v:.3g}"))


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
    args = ap.parse_args()
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
        df = pd.DataFrame(measure(cupy, run, args, hw), columns=COLUMNS)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        df.to_csv(out / f"{name}.csv", index=False)
        print(f"wrote {out / f'{name}.csv'}")
    show(df)
    if args.json:
        print(json.dumps(correlations(df), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
