"""Each notebook under ``notebooks/`` executed at most once per test session, shared by the tests that need it
(``test_notebooks.py`` runs them, ``tests/browser/test_exported_notebooks.py`` exports them and looks).

The kernel is this interpreter (a ``python3`` kernelspec on a private JUPYTER_PATH, so a user's or the system's
kernels are never picked up). The widget state is not saved in the notebook, as JupyterLab saves by default:
nbconvert then exports each widget's static rendering instead of a live view that would load its scripts from
a CDN. Executed copies go to ``reports/notebooks/`` (git-ignored), also when a cell fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import REPO_ROOT

NOTEBOOK_DIR = REPO_ROOT / "notebooks"
EXECUTED_DIR = REPO_ROOT / "reports" / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.py"))
CELL_TIMEOUT_S = 600


@dataclass(frozen=True)
class Executed:
    notebook: Any  # nbformat.NotebookNode, with outputs
    seconds: float
    error: BaseException | None  # what stopped the run, raised again for every test that asks


_runs: dict[Path, Executed] = {}


def executed(script: Path) -> Any:
    """``script`` (``notebooks/NN_name.py``) run top to bottom, once per session; raises what stopped it."""
    if script not in _runs:
        _runs[script] = _execute(script)
    run = _runs[script]
    if run.error is not None:
        raise run.error
    return run.notebook


def seconds(script: Path) -> float:
    return _runs[script].seconds


def _execute(script: Path) -> Executed:
    import jupytext
    import nbclient

    nb = jupytext.read(script)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", store_widget_state=False,
                                     resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    start = time.perf_counter()
    error: BaseException | None = None
    try:
        with private_kernel():
            client.execute()
    except Exception as e:  # kept, and raised for each test that needs this notebook
        error = e
    finally:
        EXECUTED_DIR.mkdir(parents=True, exist_ok=True)
        jupytext.write(nb, EXECUTED_DIR / f"{script.stem}.ipynb")
    return Executed(nb, time.perf_counter() - start, error)


@contextlib.contextmanager
def private_kernel() -> Iterator[None]:
    """JUPYTER_PATH pointing at a temporary ``python3`` kernelspec for this interpreter, while the block runs."""
    with tempfile.TemporaryDirectory(prefix="jupyter-path-") as root:
        spec = Path(root) / "kernels" / "python3" / "kernel.json"
        spec.parent.mkdir(parents=True)
        # (the env: notebook 09's empty puzzle skeletons take the teacher's solutions, so every cell runs)
        spec.write_text(json.dumps({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                                    "display_name": "mirage-lab (tests)", "language": "python",
                                    "env": {"MIRAGE_LAB_PUZZLE_SOLUTIONS": "1"}}))
        old = os.environ.get("JUPYTER_PATH")
        os.environ["JUPYTER_PATH"] = root
        try:
            yield
        finally:
            if old is None:
                os.environ.pop("JUPYTER_PATH", None)
            else:
                os.environ["JUPYTER_PATH"] = old
