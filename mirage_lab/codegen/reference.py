"""The ``reference`` backend: the interpreter (``semantics.interpret``), the living definition of the IR. It
works everywhere: it renders the graph's listing, compiles to the graph itself, runs the interpreter and times
its wall time (a measure of the interpreter, never of a kernel)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from mirage_lab.bounds import timed_runs, wall_time
from mirage_lab.codegen.backend import Rendering
from mirage_lab.codegen.run import Timing
from mirage_lab.ir.builder import KernelGraphBuilder, as_graph
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.semantics.interpret import interpret


@dataclass(frozen=True)
class ReferenceBackend:
    """The interpreter as a backend, computing in ``dtype`` ("float64" or "float32") on the array module the
    interpreter picks (numpy, or CuPy; ``MIRAGE_BACKEND`` overrides)."""

    dtype: str = "float64"
    name = "reference"

    def __repr__(self) -> str:
        return "ReferenceBackend()" if self.dtype == "float64" else f"ReferenceBackend(dtype={self.dtype!r})"

    def render(self, graph: KernelGraph | KernelGraphBuilder) -> Rendering:
        g = as_graph(graph)
        return Rendering(self.name, g, str(g))

    def compile(self, rendering: Rendering) -> KernelGraph:
        return rendering.graph

    def run(self, compiled: KernelGraph, inputs: Sequence[Any]) -> list[Any]:
        return interpret(compiled, inputs, dtype=self.dtype)

    def time(self, compiled: KernelGraph, inputs: Sequence[Any], *, warmup: int = 1, repeats: int = 5) -> Timing:
        samples = timed_runs(partial(wall_time, partial(self.run, compiled, inputs)), warmup, repeats,
                             "the interpreter")
        return Timing.from_samples([s * 1e3 for s in samples])
