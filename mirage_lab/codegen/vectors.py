"""How a block's threads copy a tile between global and shared memory: the widest vector its rows allow, and which
thread takes which copy. Pure arithmetic on dims; ``codegen.tiles`` writes the copies."""

from __future__ import annotations

import math
from dataclasses import dataclass

from mirage_lab.ir.tensor import Dims

#: copy widths, widest first: bytes → CUDA vector type (alignment = size)
VECTORS = ((16, "uint4"), (8, "uint2"), (4, "uint1"))


@dataclass(frozen=True)
class TileCopy:
    """How a block's threads copy one tile: ``step`` elements per copy (a ``vtype`` vector, or one element when
    empty), ``per_row`` copies per tile row, ``rounds`` copies per thread. Flat (``group`` 0): copy c goes to
    thread ``c % threads``. By rows, when ``per_row`` does not divide the threads: thread t takes column
    ``t % per_row`` of rows ``t / per_row + r·group``, so a thread's copies are a constant stride apart (one
    base address and immediate offsets, instead of a division and an address register per copy)."""

    step: int
    vtype: str
    per_row: int
    rows: int
    group: int
    rounds: int

    @property
    def chunks(self) -> int:
        return self.per_row * self.rows


def tile_copy(tile: Dims, full: Dims, itemsize: int, threads: int, strides: Dims | None = None) -> TileCopy:
    step, vtype = copy_vector(tile, full, itemsize, strides)
    per_row, rows = tile[-1] // step, math.prod(tile[:-1])
    if per_row < threads and threads % per_row and rows > 1:
        group = threads // per_row
        return TileCopy(step, vtype, per_row, rows, group, -(-rows // group))
    return TileCopy(step, vtype, per_row, rows, 0, -(-(per_row * rows) // threads))


def copy_vector(tile: Dims, full: Dims, itemsize: int, strides: Dims | None = None) -> tuple[int, str]:
    """(elements per copy, vector type): the widest vector such that every tile row is whole vectors and
    every DTensor row starts aligned (tile offsets are then aligned too); (1, "") for element copies. A DTensor
    laid out in ``strides`` takes vectors only where its last dim is contiguous (stride 1) and every other stride
    keeps rows aligned; otherwise each element is loaded on its own."""
    for size, vtype in VECTORS:
        vec = size // itemsize
        rows_aligned = full[-1] % vec == 0 if strides is None else strides[-1] == 1 and all(
            s % vec == 0 for n, s in zip(full[:-1], strides[:-1], strict=True) if n > 1)
        if vec > 1 and tile[-1] % vec == 0 and rows_aligned:
            return vec, vtype
    return 1, ""


def copy_shape(tile: Dims, full: Dims, itemsize: int, strides: Dims | None = None, dense: bool = True
               ) -> tuple[Dims, Dims]:
    """The tile and DTensor dims a copy walks: as given, or, where their rows are too narrow for 16-byte vectors,
    with the trailing dims the tile spans whole merged into the dim before them, since such rows follow each other
    in both memories (a (32, 1) tile of row statistics copies as one run of 32 halves, in 16-byte vectors). Only for
    row-major DTensors and dense tiles: a padded tile's rows stay rows."""
    tile, full = tuple(tile), tuple(full)
    if strides is not None or not dense or copy_vector(tile, full, itemsize)[0] * itemsize == VECTORS[0][0]:
        return tile, full
    while len(tile) >= 2 and tile[-1] == full[-1]:
        tile, full = (*tile[:-2], tile[-2] * tile[-1]), (*full[:-2], full[-2] * full[-1])
    return tile, full
