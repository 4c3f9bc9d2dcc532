"""Compressed run folders (issue 19, small run folders; issue 37, events by column): gzip-member event logs with
random access, and folders in the older layouts (JSON-line events, per-task files, uncompressed) still served,
explored, loaded and resumed."""

from __future__ import annotations

import gzip
import json
import shutil
import warnings
from pathlib import Path

import pytest

import mirage_lab as ml
from mirage_lab.errors import FormatError
from mirage_lab.ir.io import graph_to_dict
from mirage_lab.jsonl import MemberFile, compress, members, read_lines
from mirage_lab.search.config import preset
from mirage_lab.search.enumerate import Enumerator
from mirage_lab.search.event_blocks import events_of
from mirage_lab.search.event_schema import schema_line
from mirage_lab.search.events import EventLog, event_line, path_to, read_events
from mirage_lab.search.load import load_run
from mirage_lab.search.run_folder import (
    EVENTS,
    JSONL_EVENTS,
    MANIFEST,
    OLD_EVENTS,
    OLD_VERDICTS,
    VERDICTS,
    RunFolder,
    events_file,
    sha256_file,
    verdicts_file,
)
from mirage_lab.search.task import task_context
from mirage_lab.task_log import NAME as TASK_LOG
from mirage_lab.task_log import TaskLog, entry_name
from mirage_lab.widgets.event_index import EventIndex
from mirage_lab.widgets.explorer_state import ExplorerState
from tests.conftest import REPO_ROOT, load_script
from tests.search.test_search import SMALL, search, small_rmsnorm


def read_events_bytes(data: bytes) -> list[dict[str, object]]:
    return list(events_of(data, "a task's log"))


def test_members_give_random_access(tmp_path: Path) -> None:
    lines = [json.dumps({"e": "expand", "id": f"n{i}"}) + "\n" for i in range(5000)]
    path = tmp_path / "log.jsonl.gz"
    path.write_bytes(b"".join(compress("".join(lines[a:b])) for a, b in ((0, 1), (1, 2000), (2000, 5000))))
    found = list(members(path))
    assert [len(m[2]) for m in found] == [len("".join(lines[a:b]).encode()) for a, b in ((0, 1), (1, 2000),
                                                                                           (2000, 5000))]
    assert list(read_lines(path)) == lines == gzip.decompress(path.read_bytes()).decode().splitlines(keepends=True)
    access = MemberFile(path, [m[0] for m in found], [m[1] for m in found])
    offsets = [0]
    for line in lines[:-1]:
        offsets.append(offsets[-1] + len(line.encode()))
    for i in (0, 1, 1999, 2000, 4999, 3333):
        assert access.line_at(offsets[i]).decode() == lines[i]
    path.write_bytes(path.read_bytes()[:-7])  # cut inside the last member
    with pytest.raises(FormatError, match="truncated"):
        list(members(path))


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> ml.search.SearchResult:
    return search(run_dir=tmp_path_factory.mktemp("runs"))


def _jsonl_layout(run: Path, into: Path) -> Path:
    """A copy of ``run`` as searches wrote it before event blocks (event schema version 2): each task's events as
    gzip-compressed JSON lines in tasks.gz, copied again into events.jsonl.gz after a schema line, verdicts.json
    uncompressed; its manifest rewritten to match, as such a search would have recorded it."""
    old = into / run.name
    shutil.copytree(run, old)
    new = RunFolder(run)
    (old / TASK_LOG).unlink()
    log = TaskLog(old / TASK_LOG)
    manifest = json.loads((old / MANIFEST).read_text())
    for i in new.tasks.entries():
        record = {k: v for k, v in (new.tasks.record(i) or {}).items() if k not in ("index", "events_bytes")}
        lines = "".join(event_line(e) + "\n" for e in events_of(new.tasks.events(i), i))
        manifest["sha256"][entry_name(i)] = log.append(i, record, compress(lines))
    (old / JSONL_EVENTS).write_bytes(compress(schema_line() + "".join(event_line(e) + "\n"
                                                                      for e in read_events(run / EVENTS))))
    (old / OLD_VERDICTS).write_text(json.dumps(new.verdicts(), indent=1, sort_keys=True))
    for name in (EVENTS, VERDICTS):
        (old / name).unlink()
        del manifest["sha256"][name]
    manifest["sha256"].update({n: sha256_file(old / n) for n in (JSONL_EVENTS, OLD_VERDICTS)})
    (old / MANIFEST).write_text(json.dumps(manifest))
    return old


def _per_task_layout(run: Path, into: Path) -> Path:
    """A copy of ``run`` as searches wrote it before tasks.gz: two compressed files per task, with its manifest
    rewritten to match, as such a search would have recorded it."""
    old = _jsonl_layout(run, into)
    log = RunFolder(old).tasks
    (old / "tasks").mkdir()
    manifest = json.loads((old / MANIFEST).read_text())
    for i in log.entries():
        record = {k: v for k, v in (log.record(i) or {}).items() if k != "events_bytes"}
        (old / f"tasks/{i}.json.gz").write_bytes(compress(json.dumps(record)))
        (old / f"tasks/{i}.events.jsonl.gz").write_bytes(log.events(i))
        del manifest["sha256"][f"{TASK_LOG}#{i}"]
        manifest["sha256"].update({n: sha256_file(old / n) for n in (f"tasks/{i}.json.gz",
                                                                     f"tasks/{i}.events.jsonl.gz")})
    (old / TASK_LOG).unlink()
    (old / MANIFEST).write_text(json.dumps(manifest))
    return old


def _old_layout(run: Path, into: Path) -> Path:
    """A copy of ``run`` as searches wrote it before compression (plain logs and task records), with its
    manifest rewritten to match, as such a search would have recorded it."""
    old = _per_task_layout(run, into)
    (old / OLD_EVENTS).write_bytes(gzip.decompress((old / JSONL_EVENTS).read_bytes()))
    (old / JSONL_EVENTS).unlink()
    for p in sorted((old / "tasks").glob("*.gz")):
        p.with_suffix("").write_bytes(gzip.decompress(p.read_bytes()))
        p.unlink()
    manifest = json.loads((old / MANIFEST).read_text())
    manifest["sha256"] = {name: sha256_file(old / name) for name in
                          [n.removesuffix(".gz") for n in manifest["sha256"]] if (old / name).exists()}
    (old / MANIFEST).write_text(json.dumps(manifest))
    return old


def test_a_compressed_folder_holds_the_same_events(finished: ml.search.SearchResult) -> None:
    run = finished.run_dir
    assert run is not None and events_file(run) == EVENTS
    assert not list(run.glob("tasks/*.json")) and not list(run.glob("tasks/*.events.jsonl"))
    events = list(read_events(run / EVENTS))
    assert sum(e["e"] == "expand" for e in events) == finished.report.states
    index = EventIndex(run / EVENTS, progress=False)
    assert len(index) == len(events) and all(index.event(i) == events[i] for i in range(0, len(events), 97))


def test_a_folder_holds_one_task_log_not_files_per_task(finished: ml.search.SearchResult) -> None:
    run = finished.run_dir
    assert run is not None and not (run / "tasks").exists()
    folder = RunFolder(run)
    assert folder.task_count() == finished.report.tasks_total
    files = [p for p in run.rglob("*") if p.is_file()]
    assert len(files) <= 8 + finished.report.verified  # the fixed files, and one per verified μGraph
    spliced = b"".join(folder.task_events(i) for i in sorted(folder.tasks.entries()))
    assert sum(e["e"] == "expand" for e in read_events_bytes(spliced)) <= finished.report.states


@pytest.mark.parametrize("layout", ["per-task compressed", "per-task plain"])
def test_an_older_folder_is_served_resumed_and_grows_a_task_log(finished: ml.search.SearchResult, tmp_path: Path,
                                                                 layout: str) -> None:
    """A folder of the older layouts, half its tasks lost: served, then resumed, with the new tasks in tasks.gz."""
    make = _per_task_layout if layout == "per-task compressed" else _old_layout
    old = make(finished.run_dir, tmp_path)  # type: ignore[arg-type]
    (old / "result.json").unlink()
    names = sorted(old.glob("tasks/*"))
    for p in names[len(names) // 2:]:
        p.unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        resumed = search(run_dir=tmp_path)
    assert [c.hash for c in resumed.candidates] == [c.hash for c in finished.candidates]
    assert resumed.report.states == finished.report.states
    folder = RunFolder(old)
    assert 0 < len(folder.tasks.entries()) < folder.task_count() == finished.report.tasks_total
    assert list(read_events(old / EVENTS)) == list(read_events(finished.run_dir / EVENTS))  # type: ignore[operator]
    assert not (old / JSONL_EVENTS).exists() and not (old / OLD_EVENTS).exists() and (old / VERDICTS).exists()
    again = search(run_dir=tmp_path)
    assert again.report.cached


def test_a_json_lines_folder_is_served_explored_and_resumed(finished: ml.search.SearchResult, tmp_path: Path) -> None:
    """A folder of event schema version 2 (JSON lines in tasks.gz, copied into events.jsonl.gz): served from the
    cache, loaded and explored as it is; resumed after losing tasks, its old tasks' events are copied into the new
    stream as blocks and its new ones spliced."""
    old = _jsonl_layout(finished.run_dir, tmp_path)  # type: ignore[arg-type]
    assert events_file(old) == JSONL_EVENTS and verdicts_file(old) == OLD_VERDICTS
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no file is reported damaged
        again = search(run_dir=tmp_path)
        loaded = load_run(old)
    assert again.report.cached and [c.hash for c in loaded.candidates] == [c.hash for c in finished.candidates]
    events = list(read_events(finished.run_dir / EVENTS))  # type: ignore[operator]
    assert list(read_events(old / JSONL_EVENTS)) == events
    state, new = ExplorerState(old, progress=False), ExplorerState(finished.run_dir, progress=False)  # type: ignore[arg-type]
    for a in ("labels", "parents", "weights"):
        assert (getattr(state.index, a) == getattr(new.index, a)).all(), a
    assert state.verdicts == new.verdicts and len(state.index.node_index) == len(new.index.node_index)
    (old / "result.json").unlink()
    entries = RunFolder(old).tasks.entries()
    with open(old / TASK_LOG, "r+b") as f:  # the later tasks lost
        f.truncate(entries[sorted(entries)[len(entries) // 2]].start)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        resumed = search(run_dir=tmp_path)
    assert [c.hash for c in resumed.candidates] == [c.hash for c in finished.candidates]
    assert events_file(old) == EVENTS and not (old / JSONL_EVENTS).exists() and verdicts_file(old) == VERDICTS
    assert list(read_events(old / EVENTS)) == events
    assert RunFolder(old).verdicts() == new.verdicts
    again = search(run_dir=tmp_path)
    assert again.report.cached


def test_an_older_uncompressed_folder_is_still_served(finished: ml.search.SearchResult, tmp_path: Path) -> None:
    old = _old_layout(finished.run_dir, tmp_path)  # type: ignore[arg-type]
    assert events_file(old) == OLD_EVENTS and RunFolder(old).task_names(0) == ("tasks/0.json",
                                                                              "tasks/0.events.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no file is reported damaged
        again = search(run_dir=tmp_path)
        loaded = load_run(old)
    assert again.report.cached and [c.hash for c in again.candidates] == [c.hash for c in finished.candidates]
    assert [c.hash for c in loaded.candidates] == [c.hash for c in finished.candidates]
    state = ExplorerState(old, progress=False)
    assert len(state.index) == len(list(read_events(old / OLD_EVENTS)))


def test_an_older_folder_is_rebuilt_from_its_uncompressed_tasks(finished: ml.search.SearchResult,
                                                                  tmp_path: Path) -> None:
    """Without result.json the run is assembled again from the old task records and logs, into the new layout."""
    old = _old_layout(finished.run_dir, tmp_path)  # type: ignore[arg-type]
    (old / "result.json").unlink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rebuilt = search(run_dir=tmp_path)
    assert not [w for w in caught if "running" in str(w.message)], [str(w.message) for w in caught]
    assert [c.hash for c in rebuilt.candidates] == [c.hash for c in finished.candidates]
    assert rebuilt.report.states == finished.report.states
    assert events_file(old) == EVENTS and not (old / OLD_EVENTS).exists()
    assert list(read_events(old / EVENTS)) == list(read_events(finished.run_dir / EVENTS))  # type: ignore[operator]


def test_a_member_that_expands_too_far_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A decompression bomb in a folder someone handed over fails with a FormatError, before filling memory."""
    import mirage_lab.jsonl as jsonl

    monkeypatch.setattr(jsonl, "MAX_MEMBER", 10_000)
    log = tmp_path / JSONL_EVENTS
    log.write_bytes(compress('{"e":"expand","id":"f0"}\n') + compress(" " * 50_000 + "\n"))
    with pytest.raises(FormatError, match="expands beyond"):
        list(members(log))
    run = tmp_path / "run"
    (run / "tasks").mkdir(parents=True)
    (run / "tasks" / "0.json.gz").write_bytes(compress(json.dumps({"pad": " " * 50_000})))
    with pytest.raises(FormatError, match=r"expands beyond.*delete it"):
        RunFolder(run).task(0)


def test_a_tasks_packed_blocks_are_the_encoding_of_its_events() -> None:
    """A task's log puts its hot events (expand and the per-state counts, oracle prunes among them) into columns
    without building dicts; they must decode to the events an in-memory log keeps."""
    prog, config, oracle, verifier = task_context(graph_to_dict(small_rmsnorm()), preset("mlp", **SMALL).to_dict())
    front = Enumerator(prog, config, oracle, verifier, ids="f").run(frontier=True)
    for parent, prefix in front.tasks:  # the first task with a hundred events
        kept, packed = EventLog(), EventLog(keep=False, packed=True, flush_every=20)
        for log in (kept, packed):
            Enumerator(prog, config, oracle, verifier, ids="7.", log=log).run(prefix, parent)
        if len(kept.events) > 100:
            break
    kinds = {(e["e"], e.get("why"), "n" in e) for e in kept.events}
    assert {("expand", None, False), ("prune", "oracle", True), ("prune", "order", True)} <= kinds
    assert len(kept.events) > 100 and len(packed.members) > 1  # (flushed on the way)
    assert list(events_of(packed.packed_events(), "packed")) == kept.events
    assert packed.summary() == kept.summary()


def test_a_states_oracle_prunes_are_worked_out_again_on_demand() -> None:
    """Search logs count a state's oracle prunes; ``Enumerator.oracle_prunes`` lists them again from the state's
    decisions. Against a walk that lists each one as it goes (the older format): the same events, in the same order,
    for every state of a whole search, at block and kernel level, and the counts match the list."""
    prog, config, oracle, verifier = task_context(graph_to_dict(small_rmsnorm()), preset("mlp", **SMALL).to_dict())
    listed, counted = EventLog(list_oracle=True), EventLog()
    for log in (listed, counted):
        Enumerator(prog, config, oracle, verifier, ids="", log=log).run()
    by_state: dict[str, list[dict[str, object]]] = {}
    for e in listed.events:
        if e["e"] == "prune" and e["why"] == "oracle" and "d" in e:
            by_state.setdefault(e["parent"], []).append(e)
    n = {e["parent"]: e["n"] for e in counted.events if e["e"] == "prune" and e["why"] == "oracle" and e.get("n")}
    assert {k: len(v) for k, v in by_state.items()} == n and len(n) > 20
    assert listed.summary() == counted.summary()
    for node, expected in by_state.items():
        got = Enumerator(prog, config, oracle, verifier, ids="x").oracle_prunes(path_to(counted.events, node), node)
        assert got == expected, node
    assert {e[0]["d"][0] for e in by_state.values()} == {"k", "b"}


def test_the_parity_script_finds_a_json_lines_copy_equal_and_a_changed_one_not(
        finished: ml.search.SearchResult, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """benchmarks/event_parity.py, which checked GQA b1's whole run against its JSON-line folder."""
    parity = load_script(REPO_ROOT / "benchmarks" / "event_parity.py", "bench_event_parity")
    old = _jsonl_layout(finished.run_dir, tmp_path)  # type: ignore[arg-type]
    assert parity.main([str(finished.run_dir), str(old), "--events", "200", "--replays", "20"]) == 0
    assert "same events" in capsys.readouterr().out
    events = list(read_events(old / JSONL_EVENTS))
    k = next(k for k, e in enumerate(events) if "n" in e)
    events[k] = {**events[k], "n": events[k]["n"] + 1}  # one count off
    (old / JSONL_EVENTS).write_bytes(compress(schema_line() + "".join(event_line(e) + "\n" for e in events)))
    assert parity.main([str(finished.run_dir), str(old), "--events", "200", "--replays", "20"]) == 1
