"""SPEC §9's hand-written fused μGraphs equal their unfused programs at the paper shapes."""

from __future__ import annotations

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.bench.harness import input_scale, random_inputs, relative_error

CASES = [(n, b) for n in fused.FUSED for b in ((1, 8) if n in ("rmsnorm", "gqa") else (1,))]


@pytest.mark.parametrize(("name", "batch"), CASES)
def test_fused_graph_matches_program_float32(name: str, batch: int) -> None:
    prog, graph = programs.PROGRAMS[name](batch), fused.FUSED[name](batch)
    assert graph.input_types == prog.input_types
    assert graph.output_types == prog.output_types
    ins = random_inputs(prog, seed=3, scale=input_scale(name))
    (want,) = ml.interpret(prog, ins, dtype="float32")
    (got,) = ml.interpret(graph, ins, dtype="float32")
    assert relative_error(got, want) < 1e-4
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_fused_gqa_is_two_kernels_and_others_one() -> None:
    assert len(fused.gqa(1).compute_nodes) == 2
    for name in ("rmsnorm", "gated_mlp", "lora"):
        assert [n.op.value for n in fused.FUSED[name](1).compute_nodes] == ["customized"]


def test_a_wrong_fused_graph_is_caught() -> None:
    """The check above can fail: swapping W1 and W2 in GatedMLP changes the result."""
    prog = programs.gated_mlp(1)
    ins = random_inputs(prog, seed=3)
    (want,) = ml.interpret(prog, ins, dtype="float32")
    (got,) = ml.interpret(fused.gated_mlp(1), [ins[0], ins[2], ins[1]], dtype="float32")
    assert relative_error(got, want) > 1e-2


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_programs_build_at_both_batch_sizes(name: str) -> None:
    for b in (1, 8):
        g = programs.PROGRAMS[name](batch_size=b)
        assert len(g.outputs) == 1
        assert all(t.dtype is ml.float16 for t in g.input_types)


def test_paper_shapes() -> None:
    assert [t.dims for t in programs.rmsnorm(8).input_types] == [(16, 4096), (4096, 6144)]
    assert [t.dims for t in programs.mha(8).input_types] == [(256, 16, 64), (256, 64, 4096), (256, 4096, 64)]
    assert [t.dims for t in programs.mqa(1).input_types] == [(1, 1024, 64), (1, 64, 4096), (1, 4096, 64)]
    assert [t.dims for t in programs.ntrans(8).input_types] == [(64, 4096)] * 3
    assert programs.gqa(1).output_types[0].dims == (2, 256, 64)
