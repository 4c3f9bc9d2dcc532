"""Which block-level matmuls run on tensor cores (SPEC §8.2's stretch goal), and the tiling they get.

The CUDA backend lowers a matmul with the warp-level ``nvcuda::wmma`` API in fp16 tiles of 16×16 or 8×32
outputs and K = 16 with fp32 accumulation (sm_70 and later, so both sm_80 and sm_90), the first
shape that divides the output: each warp takes output tiles in turn, runs
the K loop on fragments read straight from the operands' shared-memory tiles, and stores the result to
a private fp32 staging tile, from which the warp's lanes apply the matmul's fused epilogue (SPEC §4) and
write the output or the accumulator. The fragments' element layout is opaque, which is why the epilogue
goes through the staging tile.

A matmul qualifies when every operand is fp16, its rows (the product of A's leading dims), its columns
fit one of the shapes, every part's K is a multiple of 16, B has no batch dims (A's batch dims fold into its rows, as in
the scalar code), the block's threads are whole warps, and, for ``concat_then_matmul``, every part's
split points agree (A0·B0 + A1·B1). Everything else keeps the scalar loop. The operand and staging
buffers need 32-byte alignment (``wmma::load_matrix_sync``/``store_matrix_sync`` take 256-bit aligned
pointers); the shared-memory plan gives them that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mirage_lab.ir.dtype import DType
from mirage_lab.ir.graph import BlockGraph
from mirage_lab.ir.ops import Op

#: fp16 wmma output tiles (rows, columns), each with K = 16, in order of preference. The third sm_70+ shape,
#: 32×8, is left out: it is chosen only when the columns are not a multiple of 16, and then every other
#: tile's B pointer is 16 bytes off the 32-byte alignment that wmma loads need.
SHAPES = ((16, 16), (8, 32))
TILE_K = 16
WARP = 32
MMA_ALIGN = 32  # bytes: wmma loads and stores need 256-bit aligned pointers
STAGING_BYTES = 256 * 4  # one fp32 output tile (256 elements in every shape) per warp


@dataclass(frozen=True)
class MmaTiling:
    """How matmul ``node`` runs on tensor cores: ``rows × cols`` outputs in ``shape`` tiles (rows, columns;
    K = 16), ``parts`` are the (A STensor, B STensor, K) pairs whose products are summed, ``warps`` take the
    tiles in turn."""

    node: int
    rows: int
    cols: int
    shape: tuple[int, int]
    parts: tuple[tuple[int, int, int], ...]
    warps: int

    @property
    def tiles(self) -> int:
        return (self.rows // self.shape[0]) * (self.cols // self.shape[1])

    @property
    def staging_bytes(self) -> int:
        return self.warps * STAGING_BYTES

    @property
    def operands(self) -> tuple[int, ...]:
        return tuple(t for a, b, _ in self.parts for t in (a, b))


def mma_tiling(bg: BlockGraph, k: int) -> MmaTiling | None:
    """Node k's tensor-core tiling, or None when it keeps the scalar loop (see the module docstring)."""
    node = bg.nodes[k]
    threads = math.prod(bg.block)
    if node.op not in (Op.MATMUL, Op.CONCAT_THEN_MATMUL) or threads % WARP:
        return None
    half = len(node.inputs) // 2
    pairs = list(zip(node.inputs[:half], node.inputs[half:], strict=True))
    dims = {t: bg.tensors[t].dims for t in node.inputs}
    if any(bg.tensors[t].dtype is not DType.FLOAT16 for t in node.inputs):
        return None
    if any(dims[a][-1] != dims[b][-2] or math.prod(dims[b][:-2]) != 1 for a, b in pairs):
        return None
    out = bg.tensors[node.outputs[0]].dims
    rows, cols = math.prod(out[:-1]), out[-1]
    if any(math.prod(dims[a][:-1]) != rows for a, _ in pairs):
        return None
    shape = next(((m, n) for m, n in SHAPES if rows % m == 0 and cols % n == 0), None)
    if shape is None or any(dims[a][-1] % TILE_K for a, _ in pairs):
        return None
    return MmaTiling(k, rows, cols, shape, tuple((a, b, dims[a][-1]) for a, b in pairs), threads // WARP)


def mma_matmuls(bg: BlockGraph) -> dict[int, MmaTiling]:
    """Every matmul of ``bg`` that runs on tensor cores, by node."""
    return {k: t for k in range(len(bg.nodes)) if (t := mma_tiling(bg, k)) is not None}
