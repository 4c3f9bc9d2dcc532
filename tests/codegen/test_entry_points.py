"""The codegen entry points take a KernelGraphBuilder as readily as a frozen KernelGraph, and name a misspelt
keyword's closest valid one."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.codegen import emulate, plan_cuda, run
from mirage_lab.codegen.emulate import run_cuda_on_cpu
from mirage_lab.errors import ArgumentError, InputError
from mirage_lab.ir.builder import KernelGraphBuilder

PHI = -1


def _builder() -> KernelGraphBuilder:
    """An unfinished-looking but complete builder: rms_norm, then a custom kernel (exp), not frozen."""
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(4, 64), dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=(4, 1, 1), forloop_range=1)
    tx = tb.new_input(dtensor=g.rms_norm(x), input_map=(0, PHI, PHI), forloop_dim=PHI)
    tb.new_output(stensor=tb.forloop_accum(tb.exp(tx)), output_map=(0, PHI, PHI))
    g.mark_output(g.customized([g.rms_norm(x)], tb)[0])
    return g


def test_generate_and_plan_take_a_builder() -> None:
    g = _builder()
    assert ml.generate_cuda(g) == ml.generate_cuda(g.freeze())
    assert plan_cuda(g) == plan_cuda(g.freeze())
    assert len(plan_cuda(g).launches) == 3


def test_a_wrong_graph_is_a_clear_error() -> None:
    with pytest.raises(ml.MirageError, match=r"expected a kernel graph .* got str"):
        ml.generate_cuda("rmsnorm")  # type: ignore[arg-type]


@pytest.mark.skipif(not emulate.gxx_available(), reason="g++ not installed")
def test_the_emulator_takes_a_builder() -> None:
    g = _builder()
    x = np.random.default_rng(0).uniform(-1, 1, (4, 64)).astype(np.float16)
    (got,) = run_cuda_on_cpu(g, [x])
    (want,) = ml.interpret(g, [x.astype(np.float64)])
    assert np.max(np.abs(got.astype(np.float64) - want)) / np.max(np.abs(want)) < 2e-2
    with pytest.raises(ArgumentError, match=r"'schedul' \(did you mean 'schedule'\?\)"):
        run_cuda_on_cpu(g, [x], schedul="reverse")  # type: ignore[call-arg]
    with pytest.raises(InputError, match=r"the graph has 1 inputs .* but 2 arrays were given"):
        run_cuda_on_cpu(g, [x, x])


def test_compile_takes_a_builder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Up to the GPU: a stand-in CuPy and module record what ml.compile asks for."""
    kernels: list[str] = []
    device = SimpleNamespace(attributes={"MaxSharedMemoryPerBlockOptin": 227 * 1024})
    monkeypatch.setitem(sys.modules, "cupy", SimpleNamespace(cuda=SimpleNamespace(Device=lambda: device)))
    monkeypatch.setattr(run, "cupy_available", lambda: True)
    module = SimpleNamespace(get_function=lambda name: kernels.append(name) or SimpleNamespace())
    sources: list[Any] = []
    monkeypatch.setattr(run, "compile_module", lambda source: sources.append(source) or module)
    g = _builder()
    compiled = ml.compile(g, prefetch=False)
    assert sources == [ml.generate_cuda(g.freeze(), prefetch=False)]
    assert kernels == [launch.name for launch in compiled.program.launches] and len(kernels) == 3
    with pytest.raises(TypeError, match=r"'tensor_core' \(did you mean 'tensor_cores'\?\)"):
        ml.compile(g, tensor_core=False)
