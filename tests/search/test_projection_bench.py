"""benchmarks/projection.py: a search stopped early is projected from its finished tasks and a sample of the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, load_script
from tests.search.test_search import search


def test_a_stopped_search_is_projected(tmp_path: Path) -> None:
    proj = load_script(REPO_ROOT / "benchmarks" / "projection.py", "bench_projection")
    stopped = search(run_dir=tmp_path / "runs", state_limit=200)
    assert stopped.report.stop_reason == "state limit" and stopped.run_dir is not None
    row = proj.project(stopped.run_dir, sample=3, task_limit=60, processes=1)
    done, total = (int(n) for n in row["tasks"].split("/"))
    assert row["unfinished"] == total - done > 0 and row["sampled"] == len(row["samples"]) == 3
    assert all(s["stop"] == "complete" for s in row["samples"]) and not row["projection_is_lower_bound"]
    mean = sum(s["seconds"] for s in row["samples"]) / 3
    assert row["remaining_worker_s"] == round(row["unfinished"] * mean)
    assert row["projected_wall_s"] >= row["elapsed_s"] - 1


def test_a_complete_search_has_nothing_to_project(tmp_path: Path) -> None:
    proj = load_script(REPO_ROOT / "benchmarks" / "projection.py", "bench_projection")
    done = search(run_dir=tmp_path / "runs")
    assert done.run_dir is not None
    with pytest.raises(SystemExit, match="complete search"):
        proj.project(done.run_dir, sample=3, task_limit=60, processes=1)
