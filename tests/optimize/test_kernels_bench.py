"""benchmarks/kernels.py without a GPU: it skips cleanly, and its rank-correlation report reads a CSV."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "kernels.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_kernels", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


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
