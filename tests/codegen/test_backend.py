"""The backend protocol (render → compile → run → time): the reference backend everywhere, the CUDA backend's render
on CPU, its compile where nvcc (or a CuPy device) is, its run on a GPU (marked gpu)."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.bench.harness import relative_error
from mirage_lab.codegen import cuda as cuda_module
from mirage_lab.codegen import run as run_module
from mirage_lab.codegen.backend import Backend, Rendering
from mirage_lab.codegen.compile import nvcc_available
from mirage_lab.codegen.cuda import PLAIN, CodegenOptions, CudaBackend, CudaModule, plan_cuda
from mirage_lab.codegen.reference import ReferenceBackend
from mirage_lab.codegen.registry import BACKENDS, backend
from mirage_lab.codegen.run import Timing
from mirage_lab.errors import ArgumentError, UnsupportedOpError
from mirage_lab.semantics.backend import cupy_available
from tests.codegen.test_strides import SMALL, rmsnorm_fused, rmsnorm_program

FP16_TOL = 2e-2  # fp16 storage of tiles and outputs, fp32 arithmetic


def _graphs() -> dict[str, ml.KernelGraph]:
    """RMSNorm + Linear at a small shape: op by op, and hand-fused into one kernel."""
    return {"program": rmsnorm_program(None, SMALL), "fused": rmsnorm_fused(None, SMALL)}


def _inputs(graph: ml.KernelGraph) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [rng.uniform(-1, 1, t.dims).astype(np.float16) for t in graph.input_types]


@pytest.mark.parametrize("impl", [*BACKENDS.values(), ReferenceBackend("float32"), CudaBackend(PLAIN)], ids=repr)
def test_every_backend_satisfies_the_protocol(impl: Backend) -> None:
    assert isinstance(impl, Backend)
    assert BACKENDS[impl.name].name == impl.name


def test_the_registry_knows_every_backend_by_name() -> None:
    assert sorted(BACKENDS) == ["cuda", "reference", "triton"]
    assert all(backend(name) is BACKENDS[name] for name in ("reference", "cuda", "triton"))


def test_an_unknown_backend_is_a_clear_error() -> None:
    with pytest.raises(ArgumentError, match=r"unknown backend 'cdua' \(did you mean 'cuda'\?\); the backends are "
                                            r"cuda, reference, triton$"):
        backend("cdua")
    with pytest.raises(ArgumentError, match=r"unknown backend 3; the backends are cuda, reference, triton$"):
        backend(3)  # type: ignore[arg-type]


def test_backends_have_readable_reprs() -> None:
    assert repr(backend("reference")) == "ReferenceBackend()"
    assert repr(ReferenceBackend("float32")) == "ReferenceBackend(dtype='float32')"
    assert repr(backend("cuda")) == "CudaBackend()"
    assert repr(CudaBackend(PLAIN, library_calls=True)) == "CudaBackend(options=PLAIN, library_calls=True)"
    assert repr(CudaBackend(CodegenOptions(prefetch=False), arch="sm_90")) == \
        "CudaBackend(options=CodegenOptions(prefetch=False), arch='sm_90')"


@pytest.mark.parametrize("name", ["program", "fused"])
def test_the_reference_backend_runs_the_interpreter(name: str) -> None:
    graph = _graphs()[name]
    ref = backend("reference")
    rendering = ref.render(graph)
    assert rendering == Rendering("reference", graph, str(graph))
    ins = [a.astype(np.float64) for a in _inputs(graph)]
    (got,) = ref.run(ref.compile(rendering), ins)
    (want,) = ml.interpret(graph, ins)
    np.testing.assert_array_equal(got, want)
    (unfused,) = ml.interpret(_graphs()["program"], ins)
    assert relative_error(got, unfused) < 1e-12


def test_the_reference_backend_times_its_runs() -> None:
    graph = _graphs()["program"]
    ref = backend("reference")
    timing = ref.time(ref.compile(ref.render(graph)), _inputs(graph), warmup=0, repeats=3)
    assert isinstance(timing, Timing) and len(timing.samples_ms) == 3
    assert 0 < timing.p10_ms <= timing.median_ms <= timing.p90_ms


@pytest.mark.parametrize("impl", [CudaBackend(), CudaBackend(PLAIN), CudaBackend(library_calls=True)], ids=repr)
@pytest.mark.parametrize("name", ["program", "fused"])
def test_the_cuda_backend_renders_generate_cuda(impl: CudaBackend, name: str) -> None:
    graph = _graphs()[name]
    rendering = impl.render(graph)
    assert rendering.backend == "cuda"
    assert rendering.source == ml.generate_cuda(graph, impl.options, library_calls=impl.library_calls)
    assert str(rendering) == rendering.source


def test_the_cuda_backend_compiles_only_its_own_renderings() -> None:
    rendering = backend("reference").render(_graphs()["program"])
    with pytest.raises(ArgumentError, match=r"compiles CUDA renderings, got a reference one"):
        backend("cuda").compile(rendering)


@pytest.mark.skipif(not nvcc_available() and not cupy_available(), reason="neither nvcc nor a CuPy device")
def test_the_cuda_backend_compiles() -> None:
    """With a CuPy device, a runnable module; with nvcc alone, PTX holding every launch's kernel."""
    cuda = backend("cuda")
    rendering = cuda.render(_graphs()["program"])
    module = cuda.compile(rendering)
    assert isinstance(module, CudaModule) and module.rendering == rendering
    if module.graph is None:
        assert module.ptx is not None
        assert sorted(module.ptx.kernels) == sorted(launch.name for launch in plan_cuda(rendering.graph).launches)
        with pytest.raises(UnsupportedOpError, match=r"only compiled by nvcc .* needs CuPy and a device"):
            cuda.run(module, _inputs(rendering.graph))


def test_the_cuda_backend_compiles_through_cupy_on_a_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """Up to the GPU: with a stand-in CuPy, compile builds a ``run.CompiledGraph`` of the rendered source, and
    refuses a rendering whose source is not the one the backend generates."""
    device = SimpleNamespace(attributes={"MaxSharedMemoryPerBlockOptin": 227 * 1024})
    monkeypatch.setitem(sys.modules, "cupy", SimpleNamespace(cuda=SimpleNamespace(Device=lambda: device)))
    monkeypatch.setattr(cuda_module, "cupy_available", lambda: True)
    monkeypatch.setattr(run_module, "cupy_available", lambda: True)
    sources: list[Any] = []
    module = SimpleNamespace(get_function=lambda name: SimpleNamespace())
    monkeypatch.setattr(run_module, "compile_module", lambda source: sources.append(source) or module)
    cuda = CudaBackend(PLAIN)
    rendering = cuda.render(_graphs()["fused"])
    compiled = cuda.compile(rendering)
    assert isinstance(compiled.graph, run_module.CompiledGraph) and compiled.ptx is None
    assert sources == [rendering.source]
    with pytest.raises(ArgumentError, match=r"this rendering's source differs"):
        cuda.compile(Rendering("cuda", rendering.graph, "// edited\n" + rendering.source))


@pytest.mark.gpu
@pytest.mark.skipif(not cupy_available(), reason="needs CuPy and a CUDA device")
@pytest.mark.parametrize("name", ["program", "fused"])
def test_the_cuda_backend_runs_and_times_on_the_gpu(name: str) -> None:
    graph = _graphs()[name]
    cuda = backend("cuda")
    module = cuda.compile(cuda.render(graph))
    ins = _inputs(graph)
    (got,) = cuda.run(module, ins)
    (want,) = ml.interpret(graph, [a.astype(np.float64) for a in ins])
    assert isinstance(got, np.ndarray) and got.dtype == np.float16
    assert relative_error(got.astype(np.float64), want) < FP16_TOL
    timing = cuda.time(module, ins, warmup=2, repeats=5)
    assert len(timing.samples_ms) == 5 and timing.median_ms > 0
