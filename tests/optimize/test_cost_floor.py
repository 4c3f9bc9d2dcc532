"""``customized_floor``: a lower bound on the proxy cost of any kernel that extends a partial block graph, which
the search's branch and bound relies on (``search/bound.py``). Checked on every prefix of every customized kernel
of the fused benchmarks, the searches' best μGraphs and every μGraph the reference saved."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import mirage_lab as ml
from mirage_lab.ir.graph import BlockGraph, KernelGraph
from mirage_lab.ir.ops import Op
from mirage_lab.optimize.cost import customized_floor, proxy_cost
from tests.codegen.graphs import snapshot_graphs


def prefixes(bg: BlockGraph) -> Iterator[BlockGraph]:
    """The block graph as the search builds it: its loaders, then each compute op in turn, then the savers."""
    loaders = [n for n in bg.nodes if n.op is Op.INPUT]
    ops = [n for n in bg.nodes if n.op not in (Op.INPUT, Op.OUTPUT)]
    for k in range(len(ops) + 1):
        yield BlockGraph(bg.grid, bg.forloop_range, bg.tensors, (*loaders, *ops[:k]), bg.block, bg.reduction_dimx)
    yield bg


def check_floors(graph: KernelGraph, hardware: str) -> int:
    costs = {k.node: k.seconds for k in proxy_cost(graph, hardware).per_kernel}
    checked = 0
    for i, node in enumerate(graph.nodes):
        if node.body is None:
            continue
        floors = [customized_floor(p, node.inputs, hardware) for p in prefixes(node.body)]
        assert floors == sorted(floors), "the floor only grows as ops are added"
        assert floors[-1] <= costs[i] * (1 + 1e-12), (i, floors[-1], costs[i])
        checked += 1
    return checked


@pytest.mark.parametrize("hardware", ["H100", "A100"])
def test_floor_never_exceeds_a_kernels_cost(hardware: str) -> None:
    checked = sum(check_floors(make(), hardware) for make in snapshot_graphs(None).values())
    assert checked >= 20


def test_floor_on_the_reference_mugraphs(reference_dir: Path) -> None:
    checked = 0
    for path in sorted(reference_dir.glob("*.json")):
        for graph in ml.load_reference_checkpoint(path):
            checked += check_floors(graph, "H100")
    assert checked >= 100


def test_floor_is_the_launch_at_least_and_tight_for_a_whole_kernel() -> None:
    graph = snapshot_graphs(None)["fused_rmsnorm_bs1"]()
    (node,) = [n for n in graph.nodes if n.body is not None]
    whole = customized_floor(node.body, node.inputs)
    (kernel,) = proxy_cost(graph).per_kernel
    loaders_only = customized_floor(next(prefixes(node.body)), node.inputs)
    assert kernel.launch_s < loaders_only <= whole <= kernel.seconds
