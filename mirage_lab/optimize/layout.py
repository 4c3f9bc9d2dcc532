"""Shared-memory tile layouts (SPEC §8.2 steps 2 and 6): which dim is innermost, and the row padding.

**Innermost dim.** The DTensors are row-major, so a tile's last dim is the one whose elements are
contiguous in device memory. Keeping it innermost in shared memory too is what allows 16-byte copies
(SPEC's cost 4000 per loader or saver without them), matmul operands have theirs among the last two,
element-wise ops and reductions keep their input's, and wmma reads row-major fragments of either operand.
Every constraint and cost of the SPEC's 0/1 problem then points the same way, so the choice is made
here, not searched: the last dim, for every STensor.

**Row padding** (SPEC's step 6, with padding rather than an XOR swizzle, which would break the
vector copies' and the wmma fragments' contiguous rows). Shared memory serves a warp from 32 banks of 4
bytes, i.e. 8 chunks of 16 bytes. A reader that walks several rows at once hits the same banks in every
row when the row pitch is an even number of chunks: 2- to 32-way conflicts. Such readers: a wmma
fragment load (8 rows of 16 bytes per phase); a CUDA-core matmul's A, whose warp holds strips of several
rows; a row sum, rms_norm or last-dim reduction with a thread per row, or a split sum whose warp spans
several rows. Their tiles get one chunk of padding per row, so the pitch is an odd number of chunks.
Tiles whose rows are not whole chunks, single rows, and tiles only read element by element (each warp
on consecutive elements) keep the dense layout. Padding costs ``rows × 16`` bytes of shared memory; the
code generator drops it when the padded plan would not fit a block.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mirage_lab.ir.graph import BlockGraph
from mirage_lab.ir.ops import Op
from mirage_lab.ir.tensor import TensorType
from mirage_lab.optimize.tensor_cores import MmaTiling

CHUNK = 16  # bytes: a 128-bit access, and a quarter of a bank row
BANK_CHUNKS = 8  # 32 banks × 4 bytes
ROW_SUMS = frozenset({Op.ACCUM_SUM, Op.ACCUM_MEAN, Op.ACCUM_RMS})
LAST_DIM_REDUCTIONS = frozenset({Op.REDUCTION, Op.REDUCTION_MAX})


@dataclass(frozen=True)
class TileLayout:
    """A row-major STensor of ``rows × cols`` elements whose rows start ``pitch`` elements apart."""

    rows: int
    cols: int
    pitch: int
    itemsize: int

    @property
    def padded(self) -> bool:
        return self.pitch != self.cols

    @property
    def nbytes(self) -> int:
        return ((self.rows - 1) * self.pitch + self.cols) * self.itemsize

    def index(self, idx: str) -> str:
        """The C expression of the element offset of the row-major flat index ``idx``."""
        if not self.padded:
            return idx
        i = idx if idx.isidentifier() else f"({idx})"
        return f"{i} / {self.cols} * {self.pitch} + {i} % {self.cols}"


def dense(t: TensorType) -> TileLayout:
    cols = t.dims[-1] if t.dims else 1
    return TileLayout(t.numel // cols, cols, cols, t.dtype.itemsize)


def row_walked(bg: BlockGraph, mma: Mapping[int, MmaTiling]) -> set[int]:
    """STensors that some reader walks several rows of at once (see the module docstring)."""
    out = {t for tiling in mma.values() for t in tiling.operands}
    for node in bg.nodes:
        if node.op in (Op.MATMUL, Op.CONCAT_THEN_MATMUL):  # A: a warp's strips span rows at the same k
            out.update(node.inputs[:len(node.inputs) // 2])
        if node.op in ROW_SUMS or node.op is Op.RMS_NORM:
            out.add(node.inputs[0])
        elif node.op in LAST_DIM_REDUCTIONS and node.inputs:
            dims = bg.tensors[node.inputs[0]].dims
            if int(node.attr("dim")) == len(dims) - 1 and bg.tensors[node.outputs[0]].dims[-1] == 1:
                out.add(node.inputs[0])
    return out


def padded(t: TensorType) -> TileLayout:
    """``t`` with its rows padded to an odd number of chunks, where its rows are whole chunks."""
    lay = dense(t)
    row = lay.cols * lay.itemsize
    if lay.rows < 2 or row % CHUNK or (row // CHUNK) % 2:
        return lay
    return TileLayout(lay.rows, lay.cols, lay.cols + CHUNK // lay.itemsize, lay.itemsize)


def choose_layouts(bg: BlockGraph, mma: Mapping[int, MmaTiling], padding: bool = True) -> dict[int, TileLayout]:
    """Every STensor's layout: dense, or padded where a reader walks rows (``padding=False``: all dense)."""
    walked = row_walked(bg, mma) if padding else set()
    return {t: padded(tt) if t in walked else dense(tt) for t, tt in enumerate(bg.tensors)}
