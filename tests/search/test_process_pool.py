"""The default process pool and the run-folder lock, from real processes (issue 17).

A plain script without ``if __name__ == "__main__":`` searches with the default pool; ``kill -9`` of a
search leaves no worker behind and its rerun resumes with every candidate the killed run had verified;
two processes searching one run folder take turns (one searches, the other waits, then reads the cache).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mirage_lab as ml
from mirage_lab.cli.warning_lines import one_line, one_line_warnings
from mirage_lab.search.config import preset
from mirage_lab.search.events import read_events
from mirage_lab.search.lock import RunLock
from mirage_lab.search.pool import process_pool
from mirage_lab.search.run_folder import RunFolder, events_file
from mirage_lab.search.runner import run_folder_path, superoptimize
from tests.conftest import REPO_ROOT
from tests.search.test_search import SMALL, search, small_rmsnorm

MARKER = "MIRAGE_LAB_TEST_MARKER"

#: a script's opening: the small search of tests/search/test_search.py, with no main guard anywhere
HEADER = f"""
import json, sys
sys.path.insert(0, {str(REPO_ROOT)!r})
from mirage_lab.search.config import preset
from mirage_lab.search.runner import superoptimize
from tests.search.test_search import SMALL, small_rmsnorm
"""
REPORT = """
print(json.dumps({"hashes": [c.hash for c in res.candidates], "cached": res.report.cached,
                  "states": res.report.states}))
"""


@pytest.fixture(scope="module")
def reference() -> ml.search.SearchResult:
    return search()


def script(folder: Path, body: str) -> Path:
    path = folder / "search_script.py"
    path.write_text(HEADER + body)
    return path


def start(path: Path, *args: Any, err: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    with open(err, "w") as f:
        return subprocess.Popen([sys.executable, str(path), *map(str, args)], stdout=subprocess.PIPE, stderr=f,
                                text=True, env=env, cwd=path.parent)


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"gave up after {seconds} s waiting for {what}")
        time.sleep(0.02)


def test_a_script_without_a_main_guard_uses_the_process_pool(tmp_path: Path,
                                                              reference: ml.search.SearchResult) -> None:
    path = script(tmp_path, 'res = superoptimize(small_rmsnorm(), preset("mlp", **SMALL), run_dir=False, '
                            'progress=False)\n' + REPORT)
    proc = start(path, err=tmp_path / "err.txt")
    out, _ = proc.communicate(timeout=120)
    err = (tmp_path / "err.txt").read_text()
    assert proc.returncode == 0, err
    assert "process pool" not in err  # the pool ran; no fallback to the serial executor
    assert json.loads(out)["hashes"] == [c.hash for c in reference.candidates]


def test_two_processes_search_one_folder_in_turn(tmp_path: Path, reference: ml.search.SearchResult) -> None:
    runs = tmp_path / "runs"
    path = script(tmp_path, 'res = superoptimize(small_rmsnorm(), preset("mlp", **SMALL), executor="serial", '
                            'run_dir=sys.argv[1], progress=False)\n' + REPORT)
    folder = run_folder_path(small_rmsnorm(), preset("mlp", **SMALL), runs)
    folder.mkdir(parents=True)
    errs = [tmp_path / f"err{i}.txt" for i in range(2)]
    with RunLock(folder):  # both start while the folder is held, so both must wait
        procs = [start(path, runs, err=e) for e in errs]
        wait_for(lambda: all("waiting" in e.read_text() for e in errs), 60, "both searches to wait")
    outs = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    for p, e in zip(procs, errs, strict=True):
        text = e.read_text()
        assert p.returncode == 0, text
        assert f"is being searched by pid {os.getpid()} on " in text and text.count("\n") == 1
    assert sorted(o["cached"] for o in outs) == [False, True]  # one searched; the other read its result
    assert all(o["hashes"] == [c.hash for c in reference.candidates] for o in outs)
    events = list(read_events(folder / events_file(folder)))
    ids = [e["id"] for e in events if e["e"] == "expand"]
    assert len(ids) == len(set(ids)) == reference.report.states  # no task's events written twice
    assert not (folder / "lock").exists() and not list(folder.rglob("*.tmp")) and not list(folder.rglob("*.part"))


def marked(marker: str) -> list[int]:
    """Live processes (not zombies) whose environment holds ``MARKER=marker``: the killed search's family."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if f"{MARKER}={marker}".encode() in (d / "environ").read_bytes() and \
                    (d / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(int(d.name))
        except (OSError, IndexError):
            continue
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux's /proc")
def test_kill_9_leaves_no_worker_and_the_rerun_keeps_every_verified_candidate(
        tmp_path: Path, reference: ml.search.SearchResult) -> None:
    runs, marker = tmp_path / "runs", uuid.uuid4().hex
    path = script(tmp_path, """
from mirage_lab.search import runner
from tests.search.slow_task import slow_run_task
runner.run_task = slow_run_task  # tasks dawdle once a candidate is verified: the kill lands mid-search
superoptimize(small_rmsnorm(), preset("mlp", **SMALL), executor="process", run_dir=sys.argv[1], progress=False)
""")
    folder = run_folder_path(small_rmsnorm(), preset("mlp", **SMALL), runs)
    proc = start(path, runs, err=tmp_path / "err.txt", env={**os.environ, MARKER: marker})

    def midway() -> bool:
        assert proc.poll() is None, (tmp_path / "err.txt").read_text()
        manifest = folder / "manifest.json"
        return any((folder / "candidates").glob("*.json")) and \
            manifest.is_file() and '"tasks.gz#' in manifest.read_text()

    wait_for(midway, 90, "a verified candidate and a recorded task")
    assert len(marked(marker)) >= 2  # the search and its workers
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    wait_for(lambda: not marked(marker), 15, "the killed search's workers to exit")
    assert not (folder / "result.json").exists()

    verified = {p.stem for p in (folder / "candidates").glob("*.json")}
    recorded = json.loads((folder / "manifest.json").read_text())["sha256"]
    kept = {name: entry for name in recorded if name.startswith("tasks.gz#")
            and (entry := RunFolder(folder).tasks.entries().get(int(name.partition("#")[2]))) is not None}
    res = superoptimize(small_rmsnorm(), preset("mlp", **SMALL), executor="serial", run_dir=runs, progress=False)
    assert res.report.stop_reason == "complete" and not res.report.cached
    assert res.report.tasks_done == res.report.tasks_total
    assert verified and verified <= {c.hash[:16] for c in res.candidates}
    assert [c.hash for c in res.candidates] == [c.hash for c in reference.candidates]
    entries = RunFolder(folder).tasks.entries()
    assert kept and {name: entries[int(name.partition("#")[2])] for name in kept} == kept  # reused, not run again
    assert not list(folder.rglob("*.tmp")) and not list(folder.rglob("*.part"))


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="needs signal masks")
def test_workers_leave_ctrl_c_to_the_parent_and_stop_at_once(capfd: pytest.CaptureFixture[str]) -> None:
    """A terminal's Ctrl-C reaches the workers too: they start with SIGINT blocked (no traceback of their own),
    the parent's mask stays as it was, and ``stop`` ends a running task without waiting for it."""
    pool = process_pool(2)
    assert pool is not None
    assert signal.SIGINT in pool.submit(signal.pthread_sigmask, signal.SIG_BLOCK, []).result()
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    for p in pool._processes.values():
        os.kill(p.pid, signal.SIGINT)  # blocked: stays pending, the worker goes on
    assert pool.submit(sum, [1, 2]).result() == 3
    pool.submit(time.sleep, 60)
    workers = list(pool._processes.values())
    started = time.monotonic()
    pool.stop()
    assert time.monotonic() - started < 10 and not any(p.is_alive() for p in workers)
    assert "Traceback" not in capfd.readouterr().err


def test_workers_format_warnings_as_their_parent(capfd: pytest.CaptureFixture[str]) -> None:
    """Started by the command line (one line per warning), a worker's warnings read the same."""
    with one_line_warnings():
        pool = process_pool(1)
    assert pool is not None and warnings.formatwarning is not one_line
    try:
        pool.submit(warnings.warn, "from a worker,\n  over two lines", RuntimeWarning).result()
    finally:
        pool.stop()
    assert capfd.readouterr().err == "mirage-lab: warning: from a worker, over two lines (RuntimeWarning)\n"
