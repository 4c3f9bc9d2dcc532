"""Frozen, hashable μGraphs: kernel graphs whose customized nodes hold block graphs.

Tensors are numbered by creation order; a node's ``inputs`` and ``outputs`` are
indices into its graph's ``tensors``. Graphs are only built through the builders
(``mirage_lab.ir.builder``), which validate every rule; these classes trust them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mirage_lab.ir import printer
from mirage_lab.ir.canonical import canonical_hash
from mirage_lab.ir.node import (
    PHI,
    Attrs,
    Grid,
    Node,
    loader_dtensor,
    loader_tile,
    make_attrs,
    plural,
    saver_dims,
    saver_dtensor,
)
from mirage_lab.ir.ops import Level, Op
from mirage_lab.ir.tensor import TensorType

# the node-level names are imported from here throughout the code
__all__ = ["PHI", "Attrs", "BlockGraph", "Grid", "KernelGraph", "Node", "loader_dtensor", "loader_tile",
           "make_attrs", "plural", "saver_dims", "saver_dtensor"]

@dataclass(frozen=True)
class BlockGraph:
    """The program of one thread block (SPEC §3): loaders, compute ops, savers."""

    grid: Grid
    forloop_range: int
    tensors: tuple[TensorType, ...]
    nodes: tuple[Node, ...]
    block: Grid = (128, 1, 1)
    reduction_dimx: int = 64

    @property
    def level(self) -> Level:
        return Level.BLOCK

    @property
    def num_blocks(self) -> int:
        return math.prod(self.grid)

    @property
    def loaders(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.op is Op.INPUT)

    @property
    def savers(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.op is Op.OUTPUT)

    @property
    def compute_nodes(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.op not in (Op.INPUT, Op.OUTPUT))

    @property
    def input_types(self) -> tuple[TensorType, ...]:
        """The DTensor types the loaders read, in customized-input order."""
        return tuple(loader_dtensor(n) for n in self.loaders)

    @property
    def output_types(self) -> tuple[TensorType, ...]:
        """The DTensor types the savers write, in customized-output order."""
        return tuple(saver_dtensor(self, n) for n in self.savers)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __str__(self) -> str:
        return printer.format_block_graph(self)

    def __repr__(self) -> str:
        return (f"BlockGraph(grid={self.grid}, forloop_range={self.forloop_range}, "
                f"{len(self.loaders)} in, {plural(len(self.compute_nodes), 'op')}, {len(self.savers)} out)")

    def _repr_html_(self) -> str:
        return printer.to_html(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))


@dataclass(frozen=True)
class KernelGraph:
    """A μGraph's top level (SPEC §2). ``outputs`` are the marked output tensors, in order."""

    tensors: tuple[TensorType, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[int, ...]
    _hash: str | None = field(default=None, compare=False, repr=False)

    @property
    def level(self) -> Level:
        return Level.KERNEL

    @property
    def inputs(self) -> tuple[int, ...]:
        return tuple(n.outputs[0] for n in self.nodes if n.op is Op.INPUT)

    @property
    def input_types(self) -> tuple[TensorType, ...]:
        return tuple(self.tensors[i] for i in self.inputs)

    @property
    def output_types(self) -> tuple[TensorType, ...]:
        return tuple(self.tensors[i] for i in self.outputs)

    @property
    def compute_nodes(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.op is not Op.INPUT)

    @property
    def block_graphs(self) -> tuple[BlockGraph, ...]:
        return tuple(n.body for n in self.nodes if n.body is not None)

    def every_node(self) -> list[Node]:
        """The kernel-level nodes, then each custom kernel's block-level nodes."""
        return [*self.nodes, *(n for bg in self.block_graphs for n in bg.nodes)]

    def canonical_hash(self) -> str:
        """A stable content hash (sha256 of the canonical JSON), equal for equal graphs."""
        return canonical_hash(self)

    def to_python(self) -> str:
        """Builder code that rebuilds an equal graph."""
        return printer.to_python(self)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __str__(self) -> str:
        return printer.format_kernel_graph(self)

    def __repr__(self) -> str:
        kinds = [n.op.value for n in self.compute_nodes]
        return (f"KernelGraph({plural(len(self.inputs), 'input')}, ops=[{', '.join(kinds)}], "
                f"{plural(len(self.outputs), 'output')})")

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        return printer.to_html(self)


