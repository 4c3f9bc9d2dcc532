"""Compiled μGraphs against the interpreter on a GPU (marked gpu: skipped without CuPy and a device)."""

from __future__ import annotations

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.bench.harness import input_scale, random_inputs, relative_error
from mirage_lab.semantics.backend import cupy_available
from tests.codegen.graphs import SEARCH_BEST, search_best

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cupy_available(), reason="needs CuPy and a CUDA device")]
FP16_TOL = 2e-2  # fp16 storage of tiles and outputs, fp32 arithmetic


def _fp16_inputs(graph: ml.KernelGraph, name: str) -> list[np.ndarray]:
    return [a.astype(np.float16) for a in random_inputs(graph, seed=11, scale=input_scale(name))]


@pytest.mark.parametrize("plain", [False, True])
@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("name", sorted(fused.FUSED))
def test_compiled_fused_graph_matches_interpreter(name: str, batch: int, plain: bool) -> None:
    import cupy

    graph = fused.FUSED[name](batch)
    ins = _fp16_inputs(graph, name)
    want = ml.interpret(graph, [a.astype(np.float64) for a in ins])
    try:
        compiled = ml.compile(graph, prefetch=not plain, split_sums=not plain, tensor_cores=not plain)
    except ml.MirageError as e:
        if "shared memory" in str(e):
            pytest.skip(str(e))
        raise
    got = compiled(*[cupy.asarray(a) for a in ins])
    for g, w in zip(got, want, strict=True):
        assert g.dtype == cupy.float16
        assert relative_error(cupy.asnumpy(g).astype(np.float64), w) < FP16_TOL


@pytest.mark.parametrize("stem", SEARCH_BEST)
def test_search_discovered_graphs_run_on_the_gpu(stem: str) -> None:
    """The best μGraph each benchmark search found, as compiled CUDA (tensor cores where tiles allow)."""
    import cupy

    graph = search_best(stem)
    ins = _fp16_inputs(graph, stem.split("_bs")[0])
    want = ml.interpret(graph, [a.astype(np.float64) for a in ins])
    got = ml.compile(graph)(*[cupy.asarray(a) for a in ins])
    for g, w in zip(got, want, strict=True):
        assert relative_error(cupy.asnumpy(g).astype(np.float64), w) < FP16_TOL


@pytest.mark.parametrize("name", sorted(fused.FUSED))
def test_unfused_baseline_matches_interpreter(name: str) -> None:
    import cupy

    from mirage_lab.codegen.run import unfused_cupy

    program = programs.PROGRAMS[name](1)
    ins = _fp16_inputs(program, name)
    (want,) = ml.interpret(program, [a.astype(np.float64) for a in ins])
    (got,) = unfused_cupy(program)(*[cupy.asarray(a) for a in ins])
    assert relative_error(cupy.asnumpy(got).astype(np.float64), want) < FP16_TOL


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_unfused_programs_run_as_generated_kernels(name: str) -> None:
    """Every benchmark program at batch 1, each op its own lowered kernel (codegen/lower.py), at the paper's shape."""
    import cupy

    from mirage_lab.codegen.run import unfused_cuda

    program = programs.PROGRAMS[name](1)
    # exp(Q·K) and MoE's exp(X·A) (K = 4096) must stay inside fp16 between the kernels
    scale = 0.1 if name == "moe" else input_scale(name) / 2
    ins = [a.astype(np.float16) for a in random_inputs(program, seed=11, scale=scale)]
    want = ml.interpret(program, [a.astype(np.float64) for a in ins])
    compiled = unfused_cuda(program)
    assert len(compiled.program.launches) == len(program.compute_nodes)
    got = compiled(*[cupy.asarray(a) for a in ins])
    for g, w in zip(got, want, strict=True):
        assert relative_error(cupy.asnumpy(g).astype(np.float64), w) < FP16_TOL


@pytest.mark.parametrize("kind", ["program", "fused"])
def test_a_column_major_weight_on_the_gpu(kind: str) -> None:
    """W declared column-major: CompiledGraph lays it out so, the loaders read it so; also W handed over already
    column-major (a transposed view), and the library-call path."""
    import cupy

    from tests.codegen.test_strides import MAKERS, PAPER, _inputs

    graph = MAKERS[kind]((1, 4096))
    x, w = _inputs(PAPER)
    (want,) = ml.interpret(graph, [x.astype(np.float64), w.astype(np.float64)])
    for compiled in (ml.compile(graph), ml.compile(graph, library_calls=True)):
        for w_dev in (cupy.asarray(w), cupy.asarray(np.ascontiguousarray(w.T)).T):
            (got,) = compiled(cupy.asarray(x), w_dev)
            assert relative_error(cupy.asnumpy(got).astype(np.float64), want) < FP16_TOL


def test_timing_reports_percentiles() -> None:
    import cupy

    from mirage_lab.codegen.run import time_callable

    graph = fused.FUSED["lora"](1)
    args = [cupy.asarray(a) for a in _fp16_inputs(graph, "lora")]
    t = time_callable(ml.compile(graph), args, warmup=2, repeats=20)
    assert len(t.samples_ms) == 20 and 0 < t.p10_ms <= t.median_ms <= t.p90_ms
