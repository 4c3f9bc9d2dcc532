"""The recorded runs under data/runs/ are complete and still answer the notebooks' questions.

The notebooks open them with ``ml.superoptimize(program, config, run_dir=ROOT/"data"/"runs")``, which
returns at once only from a complete folder named by the current program and config hashes. A change
to a preset, the op table or a benchmark program changes those hashes, and the notebooks would then
silently search again (and write into data/): these tests fail first, saying what to rerun.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import mirage_lab as ml
from mirage_lab.ir.io import graph_to_dict
from mirage_lab.search.task import BUDGETS
from tests.conftest import REPO_ROOT, load_script

RERUN = "rerun `.venv/bin/python scripts/record_runs.py --clean` and commit data/runs/"
MAX_BYTES = 5_000_000


record_runs = load_script(REPO_ROOT / "scripts" / "record_runs.py", "record_runs")
RECORDINGS = record_runs.RECORDINGS


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("rec", RECORDINGS, ids=lambda r: r.name)
def test_recording_is_complete_and_current(rec: Any) -> None:
    folder = rec.folder()
    program, config = rec.program(), rec.config()
    others = sorted(p.name for p in record_runs.RUNS.glob("*") if p.is_dir()) if record_runs.RUNS.exists() else []
    assert folder.is_dir(), (f"{rec.name}: data/runs/{folder.name} is missing (present: {others}); the "
                             f"program or config changed since it was recorded: {RERUN}")
    assert record_runs.complete(folder), f"{rec.name}: {folder.name} is not a finished search: {RERUN}"
    stored_program = json.loads((folder / "program.json").read_text())
    assert stored_program == json.loads(json.dumps(graph_to_dict(program), sort_keys=True)), \
        f"{rec.name}: program.json differs from the current program: {RERUN}"
    stored_config = json.loads((folder / "config.json").read_text())
    want = {k: v for k, v in config.to_dict().items() if k not in BUDGETS}
    assert stored_config == json.loads(json.dumps(want, sort_keys=True)), \
        f"{rec.name}: config.json differs from the current config: {RERUN}"

    before = _files(folder)
    res = ml.superoptimize(program, config, executor="serial", run_dir=record_runs.RUNS, progress=False)
    assert res.report.cached and res.run_dir == folder, f"{rec.name}: the notebooks' call would search again: {RERUN}"
    assert res.best is not None
    assert _files(folder) == before, "opening a recorded run must not write into data/runs"


def test_no_stale_or_oversized_recordings() -> None:
    if not record_runs.RUNS.exists():
        pytest.fail(f"data/runs/ is missing: {RERUN}")
    named = {rec.folder().name for rec in RECORDINGS}
    stale = sorted(p.name for p in record_runs.RUNS.iterdir() if p.is_dir() and p.name not in named)
    assert not stale, f"data/runs holds folders no recording names: {stale}; {RERUN}"
    total = sum(record_runs.size_of(record_runs.RUNS / name) for name in named)
    assert total <= MAX_BYTES, f"the recordings take {total / 1e6:.1f} MB (keep them under {MAX_BYTES / 1e6:.0f} MB)"
