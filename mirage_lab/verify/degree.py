"""Degree bounds and the ops that make a verification's error bound heuristic (SPEC §6.5).

Every tensor of a μGraph is a vector of rational functions of the inputs. ``degree``
bounds numerator + denominator degree: inputs 1, products add, sums keep the maximum,
a quotient adds numerator and denominator, reductions and accumulators keep the degree.
Two graphs whose outputs differ differ in a polynomial of degree ≤ deg(a) + deg(b), which
a uniformly random point of Z_p zeroes with probability ≤ D/p (Schwartz–Zippel).
"""

from __future__ import annotations

from collections.abc import Callable

from mirage_lab.ir.graph import BlockGraph, KernelGraph, Node
from mirage_lab.ir.ops import OPS, Op

#: ops whose field rule is not a field identity (the op table's ``field``): they make the bound heuristic
HEURISTIC_OPS: frozenset[Op] = frozenset(op for op, spec in OPS.items() if spec.field and spec.field.heuristic)
#: ops with no field rule at all: graphs using them are decided by the float64 check alone
UNSUPPORTED_OPS: frozenset[Op] = frozenset(op for op, spec in OPS.items()
                                           if spec.field and spec.field.standing == "unsupported")


def _node_degree(node: Node, ins: list[int]) -> int:
    rule = node.op.spec.degree
    assert rule is not None, f"{node.op.value} declares no degree rule"
    return rule(ins)


def _walk(nodes: tuple[Node, ...], env: dict[int, int], on_custom: Callable[[Node, list[int]], list[int]]) -> None:
    for node in nodes:
        if node.op is Op.INPUT and node.body is None and not node.inputs:
            env.setdefault(node.outputs[0], 1)
            continue
        ins = [env[i] for i in node.inputs]
        outs = on_custom(node, ins) if node.body is not None else [_node_degree(node, ins)] * len(node.outputs)
        env.update(zip(node.outputs, outs, strict=True))


def _block_degrees(bg: BlockGraph, inputs: list[int]) -> list[int]:
    env: dict[int, int] = {}
    for loader, deg in zip(bg.loaders, inputs, strict=True):
        env[loader.outputs[0]] = deg
    _walk(bg.compute_nodes, env, lambda n, i: [])
    return [env[s.inputs[0]] for s in bg.savers]


def degree(g: KernelGraph) -> int:
    """The largest degree bound over ``g``'s outputs."""
    env: dict[int, int] = {}
    _walk(g.nodes, env, lambda node, ins: _block_degrees(node.body, ins) if node.body is not None else [])
    return max(env[o] for o in g.outputs)


def heuristic_ops(g: KernelGraph) -> set[str]:
    """Names of the ops in ``g`` (at any level) whose field rule is heuristic or conjectural."""
    found = {n.op.value for n in g.nodes if n.op in HEURISTIC_OPS}
    for bg in g.block_graphs:
        found |= {n.op.value for n in bg.nodes if n.op in HEURISTIC_OPS}
    return found


def unsupported_ops(g: KernelGraph) -> set[str]:
    """Ops with no field rule at all (verification needs the float cross-check alone)."""
    ops = {n.op for n in g.every_node()}
    return {op.value for op in ops if op in UNSUPPORTED_OPS}
