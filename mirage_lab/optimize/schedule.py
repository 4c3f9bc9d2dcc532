"""Block scheduling (SPEC §8.2 step 5): order a block graph's ops into barrier-separated stages.

An op's depth is the longest path from the loaders; an op fused into its producer's epilogue
(SPEC §4) shares the producer's depth and never appears on its own. Ops of equal depth read
only tensors of smaller depth, so they run together, and a ``__syncthreads()`` is needed only
where the depth increases. Loaders without a for-loop dim (fmap = −1) are hoisted out of the
loop: their tile is the same every iteration.

A kernel has three sections, run in order: the prologue (hoisted loaders), the loop body
(run F times) and the epilogue (after the loop). An accumulator appears twice: in a loop
stage it *updates* its state (unless fused into its producer, which then updates it), and in
the epilogue's first stage it *finalises* the state into its post-loop STensor.
"""

from __future__ import annotations

from dataclasses import dataclass

from mirage_lab.ir.graph import BlockGraph, Node
from mirage_lab.ir.ops import Kind, Op
from mirage_lab.ir.thread import ThreadGraph, derive_thread_graphs

#: Barriers an op needs inside its own emission: rms_norm computes a per-row statistic that all
#: threads then read.
INTERNAL_BARRIERS: dict[Op, int] = {Op.RMS_NORM: 1}


@dataclass(frozen=True)
class Stage:
    """Nodes (indices into ``bg.nodes``) that run between two barriers."""

    depth: int
    nodes: tuple[int, ...]


@dataclass(frozen=True)
class BlockSchedule:
    prologue: tuple[Stage, ...]
    loop: tuple[Stage, ...]
    epilogue: tuple[Stage, ...]
    fusion: tuple[ThreadGraph, ...]
    #: ``__syncthreads()`` statements in the emitted kernel (the loop's run F times each)
    barriers: int

    @property
    def stages(self) -> tuple[Stage, ...]:
        """All stages in timeline order; a stage's position in this tuple is its time step."""
        return self.prologue + self.loop + self.epilogue

    @property
    def loop_span(self) -> tuple[int, int]:
        """Time steps (first, last) of the loop body; tensors live across it are live for all of it."""
        start = len(self.prologue)
        return start, start + len(self.loop) - 1

    def chain(self, node: int) -> tuple[int, ...]:
        """The nodes fused into ``node``'s epilogue, in order (empty if none)."""
        return next((tg.chain for tg in self.fusion if tg.producer == node), ())

    def __str__(self) -> str:
        lines = []
        for name, section in (("prologue", self.prologue), ("loop", self.loop), ("epilogue", self.epilogue)):
            for st in section:
                lines.append(f"{name} depth {st.depth}: nodes {list(st.nodes)}")
        return "\n".join([*lines, f"{self.barriers} barriers"])


def node_depths(bg: BlockGraph, fusion: tuple[ThreadGraph, ...]) -> list[int]:
    """Longest path from the loaders, per node; fused nodes take their producer's depth."""
    producer_of = {j: tg.producer for tg in fusion for j in tg.chain}
    tensor_depth: dict[int, int] = {}
    depths: list[int] = []
    for k, node in enumerate(bg.nodes):
        if node.op is Op.INPUT:
            d = 0
        elif k in producer_of:
            d = depths[producer_of[k]]
        else:
            d = 1 + max(tensor_depth[t] for t in node.inputs)
        depths.append(d)
        for t in node.outputs:
            tensor_depth[t] = d
    return depths


def _group(bg: BlockGraph, depths: list[int], nodes: list[int]) -> tuple[Stage, ...]:
    by_depth: dict[int, list[int]] = {}
    for k in nodes:
        by_depth.setdefault(depths[k], []).append(k)
    return tuple(Stage(d, tuple(ks)) for d, ks in sorted(by_depth.items()))


def _post_loop(bg: BlockGraph, node: Node) -> bool:
    return node.op is Op.OUTPUT or any(bg.tensors[t].post_loop for t in node.inputs)


def schedule_block_graph(bg: BlockGraph) -> BlockSchedule:
    fusion = derive_thread_graphs(bg)
    fused = {j for tg in fusion for j in tg.chain}
    depths = node_depths(bg, fusion)
    hoisted: list[int] = []
    loop: list[int] = []
    post: list[int] = []
    accums: list[int] = []
    for k, node in enumerate(bg.nodes):
        if node.op is Op.INPUT:
            (loop if node.attr("fmap", -1) >= 0 else hoisted).append(k)
            continue
        if node.kind is Kind.ACCUM:
            accums.append(k)
        if k in fused:
            continue
        (post if _post_loop(bg, node) else loop).append(k)
    prologue = _group(bg, depths, hoisted)
    body = _group(bg, depths, loop)
    finalise: tuple[Stage, ...] = (Stage(max(depths[k] for k in accums), tuple(accums)),) if accums else ()
    epilogue = finalise + _group(bg, depths, post)
    barriers = (1 if prologue else 0) + len(body) + max(len(epilogue) - 1, 0)  # loop: between stages + at its end
    barriers += sum(INTERNAL_BARRIERS.get(bg.nodes[k].op, 0) for st in body + epilogue for k in st.nodes)
    return BlockSchedule(prologue, body, epilogue, fusion, barriers)
