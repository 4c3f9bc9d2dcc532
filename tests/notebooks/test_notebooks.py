"""Every notebook under ``notebooks/`` runs top to bottom on the CPU, and its two files agree.

Each notebook is a jupytext pair (``NN_name.py`` in percent format and ``NN_name.ipynb`` without
outputs). Each notebook runs once per session (``tests/notebooks/execute.py``, shared with the export test in
tests/browser); the executed copies go to ``reports/notebooks/`` (git-ignored) for inspection, and each run's
wall time is printed (``pytest -s``) — the notebooks are meant to take under 3 minutes each on a CPU-only
machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.notebooks.execute import NOTEBOOKS, executed, seconds

jupytext = pytest.importorskip("jupytext", reason="the notebooks need jupytext (pip install -e '.[test]')")
pytest.importorskip("nbclient", reason="running the notebooks needs nbclient (pip install -e '.[test]')")
pytest.importorskip("ipykernel", reason="running the notebooks needs ipykernel (pip install -e '.[test]')")


def test_there_are_notebooks() -> None:
    names = [p.stem for p in NOTEBOOKS]
    assert [n[:2] for n in names] == [f"{i:02d}" for i in range(1, len(names) + 1)], names
    assert len(names) >= 7, f"notebooks 01–07 expected, found {names}"


@pytest.mark.parametrize("script", NOTEBOOKS, ids=lambda p: p.stem)
def test_pair_agrees(script: Path) -> None:
    """The .ipynb holds the same cells as the .py and no outputs (run ``jupytext --sync notebooks/*.py``)."""
    ipynb = script.with_suffix(".ipynb")
    assert ipynb.exists(), f"{ipynb.name} is missing: run .venv/bin/jupytext --sync notebooks/{script.name}"
    a, b = jupytext.read(script), jupytext.read(ipynb)
    cells = lambda nb: [(c.cell_type, c.source.strip()) for c in nb.cells]  # noqa: E731
    assert cells(a) == cells(b), f"{script.name} and {ipynb.name} differ: run jupytext --sync on the one you edited"
    with_outputs = [i for i, c in enumerate(b.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not with_outputs, f"{ipynb.name} keeps outputs in cells {with_outputs}; clear them before committing"


@pytest.mark.parametrize("script", NOTEBOOKS, ids=lambda p: p.stem)
def test_runs_top_to_bottom(script: Path) -> None:
    executed(script)
    print(f"{script.stem}: {seconds(script):.1f} s")


def test_the_puzzle_notebook_grades_every_teachers_solution_as_passed() -> None:
    """Notebook 09 run by the tests: its empty skeletons took the teacher's solutions (the kernel's env), every
    puzzle is graded passed, and the tile-access view was shown on one of them."""
    import mirage_lab as ml

    nb = executed(next(p for p in NOTEBOOKS if p.stem == "09_kernel_puzzles"))
    shown = [str(out.get("data", {}).get("text/plain", "")) for cell in nb.cells if cell.cell_type == "code"
             for out in cell.get("outputs", [])]
    graded = {n for n in ml.puzzles.names() if any(f"CheckResult({n!r}, passed=True" in s for s in shown)}
    assert graded == set(ml.puzzles.names())
    assert any(s.startswith("TileAccessView(") for s in shown)
