"""Every notebook under ``notebooks/`` runs top to bottom on the CPU, and its two files agree.

Each notebook is a jupytext pair (``NN_name.py`` in percent format and ``NN_name.ipynb`` without
outputs). The executed copies go to ``reports/notebooks/`` (git-ignored) for inspection; each run's
wall time is printed (``pytest -s``) — the notebooks are meant to take under 3 minutes each on a
CPU-only machine. The kernel is this interpreter (a ``python3`` kernelspec on a private JUPYTER_PATH,
so a user's or the system's kernels are never picked up).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

NOTEBOOK_DIR = REPO_ROOT / "notebooks"
EXECUTED_DIR = REPO_ROOT / "reports" / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.py"))
CELL_TIMEOUT_S = 600

jupytext = pytest.importorskip("jupytext", reason="the notebooks need jupytext (pip install -e '.[test]')")
nbclient = pytest.importorskip("nbclient", reason="running the notebooks needs nbclient (pip install -e '.[test]')")
pytest.importorskip("ipykernel", reason="running the notebooks needs ipykernel (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def private_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    root = tmp_path_factory.mktemp("jupyter-path")
    spec = root / "kernels" / "python3" / "kernel.json"
    spec.parent.mkdir(parents=True)
    spec.write_text(json.dumps({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                                "display_name": "mirage-lab (tests)", "language": "python"}))
    old = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = str(root)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = old


def test_there_are_notebooks() -> None:
    names = [p.stem for p in NOTEBOOKS]
    assert [n[:2] for n in names] == [f"{i:02d}" for i in range(1, len(names) + 1)], names
    assert len(names) >= 7, f"notebooks 01–07 expected, found {names}"


@pytest.mark.parametrize("script", NOTEBOOKS, ids=lambda p: p.stem)
def test_pair_agrees(script: Path) -> None:
    """The .ipynb holds the same cells as the .py and no outputs (run ``jupytext --sync notebooks/*.py``)."""
    ipynb = script.with_suffix(".ipynb")
    assert ipynb.exists(), f"{ipynb.name} is missing: run .venv/bin/jupytext --sync {script.relative_to(REPO_ROOT)}"
    a, b = jupytext.read(script), jupytext.read(ipynb)
    cells = lambda nb: [(c.cell_type, c.source.strip()) for c in nb.cells]  # noqa: E731
    assert cells(a) == cells(b), f"{script.name} and {ipynb.name} differ: run jupytext --sync on the one you edited"
    with_outputs = [i for i, c in enumerate(b.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not with_outputs, f"{ipynb.name} keeps outputs in cells {with_outputs}; clear them before committing"


@pytest.mark.parametrize("script", NOTEBOOKS, ids=lambda p: p.stem)
def test_runs_top_to_bottom(script: Path, private_kernel: None) -> None:
    nb = jupytext.read(script)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    start = time.perf_counter()
    try:
        client.execute()
    finally:
        EXECUTED_DIR.mkdir(parents=True, exist_ok=True)
        jupytext.write(nb, EXECUTED_DIR / f"{script.stem}.ipynb")
    print(f"{script.stem}: {time.perf_counter() - start:.1f} s")
