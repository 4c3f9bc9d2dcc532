"""Which elements of a DTensor one block reads at one iteration, or writes (SPEC §3.2, §3.4).

The answers come from the interpreter's own ``load_tiles`` / ``save_tiles`` run on index tensors, so the
tile-access view and the interpreter cannot disagree about the map semantics. The index tensors are
broadcast views (one ``arange`` per dim) and ``load_tiles`` only splits and permutes axes, so a loader of
a large tensor costs no more memory than its dims; a saver is scattered with tiles one element wide on
every dim but the one asked about.
"""

from __future__ import annotations

import numpy as np

from mirage_lab.errors import InputError
from mirage_lab.ir.graph import BlockGraph, Grid, Node, loader_dtensor, saver_dtensor
from mirage_lab.semantics.interpret import LEAD, load_tiles, save_tiles

Ranges = tuple[range, ...]


def loader_ranges(bg: BlockGraph, node: Node, block: Grid, iteration: int) -> Ranges:
    """Per dim, the indices of loader ``node``'s DTensor that ``block`` reads at ``iteration``."""
    check_block(bg, block, iteration)
    dims = loader_dtensor(node).dims
    out = []
    for d, n in enumerate(dims):
        index = np.broadcast_to(np.arange(n).reshape([-1 if k == d else 1 for k in range(len(dims))]), dims)
        tiles = load_tiles(index, node, bg)
        # an axis the loader does not split (φ) has size 1 here: every block, every iteration reads that tile
        at = [min(k, n - 1) for k, n in zip((*block, iteration), tiles.shape[:LEAD], strict=True)]
        tile = tiles[tuple(at)]
        out.append(_as_range(tile[tuple(slice(None) if k == d else 0 for k in range(len(dims)))], d))
    return tuple(out)


def saver_ranges(bg: BlockGraph, node: Node, block: Grid) -> Ranges:
    """Per dim, the indices of saver ``node``'s DTensor that ``block`` writes (once, after the for-loop)."""
    check_block(bg, block, 0)
    tile = bg.tensors[node.inputs[0]].dims
    out = []
    for d in range(len(tile)):
        narrow = [tile[d] if k == d else 1 for k in range(len(tile))]
        mine = np.zeros((*bg.grid, 1, *narrow), dtype=np.int8)
        mine[block] = 1
        written = save_tiles(mine, node, bg)
        along = written.any(axis=tuple(k for k in range(len(tile)) if k != d))
        out.append(_as_range(np.flatnonzero(along), d))
    assert tuple(len(r) for r in out) == tile and len(saver_dtensor(bg, node).dims) == len(tile)
    return tuple(out)


def check_block(bg: BlockGraph, block: Grid, iteration: int) -> None:
    """A clear error for a block outside the grid or an iteration outside the for-loop."""
    if len(block) != 3 or any(not 0 <= b < g for b, g in zip(block, bg.grid, strict=True)):
        raise InputError(f"block {tuple(block)} is outside the grid {bg.grid}; pick (x, y, z) with 0 ≤ x < "
                         f"{bg.grid[0]}, 0 ≤ y < {bg.grid[1]}, 0 ≤ z < {bg.grid[2]}")
    if not 0 <= iteration < bg.forloop_range:
        raise InputError(f"iteration {iteration} is outside the for-loop range {bg.forloop_range}; pick 0 … "
                         f"{bg.forloop_range - 1}")


def _as_range(line: np.ndarray, dim: int) -> range:
    """The indices along one dim as a range; the maps of SPEC §3.2 cut a dim into contiguous blocks."""
    out = range(int(line[0]), int(line[-1]) + 1)
    if not np.array_equal(line, np.asarray(out)):
        raise AssertionError(f"dim {dim}: the tile's indices {line[:8]}… are not one contiguous run")
    return out
