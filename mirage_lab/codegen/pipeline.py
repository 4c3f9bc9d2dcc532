"""Asynchronous copies and the loop's pipeline (SPEC §8.2 step 5): which loaders copy global → shared memory with
``cp.async``, and how many iterations ahead the loop tiles are copied.

**Asynchronous copies** (``async_copies=True``, the default): every loader whose tile copies in whole vectors
(``codegen.vectors``; 16 bytes as ``cp.async.cg``, 8 or 4 as ``cp.async.ca``) copies straight into shared
memory, without passing through registers (sm_80+: ``LDGSTS`` in the SASS). Element-wise copies (rows that are
not whole 4-byte vectors, or a strided input's scattered elements) stay plain loads and stores.

**The pipeline** (``prefetch=True``, the default, with asynchronous copies): each loop loader owns ``stages``
copies of its tile (its ring), and iteration i's tiles were requested ``stages − 1`` iterations earlier, so
that many iterations' bytes are in flight while one is computed. ``stages`` is the fewest that keep
``IN_FLIGHT_TARGET`` bytes in flight per SM, given the blocks an SM holds (the grid spread over the largest
target's SMs, and what shared memory allows), no more than the loop has iterations ahead, and no more than
fit the smallest target's shared memory with everything else. Without ``prefetch`` (or for F = 1) a loop tile is
copied, waited for and computed in turn: ``stages`` = 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mirage_lab.codegen.options import CodegenOptions
from mirage_lab.codegen.vectors import copy_shape, tile_copy
from mirage_lab.ir.graph import BlockGraph, loader_dtensor
from mirage_lab.ir.ops import Op
from mirage_lab.ir.smem import SMEM_CAPACITY
from mirage_lab.ir.tensor import Dims
from mirage_lab.optimize.hardware import HARDWARE
from mirage_lab.optimize.layout import TileLayout
from mirage_lab.optimize.memory import SmemPlan
from mirage_lab.optimize.occupancy import BlockResources, occupancy
from mirage_lab.optimize.schedule import BlockSchedule

#: the GPU the pipeline is sized for: the most SMs and the fastest memory (H200)
TARGET = max(HARDWARE.values(), key=lambda hw: (hw.sms, hw.dram_bytes_per_s))
#: bytes an SM keeps in flight: Little's law for the target (bandwidth × latency / SMs), with half again as
#: margin, since the latency figure is uncertain and loaded memory runs slower than idle
IN_FLIGHT_TARGET = int(1.5 * TARGET.bytes_in_flight_per_sm)
#: the most copies of a loop tile a ring holds
MAX_STAGES = 8
#: every kernel must fit the smallest target's shared memory (sm_80)
SMEM_LIMIT = SMEM_CAPACITY["sm_80"]


@dataclass(frozen=True)
class Pipeline:
    """``asynchronous``: the loaders (nodes) copied with ``cp.async``; ``ring``: the loop loaders among them
    copied ``stages − 1`` iterations ahead (empty when ``stages`` is 1)."""

    stages: int
    asynchronous: frozenset[int]
    ring: frozenset[int]

    def ring_tensors(self, bg: BlockGraph) -> dict[int, int]:
        """STensor → stages, for the shared-memory plan."""
        return {bg.nodes[k].outputs[0]: self.stages for k in self.ring}


NO_PIPELINE = Pipeline(1, frozenset(), frozenset())


def async_loaders(bg: BlockGraph, strides: Mapping[int, Dims], layouts: Mapping[int, TileLayout]) -> frozenset[int]:
    """Loaders whose tile copies in whole vectors (``strides``: loader → declared strides of its input)."""
    threads = math.prod(bg.block)
    out = set()
    for k, node in enumerate(bg.nodes):
        if node.op is Op.INPUT:
            d, t = loader_dtensor(node), node.outputs[0]
            tile, full = copy_shape(bg.tensors[t].dims, d.dims, d.dtype.itemsize, strides.get(k),
                                    not layouts[t].padded)
            if tile_copy(tile, full, d.dtype.itemsize, threads, strides.get(k)).vtype:
                out.add(k)
    return frozenset(out)


def plan_pipeline(bg: BlockGraph, schedule: BlockSchedule, options: CodegenOptions, strides: Mapping[int, Dims],
                  layouts: Mapping[int, TileLayout], smem_for: Callable[[Mapping[int, int]], SmemPlan]) -> Pipeline:
    """The pipeline of ``bg``; ``smem_for(rings)`` plans shared memory with those rings (STensor → stages)."""
    if not options.async_copies:
        return NO_PIPELINE
    copied = async_loaders(bg, strides, layouts)
    loop = {k for st in schedule.loop for k in st.nodes if k in copied and bg.nodes[k].op is Op.INPUT}
    if not options.prefetch or bg.forloop_range < 2 or not loop or not _only_read_in_loop(bg, schedule, loop):
        return Pipeline(1, copied, frozenset())
    per_iteration = sum(bg.tensors[bg.nodes[k].outputs[0]].nbytes for k in loop)
    ring = frozenset(loop)
    best = 1  # no ring fits: copy, wait, compute
    for stages in range(2, min(MAX_STAGES, bg.forloop_range + 1) + 1):
        plan = smem_for(Pipeline(stages, copied, ring).ring_tensors(bg))
        if plan.peak > SMEM_LIMIT:
            break
        best = stages
        if (stages - 1) * per_iteration * _resident_blocks(bg, plan.peak) >= IN_FLIGHT_TARGET:
            break
    return Pipeline(best, copied, ring if best > 1 else frozenset())


def _resident_blocks(bg: BlockGraph, smem_bytes: int) -> int:
    """Blocks an SM of the target holds: the grid spread over its SMs, as shared memory, threads and the block
    limit allow (``optimize.occupancy``; registers are ptxas's to fit, by ``__launch_bounds__``)."""
    by_grid = -(-math.prod(bg.grid) // TARGET.sms)
    fits = occupancy(BlockResources(math.prod(bg.block), 0, smem_bytes), TARGET).blocks_per_sm
    return max(1, min(by_grid, fits))


def _only_read_in_loop(bg: BlockGraph, schedule: BlockSchedule, loaders: set[int]) -> bool:
    """Whether the loop loaders' tiles are read only inside the loop (a ring's slot is chosen by iteration)."""
    inside = {k for st in schedule.loop for k in st.nodes}
    inside |= {j for tg in schedule.fusion if tg.producer in inside for j in tg.chain}
    tiles = {bg.nodes[k].outputs[0] for k in loaders}
    return all(j in inside for j, node in enumerate(bg.nodes) if tiles & set(node.inputs))
