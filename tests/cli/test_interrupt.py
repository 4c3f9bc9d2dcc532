"""Ctrl-C on ``mirage-lab search`` with the process pool (issue 35, item 6): the terminal sends SIGINT to the
whole process group, workers included. Whenever it lands, the command says one line and exits 130, leaves no
worker behind, and the run folder resumes whole: the rerun finishes with an uninterrupted run's result.

Before, 3 in 30 such interrupts ended in a KeyError traceback from the task log (a task counted as done before
it was saved), most others in workers' own tracebacks, and a search interrupted mid-way printed half a result.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mirage_lab.cli.interrupt import LINE, STATUS
from mirage_lab.cli.sources import resolve
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.search.config import SearchConfig, preset
from mirage_lab.search.events import read_events
from mirage_lab.search.run_folder import MANIFEST, RunFolder, events_file
from mirage_lab.search.runner import run_folder_path, superoptimize
from mirage_lab.task_log import NAME as TASK_LOG
from tests.search.test_process_pool import MARKER, marked, wait_for
from tests.search.test_search import SMALL

#: the small search of tests/search/test_search.py, a little wider: a few seconds on two cores, ~470 tasks
WIDER = {**SMALL, "forloop_ranges": (4, 16), "grid_divisors": (4, 8, 16), "max_block_ops": 8}
PROGRAM = "rmsnorm:1"
ARGS = ["search", PROGRAM, "--preset", "mlp", *(a for k, v in WIDER.items() for a in ("--set", f"{k}={json.dumps(v)}")),
        "--executor", "process", "--quiet"]


def config() -> SearchConfig:
    return preset("mlp", **WIDER)


def program() -> KernelGraph:
    return resolve(PROGRAM).graph


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], int]:
    """(result.json, the final size of tasks.gz) of the same search, never interrupted."""
    root = tmp_path_factory.mktemp("uninterrupted")
    res = superoptimize(program(), config(), run_dir=root, progress=False)
    assert res.report.stop_reason == "complete" and res.run_dir is not None
    return json.loads((res.run_dir / "result.json").read_text()), (res.run_dir / TASK_LOG).stat().st_size


@pytest.fixture
def ctrl_c_not_ignored() -> Iterator[None]:
    """A terminal's Ctrl-C reaches a command unless its shell ignores SIGINT, as a non-interactive shell does for
    commands it starts in the background (``make test &``); the command then inherits the ignoring, and these
    tests would see it finish instead. The command under test starts with SIGINT handled, as from a terminal."""
    was = signal.getsignal(signal.SIGINT)
    if was == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # (a handler: the command starts with SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, was)


def interrupted(runs: Path, when: Callable[[Path], bool], marker: str) -> None:
    """Run the search, send SIGINT to its process group once ``when(run folder)`` holds, and check the ending."""
    folder = run_folder_path(program(), config(), runs)
    proc = subprocess.Popen([sys.executable, "-m", "mirage_lab", *ARGS, "--runs", str(runs)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, MARKER: marker})
    try:
        def ready() -> bool:
            assert proc.poll() is None, f"the search ended before the interrupt: {proc.communicate()}"
            return when(folder)

        wait_for(ready, 120, "the moment to interrupt")
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to the command and its workers
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert (proc.returncode, err) == (STATUS, LINE + "\n"), (out, err)
    wait_for(lambda: not marked(marker), 15, "the interrupted search's workers to exit")


def task_log_size(folder: Path) -> int:
    return (folder / TASK_LOG).stat().st_size if (folder / TASK_LOG).is_file() else 0


@pytest.mark.skipif(not hasattr(os, "killpg") or not Path("/proc/self/environ").exists(),
                    reason="needs process groups and Linux's /proc")
@pytest.mark.usefixtures("ctrl_c_not_ignored")
def test_ctrl_c_is_one_line_and_the_run_resumes_whole(tmp_path: Path,
                                                      uninterrupted: tuple[dict[str, Any], int]) -> None:
    want, final_size = uninterrupted
    runs, marker = tmp_path / "runs", uuid.uuid4().hex
    # three moments, each run resuming the last: while the frontier is walked and the pool starts; as soon as this
    # run appends its first task; and with half the tasks saved, results streaming in
    interrupted(runs, lambda f: (f / "config.json").is_file(), marker)
    start = task_log_size(run_folder_path(program(), config(), runs))
    interrupted(runs, lambda f: task_log_size(f) > start, marker)
    interrupted(runs, lambda f: task_log_size(f) > final_size // 2, marker)

    rerun = subprocess.run([sys.executable, "-m", "mirage_lab", *ARGS, "--runs", str(runs)], capture_output=True,
                           text=True, timeout=180)
    assert rerun.returncode == 0 and not rerun.stderr, rerun.stderr
    (folder,) = runs.iterdir()
    got = json.loads((folder / "result.json").read_text())
    assert got["ranking"] == want["ranking"] and got["costs"] == want["costs"]
    for key in ("stop_reason", "states", "verified", "tasks_total", "tasks_done"):
        assert got["report"][key] == want["report"][key], key

    # nothing saved was damaged: every recorded file matches, the events are one walk, no temporaries are left
    saved = RunFolder(folder)
    assert saved.damaged(json.loads((folder / MANIFEST).read_text())["sha256"]) == []
    expanded = [e["id"] for e in read_events(folder / events_file(folder)) if e["e"] == "expand"]
    assert len(expanded) == len(set(expanded)) == got["report"]["states"]
    assert not list(folder.rglob("*.tmp")) and not (folder / "lock").exists()
    again = superoptimize(program(), config(), run_dir=runs, progress=False)
    assert again.report.cached and [c.hash for c in again.candidates] == want["ranking"]
