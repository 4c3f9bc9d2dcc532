"""``mirage-lab runs`` and ``search/run_list.py``: listing run folders, and removing them safely."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

import mirage_lab as ml
from mirage_lab.cli import main
from mirage_lab.errors import InputError
from mirage_lab.search.lock import RunLock
from mirage_lab.search.run_list import remove_runs, runs_table
from tests.search.test_search import search


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> ml.search.SearchResult:
    return search(run_dir=tmp_path_factory.mktemp("runs"))


def _root(finished: ml.search.SearchResult, tmp_path: Path) -> Path:
    """A root holding a copy of the finished run, an unfinished one, and a directory that is no run folder."""
    assert finished.run_dir is not None
    root = tmp_path / "runs"
    shutil.copytree(finished.run_dir, root / finished.run_dir.name)
    unfinished = root / ("0" * 12 + "-" + "1" * 12)
    shutil.copytree(finished.run_dir, unfinished)
    (unfinished / "result.json").unlink()
    (root / "notes").mkdir()
    (root / "notes" / "program.json").write_text("{}")
    return root


def _age(folder: Path, seconds: float) -> None:
    then = time.time() - seconds
    for p in [folder, *folder.rglob("*")]:
        os.utime(p, (then, then))


def test_the_table(finished: ml.search.SearchResult, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _root(finished, tmp_path)
    table = runs_table(root)
    assert list(table["run"]) == sorted(["0" * 12 + "-" + "1" * 12, finished.run_dir.name])  # type: ignore[union-attr]
    done = table[table["run"] == finished.run_dir.name].iloc[0]  # type: ignore[union-attr]
    assert done["state"] == "complete" and done["verified"] == len(finished.candidates)
    assert done["best"] == finished.best.hash[:12] and done["best kernels"] == 1  # type: ignore[union-attr]
    assert done["MB"] > 0 and done["files"] > 5 and "rms_norm → matmul" in done["program"]
    assert table[table["run"] != done["run"]].iloc[0]["state"].startswith("unfinished")
    assert main(["runs", str(root)]) == 0
    out = capsys.readouterr().out
    assert "complete" in out and "2 run folders" in out and "notes" not in out
    assert main(["runs", "--runs", str(root)]) == 0  # named as every other subcommand names it (issue 38)
    assert capsys.readouterr().out == out
    assert main(["runs", str(root), "--runs", str(root / "other")]) == 2
    assert "two run roots given" in capsys.readouterr().err
    edited = root / finished.run_dir.name / "program.json"  # type: ignore[union-attr]
    edited.write_text(edited.read_text().replace("4096", "4097").replace("256", "257"))
    row = runs_table(root).set_index("run").loc[finished.run_dir.name]  # type: ignore[union-attr]
    assert row["program"].startswith("unreadable program") and "was changed" in row["program"]


def test_removing_old_runs_keeps_the_best_and_the_rest(finished: ml.search.SearchResult, tmp_path: Path) -> None:
    root = _root(finished, tmp_path)
    old = root / finished.run_dir.name  # type: ignore[union-attr]
    _age(old, 10 * 86400)
    assert main(["runs", str(root), "--remove", "--older-than", "7d", "--keep-best", "--dry-run"]) == 0
    assert old.exists()
    assert main(["runs", str(root), "--remove", "--older-than", "7d", "--keep-best"]) == 0
    assert not old.exists() and (root / ("0" * 12 + "-" + "1" * 12)).exists() and (root / "notes").exists()
    kept = root / "best" / f"{old.name}.json"
    assert ml.verify(ml.load(kept), finished.program).equivalent


def test_a_run_a_search_holds_is_never_removed(finished: ml.search.SearchResult, tmp_path: Path) -> None:
    root = _root(finished, tmp_path)
    held = root / finished.run_dir.name  # type: ignore[union-attr]
    with RunLock(held):
        done = remove_runs(root, everything=True)
        assert held.exists() and not (root / ("0" * 12 + "-" + "1" * 12)).exists()
        assert done.set_index("run").loc[held.name, "action"].startswith("kept: a search holds it")
        assert runs_table(root).iloc[0]["state"].startswith("running")


def test_bad_requests_say_what_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InputError, match="say which runs to remove"):
        remove_runs(tmp_path)
    assert main(["runs", str(tmp_path), "--remove"]) == 2
    assert main(["runs", str(tmp_path), "--keep-best"]) == 2
    assert main(["runs", str(tmp_path), "--remove", "--older-than", "soon"]) == 2
    err = capsys.readouterr().err
    assert "--older-than AGE" in err and "go with --remove" in err and "expected an age" in err
    assert main(["runs", str(tmp_path / "none")]) == 0 and "no run folders" in capsys.readouterr().out
