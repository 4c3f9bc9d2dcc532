"""The final choice (issue 36, item 2): measured among the ranking's first k on every backend, never a wrong
candidate; the cost model's without a device; recorded in result.json, and old result.json files still read."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.codegen.backend import Rendering
from mirage_lab.codegen.run import Timing
from mirage_lab.ir.builder import KernelGraphBuilder, as_graph
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.search.config import preset
from mirage_lab.search.load import load_run
from mirage_lab.search.profile import MEASURED, MODEL, Selection, launch_parameters, select
from mirage_lab.search.run_folder import RunFolder
from mirage_lab.search.runner import superoptimize
from mirage_lab.search.state import Candidate
from mirage_lab.semantics.interpret import interpret

SMALL = dict(forloop_ranges=(4,), grid_divisors=(8,), block_ops=("matmul", "exp", "div", "accum_no_red", "accum_rms"),
             max_block_ops=6, kernel_ops=("matmul", "exp", "customized"))


def small_rmsnorm() -> KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(2, 256), dtype=ml.float16)
    w = g.new_input(dims=(256, 512), dtype=ml.float16)
    g.mark_output(g.matmul(g.rms_norm(x), w))
    return g.freeze()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> ml.search.SearchResult:
    return superoptimize(small_rmsnorm(), preset("mlp", **SMALL), executor="serial",
                         run_dir=tmp_path_factory.mktemp("runs"), progress=False)


@dataclass
class FakeBackend:
    """A backend whose kernels are the interpreter (``wrong``: these hashes give perturbed outputs) and whose
    timer is a table (hash → milliseconds); it records what it was asked to time."""

    name: str
    times_ms: dict[str, float]
    wrong: frozenset[str] = frozenset()
    timed: list[str] = field(default_factory=list)

    def render(self, graph: KernelGraph | KernelGraphBuilder) -> Rendering:
        g = as_graph(graph)
        return Rendering(self.name, g, g.canonical_hash())

    def compile(self, rendering: Rendering) -> Rendering:
        return rendering

    def run(self, compiled: Rendering, inputs: Sequence[Any]) -> list[Any]:
        out = interpret(compiled.graph, list(inputs), dtype="float32")
        return [o + 1.0 for o in out] if compiled.source in self.wrong else out

    def time(self, compiled: Rendering, inputs: Sequence[Any], *, warmup: int = 16, repeats: int = 200) -> Timing:
        self.timed.append(compiled.source)
        return Timing.from_samples([self.times_ms[compiled.source]] * 3)

    def launch_parameters(self, rendering: Rendering) -> list[dict[str, Any]]:
        return [{"kernel": "k0", "grid": [len(rendering.source) % 7 + 1, 1, 1], "num_warps": 4}]


def candidates(run: ml.search.SearchResult, n: int) -> list[Candidate]:
    if len(run.candidates) < n:
        pytest.skip(f"the small search verified {len(run.candidates)} μGraphs, fewer than {n}")
    return run.candidates[:n]


def test_the_fastest_correct_candidate_on_any_backend_wins(run: ml.search.SearchResult) -> None:
    cands = candidates(run, 3)
    a, b, c = (x.hash for x in cands)
    cuda = FakeBackend("cuda", {a: 0.030, b: 0.020, c: 0.050})
    triton = FakeBackend("triton", {a: 0.025, b: 0.021, c: 0.010})
    sel = select(small_rmsnorm(), cands, 8, backends=[cuda, triton])
    assert sel.method == MEASURED and (sel.chosen, sel.backend) == (c, "triton")
    assert len(sel.measurements) == 6 and all(m.ok for m in sel.measurements)
    assert {m.median_us for m in sel.measurements if m.hash == b} == {20.0, 21.0}
    # the slower backend of the same candidate loses too: the choice is per (candidate, backend)
    sel = select(small_rmsnorm(), cands, 8, backends=[FakeBackend("cuda", {a: 0.03, b: 0.02, c: 0.05})])
    assert (sel.chosen, sel.backend) == (b, "cuda")


def test_a_wrong_candidate_is_never_timed_nor_chosen(run: ml.search.SearchResult) -> None:
    cands = candidates(run, 2)
    a, b = (x.hash for x in cands)
    fake = FakeBackend("cuda", {a: 0.001, b: 0.5}, wrong=frozenset({a}))  # the fastest computes something else
    sel = select(small_rmsnorm(), cands, 8, backends=[fake])
    assert sel.chosen == b and fake.timed == [b]
    bad = next(m for m in sel.measurements if m.hash == a)
    assert bad.result.startswith("WRONG") and bad.median_us is None and not bad.ok
    # nothing correct: the cost model's pick, and the reason says so
    sel = select(small_rmsnorm(), cands, 8, backends=[FakeBackend("cuda", {a: 1, b: 1}, wrong=frozenset({a, b}))])
    assert sel.method == MODEL and sel.chosen == a and "ran correctly" in sel.reason


def test_only_the_first_k_are_measured(run: ml.search.SearchResult) -> None:
    cands = candidates(run, 3)
    times = {x.hash: 0.05 - 0.01 * i for i, x in enumerate(cands)}  # the later, the faster
    fake = FakeBackend("cuda", times)
    sel = select(small_rmsnorm(), cands, 2, backends=[fake])
    assert fake.timed == [cands[0].hash, cands[1].hash] and sel.chosen == cands[1].hash
    assert sel.shortlist == (cands[0].hash, cands[1].hash) and sel.top_k == 2
    assert select(small_rmsnorm(), cands, 0, backends=[fake]).method == MODEL


def test_launch_parameters_are_recorded_and_round_trip(run: ml.search.SearchResult) -> None:
    cands = candidates(run, 2)
    fake = FakeBackend("triton", {x.hash: 0.01 * (i + 1) for i, x in enumerate(cands)})
    sel = select(small_rmsnorm(), cands, 8, backends=[fake], predicted=lambda g: 1e-5)
    assert all(m.launches and m.launches[0]["num_warps"] == 4 for m in sel.measurements)
    assert sel.predicted_us == {x.hash: 10.0 for x in cands}
    doc = json.loads(json.dumps(sel.to_dict()))
    assert Selection.from_dict(doc) == sel and "measured" in repr(sel)


def test_cuda_launch_parameters_come_from_the_plan(run: ml.search.SearchResult) -> None:
    from mirage_lab.codegen.cuda import CudaBackend

    best = run.candidates[0].graph
    backend = CudaBackend()
    (launch, *_) = launch_parameters(backend, backend.render(best))
    body = next(n.body for n in backend.render(best).graph.nodes if n.body is not None)
    assert launch["grid"] == list(body.grid) and launch["block"][0] == np.prod(body.block)
    assert launch["smem_bytes"] > 0


def test_without_a_device_the_cost_model_chooses_and_result_json_says_so(run: ml.search.SearchResult) -> None:
    sel = run.selection
    assert sel is not None and run.run_dir is not None
    if sel.method == MEASURED:
        pytest.skip("this machine has a device: the choice was measured")
    assert sel.method == MODEL and sel.reason and run.best is not None
    assert sel.chosen == run.candidates[0].hash == run.best.hash
    assert len(sel.shortlist) == min(8, len(run.candidates)) and not sel.measurements
    assert set(sel.predicted_us) == set(sel.shortlist) and all(v > 0 for v in sel.predicted_us.values())
    doc = json.loads((run.run_dir / "result.json").read_text())
    assert doc["selection"]["method"] == "cost model" and doc["selection"]["reason"] == sel.reason
    again = load_run(run.run_dir)
    assert again.selection == sel and again.best is not None and again.best.hash == sel.chosen


def test_the_chosen_candidate_is_the_best(run: ml.search.SearchResult) -> None:
    cands = candidates(run, 2)
    res = ml.search.SearchResult(run.program, run.config, list(cands), run.report, None, {},
                                 Selection(MEASURED, cands[1].hash, "cuda", 8, (cands[0].hash, cands[1].hash)))
    assert res.best is cands[1]
    frame = res.to_frame()
    assert list(frame["chosen"]) == [False, True]


def test_an_old_result_json_without_a_selection_still_reads(run: ml.search.SearchResult, tmp_path: Path) -> None:
    import shutil

    assert run.run_dir is not None
    old = tmp_path / run.run_dir.name
    shutil.copytree(run.run_dir, old)
    doc = json.loads((old / "result.json").read_text())
    del doc["selection"]
    folder = RunFolder(old)
    folder.writer = True
    folder.write("result.json", doc)
    folder.save_manifest()
    res = load_run(old)
    assert res.selection is None and res.best is not None and res.best.hash == doc["ranking"][0]
    assert "chosen" not in res.to_frame()
