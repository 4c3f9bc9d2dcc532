"""Round trips: own JSON (``io.dumps``/``io.loads``), builder code (``to_python``) and canonical hashes.

Benchmark programs, hand-built fused graphs and hypothesis-generated random graphs must come back
equal (``==``) with the same ``canonical_hash``, and the interpreter must give bit-identical outputs
on the original and the copy.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings

import mirage_lab as ml
from mirage_lab.ir import io, printer
from mirage_lab.ir.graph import BlockGraph, KernelGraph
from mirage_lab.ir.ops import Level, Op, ops_at
from tests.strategies import every_op_graph, kernel_graphs, random_inputs, rmsnorm_linear_fused

RANDOM = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run_code(code: str, name: str = "g") -> Any:
    ns: dict[str, Any] = {}
    exec(compile(code, "<to_python>", "exec"), ns)
    return ns[name]


def check_roundtrips(g: KernelGraph) -> None:
    (back,) = io.loads(io.dumps(g))
    assert back == g
    assert back.canonical_hash() == g.canonical_hash()
    rebuilt = run_code(printer.to_python(g))
    assert isinstance(rebuilt, KernelGraph)
    assert rebuilt == g
    assert rebuilt.canonical_hash() == g.canonical_hash()
    assert printer.to_python(rebuilt) == printer.to_python(g)
    assert str(rebuilt) == str(g)


def same_outputs(a: KernelGraph, b: KernelGraph, seed: int = 0) -> None:
    with np.errstate(all="ignore"):
        xs = ml.interpret(a, random_inputs(a, seed))
        ys = ml.interpret(b, random_inputs(b, seed))
    assert len(xs) == len(ys) == len(a.outputs)
    for x, y in zip(xs, ys, strict=True):
        np.testing.assert_array_equal(x, y)  # bit-identical; NaNs in the same places


# --------------------------------------------------------------------------- fixed graphs


@pytest.mark.parametrize("batch_size", [1, 8])
@pytest.mark.parametrize("name", sorted(ml.bench.programs.PROGRAMS))
def test_benchmark_programs_round_trip(name: str, batch_size: int) -> None:
    check_roundtrips(ml.bench.programs.PROGRAMS[name](batch_size=batch_size))


def test_fused_rmsnorm_linear_round_trips() -> None:
    check_roundtrips(rmsnorm_linear_fused())


def test_fused_rmsnorm_linear_computes_rmsnorm_linear() -> None:
    fused = rmsnorm_linear_fused(rows=4, hidden=64, out=512)
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(4, 64), dtype=ml.float16)
    w = g.new_input(dims=(64, 512), dtype=ml.float16)
    g.mark_output(g.matmul(g.rms_norm(x), w))
    program = g.freeze()
    xs = random_inputs(program, 3)
    (want,) = ml.interpret(program, xs)
    (got,) = ml.interpret(run_code(fused.to_python()), xs)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_every_op_is_covered_and_round_trips() -> None:
    g = every_op_graph()
    kernel_ops = {n.op for n in g.nodes}
    block_ops = {n.op for bg in g.block_graphs for n in bg.nodes}
    assert kernel_ops == set(ops_at(Level.KERNEL)) - {Op.OUTPUT}  # kernel outputs are marks, not nodes
    assert block_ops == set(ops_at(Level.BLOCK))
    check_roundtrips(g)
    same_outputs(g, run_code(g.to_python()))


def test_block_graph_to_python_defines_bg() -> None:
    for g in (rmsnorm_linear_fused(), every_op_graph()):
        (bg,) = g.block_graphs
        rebuilt = run_code(printer.to_python(bg), "bg")
        assert isinstance(rebuilt, BlockGraph)
        assert rebuilt == bg


def test_builders_are_accepted() -> None:
    b = ml.new_kernel_graph()
    b.mark_output(b.relu(b.new_input(dims=(3, 5), dtype=ml.float32)))
    assert run_code(printer.to_python(b)) == b.freeze()


def test_inputs_after_ops_keep_their_numbering() -> None:
    g = ml.new_kernel_graph()
    a = g.new_input(dims=(4, 4))
    e = g.exp(a)
    b = g.new_input(dims=(4, 4), strides=(1, 4))
    g.mark_output(g.mul(e, b))
    g.mark_output(a)  # an input may be an output too
    frozen = g.freeze()
    assert "d2:f16[4,4]{strides=(1,4)}" in str(frozen)
    check_roundtrips(frozen)


def test_other_dtypes_and_awkward_floats() -> None:
    g = ml.new_kernel_graph()
    a = g.new_input(dims=(2, 3), dtype=ml.DType.INT8)
    b = g.new_input(dims=(2, 3), dtype="uint16")
    c = g.mul_scalar(a, 0.1 + 0.2)
    c = g.clamp(c, -1e-300, 1.7976931348623157e308)
    g.mark_output(c)
    g.mark_output(g.mul_scalar(b, -0.0))
    frozen = g.freeze()
    assert "ml.DType.INT8" in frozen.to_python()
    check_roundtrips(frozen)


def test_large_shared_memory_graph_rebuilds_from_python() -> None:
    """A block graph built with a raised ``smem_limit`` records no limit; to_python passes one on."""
    g = big_smem_graph()
    assert f"smem_limit={printer.smem_bytes(g.block_graphs[0])}" in g.to_python()
    assert run_code(g.to_python()) == g


def test_large_shared_memory_graph_json_round_trip() -> None:
    g = big_smem_graph()
    assert io.loads(io.dumps(g))[0] == g


def big_smem_graph() -> KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(256, 512), dtype=ml.float32)
    tb = ml.new_threadblock_graph(grid_dim=(1, 1, 1), smem_limit=10**9)
    tb.new_output(stensor=tb.forloop_accum(tb.new_input(dtensor=x), "sum"))
    (o,) = g.customized([x], tb)
    g.mark_output(o)
    return g.freeze()


# --------------------------------------------------------------------------- random graphs


@RANDOM
@given(kernel_graphs())
def test_random_graphs_round_trip(g: KernelGraph) -> None:
    note(f"listing:\n{g}")  # failing examples show the listing, not the raw dataclass
    check_roundtrips(g)


@RANDOM
@given(kernel_graphs())
def test_random_graphs_interpret_identically_after_round_trips(g: KernelGraph) -> None:
    note(f"listing:\n{g}")
    (back,) = io.loads(io.dumps(g))
    same_outputs(g, back, seed=1)
    same_outputs(g, run_code(printer.to_python(g)), seed=2)


@settings(max_examples=50, deadline=None)
@given(kernel_graphs())
def test_random_graphs_print(g: KernelGraph) -> None:
    text = str(g)
    assert text.count("{ block ") == len(g.block_graphs)
    assert text.count(" = save[") == sum(len(bg.savers) for bg in g.block_graphs)
    maps = re.findall(r"= (?:load|save)\[([^\]]*)\]", text)
    assert len(maps) == sum(len(bg.nodes) - len(bg.compute_nodes) for bg in g.block_graphs)
    assert all("-1" not in m for m in maps)  # replicas print as φ, never -1
    html = printer.to_html(g)
    assert html.startswith('<div class="mirage-lab-graph">')
