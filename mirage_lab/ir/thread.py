"""The thread level: per-thread epilogues derived by rules, never searched (SPEC §4).

A ``ThreadGraph`` is a chain of element-wise ops (and possibly a NO_RED accumulator)
that a thread applies in registers to its producer's result before writing shared
memory. ``derive_thread_graphs`` applies the reference's fusion rules as data
(``FUSION_RULES``), so each decision can name the rule that made it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mirage_lab.ir.graph import BlockGraph, Node
from mirage_lab.ir.ops import Kind, Op

#: the per-thread register budget for accumulators kept in registers (hardware limit: 255)
REGISTER_BUDGET = 192


@dataclass(frozen=True)
class ThreadGraph:
    """Block-graph nodes ``chain`` (indices into ``bg.nodes``) fused into node ``producer``."""

    producer: int
    chain: tuple[int, ...]
    in_registers: bool = False

    def __str__(self) -> str:
        where = ", accumulator in registers" if self.in_registers else ""
        return f"epilogue of node {self.producer}: nodes {list(self.chain)}{where}"


def _fusable(node: Node) -> bool:
    return node.kind is Kind.UNARY or node.op is Op.ACCUM_NO_RED


@dataclass(frozen=True)
class FusionRule:
    """A named reason that forbids fusing a consumer into a producer."""

    name: str
    forbids: Callable[[Node], bool]


FUSION_RULES: tuple[FusionRule, ...] = (
    FusionRule("never into a loader", lambda p: p.op is Op.INPUT),
    FusionRule("never into an accumulator (it runs outside the loop)", lambda p: p.kind is Kind.ACCUM),
    FusionRule("never into a multi-output op", lambda p: len(p.outputs) != 1),
)


def blocking_rule(producer: Node) -> str | None:
    """The name of the rule that forbids fusing into ``producer``, or None."""
    return next((r.name for r in FUSION_RULES if r.forbids(producer)), None)


def derive_thread_graphs(bg: BlockGraph) -> tuple[ThreadGraph, ...]:
    """Greedy epilogue fusion: follow single-consumer chains of fusable ops from each producer."""
    consumers: dict[int, list[int]] = {}
    for k, n in enumerate(bg.nodes):
        for t in n.inputs:
            consumers.setdefault(t, []).append(k)
    fused_into: set[int] = set()
    groups = []
    for k, node in enumerate(bg.nodes):
        if k in fused_into or blocking_rule(node) is not None or node.op is Op.OUTPUT:
            continue
        chain, cur = [], node
        while True:
            users = consumers.get(cur.outputs[0], []) if len(cur.outputs) == 1 else []
            if len(users) != 1 or not _fusable(bg.nodes[users[0]]):
                break
            chain.append(users[0])
            cur = bg.nodes[users[0]]
            if cur.kind is Kind.ACCUM:  # the chain ends at the accumulator
                break
        if chain:
            fused_into.update(chain)
            groups.append(ThreadGraph(k, tuple(chain), _in_registers(bg, node, bg.nodes[chain[-1]])))
    return tuple(groups)


def _in_registers(bg: BlockGraph, producer: Node, last: Node) -> bool:
    """SPEC §4: a NO_RED after a matmul stays in registers within the per-thread budget."""
    if producer.op is not Op.MATMUL or last.op is not Op.ACCUM_NO_RED:
        return False
    threads = bg.block[0] * bg.block[1] * bg.block[2]
    return bg.tensors[last.outputs[0]].numel <= REGISTER_BUDGET * threads
