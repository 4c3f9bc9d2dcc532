"""μGraph → standalone CUDA C (SPEC §8.2), one ``extern "C" __global__`` kernel per customized op: the CUDA
backend's entry point.

``generate_cuda`` gives the source and ``plan_cuda`` what runs (``CudaProgram``); ``CudaBackend`` is the backend
(``codegen.backend``): render → compile → run → time. The generator, by concept:

* ``options``: ``CodegenOptions`` (prefetch, split sums, tensor cores, padding, asynchronous copies; ``PLAIN``
  turns all off); ``pipeline``: which tiles are copied with cp.async, and how far ahead;
* ``plan``: each kernel's plan (stages, tensor-core matmuls, tile layouts and padding, shared memory) and the
  kernel-graph plan (lowered kernel ops, or library calls);
* ``source`` and ``kernel``: the whole source, and one kernel around its emitters (hoisted loads, the for-loop,
  the epilogue);
* ``writer``: ``KernelWriter``, the text and the typed tile access every emitter writes through;
* ``expressions``: C literals and indices, and each elementwise op's expression from the op table;
* ``emit``: the ``EMIT`` table, each block op's emitter by its lowering family: ``tiles`` (loaders, savers,
  ring copies, strided inputs; copy widths in ``vectors``), ``elementwise``, ``reduction``, ``matmul`` (tensor
  cores, through ``intrinsics``), ``accumulators`` (from each op's ``AccumRule``), with ``split_sum`` (sums
  over idle threads).

The names that code outside ``codegen`` imports from this module (the entry points, the plans and the op
tables) are re-exported here from the modules that define them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from mirage_lab.codegen.accumulators import FINAL_EXPR
from mirage_lab.codegen.backend import Rendering
from mirage_lab.codegen.compile import PtxResult, nvcc_ptx
from mirage_lab.codegen.emit import EMIT, UNSUPPORTED
from mirage_lab.codegen.expressions import BINARY_EXPR, UNARY_EXPR
from mirage_lab.codegen.options import ENTRY_KEYWORDS, PLAIN, CodegenOptions, codegen_options
from mirage_lab.codegen.plan import (
    KERNEL_PREFIX,
    PADDING_LIMIT,
    CudaProgram,
    KernelLaunch,
    KernelPlan,
    LibraryCall,
    Step,
    input_strides,
    plan_cuda,
    plan_kernel,
    prepare,
)
from mirage_lab.codegen.run import CompiledGraph, Timing, time_callable
from mirage_lab.codegen.source import HELPERS, generate_cuda
from mirage_lab.codegen.writer import KernelWriter
from mirage_lab.errors import ArgumentError, UnsupportedOpError
from mirage_lab.ir.builder import KernelGraphBuilder
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.semantics.backend import cupy_available

__all__ = [
    "BINARY_EXPR", "EMIT", "ENTRY_KEYWORDS", "FINAL_EXPR", "HELPERS", "KERNEL_PREFIX", "PADDING_LIMIT", "PLAIN",
    "UNARY_EXPR", "UNSUPPORTED", "CodegenOptions", "CudaBackend", "CudaModule", "CudaProgram", "KernelLaunch",
    "KernelPlan", "KernelWriter", "LibraryCall", "Step", "codegen_options", "generate_cuda", "input_strides",
    "plan_cuda", "plan_kernel", "prepare",
]


@dataclass(frozen=True)
class CudaModule:
    """A compiled CUDA rendering: ``graph``, runnable (``run.CompiledGraph``), where CuPy has a device; elsewhere
    only nvcc's ``ptx`` for ``arch``, which shows the source compiles but cannot run here."""

    rendering: Rendering
    graph: CompiledGraph | None = None
    ptx: PtxResult | None = None

    def __repr__(self) -> str:
        how = repr(self.graph) if self.graph is not None else f"checked by nvcc for {self.ptx.arch}" if self.ptx else ""
        return f"CudaModule({how})"


@dataclass(frozen=True)
class CudaBackend:
    """The ``cuda`` backend: renders ``generate_cuda``'s source under ``options`` (``library_calls=True`` leaves
    predefined kernel ops to CuPy); compiles it with CuPy (NVRTC, or nvcc) where a device is, else checks it with
    ``nvcc --ptx`` for ``arch``; runs and times it with CuPy (``codegen.run``: CUDA events)."""

    options: CodegenOptions = field(default_factory=CodegenOptions)
    library_calls: bool = False
    arch: str = "sm_80"
    name = "cuda"

    def __repr__(self) -> str:
        default = CudaBackend()
        shown = [f"{f.name}={_shown(getattr(self, f.name))}" for f in fields(self)
                 if getattr(self, f.name) != getattr(default, f.name)]
        return f"CudaBackend({', '.join(shown)})"

    def render(self, graph: KernelGraph | KernelGraphBuilder) -> Rendering:
        g = prepare(graph, self.library_calls)
        return Rendering(self.name, g, generate_cuda(g, self.options, library_calls=self.library_calls))

    def compile(self, rendering: Rendering) -> CudaModule:
        """On a CuPy device, the runnable module; elsewhere nvcc's PTX (a ``CompileError`` without nvcc)."""
        if rendering.backend != self.name:
            raise ArgumentError(f"the cuda backend compiles CUDA renderings, got a {rendering.backend} one; "
                                "render the graph with this backend first")
        if not cupy_available():
            return CudaModule(rendering, ptx=nvcc_ptx(rendering.source, self.arch))
        compiled = CompiledGraph(rendering.graph, self.options, library_calls=self.library_calls)
        if compiled.source != rendering.source:
            raise ArgumentError("the CUDA backend compiles the source it generates for the rendering's graph, and "
                                "this rendering's source differs from it; render the graph with this backend")
        return CudaModule(rendering, graph=compiled)

    def run(self, compiled: CudaModule, inputs: Sequence[Any]) -> list[Any]:
        graph = _runnable(compiled)
        import cupy

        return [cupy.asnumpy(out) for out in graph(*inputs)]

    def time(self, compiled: CudaModule, inputs: Sequence[Any], *, warmup: int = 16, repeats: int = 200) -> Timing:
        """CUDA events around each call (``run.time_callable``), on inputs already on the device."""
        graph = _runnable(compiled)
        import cupy

        return time_callable(graph, [cupy.asarray(a) for a in inputs], warmup=warmup, repeats=repeats)


def _runnable(compiled: CudaModule) -> CompiledGraph:
    if compiled.graph is None:
        raise UnsupportedOpError("this CUDA module was only compiled by nvcc (CuPy finds no CUDA device here); "
                                 "running it needs CuPy and a device: pip install -e '.[gpu]' on a GPU machine")
    return compiled.graph


def _shown(value: object) -> str:
    """A setting as a reader would write it: ``PLAIN``, or ``CodegenOptions(...)`` with the fields that differ."""
    if value == PLAIN:
        return "PLAIN"
    if isinstance(value, CodegenOptions):
        changed = [f"{f.name}={getattr(value, f.name)}" for f in fields(value) if getattr(value, f.name) is False]
        return f"CodegenOptions({', '.join(changed)})"
    return repr(value)
