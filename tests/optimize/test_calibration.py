"""The calibrated cost model (issue 36, item 2): its terms follow the codegen options, the fit is deterministic
and recovers known constants, and the leave-one-out evaluation scores picks and ties."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest

from mirage_lab.bench import fused
from mirage_lab.codegen.options import PLAIN, CodegenOptions
from mirage_lab.codegen.plan import prepare
from mirage_lab.optimize.calibration import (
    Calibration,
    Sample,
    choice_quality,
    default_calibration,
    fit,
    leave_one_out,
    predict,
)
from mirage_lab.optimize.features import TERMS, access_efficiency, time_terms

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = {"fused": CodegenOptions(), "no prefetch": CodegenOptions(prefetch=False),
           "no tensor cores": CodegenOptions(tensor_cores=False), "no padding": CodegenOptions(padding=False),
           "plain": PLAIN}
#: a model to recover: every term weighed, the shape constants on the fit's grid
TRUE = Calibration({"calls": 2e-5, "launch": 1.0, "library": 3e-5, "library_dram": 5.0, "dram": 1.5, "sectors": 0.5,
                    "tensor": 4.0, "fma": 2.0, "chain": 2.0, "vector": 20.0, "smem": 1.0, "latency": 1.0},
                   latency_s=800e-9, burst=0.5)


def synthetic(names: tuple[str, ...] = ("rmsnorm", "gated_mlp", "lora")) -> list[Sample]:
    """The fused benchmark graphs under the codegen ablation, 'measured' by the TRUE model."""
    out = []
    for name in names:
        for batch in (1, 8):
            g = prepare(fused.FUSED[name](batch))
            for label, opts in OPTIONS.items():
                out.append(Sample(name, batch, label, g, opts, predict(g, opts, "H200", TRUE)))
    return out


def test_terms_follow_the_codegen_options() -> None:
    g = prepare(fused.FUSED["gated_mlp"](8))
    on, off = time_terms(g, CodegenOptions(), "H200"), time_terms(g, CodegenOptions(prefetch=False), "H200")
    assert off.latency > on.latency and off.dram > on.dram  # fewer bytes in flight, each iteration waits
    no_tc = time_terms(g, CodegenOptions(tensor_cores=False), "H200")
    assert on.fma == 0 < no_tc.fma and no_tc.tensor == 0 < on.tensor and no_tc.chain > 0
    assert time_terms(g, CodegenOptions(padding=False), "H200").smem > on.smem  # bank conflicts
    gemv = prepare(fused.FUSED["rmsnorm"](1))  # 48 outputs per block for 128 threads: split sums spread them
    split = time_terms(gemv, CodegenOptions(tensor_cores=False), "H200")  # (on tensor cores: no FMA at all)
    alone = time_terms(gemv, CodegenOptions(tensor_cores=False, split_sums=False), "H200")
    assert alone.fma > split.fma and alone.chain > split.chain
    assert on.launch > 0 and on.calls == 1 and on.library == 0


def test_access_efficiency_counts_sectors_and_lines() -> None:
    assert access_efficiency(128, 1.0) == 1.0 and access_efficiency(256, 0.5) == 1.0
    assert access_efficiency(48, 0.0) == pytest.approx(48 / 64)  # two sectors for 48 bytes
    assert access_efficiency(16, 1.0) < access_efficiency(48, 1.0) < access_efficiency(64, 1.0)


def test_the_fit_recovers_a_known_model_and_is_deterministic() -> None:
    samples = synthetic()
    a, b = fit(samples, "H200"), fit(samples, "H200")
    assert a == b  # to the bit
    assert (a.latency_s, a.burst) == (TRUE.latency_s, TRUE.burst)
    assert a.provenance["log_rmse"] < 1e-3
    for s in samples:
        assert predict(s.graph, s.options, "H200", a) == pytest.approx(s.measured_s, rel=1e-2)


def test_leave_one_out_on_a_synthetic_table_picks_the_best_without_ties() -> None:
    samples = synthetic()
    after = leave_one_out(samples, "H200")
    frame = pd.DataFrame({"program": [s.program for s in samples], "batch": [s.batch for s in samples],
                          "graph": [s.label for s in samples], "measured_s": [s.measured_s for s in samples],
                          "after_s": after})
    points, summary = choice_quality(frame, "after_s")
    assert summary["points"] == 6 and summary["within"] == 6 and summary["ties"] == 0
    assert list(points["pick"]) == list(points["best"])


def test_choice_quality_can_fail() -> None:
    frame = pd.DataFrame({"program": ["p"] * 3 + ["q"] * 2, "batch": [1] * 5, "graph": ["a", "b", "c", "a", "b"],
                          "measured_s": [1.0, 2.0, 1.5, 1.0, 1.1],
                          "predicted_s": [5.0, 1.0, 5.0, 3.0, 3.0]})
    points, summary = choice_quality(frame)
    p = points.set_index("program")
    assert p.loc["p", "pick"] == "b" and not p.loc["p", "within"] and p.loc["p", "ratio"] == 2.0
    assert p.loc["p", "ties"] == 1  # a and c share 5.0 and measure 1.5× apart
    assert p.loc["q", "ties"] == 0 and p.loc["q", "within"]  # a and b share 3.0 but measure 1.1× apart
    assert summary["within"] == 1 and summary["share_within"] == 0.5 and summary["ties"] == 1


def test_the_committed_constants_name_the_table_they_were_fitted_on() -> None:
    cal = default_calibration()
    prov = cal.provenance
    table = ROOT / prov["table"]
    assert hashlib.sha256(table.read_bytes()).hexdigest() == prov["sha256"], \
        "the timing table changed: refit with benchmarks/cost.py --leave-one-out --fit"
    assert set(cal.weights) == set(TERMS) and prov["rows"] > 0
