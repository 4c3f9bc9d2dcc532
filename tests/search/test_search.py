"""The search (SPEC §7): it discovers the fused μGraph, and its results do not depend on how it runs.

A small RMSNorm+Linear (X[2,256], W[256,512]) under a narrowed config searches in about a second,
so every property is checked on the real engine: discovery, determinism, executors (serial, process
pool, Dask), the run folder as cache and checkpoint, interruption and resumption, and the events.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

import mirage_lab as ml
from mirage_lab.ir.ops import Op
from mirage_lab.search.config import preset
from mirage_lab.search.events import path_to
from mirage_lab.search.replay import build_candidate, replay
from mirage_lab.search.run_folder import RunFolder
from mirage_lab.search.runner import SerialExecutor, superoptimize
from mirage_lab.task_log import TaskLog

SMALL = dict(forloop_ranges=(4,), grid_divisors=(8,), block_ops=("matmul", "exp", "div", "accum_no_red", "accum_rms"),
             max_block_ops=6, kernel_ops=("matmul", "exp", "customized"))


def small_rmsnorm() -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(2, 256), dtype=ml.float16)
    w = g.new_input(dims=(256, 512), dtype=ml.float16)
    g.mark_output(g.matmul(g.rms_norm(x), w))
    return g.freeze()


def search(run_dir: Any = False, executor: Any = "serial", **kw: Any) -> ml.search.SearchResult:
    return superoptimize(small_rmsnorm(), preset("mlp", **{**SMALL, **kw}), executor=executor, run_dir=run_dir,
                         progress=False)


@pytest.fixture(scope="module")
def reference_run() -> ml.search.SearchResult:
    return search()


def test_discovers_the_fused_kernel(reference_run: ml.search.SearchResult) -> None:
    res = reference_run
    assert res.report.stop_reason == "complete" and res.report.verified == len(res.candidates) >= 1
    best = res.best
    assert best is not None and len(best.graph.compute_nodes) == 1  # one customized kernel does everything
    (body,) = best.graph.block_graphs
    ops = {n.op for n in body.compute_nodes}
    assert {Op.MATMUL, Op.ACCUM_RMS, Op.ACCUM_NO_RED, Op.DIV} <= ops
    for c in res.candidates:  # every candidate really is equivalent, checked afresh
        assert ml.verify(c.graph, small_rmsnorm(), seed=7).equivalent
    assert res.report.pruned["oracle"] > 0 and res.report.seconds["wall"] > 0
    assert "verified" in repr(res) and list(res.to_frame()["rank"]) == list(range(len(res.candidates)))


def test_is_deterministic(reference_run: ml.search.SearchResult) -> None:
    again = search()
    assert [c.hash for c in again.candidates] == [c.hash for c in reference_run.candidates]
    assert again.report.states == reference_run.report.states
    assert again.report.pruned == reference_run.report.pruned


def test_process_pool_finds_the_same_set(reference_run: ml.search.SearchResult) -> None:
    pooled = search(executor="process")
    assert [c.hash for c in pooled.candidates] == [c.hash for c in reference_run.candidates]
    assert pooled.report.states == reference_run.report.states


def test_dask_finds_the_same_set(reference_run: ml.search.SearchResult) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        res = search(executor=client.get_executor())
    assert [c.hash for c in res.candidates] == [c.hash for c in reference_run.candidates]


def test_dask_workers_that_cannot_see_the_run_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    reference_run: ml.search.SearchResult) -> None:
    """A LocalCluster whose worker processes start in another folder: the run folder's (relative) path names
    nothing there, as on another machine. Workers write nothing; the client writes the whole run folder."""
    distributed = pytest.importorskip("distributed")
    (tmp_path / "workers").mkdir()
    (tmp_path / "client").mkdir()
    monkeypatch.chdir(tmp_path / "workers")  # worker processes inherit this working directory
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        monkeypatch.chdir(tmp_path / "client")
        assert client.run(os.getcwd) and set(client.run(os.getcwd).values()) == {str(tmp_path / "workers")}
        res = search(run_dir="runs", executor=client.get_executor())
    assert not any((tmp_path / "workers").iterdir())  # nothing written where the workers run
    assert [c.hash for c in res.candidates] == [c.hash for c in reference_run.candidates]
    assert res.run_dir is not None and {p.stem for p in (tmp_path / "client" / res.run_dir / "candidates").iterdir()} \
        >= {c.hash[:16] for c in res.candidates}


class Elsewhere(SerialExecutor):
    """Runs each task as a worker on another machine would: the run folder's path does not exist there."""

    def __init__(self, missing: Path) -> None:
        self.missing = missing

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        args = (*args[:5], str(self.missing), *args[6:])  # (run_task's run_dir)
        return super().submit(fn, *args, **kwargs)


def test_workers_need_no_shared_disk(tmp_path: Path, reference_run: ml.search.SearchResult) -> None:
    """Workers return their events and candidates; the parent writes them (Dask across machines)."""
    res = search(run_dir=tmp_path / "runs", executor=Elsewhere(tmp_path / "not-here"))
    assert not (tmp_path / "not-here").exists()
    assert [c.hash for c in res.candidates] == [c.hash for c in reference_run.candidates]
    assert res.run_dir is not None and {p.stem for p in (res.run_dir / "candidates").iterdir()} >= \
        {c.hash[:16] for c in res.candidates}
    assert sum(e["e"] == "expand" for e in res.events()) == reference_run.report.states
    again = search(run_dir=tmp_path / "runs")
    assert again.report.cached and [c.hash for c in again.candidates] == [c.hash for c in res.candidates]


def test_run_folder_is_the_cache(tmp_path: Path, reference_run: ml.search.SearchResult) -> None:
    first = search(run_dir=tmp_path)
    assert not first.report.cached and first.run_dir is not None
    (folder,) = tmp_path.iterdir()
    assert {p.name for p in folder.iterdir()} >= {"program.json", "config.json", "tasks.gz", "candidates",
                                                   "events.blocks", "verdicts.json.gz", "result.json"}
    second = search(run_dir=tmp_path)
    assert second.report.cached and [c.hash for c in second.candidates] == [c.hash for c in first.candidates]
    assert [c.hash for c in first.candidates] == [c.hash for c in reference_run.candidates]
    assert not list(folder.rglob("*.tmp")) and not list(folder.rglob("*.part"))  # atomic writes leave none


class Interrupting(SerialExecutor):
    """Acts as the notebook stop button: KeyboardInterrupt while the n-th call is submitted. It runs one call at a
    time (``_max_workers``), so the runner keeps two in flight and takes results between submits."""

    def __init__(self, after: int) -> None:
        self.left = after
        self._max_workers = 1

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.left -= 1
        if self.left < 0:
            raise KeyboardInterrupt
        return super().submit(fn, *args, **kwargs)


def test_interrupt_and_resume_lose_nothing(tmp_path: Path, reference_run: ml.search.SearchResult) -> None:
    total = reference_run.report.tasks_total
    # (an executor we do not own gets slices in batches: one, then up to 32 a call)
    stopped = search(run_dir=tmp_path, executor=Interrupting(8))
    assert stopped.report.stop_reason == "interrupted"
    assert 0 < stopped.report.tasks_done < total
    (folder,) = tmp_path.iterdir()
    assert RunFolder(folder).task_count() == stopped.report.tasks_done
    kept = {p.name for p in (folder / "candidates").glob("*.json")}
    resumed = search(run_dir=tmp_path)
    assert not resumed.report.cached and resumed.report.stop_reason == "complete"
    assert [c.hash for c in resumed.candidates] == [c.hash for c in reference_run.candidates]
    assert kept <= {p.name for p in (folder / "candidates").glob("*.json")}
    assert resumed.report.states == reference_run.report.states


@pytest.mark.parametrize("written", [False, True])
def test_an_interrupt_while_a_task_is_saved_loses_nothing(tmp_path: Path, reference_run: ml.search.SearchResult,
                                                          monkeypatch: pytest.MonkeyPatch, written: bool) -> None:
    """Ctrl-C landing while a finished task is appended to tasks.gz (before or after its bytes are written):
    the search stops as interrupted, without that task (it used to be counted as done already, and the stop
    then asked tasks.gz for its events: KeyError), and the resumed search runs it again."""
    real, calls = TaskLog.append, []

    def append(log: TaskLog, index: int, record: dict[str, Any], events: bytes, head: bytes | None = None) -> str:
        calls.append(index)
        digest = real(log, index, record, events, head) if written or len(calls) < 5 else ""
        if len(calls) == 5:
            raise KeyboardInterrupt
        return digest

    monkeypatch.setattr(TaskLog, "append", append)
    stopped = search(run_dir=tmp_path)
    monkeypatch.undo()
    assert stopped.report.stop_reason == "interrupted" and stopped.report.tasks_done == 4
    resumed = search(run_dir=tmp_path)
    assert resumed.report.stop_reason == "complete" and resumed.report.states == reference_run.report.states
    assert [c.hash for c in resumed.candidates] == [c.hash for c in reference_run.candidates]


def test_budgets_truncate_in_task_order(reference_run: ml.search.SearchResult) -> None:
    first = search(result_limit=1)
    assert first.report.stop_reason == "result limit" and len(first.candidates) == 1
    assert first.candidates[0].hash in {c.hash for c in reference_run.candidates}
    capped = search(state_limit=500)
    assert capped.report.stop_reason == "state limit" and 500 <= capped.report.states < reference_run.report.states
    assert search(state_limit=500).report.states == capped.report.states  # deterministic truncation


def test_events_rebuild_every_node(tmp_path: Path) -> None:
    res = search(run_dir=tmp_path)
    events = list(res.events())
    kinds = {e["e"] for e in events}
    assert {"expand", "prune", "candidate"} <= kinds and "task" not in kinds
    assert all(json.dumps(e) for e in events)
    program = small_rmsnorm()
    expands = [e for e in events if e["e"] == "expand"]
    assert len(expands) == res.report.states
    for ev in expands[:: max(1, len(expands) // 200)]:  # every node rebuilds through the validating builders
        replay(program, path_to(events, ev["id"]), smem_limit=96 * 1024)
    oracle = [e for e in events if e["e"] == "prune" and e["why"] == "oracle"]
    verdicts = RunFolder(res.run_dir).verdicts()  # each expression's verdict, once
    assert oracle and all(verdicts[e["expr"]]["reason"] for e in oracle if "expr" in e)
    assert sum(len(v["rules"]) > 0 for v in verdicts.values()) > 0
    # each state's oracle prunes are one counted event; the verdicts say how many prunes named each expression
    assert sum(e.get("n", 1) for e in oracle) == sum(v["n"] for v in verdicts.values()) == res.report.pruned["oracle"]
    best = res.best
    assert best is not None
    rebuilt = build_candidate(program, path_to(events, best.node), list(best.graph.outputs), smem_limit=96 * 1024)
    assert len(rebuilt.compute_nodes) == len(best.graph.compute_nodes)


def test_pruning_shrinks_the_space(reference_run: ml.search.SearchResult) -> None:
    unpruned = search(pruning=False, state_limit=20 * reference_run.report.states)
    assert unpruned.report.states > 5 * reference_run.report.states
    assert "oracle" not in unpruned.report.pruned


def test_kernel_state_dedupe_keeps_a_subset(reference_run: ml.search.SearchResult) -> None:
    deduped = search(dedupe_kernel_states=True)
    found = {c.hash for c in deduped.candidates}
    assert found and found <= {c.hash for c in reference_run.candidates}
    assert deduped.report.states <= reference_run.report.states


def test_final_kernel_checks_keep_the_verified_set() -> None:
    """With room for one kernel op, the customized op is the last: cutting what cannot finish changes no result."""
    checked = search(max_kernel_ops=3)
    unchecked = search(max_kernel_ops=3, final_kernel_checks=False)
    assert checked.candidates and [c.hash for c in checked.candidates] == [c.hash for c in unchecked.candidates]
    assert checked.report.pruned["goal"] > 0 and "goal" not in unchecked.report.pruned
    assert checked.report.states < unchecked.report.states


def test_ops_no_target_can_use_are_dropped_once(tmp_path: Path) -> None:
    res = search(run_dir=tmp_path)  # exp, at both levels: RMSNorm+Linear never exponentiates
    root = [e for e in res.events() if e["e"] == "prune" and e.get("op") == "exp"]
    assert {e["level"] for e in root} == {"kernel", "block"} and all(e["why"] == "oracle" for e in root)
    verdicts = RunFolder(res.run_dir).verdicts()
    assert "no target applies" in verdicts[root[0]["expr"]]["reason"]
    assert not any((e["d"] or [None, None])[1] == "exp" for e in res.events() if e["e"] == "expand")


def test_index_checks_keep_the_verified_set(reference_run: ml.search.SearchResult) -> None:
    """Diagonal tiles (X's rows and W's columns split by one axis) are cut; no verified graph is lost."""
    unchecked = search(index_checks=False)
    assert [c.hash for c in reference_run.candidates] == [c.hash for c in unchecked.candidates]
    assert reference_run.report.pruned["index"] > 0 and "index" not in unchecked.report.pruned
    assert reference_run.report.states < unchecked.report.states
