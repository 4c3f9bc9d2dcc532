"""The Triton backend (issue 22): every fused benchmark μGraph and a search result as Triton source, PTX for sm_80
and sm_90 compiled without a GPU, and Triton's CPU interpreter agreeing with the project's interpreter."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.bench.fused import FUSED
from mirage_lab.bench.harness import input_scale, random_inputs, relative_error
from mirage_lab.bench.tolerance import TOLERANCE, within, worst_error
from mirage_lab.cli import main
from mirage_lab.codegen.registry import backend
from mirage_lab.codegen.triton import triton_module
from mirage_lab.codegen.triton.kernel import padded
from mirage_lab.codegen.triton.launch import TritonLaunch
from mirage_lab.codegen.triton.toolchain import compile_ptx, emulate
from mirage_lab.errors import UnsupportedOpError
from mirage_lab.ir.ops import OPS, Kind, Op
from mirage_lab.semantics.backend import cupy_available

ARCHS = ("sm_80", "sm_90")


def agrees(graph: ml.KernelGraph, scale: float = 1.0, seed: int = 0,
           launches: Mapping[str, TritonLaunch] | None = None) -> float:
    """The relative error of the graph's Triton module (with ``launches`` by kernel key), interpreted on the CPU,
    against the interpreter (after checking that it compiles for sm_90)."""
    module = triton_module(graph, launches)
    assert compile_ptx(module.source, "sm_90").ptx
    inputs = random_inputs(graph, seed=seed, scale=scale)
    got = emulate(module.source, inputs, module.dtype)
    want = ml.interpret(graph, inputs)
    return worst_error(relative_error(g, w) for g, w in zip(got, want, strict=True))


def test_padding_follows_triton_rules() -> None:
    assert [padded(n) for n in (1, 2, 16, 24, 128, 129)] == [1, 16, 16, 32, 128, 256]


@pytest.mark.parametrize("name", sorted(FUSED))
def test_every_fused_benchmark_compiles_and_agrees(name: str) -> None:
    graph = FUSED[name](1)
    module = triton_module(graph)
    assert module.source.count("@triton.jit") == len(graph.block_graphs) and "def run(*inputs)" in module.source
    compile(module.source, f"{name}.py", "exec")  # valid Python
    for arch in ARCHS:
        ptx = compile_ptx(module.source, arch)
        assert set(ptx.ptx) == {k.name for k in module.kernels.values()}
        assert all(f".target {arch}" in text for text in ptx.ptx.values())
        assert compile_ptx(triton_module(FUSED[name](8)).source, arch).ptx  # batch 8: PTX only (the CPU is slow)
    assert agrees(graph, input_scale(name)) <= TOLERANCE[module.dtype]


def test_other_paddings_and_stages_agree() -> None:
    """Tiles padded to 64 (what wgmma needs for a small M on sm_90) and 32 give the same results: the padding is
    loaded as 0 and fed to tl.dot as loaded; the stages and warps change no result."""
    graph = FUSED["lora"](1)  # three tl.dot, one of them on another dot's result
    (key,) = (k.key for k in triton_module(graph).kernels.values())
    for launch in (TritonLaunch(2, 1, 64), TritonLaunch(8, 1, 32)):
        assert agrees(graph, launches={key: launch}) <= TOLERANCE["float16"], launch
    g = ml.new_kernel_graph()  # a small M (4) and N (24), the loads of both operands in a 4-iteration loop
    x = g.new_input(dims=(4, 256), dtype=ml.float16)
    w = g.new_input(dims=(256, 48), dtype=ml.float16)
    tb = ml.new_threadblock_graph((2, 1, 1), (128, 1, 1), 4, 64)
    acc = tb.forloop_accum(tb.matmul(tb.new_input(x, (-1, -1, -1), 1), tb.new_input(w, (1, -1, -1), 0)))
    tb.new_output(tb.exp(tb.mul_scalar(acc, 0.1)), (1, -1, -1))
    g.mark_output(g.customized([x, w], tb)[0])
    looped = g.freeze()
    (key,) = (k.key for k in triton_module(looped).kernels.values())
    for launch in (TritonLaunch(4, 4, 64), TritonLaunch(2, 2, 16)):
        assert agrees(looped, launches={key: launch}) <= TOLERANCE["float16"], launch


def test_a_search_result_goes_through_the_same_three_steps(tmp_path: Path) -> None:
    graph = ml.new_kernel_graph()
    x = graph.new_input(dims=(8, 256), dtype=ml.float16)
    w = graph.new_input(dims=(256, 512), dtype=ml.float16)
    graph.mark_output(graph.matmul(graph.rms_norm(x, normalized_shape=(256,)), w))
    result = ml.superoptimize(graph, "mlp", run_dir=False, progress=False, time_limit_s=120)
    assert result.best is not None and result.best.graph.block_graphs
    module = triton_module(result.best.graph)
    for arch in ARCHS:
        assert compile_ptx(module.source, arch).ptx
    assert agrees(result.best.graph) <= TOLERANCE["float16"]


ELEMENTWISE = [op for op, spec in OPS.items() if spec.lowering == "elementwise"]


def _elementwise() -> ml.KernelGraph:
    """One custom kernel per elementwise op of the op table: the op on (16, 48) tiles (48: padded to 64) over a
    2-step loop, accumulated; every kernel's result is an output."""
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(32, 96), dtype=ml.float32)
    y = g.new_input(dims=(32, 96), dtype=ml.float32)
    for op in ELEMENTWISE:
        binary = op.spec.kind is Kind.BINARY
        tb = ml.new_threadblock_graph((2, 1, 1), (128, 1, 1), 2, 64)
        tx = tb.new_input(x, (0, -1, -1), 1)
        if binary:
            t = getattr(tb, op.value)(tx, tb.new_input(y, (0, -1, -1), 1))
        elif op is Op.MUL_SCALAR:
            t = tb.mul_scalar(tx, 0.5)
        elif op is Op.CLAMP:
            t = tb.clamp(tx, 0.25, 0.5)
        else:
            t = getattr(tb, op.value)(tx)
        tb.new_output(tb.forloop_accum(t), (0, -1, -1))
        (o,) = g.customized([x, y] if binary else [x], tb)
        g.mark_output(o)
    return g.freeze()


def test_each_elementwise_expression_of_the_op_table() -> None:
    graph = _elementwise()
    inputs = [np.random.default_rng(i).uniform(0.1, 1.0, (32, 96)).astype(np.float32) for i in range(2)]
    module = triton_module(graph)
    got = emulate(module.source, inputs, module.dtype)
    want = ml.interpret(graph, inputs)
    wrong = [op.value for op, g, w in zip(ELEMENTWISE, got, want, strict=True)
             if not within(relative_error(g, w), TOLERANCE["float32"])]
    assert not wrong, f"Triton expressions that disagree with the interpreter: {wrong}"


def _accumulators() -> ml.KernelGraph:
    """Every accumulator the fused benchmarks do not use, plus reduction, rms_norm and reduction_to_dimx."""
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(16, 512), dtype=ml.float32)
    tb = ml.new_threadblock_graph((2, 1, 1), (128, 1, 1), 4, 64)
    t = tb.new_input(x, (0, -1, -1), 1)  # (8, 128) tiles
    r = tb.reduction(t, 1)
    tb.new_output(tb.forloop_accum(t, "mean"), (0, -1, -1))
    tb.new_output(tb.forloop_accum(tb.rms_norm(t), "rms"), (0, -1, -1))
    tb.new_output(tb.forloop_accum_max(r), (0, -1, -1))
    tb.new_output(tb.forloop_accum_rescale(r, tb.exp(tb.mul_scalar(r, -0.01)), "sum"), (0, -1, -1))
    tb.new_output(tb.forloop_accum(tb.reduction_to_dimx(t, 1)), (0, -1, -1))
    tb.new_output(tb.forloop_accum(t, "sum_todimx"), (0, -1, -1))
    for o in g.customized([x], tb):
        g.mark_output(o)
    return g.freeze()


def test_accumulators_and_reductions() -> None:
    assert agrees(_accumulators()) <= TOLERANCE["float32"]


def _online_softmax_and_concat() -> ml.KernelGraph:
    """reduction_max's running maximum and its rescale exponent (online softmax), and a concat of two tiles."""
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(16, 256), dtype=ml.float32)
    tb = ml.new_threadblock_graph((1, 1, 1), (128, 1, 1), 4, 64)
    t = tb.new_input(x, (-1, -1, -1), 1)  # (16, 64) tiles
    m, diff = tb.reduction_max(t, 1)
    e = tb.exp(tb.sub(t, m))
    tb.new_output(tb.forloop_accum_rescale(tb.reduction(e, 1), tb.exp(diff), "sum"), (-1, -1, -1))
    tb.new_output(tb.forloop_accum_max(m), (-1, -1, -1))
    tb.new_output(tb.forloop_accum(tb.concat(t, tb.square(t), 1)), (-1, -1, -1))
    for o in g.customized([x], tb):
        g.mark_output(o)
    return g.freeze()


def test_online_softmax_and_concat() -> None:
    assert agrees(_online_softmax_and_concat()) <= TOLERANCE["float32"]


def test_what_triton_cannot_express_is_named() -> None:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(16, 24), dtype=ml.float16)  # 24: a padded dim, which Triton cannot reshape
    tb = ml.new_threadblock_graph((1, 1, 1), (128, 1, 1), 1, 64)
    t = tb.new_input(x, (-1, -1, -1), -1)
    tb.new_output(tb.forloop_accum(tb.concat(t, t, 1)), (-1, -1, -1))
    (o,) = g.customized([x], tb)
    g.mark_output(o)
    with pytest.raises(UnsupportedOpError, match=r"concatenates two tiles.*CUDA backend"):
        triton_module(g)


def test_the_backend_protocol_and_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = backend("triton")
    rendering = b.render(FUSED["lora"](1))
    assert rendering.backend == "triton" and rendering.source == ml.generate_triton(FUSED["lora"](1))
    if not cupy_available():
        compiled = b.compile(rendering)
        assert compiled.ptx is not None and compiled.ptx.arch == "sm_80"
        inputs = random_inputs(rendering.graph, seed=0)
        assert relative_error(b.run(compiled, inputs)[0], ml.interpret(rendering.graph, inputs)[0]) < 2e-2
    out = tmp_path / "lora.py"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(["codegen", "fused:lora", "--backend", "triton", "--out", str(out), "--ptx", "sm_80", "sm_90",
                   "--emulate"])
    err = capsys.readouterr().err
    assert rc == 0 and "def run(*inputs)" in out.read_text()
    assert "triton --target sm_90: 1 kernel in" in err and "within the float16 tolerance" in err


@pytest.mark.gpu
@pytest.mark.skipif(not cupy_available(), reason="needs CuPy and a CUDA device")
@pytest.mark.parametrize("name", sorted(FUSED))
def test_on_a_gpu_triton_runs_and_is_timed_beside_cuda(name: str) -> None:
    pytest.importorskip("triton", reason="the device's Python lacks Triton (pip install 'mirage-lab[triton]')")
    pytest.importorskip("torch", reason="the device's Python lacks torch (pip install 'mirage-lab[torch]')")
    graph = FUSED[name](1)
    inputs = random_inputs(graph, seed=0, scale=input_scale(name))
    times = {}
    for which in ("triton", "cuda"):
        b = backend(which)
        compiled = b.compile(b.render(graph))
        got = b.run(compiled, inputs)
        want = ml.interpret(graph, inputs)
        assert within(worst_error(relative_error(g, w) for g, w in zip(got, want, strict=True)),
                      TOLERANCE["float16"]), which
        times[which] = b.time(compiled, inputs, warmup=5, repeats=20).median_ms
    print(f"{name}: triton {times['triton']:.4f} ms, cuda {times['cuda']:.4f} ms")
