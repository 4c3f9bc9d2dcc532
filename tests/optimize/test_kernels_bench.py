"""benchmarks/kernels.py without a GPU: it skips cleanly, and its rank-correlation report reads a CSV."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd
import pytest

from tests.conftest import REPO_ROOT, load_script

SCRIPT = REPO_ROOT / "benchmarks" / "kernels.py"


def load() -> ModuleType:
    return load_script(SCRIPT, "bench_kernels")


def test_correlation_report_from_rows() -> None:
    kernels = load()
    df = pd.DataFrame([
        {"program": "gqa", "batch": 1, "graph": "unfused", "median_us": 30.0, "proxy_us": 24.0},
        {"program": "gqa", "batch": 1, "graph": "fused", "median_us": 12.0, "proxy_us": 8.0},
        {"program": "gqa", "batch": 1, "graph": "gqa_bs1[3]", "median_us": 15.0, "proxy_us": 9.0},
        {"program": "gqa", "batch": 1, "graph": "torch", "median_us": 20.0, "proxy_us": None},
    ], columns=kernels.COLUMNS)
    report = kernels.correlations(df)
    assert report["rows"] == 3 and report["overall"] == pytest.approx(1.0)
    assert report["per_program"]["gqa b1"] == pytest.approx(1.0)
    assert kernels.pick([None] * 10, [float(i) for i in range(10)], 3) == [0, 4, 9]  # type: ignore[list-item]
    assert kernels.preset_for("NVIDIA_H200") == "H200"


def test_skips_or_reads_a_csv_without_a_gpu(tmp_path: Path) -> None:
    csv = tmp_path / "t.csv"
    pd.DataFrame([{"program": "lora", "batch": 1, "graph": "unfused", "median_us": 10.0, "proxy_us": 12.0},
                  {"program": "lora", "batch": 1, "graph": "fused", "median_us": 5.0, "proxy_us": 4.0}]
                 ).to_csv(csv, index=False)
    out = subprocess.run([sys.executable, str(SCRIPT), "--from-csv", str(csv), "--json"], capture_output=True,
                         text=True, check=True).stdout
    report = json.loads(out[out.index("{"):])
    assert report["overall"] == pytest.approx(1.0)
    try:
        import cupy  # noqa: F401
    except ImportError:
        r = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "t")], capture_output=True,
                           text=True, check=True)
        assert "skipped" in r.stderr and not (tmp_path / "t").exists()


def _unrelated_references(tmp_path: Path) -> Path:
    """A reference folder holding only another program's checkpoint: LoRA gets no reference rows."""
    folder = tmp_path / "refs"
    folder.mkdir()
    (folder / "gqa_bs1.json").write_text("[]")
    return folder


def test_gpu_measuring_loop_without_a_gpu(tmp_path: Path) -> None:
    """measure_gpu's bookkeeping on the CPU: a stand-in CuPy and timer checked against the real signatures and
    result type (so the one GPU run cannot fail on a wrong call), every row saved as it comes."""
    import inspect
    from types import SimpleNamespace

    import numpy as np

    import mirage_lab as ml
    from mirage_lab.bench import timing
    from mirage_lab.codegen import run as real_run

    def compile_(graph: ml.KernelGraph, *args: object, **kw: bool) -> object:
        inspect.signature(real_run.compile).bind(graph, *args, **kw)  # the GPU run calls the real one this way
        return lambda *xs: ml.interpret(graph, list(xs), dtype="float32")

    def unfused(program: ml.KernelGraph) -> object:
        inspect.signature(real_run.unfused_cupy).bind(program)
        return lambda *xs: ml.interpret(program, list(xs), dtype="float32")

    def time_callable(fn: Any, *args: Any, **kw: Any) -> real_run.Timing:
        bound = inspect.signature(real_run.time_callable).bind(fn, *args, **kw)
        fn(*bound.arguments["args"])
        return real_run.Timing(0.01, 0.009, 0.02, (0.01,))  # milliseconds, as the real one returns

    fake_run = SimpleNamespace(compile=compile_, unfused_cupy=unfused, time_callable=time_callable)
    saved: list[int] = []
    rows = timing.measure_gpu(SimpleNamespace(asarray=np.asarray), fake_run, "H200", ["lora"], [1],
                              reference_dir=str(_unrelated_references(tmp_path)), log=lambda _: None,
                              on_row=lambda rs: saved.append(len(rs)))
    # LoRA's matmuls run on tensor cores, with padded operands; data/search_best/lora_bs1.json is the search's
    assert [r["graph"] for r in rows][:9] == ["unfused", "fused", "fused (no prefetch)", "fused (no tensor cores)",
                                              "fused (no padding)", "fused (no async copies)", "fused (plain loops)",
                                              "fused (triton)", "search best"]
    cuda = [r for r in rows[:9] if r["graph"] != "fused (triton)"]  # (Triton needs a device: its row says why)
    assert all(r["error"] == "" and r["median_us"] == 10.0 for r in cuda), rows
    assert saved == list(range(1, len(rows) + 1))
