"""The abstract expression of every tensor of a μGraph (SPEC §5.2).

The op table holds one abstract rule per op (``OpSpec.abstract``); this module walks
kernel and block graphs with them. Loaders take their DTensor's expression, savers
pass their STensor's expression to the DTensor they write.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mirage_lab.absexpr.terms import ALGEBRA, Term, var
from mirage_lab.errors import InputError, UnsupportedOpError
from mirage_lab.ir.builder import as_graph
from mirage_lab.ir.graph import BlockGraph, KernelGraph, Node
from mirage_lab.ir.ops import EvalArgs, Op
from mirage_lab.ir.tensor import Dims

if TYPE_CHECKING:
    import pandas as pd


def op_expression(op: Op, attrs: Mapping[str, Any], inputs: Sequence[Term], in_dims: Sequence[Dims], *,
                  forloop_range: int = 1, reduction_dimx: int = 64) -> tuple[Term, ...]:
    """The expressions of the outputs of ``op`` applied to ``inputs`` (what the search asks before building)."""
    rule = op.spec.abstract
    if rule is None:
        raise UnsupportedOpError(f"{op.value} has no abstract expression rule (SPEC §5.2); inputs, outputs and "
                                 "customized ops are handled by the graph walker")
    out = rule(ALGEBRA, EvalArgs(attrs, tuple(in_dims), reduction_dimx, forloop_range), *inputs)
    return out if isinstance(out, tuple) else (out,)


@dataclass(frozen=True)
class Place:
    """Where a tensor lives: a kernel tensor ``d3``, or block tensor ``s5`` of the customized op at node k."""

    tensor: int
    node: int | None = None  # index of the customized node for block tensors

    def __str__(self) -> str:
        return f"d{self.tensor}" if self.node is None else f"#{self.node}/s{self.tensor}"


@dataclass(frozen=True)
class GraphExpressions:
    """Expressions of a kernel graph's tensors, and of each customized op's block tensors."""

    graph: KernelGraph
    kernel: tuple[Term, ...]
    blocks: Mapping[int, tuple[Term, ...]]

    @property
    def outputs(self) -> tuple[Term, ...]:
        return tuple(self.kernel[i] for i in self.graph.outputs)

    def produced(self) -> Iterator[tuple[Place, Op, Term]]:
        """Every tensor an op produces (inputs, loaders and savers excluded), in creation order."""
        for k, node in enumerate(self.graph.nodes):
            if node.body is not None:
                yield from self._block_produced(k, node.body)
            elif node.op is not Op.INPUT:
                for t in node.outputs:
                    yield Place(t), node.op, self.kernel[t]
            if node.body is not None:
                for t in node.outputs:
                    yield Place(t), Op.CUSTOMIZED, self.kernel[t]

    def _block_produced(self, k: int, bg: BlockGraph) -> Iterator[tuple[Place, Op, Term]]:
        for n in bg.compute_nodes:
            for t in n.outputs:
                yield Place(t, k), n.op, self.blocks[k][t]

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd  # here, not at the top: search workers never load pandas
        rows = [{"tensor": str(p), "level": "kernel" if p.node is None else "block", "op": op.value,
                 "expression": str(e)} for p, op, e in self.produced()]
        return pd.DataFrame(rows, columns=["tensor", "level", "op", "expression"])


def graph_expressions(graph: Any, inputs: Sequence[Term] | None = None) -> GraphExpressions:
    """Expressions of every tensor of ``graph``; program input i is ``v_i`` unless ``inputs`` says otherwise."""
    g = as_graph(graph)
    n_in = len(g.inputs)
    feed = list(inputs) if inputs is not None else [var(i) for i in range(n_in)]
    if len(feed) != n_in:
        raise InputError(f"the graph has {n_in} inputs but {len(feed)} input expressions were given")
    env: dict[int, Term] = {}
    blocks: dict[int, tuple[Term, ...]] = {}
    it = iter(feed)
    for k, node in enumerate(g.nodes):
        if node.op is Op.INPUT:
            env[node.outputs[0]] = next(it)
        elif node.body is not None:
            block_env = block_expressions(node.body, [env[i] for i in node.inputs])
            blocks[k] = tuple(block_env[i] for i in range(len(node.body.tensors)))
            for saver, t in zip(node.body.savers, node.outputs, strict=True):
                env[t] = block_env[saver.inputs[0]]
        else:
            _apply(node, env, [g.tensors[i].dims for i in node.inputs])
    return GraphExpressions(g, tuple(env[i] for i in range(len(g.tensors))), blocks)


def _apply(node: Node, env: dict[int, Term], in_dims: Sequence[Dims], forloop_range: int = 1,
           reduction_dimx: int = 64) -> None:
    outs = op_expression(node.op, node.attr_map, [env[i] for i in node.inputs], in_dims,
                         forloop_range=forloop_range, reduction_dimx=reduction_dimx)
    for t, e in zip(node.outputs, outs, strict=True):
        env[t] = e


def block_expressions(bg: BlockGraph, inputs: Sequence[Term]) -> dict[int, Term]:
    env: dict[int, Term] = {}
    feed = iter(inputs)
    for node in bg.nodes:
        if node.op is Op.INPUT:
            env[node.outputs[0]] = next(feed)
        elif node.op is not Op.OUTPUT:
            _apply(node, env, [bg.tensors[i].dims for i in node.inputs], bg.forloop_range, bg.reduction_dimx)
    return env


def program_targets(program: Any) -> tuple[Term, ...]:
    """The target expressions ``E_o`` of a program's outputs (SPEC §5.3)."""
    return graph_expressions(program).outputs
