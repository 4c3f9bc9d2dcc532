"""Warnings on the command line (issue 35, item 6): one line each, ``mirage-lab: warning: <message> (<Category>)``,
without the path and line that raised it or the echoed source line; the library keeps Python's format.

The commands run in a subprocess where a warning must reach stderr: inside pytest, warnings are recorded, not
printed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from mirage_lab.cli import commands, main

SMALL_SEARCH = ["search", "rmsnorm:1", "--preset", "mlp", "--set", "forloop_ranges=[4]", "--set", "grid_divisors=[8]",
                "--set", 'block_ops=["matmul","exp","div","accum_no_red","accum_rms"]', "--set", "max_block_ops=6",
                "--set", 'kernel_ops=["matmul","exp","customized"]', "--executor", "serial", "--quiet"]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mirage_lab", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def test_a_changed_task_is_one_warning_line(tmp_path: Path) -> None:
    """A natural warning: the rerun of a search whose saved task was changed since says so, in one line."""
    runs = tmp_path / "runs"
    assert main([*SMALL_SEARCH, "--runs", str(runs)]) == 0
    (folder,) = runs.iterdir()
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["sha256"]["tasks.gz#0"] = "0" * 64
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "result.json").unlink()  # (else the finished run is served from its cache)

    rerun = cli(*SMALL_SEARCH, "--runs", str(runs), cwd=tmp_path)
    assert rerun.returncode == 0
    assert re.fullmatch(r"mirage-lab: warning: run folder \S+: tasks\.gz#0 was changed since the search wrote it; "
                        r"running that task again \(RuntimeWarning\)\n", rerun.stderr), rerun.stderr


PLANTED = """
import sys, warnings
import numpy as np
import mirage_lab as ml
from mirage_lab.cli import commands, main

def runs(args):
    warnings.warn("a warning\\n  over two lines", RuntimeWarning)
    warnings.warn("a reference feature mirage-lab runs differently", ml.CompatNotice)
    warnings.warn("an old way", DeprecationWarning)
    np.float16(60000) * np.float16(2)  # numpy: overflow
    return 0

commands.runs = runs
sys.exit(main(["runs", "."]))
"""


def test_every_kind_of_warning_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(PLANTED)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[:3] == ["mirage-lab: warning: a warning over two lines (RuntimeWarning)",
                         "mirage-lab: warning: a reference feature mirage-lab runs differently (CompatNotice)",
                         "mirage-lab: warning: an old way (DeprecationWarning)"]
    assert re.fullmatch(r"mirage-lab: warning: overflow encountered in [\w ]+ \(RuntimeWarning\)", lines[3])
    assert len(lines) == 4 and "py:" not in done.stderr


def test_the_library_keeps_pythons_warnings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a script, a notebook or a test, warnings stay Python's: recorded by ``pytest.warns`` even while the
    command runs, and formatted with their place once it has returned."""
    before = warnings.formatwarning

    def runs(args: object) -> int:
        warnings.warn("planted", RuntimeWarning, stacklevel=2)
        return 0

    monkeypatch.setattr(commands, "runs", runs)
    with pytest.warns(RuntimeWarning, match="planted"):
        assert main(["runs", str(tmp_path)]) == 0
    assert warnings.formatwarning is before
    assert "here.py:7: UserWarning: text" in warnings.formatwarning("text", UserWarning, "here.py", 7)
