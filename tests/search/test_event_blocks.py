"""Events stored by column (event schema version 3, issue 37): every field of every kind round-trips, a run's
stream splices its tasks' events from tasks.gz (found again when the file has moved them), the index built from
the columns matches the one built from JSON lines, and damaged or newer blocks are FormatErrors that name the file
and the fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mirage_lab.errors import FormatError
from mirage_lab.jsonl import compress
from mirage_lab.search.event_blocks import MAGIC, BlockWriter, decode, encode, events_of, heads, splice_block
from mirage_lab.search.event_schema import event_line, schema_line
from mirage_lab.search.events import EventLog, read_events
from mirage_lab.search.run_log import NAME, Segments, stream
from mirage_lab.task_log import NAME as TASK_LOG
from mirage_lab.task_log import TaskLog
from mirage_lab.widgets.event_index import EventIndex

#: every kind, every field the search writes, and events that fit no column
EVENTS: list[dict[str, Any]] = [
    {"e": "expand", "id": "f0", "parent": None, "d": None, "level": "kernel"},
    {"e": "prune", "parent": "f0", "why": "oracle", "n": 21},
    {"e": "prune", "parent": "f0", "why": "shape", "n": 3},
    {"e": "expand", "id": "f1", "parent": "f0", "d": ["k", "matmul", [0, 1], {}], "level": "kernel"},
    {"e": "prune", "parent": "f1", "why": "oracle", "d": ["b", "exp", [0], {}], "expr": "exp(v0)"},
    {"e": "prune", "parent": "f1", "why": "bound", "spent_us": 1.25, "bound_us": 3.5e-3, "best_us": 7.73,
     "cost_us": 12.0},
    {"e": "prune", "parent": "f1", "why": "cap", "op": "customized", "level": "kernel"},
    {"e": "prune", "parent": "f1", "why": "goal", "reason": "no output", "rules": ["sub_unary", "x"]},
    {"e": "expand", "id": "933.0", "parent": "f1", "d": ["c", [0, 1, 2], [2, 16, 4], [[0, -1, 1]], [-1, 2, 1], 4],
     "level": "block"},
    {"e": "expand", "id": "933.1", "parent": "933.0", "d": ["b", "accum_no_red", [0], {"k": 1.5}], "level": "block"},
    {"e": "expand", "id": "933.2", "parent": "933.0", "d": ["b", "exp", [1], {}], "level": "block"},
    {"e": "prune", "parent": "933.1", "why": "twin", "n": 1},  # (a state entered earlier)
    {"e": "candidate", "node": "933.2", "outcome": "precheck"},
    {"e": "candidate", "node": "933.2", "outcome": "rejected", "reason": "differs at 3 of 4 trials"},
    {"e": "candidate", "node": "933.2", "outcome": "verified", "hash": "ab" * 32},
    {"e": "candidate", "node": "933.2", "outcome": "duplicate", "hash": "cd" * 32},
    {"e": "expand", "id": "x007", "parent": "933.2", "d": [], "level": "blöck"},  # leading zeros, no number, unicode
    {"e": "expand", "id": "root", "parent": "x007", "d": {"a": [1, None, True]}, "level": "kernel"},
    {"e": "expand", "id": "root9", "parent": "root", "d": 1, "level": "kernel", "extra": [1]},
    {"e": "prune", "parent": "root9", "why": "order", "n": 0},  # (no count: n kept as it is)
    {"e": "prune", "parent": "root9", "why": "order", "n": True},
    {"e": "prune", "parent": "root9", "why": "smem", "d": [1], "n": 4},  # n after another field
    {"e": "prune", "parent": "root9", "why": "index", "n": 2 ** 63 + 5},
    {"e": "task", "parent": "f1", "task": 3},  # (the frontier's own kind)
    {"e": "prune", "why": "phase", "parent": "root9", "n": 2},  # keys in another order
    {"e": "expand", "id": "f2", "parent": "f1", "d": None, "level": "kernel"},
    {"e": "prune", "parent": "f2", "why": "duplicate", "n": 9},
]


@pytest.mark.parametrize("per_block", [1, 4, 1000])
def test_every_field_round_trips(per_block: int) -> None:
    data = b"".join(encode(EVENTS, per_block=per_block))
    got = list(decode(data, "log"))
    assert got == EVENTS
    assert [event_line(e) for e in got] == [event_line(e) for e in EVENTS]  # key order too
    assert len(list(heads(data, "log"))) == -(-len(EVENTS) // per_block)


def test_a_packed_log_encodes_its_hot_paths_as_the_events_it_keeps() -> None:
    kept, packed = EventLog(), EventLog(keep=False, packed=True, flush_every=3)
    for log in (kept, packed):
        log.expanded("7.0", "f3", None, "block")
        log.counted("7.0", {"oracle": 4, "shape": 0, "order": 2})
        log.expanded("7.1", "7.0", None, "block")
        log.append({"e": "candidate", "node": "7.1", "outcome": "verified", "hash": "h"})
    data = packed.packed_events()
    assert len(packed.members) == 2 and list(decode(data, "log")) == kept.events


def _run_folder(tmp_path: Path, per_task: dict[int, list[dict[str, Any]]], frontier: list[dict[str, Any]]) -> Path:
    """A run folder's events: tasks in tasks.gz as blocks, and the stream splicing them in."""
    log = TaskLog(tmp_path / TASK_LOG)
    for i, evs in per_task.items():
        log.append(i, {"summary": {}}, b"".join(encode(evs, per_block=5)))
    (tmp_path / NAME).write_bytes(b"".join(stream(frontier, TaskLog(tmp_path / TASK_LOG), {}, lambda i: b"")))
    return tmp_path


def _walk(prefix: str, parent: str, states: int) -> list[dict[str, Any]]:
    evs: list[dict[str, Any]] = []
    for k in range(states):
        p = parent if k == 0 else f"{prefix}{(k - 1) // 2}"  # a binary tree: parents further back
        evs.append({"e": "expand", "id": f"{prefix}{k}", "parent": p, "d": ["b", "exp", [k], {}], "level": "block"})
        evs.append({"e": "prune", "parent": f"{prefix}{k}", "why": "oracle", "n": k + 1})
    evs.append({"e": "candidate", "node": f"{prefix}{states - 1}", "outcome": "verified", "hash": "h"})
    return evs


def test_a_stream_splices_its_tasks_and_indexes_as_json_lines_do(tmp_path: Path) -> None:
    tasks = {0: _walk("0.", "f1", 7), 1: _walk("1.", "f2", 12), 2: _walk("2.", "f1", 1)}
    frontier = [{"e": "expand", "id": "f0", "parent": None, "d": None, "level": "kernel"},
                {"e": "expand", "id": "f1", "parent": "f0", "d": ["k"], "level": "kernel"},
                {"e": "task", "parent": "f1", "task": 0}, {"e": "task", "parent": "f1", "task": 2},
                {"e": "prune", "parent": "f1", "why": "order", "n": 2},
                {"e": "expand", "id": "f2", "parent": "f0", "d": ["k"], "level": "kernel"},
                {"e": "task", "parent": "f2", "task": 1}]
    run = _run_folder(tmp_path, tasks, frontier)
    whole = [*frontier[:2], *tasks[0], *tasks[2], frontier[4], frontier[5], *tasks[1]]
    assert sum(h.task is not None for h in heads((run / NAME).read_bytes(), NAME)) == 3  # spliced, not copied
    assert list(read_events(run / NAME)) == whole
    jsonl = tmp_path / "events.jsonl.gz"
    jsonl.write_bytes(compress(schema_line() + "".join(event_line(e) + "\n" for e in whole)))
    a, b = EventIndex(run / NAME, progress=False), EventIndex(jsonl, progress=False)
    for name in ("labels", "parents", "weights"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert [a.event(i) for i in range(len(a))] == whole
    assert dict(a.node_index) == b.node_index and a.node_index["1.11"] == b.node_index["1.11"]
    assert "1.12" not in a.node_index and "nope" not in a.node_index
    assert a.ancestors(len(whole) - 1) == b.ancestors(len(whole) - 1)
    assert list(a.children(1)) == list(b.children(1))


def test_the_frontier_encoded_in_a_thread_streams_the_same_events(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The frontier's blocks are encoded while the tasks run (``Segments.start``); the stream leaves out the tasks
    not merged (a search cut short), and a frontier that fails to encode raises in the parent."""
    tasks = {0: _walk("0.", "f1", 7), 1: _walk("1.", "f2", 12), 2: _walk("2.", "f1", 1)}
    frontier = [{"e": "expand", "id": "f0", "parent": None, "d": None, "level": "kernel"},
                {"e": "task", "parent": "f0", "task": 0}, {"e": "task", "parent": "f0", "task": 2},
                {"e": "prune", "parent": "f0", "why": "order", "n": 2}, {"e": "task", "parent": "f0", "task": 1}]
    run = _run_folder(tmp_path, tasks, frontier)
    log = TaskLog(run / TASK_LOG)
    whole = list(read_events(run / NAME))
    (run / NAME).write_bytes(b"".join(stream(Segments(frontier).start(), log, {}, lambda i: b"")))
    assert list(read_events(run / NAME)) == whole
    monkeypatch.setattr(Segments, "threaded", False)  # (``scaling.py --record``: encoded at once, in the caller)
    (run / NAME).write_bytes(b"".join(stream(Segments(frontier).start(), log, {}, lambda i: b"")))
    assert list(read_events(run / NAME)) == whole
    monkeypatch.undo()
    cut = b"".join(stream(Segments(frontier).start(), log, {}, lambda i: b"", merged={0, 1}))
    (run / NAME).write_bytes(cut)
    assert list(read_events(run / NAME)) == [frontier[0], *tasks[0], frontier[3], *tasks[1]]
    broken = Segments([{"e": "task"}]).start()  # (a task event without its index)
    with pytest.raises(KeyError):
        broken.done()


def test_a_splice_whose_place_moved_is_found_by_task(tmp_path: Path) -> None:
    """tasks.gz rewritten (entries in another order): the splices' offsets are stale, the tasks are looked up."""
    tasks = {0: _walk("0.", "f0", 5), 1: _walk("1.", "f0", 6)}
    frontier = [{"e": "expand", "id": "f0", "parent": None, "d": None, "level": "kernel"},
                {"e": "task", "parent": "f0", "task": 0}, {"e": "task", "parent": "f0", "task": 1}]
    run = _run_folder(tmp_path, tasks, frontier)
    (run / TASK_LOG).unlink()
    log = TaskLog(run / TASK_LOG)
    for i in (1, 0):
        log.append(i, {"summary": {}, "pad": "x" * i}, b"".join(encode(tasks[i])))
    assert list(read_events(run / NAME)) == [frontier[0], *tasks[0], *tasks[1]]
    (run / NAME).write_bytes((run / NAME).read_bytes() + splice_block(7, 0, 10))
    with pytest.raises(FormatError, match=r"task 7's events, which .*tasks.gz does not hold; delete events.blocks"):
        list(read_events(run / NAME))


def _blocks(tmp_path: Path) -> Path:
    path = tmp_path / NAME
    path.write_bytes(b"".join(encode(_walk("0.", "f0", 50), per_block=40)))
    return path


def test_a_damaged_block_names_the_file_and_the_fix(tmp_path: Path) -> None:
    path = _blocks(tmp_path)
    intact = path.read_bytes()
    data = bytearray(intact)
    _, second, last = heads(intact, path)
    data[second.body + 10] ^= 0xFF  # inside its index stream
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError, match=rf"{NAME}: the event block at byte {second.at} does not decompress.*"
                                          r"delete the run folder's events.blocks .*rerun the search"):
        EventIndex(path, progress=False)
    path.write_bytes(bytes(data[:second.at]) + b"XXXX" + bytes(data[second.at + 4:]))
    with pytest.raises(FormatError, match=rf"{NAME}: no event block starts at byte {second.at}.*rerun the search"):
        list(read_events(path))
    path.write_bytes(intact[:-5])
    with pytest.raises(FormatError, match=rf"{NAME}: it ends inside the event block at byte {last.at}"):
        list(read_events(path))


def test_a_short_stream_or_a_newer_block_is_refused(tmp_path: Path) -> None:
    path = _blocks(tmp_path)
    data = path.read_bytes()
    first = next(heads(data, path))
    doc = dict(first.doc, n=first.n + 5)  # more events than the stream holds
    raw = json.dumps(doc).encode()
    path.write_bytes(MAGIC + len(raw).to_bytes(4, "little") + raw + data[first.body:first.end])
    with pytest.raises(FormatError, match=r"short index stream.*rerun the search"):
        EventIndex(path, progress=False)
    raw = json.dumps(dict(first.doc, v=4)).encode()
    path.write_bytes(MAGIC + len(raw).to_bytes(4, "little") + raw + data[first.body:first.end])
    with pytest.raises(FormatError, match=r"schema version 4; .*upgrade mirage_lab"):
        list(read_events(path))


def test_a_block_that_expands_too_far_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mirage_lab.search.event_blocks as blocks

    path = _blocks(tmp_path)
    monkeypatch.setattr(blocks, "MAX_MEMBER", 100)
    with pytest.raises(FormatError, match="expands beyond"):
        list(read_events(path))


def test_events_of_reads_every_task_log_format() -> None:
    evs = _walk("3.", "f0", 4)
    lines = "".join(event_line(e) + "\n" for e in evs)
    for data in (b"".join(encode(evs)), compress(lines), lines.encode()):
        assert list(events_of(data, "log")) == evs
    assert BlockWriter().flush() == b""
