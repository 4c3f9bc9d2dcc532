"""compile_module's choice between NVRTC and nvcc, with a stand-in CuPy (no GPU needed)."""

from __future__ import annotations

import importlib
import sys
from types import SimpleNamespace

import pytest

from mirage_lab.codegen.compile import CompileError, compile_module

# the module, not the function ``mirage_lab.codegen.compile`` that the package re-exports under its name
compile_ = importlib.import_module("mirage_lab.codegen.compile")

SOURCE = 'extern "C" __global__ void __launch_bounds__(128) mirage_k2(float* out0) {}\n'


class FakeCompileException(Exception):
    pass


def _fake_cupy(monkeypatch: pytest.MonkeyPatch, nvrtc_error: str | None) -> list[str]:
    """A CuPy whose NVRTC fails with ``nvrtc_error`` (when given) and whose nvcc works; returns the backends
    tried, in order."""
    tried: list[str] = []

    class RawModule:
        def __init__(self, code: str, options: tuple[str, ...], backend: str) -> None:
            self.backend = backend

        def compile(self) -> None:
            tried.append(self.backend)
            if self.backend == "nvrtc" and nvrtc_error:
                raise FakeCompileException(nvrtc_error)

    cupy = SimpleNamespace(RawModule=RawModule, cuda=SimpleNamespace(compiler=SimpleNamespace(
        CompileException=FakeCompileException)))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(compile_, "nvcc_available", lambda: True)
    return tried


def test_nvrtc_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    tried = _fake_cupy(monkeypatch, None)
    assert compile_module(SOURCE).backend == "nvrtc" and tried == ["nvrtc"]


def test_a_missing_header_falls_back_to_nvcc(monkeypatch: pytest.MonkeyPatch) -> None:
    tried = _fake_cupy(monkeypatch, 'catastrophic error: cannot open source file "mma.h"')
    assert compile_module(SOURCE).backend == "nvcc" and tried == ["nvrtc", "nvcc"]


def test_other_errors_name_the_kernel_without_retrying(monkeypatch: pytest.MonkeyPatch) -> None:
    tried = _fake_cupy(monkeypatch, 'mugraph.cu(1): error: identifier "undeclared" is undefined')
    with pytest.raises(CompileError, match=r"NVRTC failed in kernel mirage_k2"):
        compile_module(SOURCE)
    assert tried == ["nvrtc"]
