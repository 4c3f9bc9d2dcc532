"""Nodes of a μGraph and the tile arithmetic of its loaders and savers (SPEC §3.2).

A node is one op application; its ``inputs`` and ``outputs`` index its graph's ``tensors``.
The graph classes that hold nodes are in ``ir.graph``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mirage_lab.ir.dtype import DType
from mirage_lab.ir.ops import AttrValue, Kind, Op
from mirage_lab.ir.tensor import Dims, TensorType

if TYPE_CHECKING:
    from mirage_lab.ir.graph import BlockGraph

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
