"""Run folders are trusted only as far as their hashes go (issue 17).

Every file of a run folder has its sha256 in manifest.json. A candidate, task or result file that no longer
matches is never served as it is: the search rebuilds the run from its checked tasks (running a damaged task
again), ``load_run`` verifies a changed candidate again and drops it when it fails, and an edited program or
config is refused. Bad places for run folders are one clear error.
"""

from __future__ import annotations

import gzip
import json
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mirage_lab as ml
from mirage_lab.cli import main
from mirage_lab.errors import PathError, RunFolderError
from mirage_lab.ir.io import graph_from_dict
from mirage_lab.search.load import load_run
from mirage_lab.search.run_folder import MANIFEST, RunFolder, sha256_file
from mirage_lab.task_log import NAME as TASK_LOG
from tests.cli.small import SETTINGS, program_file
from tests.search.test_search import search, small_rmsnorm


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> ml.search.SearchResult:
    """One finished small search; tests work on copies of its run folder."""
    return search(run_dir=tmp_path_factory.mktemp("finished"))


@pytest.fixture
def run(finished: ml.search.SearchResult, tmp_path: Path) -> Path:
    """A fresh copy of the finished run folder, under ``tmp_path/runs``."""
    assert finished.run_dir is not None
    copy = tmp_path / "runs" / finished.run_dir.name
    shutil.copytree(finished.run_dir, copy)
    return copy


def hashes(res: ml.search.SearchResult) -> list[str]:
    return [c.hash for c in res.candidates]


def files(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def _read(path: Path) -> Any:
    """A run folder's JSON document, gzip-compressed (task records) or not."""
    return json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_text())


def edit_op(path: Path, old: str = "div", new: str = "mul") -> None:
    """Change the first block op ``old`` of a saved candidate's (or task's first candidate's) graph to ``new``."""
    doc = _read(path)
    graph = doc["graph"] if "graph" in doc else doc["candidates"][0]["graph"]
    for node in graph["nodes"]:
        for op in node.get("body", {}).get("nodes", []):
            if op["op"] == old:
                op["op"] = new
                text = json.dumps(doc, indent=1, sort_keys=True)
                path.write_bytes(gzip.compress(text.encode())) if path.suffix == ".gz" else path.write_text(text)
                return
    raise AssertionError(f"no {old} op in {path}")


def test_every_file_is_recorded_and_no_lock_stays(finished: ml.search.SearchResult) -> None:
    folder = finished.run_dir
    assert folder is not None
    recorded = json.loads((folder / MANIFEST).read_text())["sha256"]
    entries = {f"{TASK_LOG}#{i}" for i in RunFolder(folder).tasks.entries()}
    on_disk = {name for name in files(folder) if name not in (MANIFEST, TASK_LOG)} | entries
    assert on_disk == set(recorded) and len(entries) == finished.report.tasks_total
    assert all(RunFolder(folder).check(name) is None for name in recorded)
    assert all(sha256_file(folder / name) == digest for name, digest in recorded.items() if "#" not in name)
    assert not (folder / "lock").exists()


def test_a_tampered_candidate_is_rebuilt_from_its_checked_task(run: Path, finished: ml.search.SearchResult) -> None:
    best = finished.best
    assert best is not None
    candidate = run / "candidates" / f"{best.hash[:16]}.json"
    original = candidate.read_bytes()
    edit_op(candidate)
    assert not ml.verify(graph_from_dict(json.loads(candidate.read_text())["graph"]),
                         small_rmsnorm()).equivalent  # the edit really breaks it
    with pytest.warns(RuntimeWarning, match=f"candidates/{best.hash[:16]}.json was changed"):
        again = search(run_dir=run.parent)
    assert not again.report.cached and hashes(again) == hashes(finished)
    assert candidate.read_bytes() == original  # restored from the task's record, whose hash still matches
    for c in again.candidates:
        assert ml.verify(c.graph, small_rmsnorm(), seed=3).equivalent
    assert search(run_dir=run.parent).report.cached  # repaired: served from the cache again


def test_load_run_drops_a_tampered_candidate_and_writes_nothing(run: Path,
                                                                finished: ml.search.SearchResult) -> None:
    best = finished.best
    assert best is not None
    edit_op(run / "candidates" / f"{best.hash[:16]}.json")
    before = files(run)
    with pytest.warns(RuntimeWarning, match="fails verification"):
        res = load_run(run)
    assert best.hash not in hashes(res) and set(hashes(res)) == set(hashes(finished)) - {best.hash}
    assert res.report.verified == len(res.candidates)
    assert files(run) == before


def rewrite_entry(run: Path, index: int, edit: Callable[[dict[str, Any]], None]) -> None:
    """Change one task's record inside tasks.gz, every other entry kept byte for byte."""
    log = RunFolder(run).tasks
    data = (run / TASK_LOG).read_bytes()
    e = log.entries()[index]
    doc = json.loads(gzip.decompress(data[e.start:e.events_at]))
    edit(doc)
    head = gzip.compress(json.dumps(doc).encode())
    (run / TASK_LOG).write_bytes(data[:e.start] + head + data[e.events_at:])


def test_a_tampered_task_runs_again(run: Path, finished: ml.search.SearchResult) -> None:
    """Both copies of a candidate edited: its task no longer matches its hash, so the task runs again."""
    log = RunFolder(run).tasks
    index = next(i for i in sorted(log.entries()) if (log.record(i) or {}).get("candidates"))
    h = (log.record(index) or {})["candidates"][0]["hash"]

    def edit(doc: dict[str, Any]) -> None:
        node = next(op for n in doc["candidates"][0]["graph"]["nodes"] for op in n.get("body", {}).get("nodes", [])
                    if op["op"] == "div")
        node["op"] = "mul"

    rewrite_entry(run, index, edit)
    edit_op(run / "candidates" / f"{h[:16]}.json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = search(run_dir=run.parent)
    said = " ".join(str(w.message) for w in caught)
    assert f"tasks.gz#{index} was changed since the search wrote it; running that task again" in said, said
    assert hashes(again) == hashes(finished) and again.report.states == finished.report.states
    assert all(ml.verify(c.graph, small_rmsnorm(), seed=5).equivalent for c in again.candidates)


@pytest.mark.parametrize("name", ["config.json", "program.json"])
def test_an_edited_config_or_program_is_refused(run: Path, name: str) -> None:
    doc = json.loads((run / name).read_text())
    if name == "config.json":
        doc["trials"] += 1
    else:
        doc["tensors"][0]["dims"] = [2, 128]
    (run / name).write_text(json.dumps(doc))
    with pytest.raises(RunFolderError, match=f"{name} differs from this search's"):
        search(run_dir=run.parent)
    with pytest.raises(RunFolderError, match=f"{name} was changed since the search wrote it"):
        load_run(run)


def test_files_without_recorded_hashes_are_checked_again(run: Path, finished: ml.search.SearchResult) -> None:
    """A folder from before manifests: load_run verifies every candidate again; the search rebuilds it."""
    (run / MANIFEST).unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert hashes(load_run(run)) == hashes(finished)
    with pytest.warns(RuntimeWarning, match="result.json has no recorded hash; rebuilding the run"):
        again = search(run_dir=run.parent)
    assert not again.report.cached and hashes(again) == hashes(finished)
    assert (run / MANIFEST).is_file() and search(run_dir=run.parent).report.cached


def test_bad_places_for_run_folders_are_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("not a folder")
    with pytest.raises(PathError, match="is a file, not a folder"):
        search(run_dir=plain)
    with pytest.raises(PathError, match=r"lies below .*plain\.txt, which is a file"):
        search(run_dir=plain / "runs")
    with pytest.raises(PathError, match="is a file, not a run folder"):
        load_run(plain)
    prog = program_file(tmp_path)
    for runs in (plain, plain / "below"):
        assert main(["search", str(prog), *SETTINGS, "--executor", "serial", "--runs", str(runs), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("mirage-lab: error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert plain.read_text() == "not a folder"


def test_load_run_of_a_running_search_names_its_holder(run: Path) -> None:
    from mirage_lab.search.lock import RunLock

    (run / "result.json").unlink()
    told: list[Any] = []
    with RunLock(run, notify=told.append), pytest.raises(RunFolderError, match=r"pid \d+ on .* is searching in"):
        load_run(run)
    assert not told and not (run / "lock").exists()
