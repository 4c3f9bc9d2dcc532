"""Inputs declared with strides (a column-major weight, padded rows, a stride-0 broadcast): the generated loaders
address global memory by the strides, and the emulator passes each input laid out in them."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.bench.harness import relative_error
from mirage_lab.codegen import emulate, plan_cuda
from mirage_lab.codegen.emulate import EmulationError, run_cuda_on_cpu
from mirage_lab.codegen.run import lay_out
from mirage_lab.errors import InputError

needs_gxx = pytest.mark.skipif(not emulate.gxx_available(), reason="g++ not installed")
FP16_TOL = 2e-2
PHI = -1
Strides = tuple[int, int] | None
#: the paper's RMSNorm + Linear shape (batch 1), and a small one for the checks that only need some shape
PAPER, SMALL = (2, 4096, 6144), (2, 512, 768)


def rmsnorm_program(w_strides: Strides, shape: tuple[int, int, int] = PAPER) -> ml.KernelGraph:
    """RMSNorm + Linear with W (K, N) declared in ``w_strides``, e.g. column-major (1, K)."""
    m, k, n = shape
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(m, k), dtype=ml.float16)
    w = g.new_input(dims=(k, n), dtype=ml.float16, strides=w_strides)
    g.mark_output(g.matmul(g.rms_norm(x), w))
    return g.freeze()


def rmsnorm_fused(w_strides: Strides, shape: tuple[int, int, int] = PAPER) -> ml.KernelGraph:
    """The hand-fused RMSNorm + Linear kernel (bench.fused.rmsnorm) with W declared in ``w_strides``."""
    m, k, n = shape
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(m, k), dtype=ml.float16)
    w = g.new_input(dims=(k, n), dtype=ml.float16, strides=w_strides)
    tb = ml.new_threadblock_graph(grid_dim=(n // 24, 1, 1), forloop_range=k // 128)
    tx = tb.new_input(dtensor=x, input_map=(PHI, PHI, PHI), forloop_dim=1)
    tw = tb.new_input(dtensor=w, input_map=(1, PHI, PHI), forloop_dim=0)
    rms = tb.forloop_accum(tx, "rms")
    tb.new_output(stensor=tb.div(tb.forloop_accum(tb.matmul(tx, tw)), rms), output_map=(1, PHI, PHI))
    g.mark_output(g.customized([x, w], tb)[0])
    return g.freeze()


@functools.cache
def _inputs(shape: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    m, k, n = shape
    rng = np.random.default_rng(7)
    return rng.uniform(-1, 1, (m, k)).astype(np.float16), rng.uniform(-1, 1, (k, n)).astype(np.float16)


def _error(graph: ml.KernelGraph, inputs: list[np.ndarray], **kw: object) -> float:
    (want,) = ml.interpret(graph, [a.astype(np.float64) for a in inputs])
    (got,) = run_cuda_on_cpu(graph, inputs, **kw)  # type: ignore[arg-type]
    return relative_error(got.astype(np.float64), want)


MAKERS: dict[str, Callable[..., ml.KernelGraph]] = {"program": rmsnorm_program, "fused": rmsnorm_fused}


@needs_gxx
@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_a_column_major_weight_is_read_as_declared(kind: str) -> None:
    """W column-major, at the paper's shape: the loaders read W element by element at column * K + row, and the
    result is the interpreter's (which sees only logical values)."""
    graph = MAKERS[kind]((1, 4096))
    source = ml.generate_cuda(graph)
    assert ", &in1[" not in source and " * 4096];" in source  # no vector copies of W; rows 4096 elements apart
    assert "mirage_cp_async<16>(" in source  # X's are
    assert ", &in1[" in ml.generate_cuda(MAKERS[kind](None))  # row-major W keeps its vector copies
    assert _error(graph, list(_inputs(PAPER))) < FP16_TOL


@needs_gxx
@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_reading_the_wrong_layout_is_caught(kind: str) -> None:
    """The check can fail: the kernels generated for a row-major W, run on the column-major W the emulator lays
    out, compute something else."""
    graph = MAKERS[kind]((1, SMALL[1]), SMALL)
    row_major = ml.generate_cuda(MAKERS[kind](None, SMALL))
    try:  # its ring of W tiles does not fit the column-major plan, or it reads the wrong elements
        assert _error(graph, list(_inputs(SMALL)), source=row_major) > 0.1
    except EmulationError as e:
        assert "cp.async outside the planned shared memory" in str(e)
    assert _error(graph, list(_inputs(SMALL))) < FP16_TOL


@needs_gxx
def test_padded_rows_keep_vector_loads() -> None:
    """Rows of 768 halves 776 apart (inner stride 1, every row 16-byte aligned): still vector loads."""
    n = SMALL[2]
    graph = rmsnorm_fused((n + 8, 1), SMALL)
    assert ", &in1[" in ml.generate_cuda(graph)
    assert _error(graph, list(_inputs(SMALL))) < FP16_TOL
    odd = rmsnorm_fused((n + 1, 1), SMALL)  # rows start off alignment: element by element
    assert ", &in1[" not in ml.generate_cuda(odd)
    assert _error(odd, list(_inputs(SMALL))) < FP16_TOL


@needs_gxx
def test_library_calls_read_the_strided_input_too() -> None:
    graph = rmsnorm_program((1, SMALL[1]), SMALL)
    assert _error(graph, list(_inputs(SMALL)), library_calls=True) < FP16_TOL


@needs_gxx
def test_a_stride_zero_input_must_repeat() -> None:
    """A (8, 64) input declared with strides (0, 1) is one row in memory: an array whose rows agree is read
    correctly; one whose rows differ cannot be laid out so, and is refused with the input named."""
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 64), dtype=ml.float16, strides=(0, 1))
    y = g.new_input(dims=(8, 64), dtype=ml.float16)
    g.mark_output(g.mul(g.exp(x), y))
    graph = g.freeze()
    rng = np.random.default_rng(1)
    row = rng.uniform(-1, 1, (1, 64)).astype(np.float16)
    other = rng.uniform(-1, 1, (8, 64)).astype(np.float16)
    assert _error(graph, [np.repeat(row, 8, axis=0), other]) < FP16_TOL
    with pytest.raises(InputError, match=r"input 0 \(d0\) is declared with strides \(0, 1\), under which some of its "
                                         r"elements share memory, but the array differs between them"):
        run_cuda_on_cpu(graph, [other, other])


def test_an_array_already_in_the_declared_layout_is_used_as_it_is() -> None:
    w = np.asfortranarray(np.arange(12, dtype=np.float16).reshape(3, 4))
    laid = lay_out(np, w, np.float16, (3, 4), (1, 3), "input 1")
    assert np.shares_memory(laid, w) and laid.strides == (2, 6)
    copied = lay_out(np, np.ascontiguousarray(w), np.float16, (3, 4), (1, 3), "input 1")
    assert copied.strides == (2, 6) and np.array_equal(copied, w)
    assert lay_out(np, w, np.float16, (3, 4), None, "input 1").flags.c_contiguous


def test_the_plan_shows_the_declared_strides() -> None:
    text = str(plan_cuda(rmsnorm_program((1, 512), SMALL)))
    assert "d1: f16[512, 768] strides (1, 512)" in text and "d0: f16[2, 512]," in text
