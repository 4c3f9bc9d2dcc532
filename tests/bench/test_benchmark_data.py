"""data/benchmarks/ holds the benchmark definitions as data; they must stay what the code defines."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import mirage_lab as ml
from tests.conftest import load_script

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "benchmarks"
FIX = "the saved benchmark definitions drifted from mirage_lab.bench; rerun scripts/export_benchmarks.py"


def test_saved_definitions_match_the_code() -> None:
    script = load_script(ROOT / "scripts" / "export_benchmarks.py", "export_benchmarks")
    defs = script.definitions()
    assert sorted(p.name for p in DATA.glob("*.json")) == sorted(defs), FIX
    for file, (graph, _) in defs.items():
        assert ml.load(DATA / file) == graph, f"{file}: {FIX}"
    index = pd.read_csv(DATA / "index.csv", keep_default_na=False)
    want = pd.DataFrame([row for _, row in defs.values()]).astype(str)
    assert index.astype(str).to_dict("records") == want.to_dict("records"), FIX
    assert {"rmsnorm_bs1.json", "fused_gqa_bs8.json", "qknorm_gqa_bs8.json"} <= set(defs)
