"""The vectorised interpreter against SPEC §3.4 taken literally, and against plain numpy."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings

import mirage_lab as ml
from mirage_lab.ir.builder import BlockGraphBuilder, KernelGraphBuilder
from mirage_lab.ir.tensor import DTensor, STensor
from tests.semantics.literal import interpret_literal
from tests.strategies import kernel_graphs, random_inputs

PHI = -1
Body = Callable[[BlockGraphBuilder, list[STensor]], None]


def _graph(dims: list[tuple[int, ...]], grid: tuple[int, int, int], F: int,
           maps: list[tuple[tuple[int, int, int], int]], body: Body, dimx: int = 64) -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    xs = [g.new_input(dims=d, dtype=ml.float32) for d in dims]
    tb = ml.new_threadblock_graph(grid_dim=grid, forloop_range=F, reduction_dimx=dimx)
    ts = [tb.new_input(dtensor=x, input_map=m, forloop_dim=f) for x, (m, f) in zip(xs, maps, strict=True)]
    body(tb, ts)
    for o in g.customized(xs, tb):
        g.mark_output(o)
    return g.freeze()


def _positive(rng: np.random.Generator, dims: tuple[int, ...]) -> np.ndarray:
    return rng.uniform(0.5, 1.5, dims)


CASES: dict[str, ml.KernelGraph] = {
    # one dim both grid-mapped and the for-loop dim: block b reads [(b·F + i)·t, …)
    "grid_and_fmap_same_dim": _graph(
        [(4, 24)], (2, 1, 1), 3, [((1, PHI, PHI), 1)],
        lambda tb, t: tb.new_output(tb.forloop_accum(tb.exp(t[0])), (1, PHI, PHI))),
    "accumulators_sum_mean_rms": _graph(
        [(4, 32)], (2, 1, 1), 4, [((0, PHI, PHI), 1)],
        lambda tb, t: (tb.new_output(tb.div(tb.forloop_accum(t[0], "sum"), tb.forloop_accum(t[0], "rms")),
                                     (0, PHI, PHI)),
                       tb.new_output(tb.forloop_accum(t[0], "mean"), (0, PHI, PHI)))),
    "redtox_strided": _graph(
        [(2, 64)], (1, 1, 1), 2, [((PHI, PHI, PHI), 1)],
        lambda tb, t: tb.new_output(tb.forloop_accum(t[0], "sum_todimx"), (PHI, PHI, PHI)), dimx=8),
    "max_accumulator_and_post_loop_ops": _graph(
        [(6, 16)], (3, 1, 1), 2, [((0, PHI, PHI), 1)],
        lambda tb, t: tb.new_output(tb.sqrt(tb.exp(tb.forloop_accum(t[0], "max"))), (0, PHI, PHI))),
    "rescale_accumulators": _graph(
        [(4, 16), (4, 2)], (2, 1, 1), 2, [((0, PHI, PHI), 1), ((0, PHI, PHI), 1)],
        lambda tb, t: (tb.new_output(tb.forloop_accum(t[0], "nored_rescale", rescale=t[1]), (0, PHI, PHI)),
                       tb.new_output(tb.forloop_accum(t[0], "sum_rescale", rescale=t[1]), (0, PHI, PHI)))),
    "reduction_max_running": _graph(
        [(2, 32)], (1, 1, 1), 4, [((PHI, PHI, PHI), 1)],
        lambda tb, t: [tb.new_output(tb.forloop_accum(o), (PHI, PHI, PHI)) for o in tb.reduction_max(t[0], 1)]),
    "three_grid_axes_3d_omap_permuted": _graph(
        [(4, 6, 8), (4, 8, 10)], (4, 3, 2), 2, [((0, 1, PHI), 2), ((0, PHI, 2), 1)],
        lambda tb, t: tb.new_output(tb.forloop_accum(tb.matmul(t[0], t[1])), (0, 1, 2))),
    "omap_swaps_axes": _graph(
        [(6, 8)], (2, 3, 1), 1, [((1, 0, PHI), PHI)],
        lambda tb, t: tb.new_output(tb.forloop_accum(tb.relu(t[0])), (1, 0, PHI))),
    "block_ops_reduction_concat_norm_sub_pow": _graph(
        [(4, 16), (4, 16)], (2, 1, 1), 2, [((0, PHI, PHI), 1), ((0, PHI, PHI), 1)],
        lambda tb, t: tb.new_output(tb.forloop_accum(tb.pow(  # positive base, signed exponent
            tb.concat(t[0], tb.reduction(t[0], 1), 1),
            tb.concat(tb.rms_norm(tb.sub(t[0], t[1])), tb.reduction(t[1], 1), 1))), (0, PHI, PHI))),
    "reduction_to_dimx_block": _graph(
        [(4, 32)], (2, 1, 1), 1, [((0, PHI, PHI), PHI)],
        lambda tb, t: tb.new_output(tb.forloop_accum(tb.reduction_to_dimx(t[0], 1)), (0, PHI, PHI)), dimx=8),
    "concat_then_matmul": _graph(
        [(4, 6), (4, 10), (6, 8), (10, 8)], (1, 2, 1), 1,
        [((PHI, PHI, PHI), PHI), ((PHI, PHI, PHI), PHI), ((PHI, 1, PHI), PHI), ((PHI, 1, PHI), PHI)],
        lambda tb, t: tb.new_output(tb.forloop_accum(tb.concat_then_matmul(*t)), (PHI, 1, PHI))),
    "concat_then_matmul_split_points_differ": _graph(  # [A0 A1] @ [B0; B1] with A0's 10 columns, B0's 6 rows
        [(4, 10), (4, 6), (6, 8), (10, 8)], (1, 2, 1), 1,
        [((PHI, PHI, PHI), PHI), ((PHI, PHI, PHI), PHI), ((PHI, 1, PHI), PHI), ((PHI, 1, PHI), PHI)],
        lambda tb, t: tb.new_output(tb.forloop_accum(tb.concat_then_matmul(*t)), (PHI, 1, PHI))),
    "unary_zoo_and_scalars": _graph(
        [(4, 8)], (2, 1, 1), 2, [((0, PHI, PHI), 1)],
        lambda tb, t: tb.new_output(tb.forloop_accum(tb.clamp(tb.mul_scalar(tb.gelu(tb.silu(
            tb.sigmoid(tb.log(tb.square(t[0]))))), 3.0), -0.5, 0.5)), (0, PHI, PHI))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_vectorised_interpreter_matches_literal_execution_model(name: str) -> None:
    g = CASES[name]
    rng = np.random.default_rng(7)
    ins = [_positive(rng, t.dims) for t in g.input_types]
    got = ml.interpret(g, ins)
    want = interpret_literal(g, ins)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert np.isfinite(b).all()
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_replicated_fmap_loader_accumulates_f_copies() -> None:
    """An iteration-invariant tile (fmap φ) summed by NO_RED counts F times."""
    g = _graph([(4, 8)], (2, 1, 1), 5, [((0, PHI, PHI), PHI)],
               lambda tb, t: tb.new_output(tb.forloop_accum(t[0]), (0, PHI, PHI)))
    x = np.arange(32.0).reshape(4, 8)
    np.testing.assert_array_equal(ml.interpret(g, [x])[0], 5 * x)


def _kernel(build: Callable[[KernelGraphBuilder, DTensor], DTensor], dims: tuple[int, ...]) -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=dims, dtype=ml.float32)
    g.mark_output(build(g, x))
    return g.freeze()


def test_kernel_reduction_groups_strided() -> None:
    g = _kernel(lambda g, x: g.reduction(x, 1, group_size=4), (3, 12))
    x = np.arange(36.0).reshape(3, 12)
    want = x[:, 0:4] + x[:, 4:8] + x[:, 8:12]  # out[j] = Σ_k x[j + 4k]
    np.testing.assert_array_equal(ml.interpret(g, [x])[0], want)


def test_kernel_rms_norm_over_trailing_dims() -> None:
    g = _kernel(lambda g, x: g.rms_norm(x, normalized_shape=(3, 4)), (2, 3, 4))
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    want = x / np.sqrt((x**2).mean(axis=(1, 2), keepdims=True))
    np.testing.assert_allclose(ml.interpret(g, [x])[0], want, rtol=1e-12)


def test_kernel_batched_matmul_and_broadcasting_binary() -> None:
    g = ml.new_kernel_graph()
    a = g.new_input(dims=(2, 3, 4), dtype=ml.float32)
    b = g.new_input(dims=(2, 4, 5), dtype=ml.float32)
    c = g.new_input(dims=(2, 3, 1), dtype=ml.float32)
    g.mark_output(g.div(g.matmul(a, b), c))
    rng = np.random.default_rng(1)
    xa, xb, xc = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5)), rng.uniform(1, 2, (2, 3, 1))
    np.testing.assert_allclose(ml.interpret(g, [xa, xb, xc])[0], (xa @ xb) / xc, rtol=1e-12)


def test_interpret_float32_dtype_and_host_output() -> None:
    g = _kernel(lambda g, x: g.exp(x), (2, 2))
    (out,) = ml.interpret(g, [np.zeros((2, 2))], dtype="float32")
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    np.testing.assert_array_equal(out, np.ones((2, 2)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernel_graphs())
def test_random_graphs_match_literal_execution_model(g: ml.KernelGraph) -> None:
    """Random valid μGraphs (every op, map and accumulator): vectorised == one loop per block."""
    note(str(g))
    ins = random_inputs(g, seed=11)
    with np.errstate(all="ignore"):
        got = ml.interpret(g, ins)
        want = interpret_literal(g, ins)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True)


def test_concat_then_matmul_multiplies_the_concatenations() -> None:
    """The macro is [A0 A1] @ [B0; B1] (SPEC §3.3), also when A0's columns are not B0's rows."""
    for name in ("concat_then_matmul", "concat_then_matmul_split_points_differ"):
        g = CASES[name]
        a0, a1, b0, b1 = (np.random.default_rng(3).uniform(-1, 1, t.dims) for t in g.input_types)
        (got,) = ml.interpret(g, [a0, a1, b0, b1])
        np.testing.assert_allclose(got, np.concatenate([a0, a1], -1) @ np.concatenate([b0, b1], -2), rtol=1e-12)
