"""benchmarks/scaling.py: the scheduling simulation against hand-worked cases, and the recorded task costs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO_ROOT, load_script

SCRIPT = REPO_ROOT / "benchmarks" / "scaling.py"


def load() -> ModuleType:
    return load_script(SCRIPT, "bench_scaling")


def test_the_simulation_by_hand() -> None:
    s = load()
    even = s.Recorded("even", frontier_s=1.0, tasks_s=(1.0,) * 8, complete=True, measured_wall_s=9.0)
    assert s.simulate(even, 1, 0.0, 0.0) == pytest.approx(9.0)
    assert s.simulate(even, 2, 0.0, 0.0) == pytest.approx(5.0)
    assert s.simulate(even, 8, 0.0, 0.0) == pytest.approx(2.0)
    assert s.simulate(even, 64, 0.0, 0.0) == pytest.approx(2.0)  # more workers than tasks: no faster
    assert s.simulate(even, 8, 0.0, 0.5) == pytest.approx(2.5)  # each worker's start, once
    assert s.simulate(even, 8, 0.1, 0.0) == pytest.approx(1.0 + 0.8 + 1.0)  # hand-outs one after another
    skewed = s.Recorded("skewed", 0.0, (5.0, 1.0, 1.0, 1.0), True, 8.0)
    assert s.simulate(skewed, 4, 0.0, 0.0) == pytest.approx(5.0)
    frame = s.table([even, skewed], (1, 2, 4, 64), 0.0, 0.0)
    row = frame.set_index(["run", "workers"]).loc[("skewed", 4)]
    assert row["bound"] == "longest task" and row["speedup"] == pytest.approx(8.0 / 5.0)
    assert frame.set_index(["run", "workers"]).loc[("even", 2), "bound"] == "work"
    assert (frame["efficiency"] <= 1.0 + 1e-9).all()


def test_every_recorded_run_replays(tmp_path: Path) -> None:
    s = load()
    paths = sorted((REPO_ROOT / "data" / "task_costs").glob("*.json"))
    assert paths, "data/task_costs holds no recorded runs"
    for p in paths:
        run = s.Recorded.load(p)
        assert run.tasks_s and run.frontier_s >= 0
        serial = s.simulate(run, 1, 0.0, 0.0)
        assert serial == pytest.approx(run.frontier_s + sum(run.tasks_s))
        assert s.simulate(run, 256, 0.0, 0.0) >= run.frontier_s + max(run.tasks_s) - 1e-9
    out = subprocess.run([sys.executable, str(SCRIPT), "--workers", "1,2,64", "--json", str(tmp_path / "s.json"),
                          "--html", str(tmp_path / "s.html")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "bounded by the" in out.stdout and (tmp_path / "s.html").stat().st_size > 1000
