"""Backend choice, and the CuPy interpreter against numpy (marked gpu: skipped without a device)."""

from __future__ import annotations

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.bench.harness import input_scale, random_inputs
from mirage_lab.errors import UnsupportedOpError
from mirage_lab.semantics.backend import array_module, cupy_available


def test_numpy_backend_by_name_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    assert array_module("numpy") is np
    monkeypatch.setenv("MIRAGE_BACKEND", "numpy")
    assert array_module() is np


def test_unknown_backend_is_a_clear_error() -> None:
    with pytest.raises(UnsupportedOpError, match="unknown backend 'tpu'"):
        array_module("tpu")


@pytest.mark.skipif(cupy_available(), reason="only meaningful without a GPU")
def test_cupy_requested_without_gpu_says_how_to_fix() -> None:
    with pytest.raises(UnsupportedOpError, match="mirage-lab\\[gpu\\]"):
        array_module("cupy")


@pytest.mark.gpu
@pytest.mark.skipif(not cupy_available(), reason="needs CuPy and a CUDA device")
@pytest.mark.parametrize("name", sorted(fused.FUSED))
def test_cupy_interpreter_matches_numpy(name: str) -> None:
    for graph in (programs.PROGRAMS[name](1), fused.FUSED[name](1)):
        ins = random_inputs(graph, seed=5, scale=input_scale(name))
        (on_cpu,) = ml.interpret(graph, ins, backend="numpy")
        (on_gpu,) = ml.interpret(graph, ins, backend="cupy")
        assert isinstance(on_gpu, np.ndarray)
        np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-9, atol=1e-9 * float(np.abs(on_cpu).max()))
