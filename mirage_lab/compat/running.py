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
from mirage_lab.semantics.interpret import interpret

__all__ = ["GraphRunner"]

INTERPRETER_NOTICE = ("no CUDA device: running μGraphs with mirage-lab's interpreter (float64 arithmetic, outputs "
                      "rounded to the graph's dtype); on a GPU the generated kernels run")


class GraphRunner:
    """Runs frozen graphs on arrays; keeps each graph's compiled kernels for the next call."""

    def __init__(self, device: bool | None = None) -> None:
        self.device = device  # None: a CUDA device when there is one
        self._compiled: dict[str, Any] = {}

    def on_device(self) -> bool:
        return cupy_available() if self.device is None else self.device

    def run(self, graph: KernelGraph, inputs: Sequence[Any]) -> list[Any]:
        if isinstance(inputs, str | bytes) or not isinstance(inputs, Sequence):
            raise InputError(f"inputs must be a list of arrays, got {type(inputs).__name__}; "
                             "write graph(inputs=[x, ...])")
        kinds = {array_kind(a) for a in inputs}
        if len(kinds) > 1:
            raise InputError(f"inputs mix {' and '.join(sorted(kinds))} arrays; pass one kind")
        like = inputs[0] if inputs else None
        dtypes = [t.dtype for t in graph.output_types]
        if self.on_device():
            outs = self._kernels(graph)(*[to_cupy(a) for a in inputs])
        else:
            notice_once("interpreter", INTERPRETER_NOTICE)
            outs = interpret(graph, [to_numpy(a) for a in inputs])
        return give_back(outs, dtypes, like)

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

    def fastest(self, graphs: Sequence[KernelGraph], warmup: int, repeats: int, verbose: bool) -> KernelGraph:
        """The graph of ``graphs`` with the lowest median time on the device (random inputs)."""
        import cupy

        from mirage_lab.codegen.run import time_callable

        times = []
        for i, g in enumerate(graphs):
            args = [cupy.random.standard_normal(t.dims).astype(cupy.float32) for t in g.input_types]
            median = time_callable(self._kernels(g), args, warmup, repeats).median_ms
            times.append(median)
            if verbose:
                print(f"muGraph {i}: profiled performance (ms) = {median}")
        return graphs[min(range(len(graphs)), key=times.__getitem__)]
