"""MIRAGE_LAB_TIME_LIMIT (issue 21, item 3): one environment variable caps every search, whatever it asks for,
and the report says when the cap applied."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import mirage_lab as mi
from mirage_lab.bench import programs
from mirage_lab.compat import CompatNotice
from mirage_lab.errors import InputError
from mirage_lab.search import TIME_LIMIT_ENV, preset
from mirage_lab.search.runner import time_capped


def test_the_cap_lowers_a_longer_or_missing_limit_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TIME_LIMIT_ENV, raising=False)
    assert time_capped(preset("mlp")) == (preset("mlp"), None)
    monkeypatch.setenv(TIME_LIMIT_ENV, "30")
    assert time_capped(preset("mlp")) == (preset("mlp", time_limit_s=30.0), 30.0)
    assert time_capped(preset("mlp", time_limit_s=600)) == (preset("mlp", time_limit_s=30.0), 30.0)
    assert time_capped(preset("mlp", time_limit_s=5)) == (preset("mlp", time_limit_s=5), None)


@pytest.mark.parametrize("bad", ["soon", "-3", "0", "nan", "inf"])
def test_a_bad_cap_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv(TIME_LIMIT_ENV, bad)
    with pytest.raises(InputError, match=f"{TIME_LIMIT_ENV}=.*positive number of seconds.*unset it"):
        time_capped(preset("default"))


def test_a_capped_search_stops_and_its_report_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TIME_LIMIT_ENV, "1")
    result = mi.superoptimize(programs.gated_mlp(1), "mlp", run_dir=False, progress=False)
    assert result.report.stop_reason == "time limit"
    assert result.report.time_cap_s == 1.0
    assert "capped at 1 s by MIRAGE_LAB_TIME_LIMIT" in repr(result.report)
    assert result.report.seconds["wall"] < 20


def test_a_drop_in_search_cut_short_returns_the_program_and_says_why(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(TIME_LIMIT_ENV, "0.001")
    graph = mi.new_kernel_graph()
    x = graph.new_input(dims=(16, 512), dtype=mi.float16)
    w1 = graph.new_input(dims=(512, 512), dtype=mi.float16)
    w2 = graph.new_input(dims=(512, 512), dtype=mi.float16)
    graph.mark_output(graph.mul(graph.silu(graph.matmul(x, w1)), graph.matmul(x, w2)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CompatNotice)
        optimized = graph.superoptimize(config="mlp")
    said = " ".join(str(w.message) for w in caught)
    assert optimized.result is not None and optimized.result.report.time_cap_s == 0.001
    if optimized.result.candidates:  # (a very fast machine)
        pytest.skip("the search verified a μGraph within 1 ms")
    assert "found no verified μGraph (time limit; capped at 0.001 s by MIRAGE_LAB_TIME_LIMIT)" in said
    assert optimized.freeze() == graph.freeze()
    rng = np.random.default_rng(0)
    ins = [rng.standard_normal(d).astype(np.float16) / 8 for d in ((16, 512), (512, 512), (512, 512))]
    np.testing.assert_allclose(optimized(inputs=ins)[0], mi.interpret(graph, ins)[0].astype(np.float16),
                               rtol=1e-3, atol=1e-3)
