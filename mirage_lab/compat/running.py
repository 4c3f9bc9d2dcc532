"""Running a graph the way Mirage's ``graph(inputs=[...])`` does: compiled kernels on a CUDA device, the
interpreter without one (said once per process), arrays given back as they came."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mirage_lab.compat.arrays import array_kind, give_back, to_cupy, to_numpy
from mirage_lab.compat.notices import notice_once
from mirage_lab.errors import InputError
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.semantics.backend import cupy_available
from mirage_lab.semantics.interpret import check_inputs, interpret

__all__ = ["GraphRunner"]

INTERPRETER_NOTICE = ("no CUDA device: running μGraphs with mirage-lab's interpreter (float64 arithmetic, outputs "
                      "rounded to the graph's dtype); on a GPU the generated kernels run")


class GraphRunner:
    """Runs frozen graphs on arrays; keeps each graph's compiled kernels for the next call."""

    def __init__(self, device: bool | None = None) -> None:
        self.device = device  # None: a CUDA device when there is one
        self._compiled: dict[str, Any] = {}
        self._triton_modules: dict[str, Any] = {}

    def on_device(self) -> bool:
        return cupy_available() if self.device is None else self.device

    def run(self, graph: KernelGraph, inputs: Sequence[Any], backend: str = "cuda") -> list[Any]:
        """``graph`` on ``inputs``: on a device the ``backend``'s kernels ("cuda" or "triton"), else the
        interpreter; ``backend="triton-interpreter"`` runs the Triton module in Triton's CPU interpreter."""
        if isinstance(inputs, str | bytes) or not isinstance(inputs, Sequence):
            raise InputError(f"inputs must be a list of arrays, got {type(inputs).__name__}; "
                             "write graph(inputs=[x, ...])")
        kinds = {array_kind(a) for a in inputs}
        if len(kinds) > 1:
            raise InputError(f"inputs mix {' and '.join(sorted(kinds))} arrays; pass one kind")
        like = inputs[0] if inputs else None
        dtypes = [t.dtype for t in graph.output_types]
        if backend == "triton-interpreter" or (backend == "triton" and self.on_device()):
            outs = self._triton(graph, inputs, on_device=backend == "triton")
        elif self.on_device():
            outs = self._kernels(graph)(*[to_cupy(a) for a in inputs])
        else:
            notice_once("interpreter", INTERPRETER_NOTICE)
            outs = interpret(graph, [to_numpy(a) for a in inputs])
        return give_back(outs, dtypes, like)

    def _triton(self, graph: KernelGraph, inputs: Sequence[Any], on_device: bool) -> list[Any]:
        from mirage_lab.codegen.triton import triton_module
        from mirage_lab.codegen.triton.toolchain import emulate, load_module

        check_inputs(graph, inputs)
        key = graph.canonical_hash()
        if key not in self._triton_modules:  # generated once per graph, as its CUDA kernels are compiled once
            self._triton_modules[key] = triton_module(graph)
        module = self._triton_modules[key]
        if not on_device:
            notice_once("triton-interpreter", "running the Triton module in Triton's CPU interpreter (slow: a "
                        "program per block, numpy per op)")
            return emulate(module.source, [to_numpy(a) for a in inputs], module.dtype)
        import torch

        args = [torch.from_dlpack(to_cupy(a)).to(getattr(torch, module.dtype)) for a in inputs]
        return [out.float() for out in load_module(module.source).run(*args)]

    def prepare(self, graph: KernelGraph) -> None:
        """Compile ``graph``'s kernels now when a device will run them (else nothing: the interpreter needs none)."""
        if self.on_device():
            self._kernels(graph)

    def _kernels(self, graph: KernelGraph) -> Any:
        from mirage_lab.codegen import compile

        key = graph.canonical_hash()
        if key not in self._compiled:
            self._compiled[key] = compile(graph)
        return self._compiled[key]

    def fastest(self, graphs: Sequence[KernelGraph], warmup: int, repeats: int, verbose: bool,
                backend: str = "cuda") -> KernelGraph:
        """The graph of ``graphs`` with the lowest median time on the device (random inputs), each run by
        ``backend`` ("cuda": our compiled kernels; "triton": its Triton module)."""
        import cupy

        from mirage_lab.codegen.registry import backend as backend_named
        from mirage_lab.codegen.run import time_callable

        times = []
        for i, g in enumerate(graphs):
            args = [cupy.random.standard_normal(t.dims).astype(cupy.float32) for t in g.input_types]
            if backend == "triton":
                b = backend_named("triton")
                host = [cupy.asnumpy(a) for a in args]
                median = b.time(b.compile(b.render(g)), host, warmup=warmup, repeats=repeats).median_ms
            else:
                median = time_callable(self._kernels(g), args, warmup, repeats).median_ms
            times.append(median)
            if verbose:
                print(f"muGraph {i}: profiled performance (ms) = {median}")
        return graphs[min(range(len(graphs)), key=times.__getitem__)]
