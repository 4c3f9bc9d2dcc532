"""Heavy tasks split into sub-tasks (``search/split.py``): a task its slice does not finish is continued with the
kernels it opens after its root closes handed out as sub-tasks, and joined back. The search finds the same μGraphs,
walks the same states, and its event log is the unsplit one's but for node ids."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import mirage_lab as ml
from mirage_lab.search import runner, walk
from mirage_lab.search.event_blocks import events_of
from mirage_lab.search.event_schema import event_line
from mirage_lab.search.events import read_events
from mirage_lab.search.executor import SerialExecutor
from mirage_lab.search.run_folder import RunFolder, events_file
from mirage_lab.search.split import CALL_S, PARENT_CALL_S, ParentCost, batch_size, call_budget_s, served_s
from mirage_lab.task_log import record_member
from tests.search.test_search import search

TWO_KERNELS: dict[str, Any] = dict(max_customized=2, max_block_ops=5)


class Cluster(SerialExecutor):
    """An executor the search does not own, as a cluster's: slices go out several per call."""


def _events(res: ml.search.SearchResult) -> list[str]:
    assert res.run_dir is not None
    return [event_line(e) for e in read_events(res.run_dir / events_file(res.run_dir))]


def _saved_as_walked(res: ml.search.SearchResult) -> None:
    """Every task the run folder holds: its record is encoded as the parent encodes one (whether its worker or
    the parent did it), and counts the states its events expand (a joined task's, not one part's)."""
    assert res.run_dir is not None
    tasks = RunFolder(res.run_dir).tasks
    assert len(tasks.entries()) == res.report.tasks_total
    for i, at in tasks.entries().items():
        record = tasks.record(i)
        assert record is not None and "record_gz" not in record
        events = tasks.events(i)
        assert tasks.read(at.start, at.events_at) == record_member(i, record, len(events))
        assert record["states"] == sum(e["e"] == "expand" for e in events_of(events, i))


def _without_ids(lines: list[str]) -> list[str]:
    """The event lines with every node id replaced by its rank of first appearance."""
    import json

    ids: dict[str, int] = {}

    def rank(x: Any) -> Any:
        return x if x is None else ids.setdefault(x, len(ids))

    out = []
    for line in lines:
        ev = json.loads(line)
        for k in ("id", "parent", "node"):
            if k in ev:
                ev[k] = rank(ev[k])
        out.append(json.dumps(ev, sort_keys=True))
    return out


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> ml.search.SearchResult:
    return search(tmp_path_factory.mktemp("whole"), **TWO_KERNELS)


@pytest.mark.parametrize("executor", ["serial", Cluster()], ids=["owned", "cluster"])
def test_split_tasks_find_and_log_what_whole_ones_do(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                     whole: ml.search.SearchResult, executor: Any) -> None:
    calls: list[int] = []
    real = runner.run_batch

    def spy(*args: Any) -> list[dict[str, Any]]:
        calls.append(sum(k is not None for k in args[10]))  # sub-tasks in this call
        return real(*args)

    monkeypatch.setattr(runner, "SLICE_STATES", 30)
    monkeypatch.setattr(runner, "run_batch", spy)
    res = search(tmp_path, executor=executor, **TWO_KERNELS)
    assert sum(calls) > 10  # heavy tasks were split
    assert res.report.stop_reason == "complete" and res.report.tasks_done == res.report.tasks_total
    assert {c.hash for c in res.candidates} == {c.hash for c in whole.candidates}
    assert res.best is not None and whole.best is not None and res.best.hash == whole.best.hash
    assert res.report.states == whole.report.states
    lines = _events(res)
    expanded = [e for e in lines if e.startswith('{"e":"expand"')]
    assert len(expanded) == res.report.states and not any(e.startswith('{"e":"task"') for e in lines)
    assert sorted(_without_ids(lines)) == sorted(_without_ids(_events(whole)))
    assert _without_ids(lines) == _without_ids(_events(whole))  # in the same order
    _saved_as_walked(res)
    _saved_as_walked(whole)


def test_slices_a_call_did_not_start_go_out_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                 whole: ml.search.SearchResult) -> None:
    """A batch of slices stops starting them after ``call_budget_s`` (``task.run_batch``); the runner hands the rest out
    again, and the search is the same one. With no budget at all, each call starts only its first slice."""
    given: list[tuple[int, int]] = []  # (slices handed out in a call, results it returned)
    real = runner.run_batch

    def spy(*args: Any) -> list[dict[str, Any]]:
        out = real(*args)
        if all(k is None for k in args[10]):
            given.append((len(args[2]), len(out)))
        return out

    monkeypatch.setattr(runner, "call_budget_s", lambda *_: 0.0)
    monkeypatch.setattr(runner, "run_batch", spy)
    res = search(tmp_path, executor=Cluster(), **TWO_KERNELS)
    assert any(n > 1 for n, _ in given) and all(got == 1 for _, got in given)
    assert res.report.stop_reason == "complete" and res.report.tasks_done == res.report.tasks_total
    assert {c.hash for c in res.candidates} == {c.hash for c in whole.candidates}
    assert res.report.states == whole.report.states


def test_a_slice_yields_its_call_to_the_slices_behind_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                         whole: ml.search.SearchResult) -> None:
    """A slice with others behind it in its call stops once the call's budget is spent (``Walk.yield_at``) and is
    walked on later from where it stopped, first in the queue, as a slice: the search is the same one, and its
    events are those of walks that never stopped, in the same order."""
    yielded: list[int] = []  # states each yielded slice part walked
    real = runner.run_batch

    def spy(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        out = real(*args, **kwargs)
        yielded.extend(r["states"] for r in out if r.get("yielded"))
        return out

    monkeypatch.setattr(runner, "call_budget_s", lambda *_: 0.0)
    monkeypatch.setattr(walk, "YIELD_AFTER_STATES", 20)  # (this space's tasks are small)
    monkeypatch.setattr(runner, "batch_size", lambda pending, *_, **__: min(4, pending))  # (any timing)
    monkeypatch.setattr(runner, "run_batch", spy)
    res = search(tmp_path, executor=Cluster(), **TWO_KERNELS)
    assert len(yielded) > 5 and all(n > 20 for n in yielded)
    assert res.report.stop_reason == "complete" and res.report.tasks_done == res.report.tasks_total
    assert {c.hash for c in res.candidates} == {c.hash for c in whole.candidates}
    assert res.report.states == whole.report.states
    assert _without_ids(_events(res)) == _without_ids(_events(whole))
    _saved_as_walked(res)


def test_batches_shrink_with_the_queue() -> None:
    assert batch_size(10_000, 2, 64) == 64 and batch_size(10_000, 256, 64) == 9
    assert batch_size(5, 256, 64) == 1 and batch_size(0, 1, 64) == 1


def test_sub_task_batches_are_worth_their_hand_out() -> None:
    """Once items' seconds are known, a batch holds at least ``least_s`` of them (a millisecond each: 50 for 50 ms,
    where the share per worker would give 15), at most ``call_budget_s`` of them, and never more than are left."""
    assert batch_size(1_000, 16, 1024, each_s=0.001, least_s=0.05) == 50
    assert batch_size(10_000, 2, 1024, each_s=0.001, least_s=0.05) == 250  # (the share, 1 250, fills CALL_S)
    assert batch_size(30, 256, 1024, each_s=0.001, least_s=0.05) == 30
    assert batch_size(10_000, 16, 1024, each_s=0.5, least_s=0.05) == 1


def test_calls_are_worth_the_parents_round() -> None:
    """The parent serves one call at a time, ``PARENT_CALL_S`` each: with many workers a call must last a round of
    them, or workers wait for the parent (GQA b1's replay ran 14.6x at 256 workers against 20.3x at 64). Below
    ``CALL_S``'s worth of workers nothing changes; above, the floor and the cap both grow with the workers."""
    assert served_s(2) == pytest.approx(2 * PARENT_CALL_S) and call_budget_s(2) == CALL_S
    assert call_budget_s(256) == pytest.approx(256 * PARENT_CALL_S) and 256 * PARENT_CALL_S > CALL_S
    assert batch_size(10_000, 256, 1024, each_s=0.001, least_s=0.05) == round(256 * PARENT_CALL_S / 0.001)
    assert batch_size(10_000, 256, 1024, each_s=0.001) == round(256 * PARENT_CALL_S / 0.001)  # (not the share, 9)
    assert batch_size(10_000, 2, 1024, each_s=0.001) == 250  # (the share, capped at CALL_S)


def test_the_parents_time_per_call_and_per_item_told_apart() -> None:
    """``ParentCost`` fits what the parent spends to a part per call and a part per item from windows of
    ``WINDOW`` calls; only the part per call sizes calls. Windows alike cannot tell them apart (all of it counts
    per call); the estimate never falls below ``PARENT_CALL_S``, and is that until a window is full."""
    first = ParentCost()
    first.add(5.0, ParentCost.WINDOW - 1, 40)
    assert first.per_call_s == PARENT_CALL_S and first.per_item_s == 0.0
    cost = ParentCost()
    for items in (32, 320, 1024, 64, 2048, 32):  # (slices one a call, batches of sub-tasks)
        cost.add(0.010 * ParentCost.WINDOW + 0.0002 * items, ParentCost.WINDOW, items)
    assert cost.per_call_s == pytest.approx(0.010) and cost.per_item_s == pytest.approx(0.0002)
    alike = ParentCost()
    for _ in range(3):
        alike.add(0.004 * 64, 32, 64)  # 4 ms a call, two items each
    assert alike.per_call_s == pytest.approx(0.008) and alike.per_item_s == 0.0
    cheap = ParentCost()
    cheap.add(1e-5, 32, 32)
    assert cheap.per_call_s == PARENT_CALL_S
    assert "ms a call" in repr(cost)


@pytest.mark.parametrize("elsewhere", [True, False], ids=["calls-elsewhere", "calls-in-process"])
def test_calls_are_sized_to_what_the_parent_spends(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                    whole: ml.search.SearchResult, elsewhere: bool) -> None:
    """The runner measures its CPU per call and item while calls run elsewhere, and sizes the next calls by it
    (``batch_size``'s ``parent_s``); a call that ran in its own process (a serial or threaded executor, whose
    CPU would count as the parent's) stops the measuring, and calls are sized to ``PARENT_CALL_S``. The search is
    the same one either way."""
    if elsewhere:
        monkeypatch.setattr(runner, "worker_name", lambda: "another-host:1")
    monkeypatch.setattr(ParentCost, "WINDOW", 2)
    added: list[tuple[int, int]] = []  # (calls, items) of each ``add``
    real_add = ParentCost.add

    def add(self: ParentCost, spent_s: float, calls: int = 1, items: int = 1) -> None:
        added.append((calls, items))
        real_add(self, spent_s, calls, items)

    sized: list[float] = []  # the parent's seconds per call each batch of slices was sized to
    real_size = runner.batch_size

    def size(*args: Any, parent_s: float = PARENT_CALL_S) -> int:
        sized.append(parent_s)
        return real_size(*args, parent_s=parent_s)

    monkeypatch.setattr(ParentCost, "add", add)
    monkeypatch.setattr(runner, "batch_size", size)
    res = search(tmp_path, executor=Cluster(), **TWO_KERNELS)
    assert {c.hash for c in res.candidates} == {c.hash for c in whole.candidates}
    assert res.report.states == whole.report.states
    assert len(sized) > 5
    if elsewhere:  # (in process, each call's walk is the parent's CPU: far more than PARENT_CALL_S)
        assert sum(n for _, n in added) >= res.report.tasks_total and all(k >= 1 for k, _ in added)
        assert sized[0] == PARENT_CALL_S and max(sized) > 10 * PARENT_CALL_S
    else:
        assert len(added) <= 1 and set(sized) == {PARENT_CALL_S}


def test_a_cluster_executor_says_how_many_it_runs() -> None:
    """The runner keeps two calls in flight per worker; a Dask executor's workers are its client's threads."""
    from concurrent.futures import ThreadPoolExecutor

    from mirage_lab.search.executor import executor_workers

    class Client:
        def nthreads(self) -> dict[str, int]:
            return {"tcp://a": 2, "tcp://b": 3}

    class DaskLike(SerialExecutor):
        _client = Client()

    with ThreadPoolExecutor(3) as pool:
        assert executor_workers(pool) == 3
    assert executor_workers(DaskLike()) == 5 and executor_workers(SerialExecutor()) is None


def _result(name: str, events: list[dict[str, Any]], n: int, **more: Any) -> dict[str, Any]:
    """A walk's result as a worker returns it (``task.run_task``), with ``n`` states."""
    from mirage_lab.search.event_blocks import encode

    return {"index": 3, "summary": {"states": n, "oracle_rules": {"r": n}, "pruned": {"oracle": 1}, "candidates": {}},
            "verdicts": {f"e{n}": {"reason": name, "rules": [], "n": 1},
                         "shared": {"reason": "s", "rules": [], "n": n}},
            "seconds": {"enumeration": 0.5 * n}, "candidates": [{"hash": name}], "states": n, "wall": float(n),
            "files": {f"{name}.json": "h"}, "stop_reason": "complete", "incumbent": float(n),
            "events_gz": b"".join(encode(events)), **more}


def test_a_family_joins_its_parts_in_order_whatever_order_they_come_back_in() -> None:
    from mirage_lab.search.event_blocks import decode
    from mirage_lab.search.split import Family

    head_events = [{"e": "expand", "id": "3.0", "parent": "f1", "d": None, "level": "block"},
                   {"e": "task", "parent": "3.0", "task": 0},
                   {"e": "prune", "parent": "3.0", "why": "smem", "n": 2},
                   {"e": "task", "parent": "3.0", "task": 1}]
    part = [[{"e": "expand", "id": f"3.{k}.0", "parent": "3.0", "d": None, "level": "block"}] for k in (0, 1)]
    head = _result("head", head_events, 1, subtasks=[["3.0", []], ["3.0", []]])
    parts = [_result("p0", part[0], 2), _result("p1", part[1], 4, stop_reason="time limit")]
    joined = []
    for order in ((0, 1), (1, 0)):
        family = Family(head)
        for k in order:
            assert not family.complete
            family.add(k, parts[k])
        assert family.complete and "2/2" in repr(family)
        joined.append(family.joined())
    a, b = joined
    early = Family(head)
    early.add(1, parts[1])  # (a search stopped here reports what the parts done verified, and their seconds)
    assert early.so_far() == {"candidates": [{"hash": "p1"}], "seconds": {"enumeration": 2.0}}
    assert a == b and a["states"] == 7 and a["summary"]["oracle_rules"] == {"r": 7}
    assert [c["hash"] for c in a["candidates"]] == ["head", "p0", "p1"]  # the ranking's order of discovery
    assert a["verdicts"]["shared"]["n"] == 7 and a["stop_reason"] == "time limit" and a["incumbent"] == 1.0
    assert a["parts_wall"] == [2.0, 4.0] and "subtasks" not in a
    assert list(decode(a["events_gz"], "joined")) == [head_events[0], *part[0], head_events[2], *part[1]]
