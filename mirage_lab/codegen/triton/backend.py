"""The ``triton`` backend behind the ``Backend`` protocol: render (the module's source, pure), compile (on a CUDA
device the loaded module; elsewhere PTX for ``arch``), run (on the device; elsewhere Triton's CPU interpreter)
and time (CUDA events, on a device only).

Each kernel's launch parameters are recorded in the rendering (``TritonRendering.launches``): the ones tuned for
the GPU at hand (``codegen.triton.tuned``) where its table holds the kernel, else the defaults of its tiles.
``tuned="auto"`` reads this machine's GPU's table (none without a device); a GPU label reads that GPU's table,
which must exist (to render ahead of time what that GPU will run); None uses the defaults."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mirage_lab.codegen.backend import Rendering
from mirage_lab.codegen.run import Timing, time_callable
from mirage_lab.codegen.triton.launch import TritonLaunch
from mirage_lab.codegen.triton.module import triton_module
from mirage_lab.codegen.triton.toolchain import PtxKernels, compile_ptx, emulate, load_module
from mirage_lab.codegen.triton.tuned import TIMINGS_DIR, current_gpu, tuned_launches
from mirage_lab.errors import ArgumentError, MirageError
from mirage_lab.ir.builder import KernelGraphBuilder
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.semantics.backend import cupy_available

__all__ = ["TritonBackend", "TritonCompiled", "TritonRendering"]


@dataclass(frozen=True)
class TritonRendering(Rendering):
    """A Triton rendering with each kernel's launch parameters (kernel name, ``TritonLaunch``), as ``run`` passes
    them and ``compile`` compiles them."""

    launches: tuple[tuple[str, TritonLaunch], ...] = ()

    def __repr__(self) -> str:
        kernels = ", ".join(f"{name}: {launch!r}" for name, launch in self.launches)
        return f"TritonRendering({len(self.source.splitlines())} lines; {kernels})"


@dataclass(frozen=True)
class TritonCompiled:
    """A compiled rendering: the loaded module on a device, else the PTX of every kernel for the backend's arch."""

    rendering: Rendering
    module: Any = None
    ptx: PtxKernels | None = None


@dataclass(frozen=True)
class TritonBackend:
    arch: str = "sm_80"
    tuned: str | None = "auto"
    timings_dir: Path = field(default=TIMINGS_DIR, repr=False)
    name = "triton"

    def tuned_launches(self) -> dict[str, TritonLaunch]:
        """kernel_key → the tuned launch parameters this backend renders with (see the module's docstring)."""
        if self.tuned is None:
            return {}
        if self.tuned == "auto":
            return tuned_launches(current_gpu(), self.timings_dir)
        return tuned_launches(self.tuned, self.timings_dir, required=True)

    def render(self, graph: KernelGraph | KernelGraphBuilder,
               launches: Mapping[str, TritonLaunch] | None = None) -> TritonRendering:
        """``graph``'s module; ``launches`` (kernel_key → parameters) take precedence over the tuned table."""
        m = triton_module(graph, {**self.tuned_launches(), **(launches or {})})
        return TritonRendering(self.name, m.graph, m.source, tuple(m.launches.items()))

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
