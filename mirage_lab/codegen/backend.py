"""Plug-in backends (DESIGN principle 8): a small protocol, render → compile → run → time.

A backend turns a μGraph into source text (``render``: pure, works everywhere), the source into something that
runs (``compile``: may need a toolchain or a device, and says which when it is missing), runs that on inputs
(``run``: the graph's outputs, in order, as numpy arrays) and times it (``time``: a ``Timing`` in milliseconds).
``codegen.registry`` names the backends: ``reference`` (the interpreter; works everywhere) and ``cuda``
(generated CUDA C: nvcc or CuPy to compile, CuPy and a device to run) and ``triton`` (``codegen.triton``: PTX
without a device, Triton's interpreter on the CPU, torch CUDA tensors on a device).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mirage_lab.codegen.run import Timing
from mirage_lab.ir.builder import KernelGraphBuilder
from mirage_lab.ir.graph import KernelGraph


@dataclass(frozen=True)
class Rendering:
    """What a backend's ``render`` made of a graph: the graph as the backend runs it (the CUDA backend's has its
    predefined kernel ops lowered to custom kernels) and its source text."""

    backend: str
    graph: KernelGraph
    source: str

    def __str__(self) -> str:
        return self.source


@runtime_checkable
class Backend(Protocol):
    """render → compile → run → time. ``compile``'s result is the backend's own (``run`` and ``time`` take it)."""

    @property
    def name(self) -> str: ...

    def render(self, graph: KernelGraph | KernelGraphBuilder) -> Rendering:
        """``graph`` (a builder or a frozen graph) as the backend's source; pure."""
        ...

    def compile(self, rendering: Rendering) -> Any:
        """``rendering`` ready to run; raises a ``MirageError`` that says what is missing when it cannot here."""
        ...

    def run(self, compiled: Any, inputs: Sequence[Any]) -> list[Any]:
        """The outputs of the compiled graph on ``inputs`` (one array per graph input), as numpy arrays."""
        ...

    def time(self, compiled: Any, inputs: Sequence[Any], *, warmup: int = ..., repeats: int = ...) -> Timing:
        """Milliseconds per run on ``inputs``, after ``warmup`` runs, over ``repeats`` runs."""
        ...
