"""Shared-memory planning over tensor lifetimes (SPEC §8.2 step 7).

The buffers are those the CUDA backend materialises: every loader tile, the output of every
op that is not fused away (SPEC §4 epilogues stay in registers), each accumulator's fp32 state
and post-loop result, rms_norm's per-row fp32 statistic and reduction_max's running maximum, each
16-byte aligned (a 128-bit access, ``ldmatrix``'s rows, a 16-byte ``cp.async``). A loop loader copied
asynchronously in a pipeline of ``stages`` (``codegen.pipeline``) owns that many copies of its tile (its
ring), live from the prologue, which starts filling it, to the end of the loop.
A buffer is live over the schedule's time steps from its writer's stage to its last reader's;
anything live on both sides of the loop boundary is live for the whole loop body, since every
iteration reads it. Two buffers may share bytes only if their lifetimes are disjoint.

Placement is offline dynamic storage allocation: first-fit in order of birth and best-fit
in order of decreasing size both run, and the plan with the lower peak is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from mirage_lab.ir.graph import BlockGraph
from mirage_lab.ir.ops import Kind, Op
from mirage_lab.optimize.layout import TileLayout
from mirage_lab.optimize.schedule import BlockSchedule

ALIGN = 16  # bytes: the widest vector copy (128 bits)
FP32 = 4


def align(n: int, to: int = ALIGN) -> int:
    return -(-n // to) * to


@dataclass(frozen=True)
class Buffer:
    """``key``: ``s<t>`` for STensor t, ``acc<k>`` / ``rms<k>`` / ``max<k>`` for node k's scratch;
    ``alignment``: its offset's (bytes)."""

    key: str
    nbytes: int
    first: int
    last: int
    alignment: int = field(default=ALIGN, compare=False)

    def overlaps(self, other: Buffer) -> bool:
        return self.first <= other.last and other.first <= self.last


@dataclass(frozen=True)
class SmemPlan:
    buffers: tuple[Buffer, ...]
    offsets: Mapping[str, int]
    peak: int
    strategy: str

    @property
    def naive(self) -> int:
        """Bytes without any reuse: every buffer side by side."""
        return sum(align(b.nbytes) for b in self.buffers)

    def __str__(self) -> str:
        rows = [f"  {b.key:>6} @ {self.offsets[b.key]:>6}  {b.nbytes:>6} B  steps {b.first}..{b.last}"
                for b in self.buffers]
        return "\n".join([f"smem plan ({self.strategy}): peak {self.peak} B, naive {self.naive} B", *rows])


def materialized(bg: BlockGraph, schedule: BlockSchedule) -> dict[int, int]:
    """STensor id → the node (stage leader) that writes it into shared memory."""
    fused = {j for tg in schedule.fusion for j in tg.chain}
    out: dict[int, int] = {}
    for k, node in enumerate(bg.nodes):
        if node.op is Op.OUTPUT or k in fused:
            continue
        chain = schedule.chain(k)
        if node.kind is Kind.ACCUM:
            out[node.outputs[0]] = k  # written by the finalise step
        elif not chain:
            out.update((t, k) for t in node.outputs)
        elif bg.nodes[chain[-1]].kind is not Kind.ACCUM:
            out[bg.nodes[chain[-1]].outputs[0]] = k
        if chain and bg.nodes[chain[-1]].kind is Kind.ACCUM:
            out[bg.nodes[chain[-1]].outputs[0]] = chain[-1]
    return out


def buffers(bg: BlockGraph, schedule: BlockSchedule, layouts: Mapping[int, TileLayout] | None = None,
            rings: Mapping[int, int] | None = None) -> list[Buffer]:
    """The buffers, their sizes and lifetimes; ``layouts``: the STensors' (``optimize.layout``; a padded tile
    takes its padding's bytes too); ``rings``: STensor → pipeline stages, for the loop tiles copied ahead."""
    layouts, rings = layouts or {}, rings or {}
    stages = schedule.stages
    loop_first, loop_last = schedule.loop_span
    epi = len(schedule.prologue) + len(schedule.loop)
    when: dict[int, list[int]] = {}  # node → the time steps it runs at
    for step, st in enumerate(stages):
        for k in st.nodes:
            when.setdefault(k, []).append(step)
    for tg in schedule.fusion:  # a fused node runs with its producer
        for j in tg.chain:
            when.setdefault(j, []).extend(when[tg.producer])

    def span(first: int, readers: list[int]) -> tuple[int, int]:
        last = max([first, *readers])
        if first < loop_first and last >= loop_first:
            last = max(last, loop_last)  # read by every iteration
        return first, last

    out = []
    for t, k in materialized(bg, schedule).items():
        node = bg.nodes[k]
        first = epi if node.kind is Kind.ACCUM else when[k][0]
        readers = [s for j, n in enumerate(bg.nodes) if t in n.inputs for s in when.get(j, [])
                   if n.kind is not Kind.ACCUM or s < epi]  # an accumulator reads its input only in the loop
        nbytes = layouts[t].nbytes if t in layouts else bg.tensors[t].nbytes
        if t in rings:  # filled from the prologue on, read until the loop's end
            out.append(Buffer(f"s{t}", ring_slot(nbytes) * rings[t], 0, loop_last))
            continue
        out.append(Buffer(f"s{t}", nbytes, *span(first, readers)))
    for k, node in enumerate(bg.nodes):
        size = bg.tensors[node.outputs[0]].numel * FP32 if node.outputs else 0
        if node.kind is Kind.ACCUM:
            out.append(Buffer(f"acc{k}", size, 0, epi))  # zeroed before the loop, read by the finalise step
        elif node.op is Op.RMS_NORM:
            rows = size // FP32 // _norm_size(bg, k)
            out.append(Buffer(f"rms{k}", rows * FP32, when[k][0], when[k][0]))
        elif node.op is Op.REDUCTION_MAX and not bg.tensors[node.inputs[0]].post_loop:
            out.append(Buffer(f"max{k}", size, loop_first, loop_last))
    return out


def ring_slot(nbytes: int) -> int:
    """Bytes from one copy of a ring's tile to the next (each 16-byte aligned)."""
    return align(nbytes)


def _norm_size(bg: BlockGraph, k: int) -> int:
    node = bg.nodes[k]
    dims = bg.tensors[node.inputs[0]].dims
    norm = tuple(node.attr("normalized_shape", dims[-1:]))
    n = 1
    for d in norm:
        n *= d
    return n


Placer = Callable[[list[tuple[int, int]], int, int], int]


def _first_fit(taken: list[tuple[int, int]], size: int, to: int) -> int:
    """The lowest offset (a multiple of ``to``) whose [offset, offset + size) misses every taken range."""
    offset = 0
    for lo, hi in sorted(taken):
        if offset + size <= lo:
            break
        offset = max(offset, align(hi, to))
    return offset


def _best_fit(taken: list[tuple[int, int]], size: int, to: int) -> int:
    """The gap between taken ranges that fits ``size`` most tightly (the open top as a last resort), at a
    multiple of ``to``."""
    best, best_gap, offset = None, None, 0
    for lo, hi in sorted(taken):
        gap = lo - offset
        if gap >= size and (best_gap is None or gap < best_gap):
            best, best_gap = offset, gap
        offset = max(offset, align(hi, to))
    return offset if best is None else best


def _place(bufs: list[Buffer], order: Callable[[Buffer], tuple[int, ...]], placer: Placer) -> dict[str, int]:
    offsets: dict[str, int] = {}
    placed: list[Buffer] = []
    for b in sorted(bufs, key=order):
        taken = [(offsets[p.key], offsets[p.key] + p.nbytes) for p in placed if p.overlaps(b)]
        offsets[b.key] = placer(taken, align(b.nbytes), b.alignment)
        placed.append(b)
    return offsets


def plan_shared_memory(bg: BlockGraph, schedule: BlockSchedule, layouts: Mapping[int, TileLayout] | None = None,
                       rings: Mapping[int, int] | None = None) -> SmemPlan:
    """Offsets for every buffer (``layouts``: the STensors' layouts, dense where not given; ``rings``: STensor
    → pipeline stages of the loop tiles copied ahead)."""
    bufs = buffers(bg, schedule, layouts, rings)
    strategies = {
        "first-fit": _place(bufs, lambda b: (b.first, -b.nbytes), _first_fit),
        "best-fit": _place(bufs, lambda b: (-b.nbytes, b.first), _best_fit),
    }
    plans = [SmemPlan(tuple(bufs), offs, max((offs[b.key] + align(b.nbytes) for b in bufs), default=0), name)
             for name, offs in strategies.items()]
    return min(plans, key=lambda p: p.peak)
