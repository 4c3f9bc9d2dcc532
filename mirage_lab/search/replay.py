"""Rebuild a search node's μGraph from its decisions, through the validating builders.

The search explores lean states for speed; every graph it reports is rebuilt here, so each
one has passed every rule of the builders (shapes, phases, shared memory, closing rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mirage_lab.errors import FormatError
from mirage_lab.ir.builder import BlockGraphBuilder, KernelGraphBuilder
from mirage_lab.ir.graph import BlockGraph, KernelGraph
from mirage_lab.ir.io import _replay_for
from mirage_lab.ir.ops import Op
from mirage_lab.search.decision import BlockOp, Close, Decision, KernelOp, OpenBlock, decoded


def replay(program: KernelGraph, decisions: Sequence[Decision | Sequence[Any]], *, smem_limit: int,
           reduction_dimx: int = 64) -> tuple[KernelGraphBuilder, list[Any], BlockGraphBuilder | None]:
    """Apply ``decisions`` (or their JSON form) to a kernel graph holding copies of the program's inputs.

    Returns the builder, its tensor handles in creation order, and the open block graph if the
    last decisions left one open.
    """
    g = KernelGraphBuilder()
    # the inputs keep the program's declared layout, so generated code reads them as the caller lays them out
    handles: list[Any] = [g.new_input(program.tensors[n.outputs[0]].dims, n.attr("strides"),
                                      program.tensors[n.outputs[0]].dtype) for n in program.nodes if n.op is Op.INPUT]
    tb: BlockGraphBuilder | None = None
    block: list[Any] = []
    custom_inputs: list[Any] = []
    for d in decoded(decisions):
        if isinstance(d, KernelOp):
            handles += _replay_for(Op(d.op), kernel=True)(g, [handles[i] for i in d.inputs], d.attributes)
        elif isinstance(d, OpenBlock):
            tb, custom_inputs, block = open_block(handles, d, smem_limit=smem_limit, reduction_dimx=reduction_dimx)
        elif isinstance(d, BlockOp) and tb is not None:
            block += _replay_for(Op(d.op), kernel=False)(tb, [block[i] for i in d.inputs], d.attributes)
        elif isinstance(d, Close) and tb is not None:
            used = {i for n in tb._nodes for i in n.inputs}
            for i, h in enumerate(block):
                if i not in used:
                    tb.new_output(h, list(d.omap))
            handles += g.customized(custom_inputs, tb)
            tb, block = None, []
        else:
            raise FormatError(f"cannot replay decision {d.to_json()!r} here")
    return g, handles, tb


def open_block(handles: Sequence[Any], decision: OpenBlock, *, smem_limit: int,
               reduction_dimx: int) -> tuple[BlockGraphBuilder, list[Any], list[Any]]:
    """An ``OpenBlock`` decision on kernel tensors ``handles``: the block graph builder, the kernel tensors it
    reads, and its loaders' block tensors."""
    d = decision
    tb = BlockGraphBuilder(list(d.grid), forloop_range=d.frange, reduction_dimx=reduction_dimx, smem_limit=smem_limit)
    custom_inputs = [handles[i] for i in d.inputs]
    return tb, custom_inputs, [tb.new_input(x, list(imap), fm) for x, imap, fm in zip(custom_inputs, d.imaps, d.fmaps,
                                                                                        strict=True)]


def kernel_so_far(g: KernelGraphBuilder) -> KernelGraph:
    """A kernel graph builder's graph with every unused tensor marked as an output (to draw and cost it)."""
    used = {i for n in g._nodes for i in n.inputs}
    return KernelGraph(tuple(g._tensors), tuple(g._nodes), tuple(i for i in range(len(g._tensors)) if i not in used))


def frozen_block(tb: BlockGraphBuilder) -> BlockGraph:
    """An open block graph builder's graph as it stands (no savers yet)."""
    return BlockGraph(tb.grid, tb.forloop_range, tuple(tb._tensors), tuple(tb._nodes), tb.block, tb.reduction_dimx)


def build_candidate(program: KernelGraph, decisions: Sequence[Decision | Sequence[Any]], outputs: Sequence[int], *,
                    smem_limit: int, reduction_dimx: int = 64) -> KernelGraph:
    """The complete graph of a kernel-level node, with ``outputs`` (kernel tensor indices) marked in order."""
    g, handles, tb = replay(program, decisions, smem_limit=smem_limit, reduction_dimx=reduction_dimx)
    if tb is not None:
        raise FormatError("the decisions leave a block graph open; a candidate ends at kernel level")
    for i in outputs:
        g.mark_output(handles[i])
    return g.freeze()


@dataclass(frozen=True)
class PartialGraph:
    """A search node's graph so far: the kernel graph (every unused tensor marked as an output, so it can be
    drawn and its expressions computed), and the block graph still open, if any, with the kernel tensors its
    loaders read."""

    kernel: KernelGraph
    block: BlockGraph | None
    block_inputs: tuple[int, ...] = ()


def partial_graph(program: KernelGraph, decisions: Sequence[Decision | Sequence[Any]], *, smem_limit: int,
                  reduction_dimx: int = 64) -> PartialGraph:
    steps = decoded(decisions)
    g, handles, tb = replay(program, steps, smem_limit=smem_limit, reduction_dimx=reduction_dimx)
    kernel = kernel_so_far(g)
    if tb is None:
        return PartialGraph(kernel, None)
    opened = next(d for d in reversed(steps) if isinstance(d, OpenBlock))
    return PartialGraph(kernel, frozen_block(tb), tuple(handles[i].id for i in opened.inputs))
