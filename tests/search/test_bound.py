"""Branch and bound on the proxy cost (``cost_bound``, ``search/bound.py``): the bound is admissible on real
μGraphs, the reduction keeps the best μGraph and its ties, cuts states, and stays deterministic under budgets."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import mirage_lab as ml
from mirage_lab.ir.io import graph_to_dict
from mirage_lab.optimize.hardware import get_hardware
from mirage_lab.search import bound as bound_module
from mirage_lab.search import runner
from mirage_lab.search.bound import RANKING_HARDWARE, beyond, lower_bound, opening_bound, ranking_seconds
from mirage_lab.search.config import preset
from mirage_lab.search.enumerate import Enumerator
from mirage_lab.search.task import run_task, task_context
from tests.search.test_search import SMALL, search, small_rmsnorm


@pytest.fixture(scope="module")
def unbounded() -> ml.search.SearchResult:
    return search(cost_bound=False)


@pytest.fixture(scope="module")
def bounded() -> ml.search.SearchResult:
    return search(cost_bound=True)


def _costs(res: ml.search.SearchResult) -> dict[str, float]:
    return {c.hash: ranking_seconds(c.graph) for c in res.candidates}


def test_the_bound_never_exceeds_a_verified_graphs_cost(unbounded: ml.search.SearchResult) -> None:
    """Admissible: every state on the path to a verified μGraph is bounded by that μGraph's cost."""
    cfg = preset("mlp", **SMALL)
    assert len(unbounded.candidates) >= 3
    for c in unbounded.candidates:
        cost = ranking_seconds(c.graph)
        for i in range(1, len(c.decisions)):
            spent, bound = lower_bound(small_rmsnorm(), c.decisions[:i], smem_limit=cfg.smem_budget,
                                       reduction_dimx=cfg.reduction_dimx)
            assert spent < bound <= cost * (1 + 1e-12), (c.hash, i)
            assert not beyond(bound, cost)


def test_the_reduction_keeps_the_best_and_cuts_states(unbounded: ml.search.SearchResult,
                                                       bounded: ml.search.SearchResult) -> None:
    full, cut = _costs(unbounded), _costs(bounded)
    assert bounded.best is not None and unbounded.best is not None
    assert bounded.best.hash == unbounded.best.hash
    best = min(full.values())
    ties = {h for h, v in full.items() if v <= best * (1 + 1e-9)}
    assert ties <= set(cut)  # the best and every μGraph tied with it
    assert set(cut) <= set(full)  # nothing new: the bound only removes
    assert bounded.report.pruned["bound"] > 0
    assert bounded.report.states < unbounded.report.states
    assert bounded.report.stop_reason == "complete"


def test_an_incumbent_cuts_a_task_at_its_root() -> None:
    """A task handed the cost of a μGraph cheaper than anything below its root does nothing else, and says why."""
    program = small_rmsnorm()
    pdoc, cdoc = graph_to_dict(program), preset("mlp", **SMALL, cost_bound=True).to_dict()
    prog, config, oracle, verifier = task_context(pdoc, cdoc)
    front = Enumerator(prog, config, oracle, verifier, ids="f").run(frontier=True)
    parent, prefix = front.tasks[0]
    free = run_task(pdoc, cdoc, 0, parent, prefix, None, None, time.time())
    cut = run_task(pdoc, cdoc, 0, parent, prefix, None, None, time.time(), 1e-9)
    assert free["states"] > 1 and cut["states"] == 1 and cut["summary"]["pruned"] == {"bound": 1}
    assert cut["candidates"] == [] and cut["incumbent"] == 1e-9
    walker = Enumerator(prog, config, oracle, verifier, ids="t", incumbent=1e-9)
    (event,) = [e for e in walker.run(prefix, parent).events.events if e["e"] == "prune"]
    assert event["why"] == "bound" and event["best_us"] == 0.001 and "more than the cheapest" in event["reason"]


def test_with_budgets_the_bound_does_not_depend_on_the_executor() -> None:
    """Under a state budget tasks bound only by what they verify themselves, so every executor truncates
    the same stream."""
    serial = search(cost_bound=True, state_limit=1200)
    pooled = search(cost_bound=True, state_limit=1200, executor="process")
    assert serial.report.stop_reason == pooled.report.stop_reason == "state limit"
    assert [c.hash for c in pooled.candidates] == [c.hash for c in serial.candidates]
    assert pooled.report.states == serial.report.states


def test_the_process_pool_finds_the_same_best(bounded: ml.search.SearchResult) -> None:
    pooled = search(cost_bound=True, executor="process")
    assert pooled.best is not None and bounded.best is not None and pooled.best.hash == bounded.best.hash


def test_slices_keep_the_best_and_every_task(monkeypatch: pytest.MonkeyPatch, bounded: ml.search.SearchResult,
                                             tmp_path: Path) -> None:
    """Tasks first run as short slices; those a slice does not finish are continued later where the slice stopped,
    and the run is the same complete search with the same best, walking no state twice."""
    calls: list[tuple[int, int | None, bool]] = []  # (task, slice cap, whether it continues a slice)
    states: list[int] = []
    real = runner.run_task

    def spy(*args: Any) -> dict[str, Any]:
        calls.append((args[2], args[9], args[10] is not None))
        res = real(*args)
        states.append(res["states"])
        assert (res["resume"] is not None) == (res["stop_reason"] == "slice")
        return res

    monkeypatch.setattr(runner, "SLICE_STATES", 40)
    monkeypatch.setattr(runner, "run_task", spy)
    res = search(tmp_path, cost_bound=True)
    assert res.report.stop_reason == "complete" and res.report.tasks_done == res.report.tasks_total
    assert res.best is not None and bounded.best is not None and res.best.hash == bounded.best.hash
    continued = [i for i, cap, cont in calls if cont]
    assert continued and all(cap is None for _, cap, cont in calls if cont)
    assert all((i, 40, False) in calls for i in continued)  # every continuation follows its slice
    # continuations wait at the back of the queue, behind every task's slice
    assert max(calls.index((i, 40, False)) for i, _, _ in calls) < min(calls.index((i, None, True))
                                                                        for i in continued)
    expanded = [e["id"] for e in res.events() if e["e"] == "expand"]
    assert len(expanded) == len(set(expanded)) == res.report.states
    assert sum(states) == sum("." in node for node in expanded)  # (the tasks' ids are "<task>.<n>")
    again = search(tmp_path, cost_bound=True)  # a finished run is served from its folder
    assert again.report.cached and again.best is not None and again.best.hash == res.best.hash


def test_a_search_stopped_before_the_whole_runs_reports_what_slices_verified(
        monkeypatch: pytest.MonkeyPatch, unbounded: ml.search.SearchResult) -> None:
    real = runner.run_task

    results: list[dict[str, Any]] = []

    def slices_only(*args: Any) -> dict[str, Any]:
        if args[10] is not None:
            raise KeyboardInterrupt  # the user stops the search when the first continuation starts
        out = real(*args)
        if out["stop_reason"] == "slice":  # a slice never continued: marked by an hour of walking, to be found below
            out["seconds"]["enumeration"] += 3600.0
        results.append(out)
        return out

    monkeypatch.setattr(runner, "SLICE_STATES", 40)
    monkeypatch.setattr(runner, "run_task", slices_only)
    res = search(cost_bound=True)
    assert res.report.stop_reason == "interrupted" and res.report.tasks_done < res.report.tasks_total
    # the time split counts the unfinished slices' worker time too, not only the finished tasks'
    unfinished = sum(r["stop_reason"] == "slice" for r in results)
    assert unfinished and res.report.seconds["enumeration"] >= 3600.0 * unfinished
    found = {c.hash for c in res.candidates}
    assert found and found <= {c.hash for c in unbounded.candidates}  # μGraphs of the space, verified
    for c in res.candidates:
        assert ml.verify(c.graph, small_rmsnorm(), seed=3).equivalent


def test_a_later_kernel_is_cut_by_its_floor_as_it_opens() -> None:
    """Each customized op that opens below a closed one is bounded by the kernels so far plus its own floor (not
    only a task's root): in a two-kernel space the best μGraph and its ties stay, states drop, and the fast bound
    of an opening equals the replayed one."""
    kw: dict[str, Any] = dict(max_customized=2, max_block_ops=5)
    full, cut = search(cost_bound=False, **kw), search(cost_bound=True, **kw)
    costs = _costs(full)
    best = min(costs.values())
    assert cut.best is not None and full.best is not None and cut.best.hash == full.best.hash
    assert {h for h, v in costs.items() if v <= best * (1 + 1e-9)} <= set(_costs(cut)) <= set(costs)
    assert cut.report.states < full.report.states / 3
    pdoc, cdoc = graph_to_dict(small_rmsnorm()), preset("mlp", **{**SMALL, **kw}, cost_bound=True).to_dict()
    prog, config, oracle, verifier = task_context(pdoc, cdoc)
    events = Enumerator(prog, config, oracle, verifier, ids="", incumbent=best).run().events.events
    expands = {e["id"]: e for e in events if e["e"] == "expand"}

    def path(node: str | None) -> list[Any]:
        return [] if node is None else [*path(expands[node]["parent"]), *([expands[node]["d"]] if expands[node]["d"]
                                                                          else [])]

    cut_paths = [path(e["parent"]) for e in events if e["e"] == "prune" and e["why"] == "bound"]
    openings = [p for p in cut_paths if p[-1][0] == "c"]
    later = [p for p in openings if any(d[0] == "s" for d in p)]
    assert later  # second kernels, cut the moment they open
    limits: dict[str, Any] = dict(smem_limit=config.smem_budget, reduction_dimx=config.reduction_dimx)
    memo: dict[str, Any] = {}
    for p in later[:: max(1, len(later) // 50)] + openings[:20]:
        assert opening_bound(prog, p, memo=memo, **limits) == lower_bound(prog, p, **limits)


def test_a_complete_graph_dearer_than_the_best_is_not_verified(unbounded: ml.search.SearchResult,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """With the best's cost as the incumbent, only the best and its ties are verified; every dearer complete graph
    is cut before verification, with its exact cost in the event. (Here the kernels' floors would cut them all
    sooner, so the floor is weakened to a launch, still a lower bound, for the graphs to reach the test.)"""
    costs = _costs(unbounded)
    best = min(costs.values())
    launch = get_hardware(RANKING_HARDWARE).launch_s
    monkeypatch.setattr(bound_module, "customized_floor", lambda *a, **k: launch)
    pdoc, cdoc = graph_to_dict(small_rmsnorm()), preset("mlp", **SMALL, cost_bound=True).to_dict()
    prog, config, oracle, verifier = task_context(pdoc, cdoc)
    checked: list[str] = []
    monkeypatch.setattr(verifier, "check", lambda g, real=verifier.check: checked.append(g.canonical_hash()) or
                        real(g))
    out = Enumerator(prog, config, oracle, verifier, ids="", incumbent=best).run()
    ties = {h for h, v in costs.items() if v <= best * (1 + 1e-9)}
    assert {c.hash for c in out.candidates} == ties and len(costs) > len(ties)
    dearer = [e for e in out.events.events if e["e"] == "prune" and e["why"] == "bound" and "cost_us" in e]
    assert dearer and all(e["cost_us"] > e["best_us"] for e in dearer)
    assert "it is not verified" in dearer[0]["reason"]
    assert len(checked) <= len(ties) + sum(e["e"] == "candidate" and e["outcome"] == "rejected"
                                           for e in out.events.events)
