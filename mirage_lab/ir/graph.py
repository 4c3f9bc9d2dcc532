"""Frozen, hashable μGraphs: kernel graphs whose customized nodes hold block graphs.

Tensors are numbered by creation order; a node's ``inputs`` and ``outputs`` are
indices into its graph's ``tensors``. Graphs are only built through the builders
(``mirage_lab.ir.builder``), which validate every rule; these classes trust them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from mirage_lab.ir.dtype import DType
from mirage_lab.ir.ops import AttrValue, Kind, Level, Op
from mirage_lab.ir.tensor import Dims, TensorType

Attrs = tuple[tuple[str, AttrValue], ...]
Grid = tuple[int, int, int]
PHI = -1  # a replicated (unmapped) imap / omap entry, or "no forloop dim"


def make_attrs(values: Mapping[str, Any]) -> Attrs:
    """Canonical attribute tuple: sorted by name, lists turned into tuples, ``None`` dropped."""
    items = []
    for k, v in sorted(values.items()):
        if v is None:
            continue
        items.append((k, tuple(v) if isinstance(v, list | tuple) else v))
    return tuple(items)


@dataclass(frozen=True)
class Node:
    """One op application. ``body`` holds the block graph of a customized kernel op."""

    op: Op
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    attrs: Attrs = ()
    body: BlockGraph | None = None

    @functools.cached_property
    def attr_map(self) -> dict[str, AttrValue]:
        return dict(self.attrs)

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attr_map.get(name, default)

    @property
    def kind(self) -> Kind:
        return self.op.spec.kind


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
        from mirage_lab.ir.printer import format_block_graph

        return format_block_graph(self)

    def __repr__(self) -> str:
        return (f"BlockGraph(grid={self.grid}, forloop_range={self.forloop_range}, "
                f"{len(self.loaders)} in, {plural(len(self.compute_nodes), 'op')}, {len(self.savers)} out)")

    def _repr_html_(self) -> str:
        from mirage_lab.ir.printer import to_html

        return to_html(self)

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

    def canonical_hash(self) -> str:
        """A stable content hash (sha256 of the canonical JSON), equal for equal graphs."""
        from mirage_lab.ir.io import canonical_hash

        return canonical_hash(self)

    def superoptimize(self, config: Any = None, **kw: Any) -> Any:
        """Search for faster equivalent μGraphs: ``ml.superoptimize(self, config, **kw)``."""
        from mirage_lab.search.runner import superoptimize

        return superoptimize(self, config, **kw)

    def to_python(self) -> str:
        """Builder code that rebuilds an equal graph."""
        from mirage_lab.ir.printer import to_python

        return to_python(self)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __str__(self) -> str:
        from mirage_lab.ir.printer import format_kernel_graph

        return format_kernel_graph(self)

    def __repr__(self) -> str:
        kinds = [n.op.value for n in self.compute_nodes]
        return (f"KernelGraph({plural(len(self.inputs), 'input')}, ops=[{', '.join(kinds)}], "
                f"{plural(len(self.outputs), 'output')})")

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        from mirage_lab.ir.printer import to_html

        return to_html(self)


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def loader_dtensor(node: Node) -> TensorType:
    """The DTensor type a block-graph loader reads."""
    return TensorType(tuple(node.attr("dims")), DType(node.attr("dtype")))


def saver_dtensor(bg: BlockGraph, node: Node) -> TensorType:
    """The DTensor a saver writes: tile dims × grid size on each omap dim (SPEC §3.2)."""
    tile = bg.tensors[node.inputs[0]]
    return TensorType(saver_dims(tile.dims, node.attr("omap"), bg.grid), tile.dtype)


def saver_dims(tile: Dims, omap: tuple[int, ...], grid: Grid) -> Dims:
    dims = list(tile)
    for axis, d in enumerate(omap):
        if grid[axis] > 1 and d >= 0:
            dims[d] *= grid[axis]
    return tuple(dims)


def loader_tile(dims: Dims, imap: tuple[int, ...], fmap: int, grid: Grid, forloop_range: int) -> Dims:
    """The per-block, per-iteration tile a loader produces (SPEC §3.2); assumes divisibility."""
    tile = list(dims)
    for axis, d in enumerate(imap):
        if grid[axis] > 1 and d >= 0:
            tile[d] //= grid[axis]
    if fmap >= 0:
        tile[fmap] //= forloop_range
    return tuple(tile)
