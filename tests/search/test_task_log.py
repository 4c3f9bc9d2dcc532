"""tasks.gz, a run folder's finished tasks in one append-only file (issue 19, small run folders)."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from mirage_lab.errors import FormatError
from mirage_lab.jsonl import compress
from mirage_lab.task_log import TaskLog


def events(i: int) -> bytes:
    return compress(f'{{"e":"expand","id":"{i}.0"}}\n') + compress(f'{{"e":"expand","id":"{i}.1"}}\n')


def test_entries_read_back_byte_for_byte(tmp_path: Path) -> None:
    log = TaskLog(tmp_path / "tasks.gz")
    digests = {i: log.append(i, {"states": i, "candidates": []}, events(i)) for i in (3, 0, 7)}
    fresh = TaskLog(tmp_path / "tasks.gz")
    assert sorted(fresh.entries()) == [0, 3, 7]
    for i, digest in digests.items():
        assert fresh.record(i) == {"states": i, "candidates": [], "index": i, "events_bytes": len(events(i))}
        assert fresh.events(i) == events(i) and fresh.digest(i) == digest
    text = gzip.decompress((tmp_path / "tasks.gz").read_bytes()).decode()  # one gzip stream: zcat reads it
    assert text.count('"e":"expand"') == 6


def test_a_partial_entry_is_ignored_then_cut_off(tmp_path: Path) -> None:
    path = tmp_path / "tasks.gz"
    log = TaskLog(path)
    log.append(0, {"states": 1}, events(0))
    first = path.stat().st_size
    log.append(1, {"states": 2}, events(1))
    full = path.read_bytes()
    for cut in (first + 5, len(full) - 3):  # killed inside the record, or inside the events
        path.write_bytes(full[:cut])
        assert sorted(TaskLog(path).entries()) == [0]
        TaskLog(path).append(1, {"states": 2}, events(1))  # the partial tail is cut before appending
        assert sorted(TaskLog(path).entries()) == [0, 1] and path.read_bytes() == full


def test_a_task_run_again_replaces_its_entry(tmp_path: Path) -> None:
    log = TaskLog(tmp_path / "tasks.gz")
    log.append(4, {"states": 1}, events(4))
    digest = log.append(4, {"states": 2}, events(4))
    fresh = TaskLog(tmp_path / "tasks.gz")
    assert fresh.record(4)["states"] == 2 and fresh.digest(4) == digest  # type: ignore[index]


def test_repair_cuts_what_a_killed_writer_left(tmp_path: Path) -> None:
    path = tmp_path / "tasks.gz"
    TaskLog(path).append(0, {"states": 1}, events(0))
    good = path.read_bytes()
    path.write_bytes(good + compress('{"index": 1, "events_bytes": 999}\n'))  # its events never written
    TaskLog(path).repair()
    assert path.read_bytes() == good
    assert hashlib.sha256(good).hexdigest() == TaskLog(path).digest(0)


def test_a_record_that_expands_too_far_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mirage_lab.jsonl as jsonl

    monkeypatch.setattr(jsonl, "MAX_MEMBER", 10_000)
    path = tmp_path / "tasks.gz"
    path.write_bytes(compress(json.dumps({"index": 0, "events_bytes": 0, "pad": " " * 50_000}) + "\n"))
    with pytest.raises(FormatError, match="expands beyond"):
        TaskLog(path).entries()
