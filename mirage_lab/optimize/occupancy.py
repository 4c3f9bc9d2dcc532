"""Occupancy of a customized op: resident blocks per SM from shared memory, registers and threads.

``estimate_resources(bg)`` gives a block's threads, registers per thread and shared memory:

* threads: ``prod(bg.block)`` (128 in every saved reference graph);
* shared memory: the SPEC §3.6 heuristic sum of ``mirage_lab.ir.smem`` (every counted op's outputs, no
  reuse) — the figure the search's 96 KiB budget is checked against; an upper bound on what a
  shared-memory planner (SPEC §8.2 step 7) would allocate;
* registers [lab estimate]: ``REGS_BASE`` (32: addresses, loop counters, indices) plus one fp32
  register per accumulator element per thread (SPEC §4: accumulators live in registers), rounded up
  to a multiple of 8 and capped at the architecture's 255 (beyond that the compiler spills).

Measured figures (``nvcc -Xptxas -v`` reports registers and static shared memory) replace the
estimate by passing ``BlockResources(...)`` for that kernel to ``proxy_cost(..., resources=...)``.

``occupancy(res, hw)`` follows the CUDA occupancy calculator: blocks per SM is the minimum of the
block limit, the thread (warp) limit, the register limit (registers allocated per warp in units of
``hw.reg_alloc_unit``) and the shared-memory limit (``smem + hw.smem_reserved_per_block`` per
block). A block that needs more than ``hw.smem_per_block`` or more threads than an SM holds does not
fit: 0 blocks per SM.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mirage_lab.ir import smem
from mirage_lab.ir.graph import BlockGraph
from mirage_lab.ir.ops import Kind
from mirage_lab.optimize.hardware import Hardware

__all__ = ["REGS_BASE", "BlockResources", "Occupancy", "estimate_resources", "occupancy"]

#: [lab estimate] registers per thread that are not accumulators
REGS_BASE = 32
WARP = 32


@dataclass(frozen=True)
class BlockResources:
    """What one thread block of a customized op holds while resident. ``source``: "estimate" or where a
    measured figure came from (e.g. "ptxas")."""

    threads: int
    regs_per_thread: int
    smem_bytes: int
    source: str = "estimate"

    @property
    def warps(self) -> int:
        return -(-self.threads // WARP)


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks per SM and which resource limits it ("blocks", "threads", "registers",
    "shared memory"; "does not fit" when 0)."""

    blocks_per_sm: int
    limiter: str
    resources: BlockResources

    @property
    def fits(self) -> bool:
        return self.blocks_per_sm > 0

    def waves(self, blocks: int, hw: Hardware) -> int:
        """``ceil(blocks / (SMs · blocks_per_SM))``; 0 when the block does not fit."""
        return math.ceil(blocks / (hw.sms * self.blocks_per_sm)) if self.fits else 0


def estimate_resources(bg: BlockGraph) -> BlockResources:
    """The [lab] estimate of a block's threads, registers per thread and shared memory (module docstring)."""
    threads = math.prod(bg.block)
    accum_elems = sum(bg.tensors[o].numel for n in bg.nodes if n.kind is Kind.ACCUM for o in n.outputs)
    regs = REGS_BASE + -(-accum_elems // max(threads, 1))
    regs = min(255, -(-regs // 8) * 8)
    usage = smem.heuristic_usage((n.op, [bg.tensors[o] for o in n.outputs]) for n in bg.nodes)
    return BlockResources(threads=threads, regs_per_thread=regs, smem_bytes=usage)


def occupancy(res: BlockResources, hw: Hardware) -> Occupancy:
    """Resident blocks per SM (module docstring)."""
    warps = res.warps
    if res.smem_bytes > hw.smem_per_block:
        return Occupancy(0, "does not fit (shared memory)", res)
    if warps * WARP > hw.max_threads_per_sm or warps * WARP > 1024:
        return Occupancy(0, "does not fit (threads)", res)
    regs = min(res.regs_per_thread, hw.max_regs_per_thread)
    regs_per_warp = -(-regs * WARP // hw.reg_alloc_unit) * hw.reg_alloc_unit
    limits = {
        "blocks": hw.max_blocks_per_sm,
        "threads": hw.max_threads_per_sm // (warps * WARP),
        "registers": (hw.regs_per_sm // regs_per_warp) // warps if regs_per_warp else hw.max_blocks_per_sm,
        "shared memory": hw.smem_per_sm // (res.smem_bytes + hw.smem_reserved_per_block),
    }
    limiter = min(limits, key=lambda k: limits[k])
    if limits[limiter] == 0:
        return Occupancy(0, f"does not fit ({limiter})", res)
    return Occupancy(limits[limiter], limiter, res)
