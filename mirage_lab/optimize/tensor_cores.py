"""Which block-level matmuls run on tensor cores (SPEC §8.2), and how a block's warps share them.

The CUDA backend lowers such a matmul to warp-level ``mma.sync.m16n8k16`` (fp16 operands, fp32 accumulation;
sm_80 and later, so both sm_80 and sm_90), its operands read from the shared-memory tiles with ``ldmatrix``
(A as four 8×8 matrices, B as two, transposed on the way). A warp task is a 16-row band of the output by
``n_tiles`` 8-column tiles, so one A fragment serves ``n_tiles`` products; the block's warps take the tasks
in turn, and each lane applies the matmul's fused epilogue (SPEC §4) to the four outputs it holds, straight
from its registers (the fragment layout is fixed by the PTX ISA, unlike wmma's).

**Small M.** The rows are padded up to 16 in registers: lanes that would address rows past the tile's last
read its last row instead, and their products, which land only in output rows past the tile, are dropped.
So a 2-row RMSNorm+Linear tile runs on tensor cores too; ``docs/decisions.md`` (issue 36) says why.

A matmul qualifies when every operand is fp16, the columns are a multiple of 8, every part's K a multiple of
16, B has no batch dims (A's batch dims fold into its rows, as in the scalar code), the block's threads are
whole warps, and, for ``concat_then_matmul``, every part's rows agree (A0·B0 + A1·B1). Everything else keeps
the CUDA-core loop. ``ldmatrix`` takes 16-byte aligned row addresses: the tiles are 16-byte aligned and every
qualifying pitch is a multiple of 8 halves (padding adds 8).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from mirage_lab.ir.dtype import DType
from mirage_lab.ir.graph import BlockGraph
from mirage_lab.ir.ops import Op
from mirage_lab.optimize.schedule import BlockSchedule

TILE_M, TILE_N, TILE_K = 16, 8, 16  # mma.sync.m16n8k16
WARP = 32
MMA_ALIGN = 16  # bytes: ldmatrix row addresses (and cp.async's 16-byte copies)
#: the most 8-column tiles one warp task takes (each keeps 4 fp32 accumulators a lane)
MAX_N_TILES = 4


@dataclass(frozen=True)
class MmaTiling:
    """How matmul ``node`` runs on tensor cores: ``rows × cols`` outputs in tasks of 16 rows × ``n_tiles``·8
    columns; ``parts`` are the (A STensor, B STensor, K) pairs whose products are summed; ``warps`` take the
    tasks in turn."""

    node: int
    rows: int
    cols: int
    parts: tuple[tuple[int, int, int], ...]
    warps: int
    n_tiles: int

    @property
    def row_bands(self) -> int:
        return -(-self.rows // TILE_M)

    @property
    def rounds(self) -> int:
        """Tasks a warp takes: its sums, ``rounds × n_tiles × 4`` fp32 registers a lane."""
        return -(-self.tasks // self.warps)

    @property
    def tasks(self) -> int:
        return self.row_bands * (self.cols // (TILE_N * self.n_tiles))

    @property
    def padded_rows(self) -> bool:
        """Whether the last band reaches past the rows (small M): its lanes check their rows."""
        return self.rows % TILE_M != 0

    @property
    def operands(self) -> tuple[int, ...]:
        return tuple(t for a, b, _ in self.parts for t in (a, b))


def _n_tiles(rows: int, cols: int, warps: int) -> int:
    """8-column tiles per task: the most (up to ``MAX_N_TILES``) that divide the columns and still give every
    warp a task; 1 when even that leaves warps idle."""
    bands, n8 = -(-rows // TILE_M), cols // TILE_N
    for n in range(MAX_N_TILES, 0, -1):
        if n8 % n == 0 and bands * (n8 // n) >= warps:
            return n
    return 1


def mma_tiling(bg: BlockGraph, k: int) -> MmaTiling | None:
    """Node k's tensor-core tiling, or None when it keeps the CUDA-core loop (see the module docstring)."""
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
    if cols % TILE_N or any(dims[a][-1] % TILE_K for a, _ in pairs):
        return None
    warps = threads // WARP
    return MmaTiling(k, rows, cols, tuple((a, b, dims[a][-1]) for a, b in pairs), warps,
                     _n_tiles(rows, cols, warps))


def mma_matmuls(bg: BlockGraph) -> dict[int, MmaTiling]:
    """Every matmul of ``bg`` that runs on tensor cores, by node."""
    return {k: t for k in range(len(bg.nodes)) if (t := mma_tiling(bg, k)) is not None}


#: the most fp32 sums per lane a kernel keeps in registers across the for-loop: more made ptxas spill (sm_80,
#: the search's GQA kernel at 2 rounds × 4 tiles × 4 = 32 beside its attention tiles' addresses)
MAX_HELD = 16


def held_sums(bg: BlockGraph, schedule: BlockSchedule, mma: Mapping[int, MmaTiling]) -> dict[int, int]:
    """Tensor-core matmul → the ``accum_no_red`` it feeds directly, for those whose sums stay in registers across
    the for-loop (each warp owns the same tasks every iteration), written to the accumulator once, in the last
    iteration, instead of added to shared memory every iteration; in node order, within ``MAX_HELD``."""
    out, held = {}, 0
    for k, t in sorted(mma.items()):
        chain = schedule.chain(k)
        size = t.rounds * t.n_tiles * 4
        if (bg.forloop_range > 1 and len(chain) == 1 and bg.nodes[chain[0]].op is Op.ACCUM_NO_RED
                and held + size <= MAX_HELD):
            out[k], held = chain[0], held + size
    return out
