"""The ``triton`` backend behind the ``Backend`` protocol: render (the module's source, pure), compile (on a CUDA
device the loaded module; elsewhere PTX for ``arch``), run (on the device; elsewhere Triton's CPU interpreter)
and time (CUDA events, on a device only)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mirage_lab.codegen.backend import Rendering
from mirage_lab.codegen.run import Timing, time_callable
from mirage_lab.codegen.triton.module import triton_module
from mirage_lab.codegen.triton.toolchain import PtxKernels, compile_ptx, emulate, load_module
from mirage_lab.errors import ArgumentError, MirageError
from mirage_lab.ir.builder import KernelGraphBuilder
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.semantics.backend import cupy_available

__all__ = ["TritonBackend", "TritonCompiled"]


@dataclass(frozen=True)
class TritonCompiled:
    """A compiled rendering: the loaded module on a device, else the PTX of every kernel for the backend's arch."""

    rendering: Rendering
    module: Any = None
    ptx: PtxKernels | None = None


@dataclass(frozen=True)
class TritonBackend:
    arch: str = "sm_80"
    name = "triton"

    def render(self, graph: KernelGraph | KernelGraphBuilder) -> Rendering:
        m = triton_module(graph)
        return Rendering(self.name, m.graph, m.source)

    def compile(self, rendering: Rendering) -> TritonCompiled:
        if rendering.backend != self.name:
            raise ArgumentError(f"the triton backend compiles Triton renderings, got a {rendering.backend} one; "
                                "render the graph with this backend first")
        if cupy_available():
            return TritonCompiled(rendering, module=load_module(rendering.source))
        return TritonCompiled(rendering, ptx=compile_ptx(rendering.source, self.arch))

    def run(self, compiled: TritonCompiled, inputs: Sequence[Any]) -> list[Any]:
        """On a device, the kernels (torch CUDA tensors); without one, Triton's interpreter on the CPU."""
        dtype = compiled.rendering.graph.tensors[0].dtype.value
        if compiled.module is None:
            return emulate(compiled.rendering.source, [np.asarray(a, dtype=np.float32) for a in inputs], dtype)
        import torch

        args = [torch.as_tensor(np.asarray(a, dtype=np.float32), device="cuda").to(getattr(torch, dtype))
                for a in inputs]
        return [out.float().cpu().numpy() for out in compiled.module.run(*args)]

    def time(self, compiled: TritonCompiled, inputs: Sequence[Any], *, warmup: int = 16,
             repeats: int = 200) -> Timing:
        if compiled.module is None:
            raise MirageError("timing Triton kernels needs a CUDA device; without one the backend only compiles "
                              "(PTX) and emulates")
        import torch

        dtype = getattr(torch, compiled.rendering.graph.tensors[0].dtype.value)
        args = [torch.as_tensor(np.asarray(a, dtype=np.float32), device="cuda").to(dtype) for a in inputs]
        return time_callable(compiled.module.run, args, warmup, repeats)
