"""Which residue components of a graph's inputs can reach its outputs (SPEC §6: values lie in Z_p × Z_q).

Most field rules work on each component alone. ``exp`` is the exception that matters: exp(x) = ω^(x_q) mod p
reads only the q-part of its input and leaves 0 in its own q-part. In attention nothing else reads Q·Kᵀ, so
its p-part, a whole GEMM per trial, is never needed. The verifier hands such inputs over with the dead
component replaced by a free zero view (``NumberSystem.restrict``), which products and matmuls skip.

The analysis is a backward pass over the kernel graph and, through each customized op, its block graph:
an op in ``COMPONENTWISE`` needs of its inputs exactly the components needed of its output, one in
``Q_TO_P`` needs the q-part for its p-part, and every other op (square roots, powers, the heuristic rules
that read representatives, multi-output ops) needs everything as soon as anything of it is needed.
"""

from __future__ import annotations

from collections.abc import Sequence

from mirage_lab.ir.graph import BlockGraph, KernelGraph, Node
from mirage_lab.ir.ops import Op

Live = frozenset[str]
BOTH: Live = frozenset({"p", "q"})
NONE: Live = frozenset()

#: ops whose field rule computes each component from the same component of every input
COMPONENTWISE: frozenset[Op] = frozenset({
    Op.INPUT, Op.OUTPUT, Op.MATMUL, Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.SQUARE, Op.MUL_SCALAR, Op.REDUCTION,
    Op.REDUCTION_TO_DIMX, Op.CONCAT, Op.CONCAT_THEN_MATMUL, Op.ACCUM_NO_RED, Op.ACCUM_SUM, Op.ACCUM_MEAN,
    Op.ACCUM_SUM_TODIMX,
})
#: ops whose p-part is a function of the input's q-part alone and whose q-part is the constant 0
Q_TO_P: frozenset[Op] = frozenset({Op.EXP, Op.SIGMOID})


def needs(op: Op, live_out: Live) -> Live:
    """The components of each input of ``op`` that its output's ``live_out`` components read."""
    if not live_out:
        return NONE
    if op in COMPONENTWISE:
        return live_out
    if op in Q_TO_P:
        return frozenset({"q"}) if "p" in live_out else NONE
    return BOTH


def live_inputs(g: KernelGraph) -> list[Live]:
    """Per input of ``g``, in order, the components that can reach one of its outputs."""
    live = {t: BOTH for t in g.outputs}
    found: list[Live] = []
    for node in reversed(g.nodes):
        if node.op is Op.INPUT:
            found.append(live.get(node.outputs[0], NONE))
        elif node.op is Op.CUSTOMIZED:
            assert node.body is not None
            _mark(live, node.inputs, _block_live_inputs(node.body, [live.get(t, NONE) for t in node.outputs]))
        else:
            _mark(live, node.inputs, [_node_needs(node, live)] * len(node.inputs))
    return found[::-1]


def _block_live_inputs(bg: BlockGraph, saved: Sequence[Live]) -> list[Live]:
    """The live components of each loader of ``bg``, given those of each saver's DTensor (in order)."""
    live: dict[int, Live] = {}
    savers = iter(reversed(saved))
    found: list[Live] = []
    for node in reversed(bg.nodes):
        if node.op is Op.OUTPUT:
            _mark(live, node.inputs, [next(savers)])
        elif node.op is Op.INPUT:
            found.append(live.get(node.outputs[0], NONE))
        else:
            _mark(live, node.inputs, [_node_needs(node, live)] * len(node.inputs))
    return found[::-1]


def _node_needs(node: Node, live: dict[int, Live]) -> Live:
    out: Live = NONE.union(*(live.get(t, NONE) for t in node.outputs))
    return needs(node.op, out)


def _mark(live: dict[int, Live], tensors: Sequence[int], parts: Sequence[Live]) -> None:
    for t, part in zip(tensors, parts, strict=True):
        live[t] = live.get(t, NONE) | part
