"""A Triton kernel's launch parameters, their per-kernel defaults, and the key a tuned value is filed under.

* ``num_warps``: the warps of one program (Triton's launch option).
* ``num_stages``: how many iterations of the for-loop's input tiles Triton keeps in flight. At ≥ 2, loads that feed
  ``tl.dot`` in the loop become asynchronous global→shared copies (cp.async on sm_80+) in a ring of that many
  shared buffers; 1 is load, wait, compute.
* ``min_extent``: the padding. Every tile dim other than 1 is padded to a power of two of at least this (16 is
  ``tl.dot``'s minimum; 64 lets sm_90 use wgmma, whose M is 64 per warp group, for a small M).

Defaults come from the kernel's tiles (``default_launch``); a table tuned on a device (``codegen.triton.tuned``)
overrides them per kernel, filed under ``kernel_key``: a hash of the block graph and the addressing it is emitted
with, never a program's name.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from mirage_lab.errors import InputError
from mirage_lab.ir.canonical import block_graph_to_dict
from mirage_lab.ir.graph import BlockGraph
from mirage_lab.ir.ops import Op
from mirage_lab.ir.tensor import Dims

__all__ = ["DOT_MIN", "TritonLaunch", "default_launch", "kernel_key", "padded"]

#: tl.dot's smallest extent per dim
DOT_MIN = 16
#: bytes of input tiles a block should keep in flight: about 16 KiB per block, two or more blocks per SM, covers the
#: ~25 KB per SM an H100/H200 needs to hide DRAM latency (issue 36)
IN_FLIGHT_BYTES = 16 * 1024
#: shared memory the pipeline's buffers may take per block (sm_80 allows 163 KiB, sm_90 227 KiB), leaving room for
#: Triton's own scratch (layout conversions, reductions)
STAGE_BUDGET_BYTES = 128 * 1024
MAX_STAGES = 4
#: at least two buffers where the loop and the budget allow: with one (2 stages), ptxas spilled 368 bytes on sm_80
#: for the search's GatedMLP b8 kernel at 8 warps (255 registers), and needed 108 registers without spills at 3
MIN_BUFFERS = 2


def padded(n: int, min_extent: int = DOT_MIN) -> int:
    """The Triton extent of a tile dim of ``n``: 1 stays 1 (broadcasting keeps its meaning), otherwise the next
    power of two, at least ``min_extent``. A function of ``n`` alone, so tiles that broadcast stay compatible."""
    return 1 if n == 1 else max(min_extent, 1 << (n - 1).bit_length())


def _power_of_two(n: object) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n > 0 and n & (n - 1) == 0


@dataclass(frozen=True)
class TritonLaunch:
    """One kernel's launch parameters; ``origin`` says where they came from ("default", "tuned on NVIDIA_H200")."""

    num_warps: int
    num_stages: int
    min_extent: int = DOT_MIN
    origin: str = field(default="default", compare=False)

    def __post_init__(self) -> None:
        if not _power_of_two(self.num_warps) or self.num_warps > 32:
            raise InputError(f"num_warps must be a power of two from 1 to 32 (Triton's rule), got {self.num_warps!r}")
        if not isinstance(self.num_stages, int) or isinstance(self.num_stages, bool) or not 1 <= self.num_stages <= 8:
            raise InputError(f"num_stages must be an integer from 1 to 8, got {self.num_stages!r}")
        if not _power_of_two(self.min_extent) or self.min_extent < DOT_MIN:
            raise InputError(f"min_extent (the tile padding) must be a power of two ≥ {DOT_MIN} (tl.dot's minimum), "
                             f"got {self.min_extent!r}")

    def options(self) -> dict[str, int]:
        """The keyword arguments Triton takes at launch and in ``triton.compile``."""
        return {"num_warps": self.num_warps, "num_stages": self.num_stages}

    def __repr__(self) -> str:
        return (f"TritonLaunch(num_warps={self.num_warps}, num_stages={self.num_stages}, "
                f"min_extent={self.min_extent}, {self.origin})")


def _tile_elements(bg: BlockGraph, tid: int, min_extent: int) -> int:
    return math.prod(padded(n, min_extent) for n in bg.tensors[tid].dims)


def default_launch(bg: BlockGraph, min_extent: int = DOT_MIN) -> TritonLaunch:
    """Launch parameters from the kernel's tiles.

    Warps follow the largest tile, as in Triton's own matmul configurations (2 warps below 2K elements, 4 below
    16K, 8 from 16K): with 128-bit accesses 4 warps touch 1024 fp16 values per instruction, and 16K-element tiles on
    4 warps are where ptxas starts to spill (12–24 bytes on sm_80 at 2 stages for the search's RMSNorm and
    GatedMLP kernels).

    Stages: 1 when the loop runs once (nothing to overlap), else enough that the buffers in flight hold
    ``IN_FLIGHT_BYTES`` (and at least ``MIN_BUFFERS``), at most ``MAX_STAGES`` or the loop's length and within
    ``STAGE_BUDGET_BYTES``. Triton allocates num_stages − 1 buffers of the loop's input tiles (measured: 12, 24, 36
    KiB at 2, 3, 4 stages for 12 KiB of tiles), and at 1 stage passes the tiles through shared memory for ``tl.dot``
    anyway, so 2 stages cost no more shared memory than 1."""
    largest = max(_tile_elements(bg, t, min_extent) for t in range(len(bg.tensors)))
    warps = 8 if largest >= 16 * 1024 else 4 if largest >= 2 * 1024 else 2
    if bg.forloop_range == 1:
        return TritonLaunch(warps, 1, min_extent)
    per_stage = sum(_tile_elements(bg, n.outputs[0], min_extent) * bg.tensors[n.outputs[0]].dtype.itemsize
                    for n in bg.nodes if n.op is Op.INPUT)
    wanted = max(MIN_BUFFERS, math.ceil(IN_FLIGHT_BYTES / max(per_stage, 1)))
    buffers = min(wanted, MAX_STAGES - 1, bg.forloop_range - 1, max(1, STAGE_BUDGET_BYTES // max(per_stage, 1)))
    return TritonLaunch(warps, 1 + buffers, min_extent)


def kernel_key(bg: BlockGraph, in_strides: Sequence[Dims], out_strides: Sequence[Dims]) -> str:
    """sha256 of the block graph's canonical JSON and the strides its loaders and savers address: equal kernels,
    equal keys, in any program and process."""
    text = json.dumps({"block_graph": block_graph_to_dict(bg), "in_strides": [list(s) for s in in_strides],
                       "out_strides": [list(s) for s in out_strides]}, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()
