"""``skip_commuted_twins``: a commutative op's swapped operand pair is not walked where the ascending pair is.
The reduction keeps every μGraph up to the operand order of add and mul, so the same costs and the same best."""

from __future__ import annotations

from typing import Any

import pytest

import mirage_lab as ml
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.io import graph_from_dict, graph_to_dict
from mirage_lab.ir.ops import Op
from mirage_lab.search.bound import ranking_seconds
from mirage_lab.search.config import preset
from mirage_lab.search.runner import superoptimize

# a gated MLP small enough to search whole: silu(X·W1) ⊙ (X·W2), with mul at both levels
TINY = dict(forloop_ranges=(4,), grid_divisors=(8,), max_block_ops=9, max_kernel_ops=5, min_blocks=1,
            block_ops=("matmul", "silu", "mul", "accum_no_red"), kernel_ops=("matmul", "silu", "mul", "customized"))


def tiny_gated_mlp() -> KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 64), dtype=ml.float16)
    w1 = g.new_input(dims=(64, 64), dtype=ml.float16)
    w2 = g.new_input(dims=(64, 64), dtype=ml.float16)
    g.mark_output(g.mul(g.silu(g.matmul(x, w1)), g.matmul(x, w2)))
    return g.freeze()


def _search(twins: bool) -> ml.search.SearchResult:
    return superoptimize(tiny_gated_mlp(), preset("mlp", **TINY, skip_commuted_twins=twins), executor="serial",
                         run_dir=False, progress=False)


@pytest.fixture(scope="module")
def both() -> tuple[ml.search.SearchResult, ml.search.SearchResult]:
    return _search(False), _search(True)


def _uncommuted(g: KernelGraph) -> str:
    """The canonical hash of ``g`` with every commutative op's operands in ascending order, at both levels."""
    def sort(nodes: list[dict[str, Any]]) -> None:
        for n in nodes:
            if Op(n["op"]).spec.commutative:
                n["inputs"] = sorted(n["inputs"])
            if n.get("body"):
                sort(n["body"]["nodes"])
    doc = graph_to_dict(g)
    sort(doc["nodes"])
    return graph_from_dict(doc).canonical_hash()


def test_twins_keep_every_graph_up_to_operand_order(both: tuple[ml.search.SearchResult, ...]) -> None:
    full, reduced = both
    assert full.report.stop_reason == reduced.report.stop_reason == "complete"
    kept = {_uncommuted(c.graph) for c in reduced.candidates}
    assert {_uncommuted(c.graph) for c in full.candidates} == kept
    assert len(reduced.candidates) < len(full.candidates)  # the swapped twins are gone
    costs = {round(ranking_seconds(c.graph), 15) for c in full.candidates}
    assert {round(ranking_seconds(c.graph), 15) for c in reduced.candidates} == costs
    assert full.best is not None and reduced.best is not None
    assert ranking_seconds(reduced.best.graph) == ranking_seconds(full.best.graph)


def test_twins_are_counted_and_cut_states(both: tuple[ml.search.SearchResult, ...]) -> None:
    full, reduced = both
    assert reduced.report.pruned["twin"] > 0 and "twin" not in full.report.pruned
    assert reduced.report.states < full.report.states


def test_the_reference_presets_walk_every_twin() -> None:
    assert not any(preset(p).skip_commuted_twins for p in ("reference", "reference_mlp", "reference_attention",
                                                           "reference_lora"))
    assert all(preset(p).skip_commuted_twins for p in ("default", "mlp", "attention", "lora"))
