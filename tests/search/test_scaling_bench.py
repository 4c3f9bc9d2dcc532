"""benchmarks/scaling.py: the scheduling simulation against hand-worked cases, and the recorded task costs."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO_ROOT, load_script

SCRIPT = REPO_ROOT / "benchmarks" / "scaling.py"


def load() -> ModuleType:
    return load_script(SCRIPT, "bench_scaling")


def whole(s: ModuleType, name: str, frontier: float, tasks: tuple[float, ...], wall: float) -> object:
    """A record of tasks that each finished in their first call."""
    return s.Recorded(name, frontier, tuple(s.Task((t, False)) for t in tasks), True, wall, extra={"version": 1})


def test_the_simulation_by_hand() -> None:
    s = load()
    even = whole(s, "even", 1.0, (1.0,) * 8, 9.0)
    assert s.simulate(even, 1, 0.0, 0.0) == pytest.approx(9.0)
    assert s.simulate(even, 2, 0.0, 0.0) == pytest.approx(5.0)
    assert s.simulate(even, 8, 0.0, 0.0) == pytest.approx(2.0)
    assert s.simulate(even, 64, 0.0, 0.0) == pytest.approx(2.0)  # more workers than tasks: no faster
    assert s.simulate(even, 8, 0.0, 0.5) == pytest.approx(2.5)  # each worker's start, once
    assert s.simulate(even, 8, 0.1, 0.0) == pytest.approx(1.0 + 0.8 + 1.0)  # hand-outs one after another
    skewed = whole(s, "skewed", 0.0, (5.0, 1.0, 1.0, 1.0), 8.0)
    assert s.simulate(skewed, 4, 0.0, 0.0) == pytest.approx(5.0)
    frame = s.table([even, skewed], (1, 2, 4, 64), 0.0, 0.0)
    row = frame.set_index(["run", "workers"]).loc[("skewed", 4)]
    assert row["bound"] == "longest task" and row["speedup"] == pytest.approx(8.0 / 5.0)
    assert frame.set_index(["run", "workers"]).loc[("even", 2), "bound"] == "work"
    assert (frame["efficiency"] <= 1.0 + 1e-9).all()


def test_split_tasks_and_batches_by_hand() -> None:
    """A heavy task: its slice, then its continuation, whose sub-tasks go out first in batches; the parent's
    time per result and the trials each worker evaluates once count."""
    s = load()
    heavy = s.Task((1.0, False), (1.0, False), ((1.0, False),) * 8)
    run = s.Recorded("split", 0.0, (heavy, s.Task((1.0, True))), True, 12.0, trials_s=2.0)
    assert s.simulate(run, 1, 0.0, 0.0, batched=False) == pytest.approx(1 + 1 + 1 + 2 + 8)  # (trials once)
    # 4 workers: slices at 0 (task 0) and 0 (task 1, + trials: ends at 3); continuation at 1..2; 8 sub-tasks in
    # batches of one (8 // 16 = 0 → 1) on the three free workers from 2: 2+3, then the worker free at 3 takes more
    assert s.simulate(run, 4, 0.0, 0.0, batched=False) == pytest.approx(5.0)
    # trials evaluated once, before any task (no worker start to hide them behind): everything 2 s later
    assert s.simulate(run, 4, 0.0, 0.0, trials="once", batched=False) == pytest.approx(6.0)
    assert s.simulate(run, 4, 0.0, 2.0, trials="once", batched=False) == pytest.approx(6.0)
    slow_parent = s.Recorded("parent", 0.0, (s.Task((0.0, False)),) * 100, True, 1.0, parent_s=0.01)
    assert s.simulate(slow_parent, 64, 0.0, 0.0, batched=False) == pytest.approx(1.0)  # one result at a time
    assert s.bounds(slow_parent, 64, 0.0, 0.0)["parent"] == pytest.approx(1.0)


def test_every_recorded_run_replays(tmp_path: Path) -> None:
    s = load()
    paths = sorted((REPO_ROOT / "data" / "task_costs").rglob("*.json*"))
    assert paths, "data/task_costs holds no recorded runs"
    for p in paths:
        run = s.Recorded.load(p)
        assert run.tasks_s and run.frontier_s >= 0
        serial = s.replay(run, 1, 0.0, 0.0)  # one worker: every second one after another
        assert serial.wall_s == pytest.approx(sum(run.tasks_s) + run.trials_s * any(
            u[1] for t in run.tasks for u in [t.slice, *([t.cont] if t.cont else []), *t.subs])
            + run.parent_own_s + serial.calls * run.per_call_s
            # (a slice that yielded its call is resumed, and the parent takes one more result)
            + serial.resumes * (s.RESUME_S + run.taking_s(1, False) - run.taking_s(0, False)))
        for start in (0.0, 2.0):  # no projection passes what no hand-out policy can
            assert s.simulate(run, 256, 0.0, start) >= s.ceiling(run, 256, start) - 1e-9
    out = subprocess.run([sys.executable, str(SCRIPT), "--workers", "1,2,64", "--json", str(tmp_path / "s.json"),
                          "--html", str(tmp_path / "s.html")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "bounded by the" in out.stdout and (tmp_path / "s.html").stat().st_size > 1000


def test_the_ceiling_by_hand() -> None:
    """The wall time no hand-out policy beats: the work shared out, or the longest task's calls one after another
    (slice, continuation, its longest sub-task), or the parent's own time; each after the frontier, the worker
    start and before the merge."""
    s = load()
    heavy = s.Task((1.0, False), (2.0, False), ((0.5, False), (3.0, False), (0.5, False)))
    assert heavy.chain_s == pytest.approx(6.0)
    run = s.Recorded("ceiling", 0.5, (heavy, s.Task((1.0, False))), True, 9.0, finish_s=0.25)
    assert s.ceiling(run, 64, 0.0) == pytest.approx(0.5 + 6.0 + 0.25)
    assert s.ceiling(run, 64, 1.0) == pytest.approx(0.5 + 1.0 + 6.0 + 0.25)
    assert s.ceiling(run, 1, 0.0) == pytest.approx(0.5 + 8.0 + 0.25)  # one worker: all the work
    assert s.simulate(run, 64, 0.0, 0.0) == pytest.approx(s.ceiling(run, 64, 0.0))  # met: nothing waits
    frame = s.table([run], (1, 64), 0.0, 0.0)
    assert frame.set_index("workers").loc[64, "ceiling"] == pytest.approx(round(8.75 / 6.75, 2))
    slow = s.Recorded("slow parent", 0.0, (s.Task((0.01, False)),) * 100, True, 2.0, parent_s=0.02)
    assert s.ceiling(slow, 64, 0.0) == pytest.approx(2.0)


def test_a_slice_yields_its_call_in_the_replay() -> None:
    """A call of slices with a budget (``task.run_batch``): a slice with others behind it stops at the budget, its
    rest (plus what resuming costs) goes out again first, alone; a slice that is last in its call runs whole."""
    s = load()
    heavy, light = s.Task((2.0, False, 1)), s.Task((0.1, True))
    run = s.Recorded("yields", 0.0, (heavy, light, light), True, 2.2)
    rests: dict[int, float] = {}
    units, done, again, yielded = s.slices_in_call(run, [(1, 0), (0, 0), (2, 0)], rests, 0.25)
    assert yielded and done == [(1, 0)] and again == [(0, 0), (2, 0)]
    assert [u[0] for u in units] == pytest.approx([0.1, 0.15]) and units[1][2] == 0  # (found where it finishes)
    assert rests == {0: pytest.approx(1.85 + s.RESUME_S)}
    units, done, again, yielded = s.slices_in_call(run, [(0, 0)], rests, 0.25)
    assert not yielded and done == [(0, 0)] and not again and not rests
    assert units == [(pytest.approx(1.85 + s.RESUME_S), False, 1)]
    assert s.slices_in_call(run, [(0, 0), (1, 0)], {}, None) == ([(2.0, False, 1), (0.1, True, 0)],
                                                                 [(0, 0), (1, 0)], [], False)


def test_a_heavy_slice_no_longer_holds_back_the_one_behind_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two 2 s slices batched in one call (after the first light ones came back): the second used to start when
    the first had finished; now the first yields at the call's budget, and both run side by side."""
    s = load()
    heavy, light = s.Task((2.0, False)), s.Task((0.1, False))
    run = s.Recorded("two heavy", 0.0, (*(light,) * 4, heavy, heavy, *(light,) * 40), True, 8.4)
    got = s.replay(run, 4, 0.0, 0.0)
    monkeypatch.setattr(s, "call_budget_s", lambda *_: math.inf)  # (no budget: no call stops early)
    whole = s.replay(run, 4, 0.0, 0.0)
    assert got.resumes >= 1 and got.wall_s < 3.0 < 4.0 < whole.wall_s and whole.resumes == 0


def test_calls_worth_the_parents_round() -> None:
    """2 560 millisecond tasks on 256 workers, the parent 1.5 ms a call: calls of a share of the queue each (a task
    or two: 2 431 calls) keep the parent busy the whole 6 s; calls worth its round of the workers
    (``split.served_s``) leave it time. ``parent_call_s=0`` (``--parent-call-ms 0``) replays the policy before."""
    s = load()
    run = s.Recorded("tiny", 0.0, (s.Task((0.001, False)),) * 2560, True, 2.56, parent_fit=(0.0015, 0.0, 0.0))
    sized = s.replay(run, 256, 0.001, 0.0)
    before = s.replay(run, 256, 0.001, 0.0, parent_call_s=0.0)
    assert sized.calls < before.calls / 4 and sized.wall_s < before.wall_s / 2
    assert before.wall_s >= before.calls * 0.0015  # the parent binds: one call at a time


def test_calls_sized_to_what_the_parent_spends() -> None:
    """The same tasks, the parent 12 ms a call (a Dask client unpickling each task's verdicts): the replay measures
    that as the runner does (``split.ParentCost``) and sizes calls to it, where calls sized to ``PARENT_CALL_S``
    (1.5 ms) keep 64 workers waiting on the parent."""
    s = load()
    run = s.Recorded("tiny", 0.0, (s.Task((0.01, False)),) * 6400, True, 64.0, parent_fit=(0.002, 0.0, 0.0))
    measured = s.replay(run, 64, 0.010, 0.0)
    fixed = s.replay(run, 64, 0.010, 0.0, parent_call_s=0.0015)
    assert measured.calls < fixed.calls / 2 and measured.wall_s < 0.8 * fixed.wall_s


def test_per_call_costs_and_shared_cores_by_hand() -> None:
    """A call costs its worker ``call_s`` beyond its recorded seconds; with ``cores`` the workers and the parent
    share them, so the wall time is at least their CPU over the cores; a cluster run's CPU gives back the costs."""
    s = load()
    even = whole(s, "even", 1.0, (1.0,) * 8, 9.0)
    assert s.simulate(even, 2, 0.0, 0.0, batched=False, call_s=0.5) == pytest.approx(1.0 + 4 * 1.5)
    shared = s.replay(even, 2, 0.1, 0.0, batched=False, cores=1)
    assert shared.calls == 8 and shared.workers_cpu_s == pytest.approx(8.0)
    assert shared.parent_cpu_s == pytest.approx(1.0 + 8 * 0.1)
    assert shared.wall_s == pytest.approx(8.0 + 1.8)  # one core: every CPU second in turn
    # two cores: the CPU bound (9.8 / 2) is below the replay's own figure, which stands
    assert s.replay(even, 2, 0.1, 0.0, batched=False, cores=2).wall_s == s.simulate(even, 2, 0.1, 0.0, batched=False)
    assert s.simulate(even, 2, 0.1, 0.0, batched=False) > (8.0 + 1.8) / 2
    measured = s.calibration(even, 8, parent_cpu=1.0 + 8 * 0.002, workers_cpu=8.0 + 8 * 0.004)
    assert measured == {"overhead_ms": pytest.approx(2.0), "call_ms": pytest.approx(4.0)}


def test_when_the_first_verified_graph_returns_by_hand() -> None:
    """A record that says which calls verified μGraphs gives the time the first of them returns: serially after
    every call before it, with more workers as soon as its own worker is done (and the parent has its result)."""
    s = load()
    tasks = (s.Task((2.0, False, 0)), s.Task((2.0, False, 0)), s.Task((1.0, True, 1)), s.Task((1.0, True, 0)))
    run = s.Recorded("found", 1.0, tasks, True, 7.0, parent_s=0.1)
    assert s.replay(run, 1, 0.0, 0.0, batched=False).first_found_s == pytest.approx(1.0 + 5.0 + 3 * 0.1)
    assert s.replay(run, 4, 0.0, 0.0, batched=False).first_found_s == pytest.approx(1.0 + 1.0 + 0.1)
    assert s.replay(whole(s, "none", 0.0, (1.0,), 1.0), 2, 0.0, 0.0).first_found_s is None


def test_the_parents_time_per_call_task_and_sub_task_by_hand() -> None:
    """The gaps between recorded calls give the parent's time per call, per task result and per sub-task; the
    replay then charges a batch of sub-tasks its own rate, not a task's."""
    s = load()
    calls, t = [], 0.0
    for k in range(40):
        tasks, subs = k % 3, (k * 7) % 11
        items = [{"sub": None}] * tasks + [{"sub": j} for j in range(subs)]
        calls.append(("run_batch", t, 0.5, items))
        t += 0.5 + 0.002 + 0.001 * tasks + 0.0001 * subs
    assert s.fit_parent(calls) == pytest.approx([0.002, 0.001, 0.0001], abs=1e-9)
    assert s.fit_parent(calls[:5]) is None
    heavy = s.Task((1.0, False), (1.0, False), ((0.1, False),) * 10)
    fitted = s.Recorded("fit", 0.0, (heavy,), True, 3.0, parent_fit=(0.01, 0.1, 0.001))
    assert fitted.taking_s(10, subs=True) == pytest.approx(0.01 + 0.01)
    assert fitted.taking_s(2, subs=False) == pytest.approx(0.01 + 0.2)
    assert fitted.parent_own_s == pytest.approx(2 * 0.1 + 10 * 0.001)
    # one worker: slice, its result, continuation, its result, then the ten sub-tasks, each batch sized as it goes
    # out: 10 // 4 = 2 (no sub-task's seconds known yet), 8 // 4 = 2, then ones as the share shrinks (50 ms is one
    # sub-task of 0.1 s); a batch of two is taken at 0.01 + 2 × 0.001, one of one at 0.011
    one = s.replay(fitted, 1, 0.0, 0.0, batched=False)
    assert one.wall_s == pytest.approx(1.0 + 0.11 + 1.0 + 0.11 + 1.0 + 2 * 0.012 + 6 * 0.011)


def test_a_compressed_record_reads_as_its_json(tmp_path: Path) -> None:
    """``--record`` writes ``<name>.json.gz``; the replay reads it, and ``record_of`` finds it by its stem."""
    import gzip
    import json

    s = load()
    doc = {"format": s.FORMAT, "version": 2, "name": "tiny_bs1", "frontier_s": 0.5, "finish_s": 0.1,
           "parent_s": 0.001, "parent_fit": [0.002, 0.001, 0.0001], "trials_s": 0.0, "complete": True,
           "measured_wall_s": 2.0, "tasks": [{"slice": [1.0, True, 1], "cont": None, "subs": []}]}
    path = tmp_path / "tiny_bs1.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    assert s.record_of(tmp_path, "tiny_bs1") == path and s.records(tmp_path) == [path]
    run = s.Recorded.load(path)
    assert run.parent_fit == (0.002, 0.001, 0.0001) and s.found(run.tasks[0].slice) == 1
    assert s.replay(run, 1, 0.0, 0.0).first_found_s == pytest.approx(0.5 + 1.0 + 0.002 + 0.001)
    with pytest.raises(SystemExit, match="no task-cost record other_bs1"):
        s.record_of(tmp_path, "other_bs1")
