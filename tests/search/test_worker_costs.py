"""What a search worker pays before its first task, and the order tasks go out in (issue 19, item 1)."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.ir.io import graph_to_dict
from mirage_lab.search.config import preset
from mirage_lab.search.enumerate import Enumerator
from mirage_lab.search.runner import fused_first
from mirage_lab.search.task import task_context
from mirage_lab.semantics.footprint import small_pages
from tests.search.test_search import SMALL, search, small_rmsnorm


def test_a_worker_imports_no_pandas() -> None:
    """pandas took 0.34 s of a worker's 0.58 s start; only the tables users ask for need it."""
    code = "import sys, mirage_lab.search.task; sys.exit('pandas' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_small_pages_switches_numpys_advice_off_and_back() -> None:
    switch = getattr(np._core.multiarray, "_set_madvise_hugepage", None)
    if switch is None:
        pytest.skip("this numpy has no huge-page switch")
    before = switch(True)
    try:
        with small_pages():
            assert switch(False) is False  # (reads the state: it was off)
        assert switch(True) is True  # back on after the block
    finally:
        switch(before)


def test_tasks_go_out_fused_first_and_results_stay_in_task_order() -> None:
    program = small_rmsnorm()
    prog, config, oracle, verifier = task_context(graph_to_dict(program), preset("mlp", **SMALL).to_dict())
    tasks = Enumerator(prog, config, oracle, verifier, ids="f").run(frontier=True).tasks
    order = fused_first(tasks, list(range(len(tasks))))
    kernels = [sum(d[0] == "k" for d in tasks[i][1]) for i in order]
    assert sorted(order) == list(range(len(tasks))) and kernels == sorted(kernels)
    assert kernels[0] < kernels[-1], "this program's frontier has roots behind plain kernels and roots on inputs"
    assert order != list(range(len(tasks)))  # (so the order is really changed here)
    res = search(executor="serial")
    found = [c.found_s for c in res.candidates]
    assert found and min(found) < res.report.seconds["wall"] / 2  # the fused roots, hence the finds, come early


def test_a_large_verification_waits_its_turn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Work needing over half the free memory takes turns (two search workers once both started a GQA b8
    verification that fits only alone, and the search died with a ResourceError); smaller work never waits."""
    import fcntl
    import os
    import threading

    from mirage_lab.semantics import footprint

    monkeypatch.setenv("MIRAGE_LAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(footprint, "available_bytes", lambda: 100)
    ran: list[int] = []

    def verify(need: int) -> None:
        with footprint.large_allocation_turn(need):
            ran.append(need)

    held = os.open(footprint.private_dir("locks") / footprint.LARGE_ALLOCATIONS, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)  # another worker's large verification
    try:
        verify(50)  # half the free memory or less: at once
        large = threading.Thread(target=verify, args=(51,))
        large.start()
        large.join(0.5)
        assert ran == [50] and large.is_alive()  # waiting for the other to finish
    finally:
        os.close(held)
    large.join(5)
    assert ran == [50, 51]


def test_a_verification_waits_for_memory_another_worker_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """MHA b8 with 2 processes once stopped with a ResourceError: a 2.3 GiB check found 634 MiB free while the
    other worker's verification (which took no turn: the estimate is a lower bound) held the rest. A search's
    verifier now waits for memory that fits the machine; what can never fit is refused at once, as before."""
    import itertools

    from mirage_lab.errors import InputError, ResourceError
    from mirage_lab.search.task import MEMORY_WAIT_S, search_verifier
    from mirage_lab.semantics import footprint
    from mirage_lab.verify.verifier import Verifier

    program = small_rmsnorm()
    need = footprint.peak_elements(program) * 16
    frees = itertools.chain([need // 2] * 3, itertools.repeat(need))  # the other worker finishes after 3 looks
    monkeypatch.setattr(footprint, "available_bytes", lambda: next(frees))
    monkeypatch.setattr(footprint, "total_bytes", lambda: 4 * need)
    footprint.require_memory(program, 16, "checking", wait_s=5)  # waited, then fit
    with pytest.raises(ResourceError, match=r"after waiting 0.5 s"):
        monkeypatch.setattr(footprint, "available_bytes", lambda: need // 2)
        footprint.require_memory(program, 16, "checking", wait_s=0.5)
    monkeypatch.setattr(footprint, "total_bytes", lambda: need // 2)  # larger than the machine: no wait
    with pytest.raises(ResourceError, match=r"is available; use smaller"):
        footprint.require_memory(program, 16, "checking", wait_s=600)
    with pytest.raises(InputError, match="memory_wait_s"):
        Verifier(program, memory_wait_s=-1)
    monkeypatch.undo()
    assert search_verifier(program, preset("mlp")).memory_wait_s == MEMORY_WAIT_S > 0


def test_the_parent_frees_its_trials_when_workers_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """MHA b8 with 2 processes: the parent's verifier kept its trials (7.5 GB) beside two workers' and the kernel
    killed the search. With workers, the parent releases them after the frontier; serial searches keep them."""
    from mirage_lab.search.runner import SerialExecutor
    from mirage_lab.verify.verifier import Verifier

    released: list[Verifier] = []
    monkeypatch.setattr(Verifier, "release", lambda self: released.append(self))
    search(executor=SerialExecutor())  # an executor object, as a process pool or Dask's would be
    assert len(released) == 1
    search(executor="serial")
    assert len(released) == 1


def test_a_released_verifier_holds_nothing_and_still_checks() -> None:
    from mirage_lab.verify.verifier import Verifier

    program = small_rmsnorm()
    v = Verifier(program)
    assert v.check(program).equivalent and v.cached_bytes() > 0
    v.release()
    assert v.cached_bytes() == 0
    assert v.check(program).equivalent and v.cached_bytes() > 0


def test_a_workers_context_is_found_by_its_documents_text_and_still_by_their_meaning() -> None:
    """A call's documents come unpickled afresh: equal documents find the same context without parsing the program
    again, reordered ones (the same program and settings) still find it, and other settings build another."""
    import copy
    import json

    program_doc, config_doc = graph_to_dict(small_rmsnorm()), preset("mlp", **SMALL).to_dict()
    first = task_context(program_doc, config_doc)
    assert task_context(copy.deepcopy(program_doc), copy.deepcopy(config_doc)) is first
    reordered = json.loads(json.dumps(config_doc, sort_keys=True))
    reordered = dict(reversed(list(reordered.items())))
    assert task_context(program_doc, reordered) is first
    other = preset("mlp", **{**SMALL, "max_block_ops": 7}).to_dict()
    assert task_context(program_doc, other) is not first


CALLS: list[int] = []


def _count(doc: dict[str, list[int]]) -> int:
    CALLS.append(len(doc["a"]))
    return len(doc["a"])


def test_a_dask_executor_gets_the_documents_once_and_every_call_unhashed() -> None:
    """Dask hashes a call's arguments into its key unless told ``pure=False`` (3 ms a call for a search's
    documents), and would then run equal calls once; the documents every call repeats go to the workers once."""
    distributed = pytest.importorskip("distributed")
    from mirage_lab.search.executor import SerialExecutor, Submitter

    plain = Submitter(SerialExecutor())
    assert plain.share(doc := {"a": [1, 2]}) is doc and plain(_count, doc).result() == 2
    CALLS.clear()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        submit = Submitter(client.get_executor())
        shared = submit.share({"a": [1, 2, 3]})
        assert isinstance(shared, distributed.Future)
        assert [submit(_count, shared).result() for _ in range(2)] == [3, 3]
    assert CALLS == [3, 3]  # two calls ran: none was taken for the other's result
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:  # (an adaptive cluster's start: no worker to scatter to yet)
        assert Submitter(client.get_executor()).share(doc) is doc


class _Watched(ThreadPoolExecutor):
    """A cluster's executor to the runner (it does not own it), whose calls record being cancelled."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.cancelled = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        f = super().submit(fn, *args, **kwargs)
        cancel = f.cancel

        def counted() -> bool:
            self.cancelled += 1
            return cancel()

        f.cancel = counted  # type: ignore[method-assign]
        return f


def test_calls_in_flight_at_the_time_limit_are_left_to_stop_by_themselves() -> None:
    """A call carries the deadline and stops at it; cancelling a Dask executor's call as it ends races it (its
    executor sets the result of a cancelled future and logs an InvalidStateError), so a search stopped by its time
    limit leaves an executor it does not own alone; one stopped by a budget still cancels what it no longer needs."""
    from mirage_lab.bench import programs

    lora = programs.PROGRAMS["lora"](1)
    with _Watched() as timed:
        res = ml.superoptimize(lora, "lora", executor=timed, run_dir=False, progress=False, time_limit_s=3)
    assert res.report.stop_reason == "time limit" and timed.cancelled == 0
    with _Watched() as budgeted:
        res = ml.superoptimize(lora, "lora", executor=budgeted, run_dir=False, progress=False, state_limit=20_000)
    assert res.report.stop_reason == "state limit" and budgeted.cancelled > 0


def test_a_worker_keeps_its_walks_memos_between_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call's walks start from the memos of the search's last walk in this thread (``task._kept_memos``): a task
    walked with them finds and logs what it does from nothing; past ``MEMO_ENTRIES`` they are not kept, memos made
    in another context of the search (another oracle) are not used, another thread keeps its own, and a search's
    end drops them (``forget_memos``)."""
    from mirage_lab.search import task

    pdoc, cdoc = graph_to_dict(small_rmsnorm()), preset("mlp", **SMALL).to_dict()
    prog, config, oracle, verifier = task_context(pdoc, cdoc)
    tasks = Enumerator(prog, config, oracle, verifier, ids="f").run(frontier=True).tasks
    i = max(range(len(tasks)), key=lambda k: len(tasks[k][1]))
    key = (prog.canonical_hash(), config.hash())
    task.forget_memos()

    def walk() -> tuple[Any, ...]:
        res = task.run_task(pdoc, cdoc, i, tasks[i][0], tasks[i][1], None, None, 0.0)
        return res["summary"], res["states"], [c["hash"] for c in res["candidates"]]

    cold = walk()
    kept = task._kept_memos(key)
    assert kept is not None and sum(len(v) for v in kept.values() if isinstance(v, dict)) > 0
    assert walk() == cold
    again = task._kept_memos(key)
    assert again is not None and again["block_memo"] is kept["block_memo"]  # (the second walk started from them)
    with ThreadPoolExecutor(1) as pool:  # (another thread: its own store, empty)
        assert pool.submit(task._kept_memos, key).result() is None
    monkeypatch.setitem(task._CONTEXTS, key, (*task._CONTEXTS[key][:3], verifier))  # (the context made again)
    assert task._kept_memos(key) is None
    monkeypatch.undo()
    monkeypatch.setattr(task, "MEMO_ENTRIES", 0)
    assert walk() == cold and task._kept_memos(key) is None
    monkeypatch.undo()
    walk()
    task.forget_memos()
    assert task._kept_memos(key) is None
