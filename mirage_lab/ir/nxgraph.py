"""A μGraph as a ``networkx.DiGraph``, for a user's own analysis (``ml.to_networkx``).

One node per op, keyed by its index in the graph's ``nodes``; an edge per producer → consumer pair, carrying
the tensor it passes. A custom kernel's node holds its block graph as a nested DiGraph (``body``), built the
same way. networkx is imported here, when called, not when the IR loads: it ships with the ``lab`` extra
(``pip install 'mirage-lab[lab]'``), and the core never needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mirage_lab.errors import InputError
from mirage_lab.ir.builder import KernelGraphBuilder, as_graph
from mirage_lab.ir.graph import BlockGraph, KernelGraph, Node, loader_dtensor, saver_dtensor
from mirage_lab.ir.ops import Op
from mirage_lab.ir.tensor import TensorType

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["import_networkx", "to_networkx"]


def import_networkx() -> Any:
    """The ``LabDiGraph`` class (networkx's DiGraph with a readable repr), or an InputError that names the extra
    to install when networkx is missing."""
    try:
        from mirage_lab.ir.nx_types import LabDiGraph
    except ImportError:
        raise InputError("networkx is not installed; it comes with the lab extra: pip install 'mirage-lab[lab]' "
                         "(or pip install networkx)") from None
    return LabDiGraph


def _tensor(t: TensorType) -> dict[str, Any]:
    return {"dims": tuple(t.dims), "dtype": t.dtype.value}


def _op_attrs(node: Node, tensors: tuple[TensorType, ...]) -> dict[str, Any]:
    outs = [tensors[t] for t in node.outputs]
    return {
        "op": node.op.value,
        "kind": node.kind.name.lower(),
        "inputs": tuple(node.inputs),
        "outputs": tuple(node.outputs),
        # every output's dims and dtype, and the first output's as ``shape``/``dtype`` (most ops have one)
        "shapes": tuple(tuple(t.dims) for t in outs),
        "dtypes": tuple(t.dtype.value for t in outs),
        "shape": tuple(outs[0].dims) if outs else None,
        "dtype": outs[0].dtype.value if outs else None,
        "attrs": dict(node.attrs),
    }


def _edges(g: Any, nodes: tuple[Node, ...], tensors: tuple[TensorType, ...]) -> None:
    """Producer → consumer edges; a pair joined by more than one tensor (or one used twice) lists them all in
    ``tensors`` and ``slots`` (the consumer's input positions); ``tensor``, ``dims``, ``dtype`` are the first's."""
    producer = {t: k for k, node in enumerate(nodes) for t in node.outputs}
    for k, node in enumerate(nodes):
        for slot, t in enumerate(node.inputs):
            src = producer[t]
            if g.has_edge(src, k):
                data = g.edges[src, k]
                data["tensors"] += (t,)
                data["slots"] += (slot,)
                continue
            g.add_edge(src, k, tensor=t, **_tensor(tensors[t]), post_loop=tensors[t].post_loop, tensors=(t,),
                       slots=(slot,))


def _block(bg: BlockGraph, digraph: Any, sources: tuple[int, ...] = (), targets: tuple[int, ...] = ()) -> nx.DiGraph:
    g = digraph(level="block", grid=tuple(bg.grid), forloop_range=bg.forloop_range, block=tuple(bg.block),
                   reduction_dimx=bg.reduction_dimx)
    loaders, savers = bg.loaders, bg.savers
    for j, node in enumerate(bg.nodes):
        a = _op_attrs(node, bg.tensors)
        a["post_loop"] = any(bg.tensors[t].post_loop for t in node.outputs)
        if node.op is Op.INPUT:
            i = loaders.index(node)
            d = loader_dtensor(node)
            a.update(imap=tuple(node.attr("imap")), fmap=node.attr("fmap"), grid=tuple(bg.grid),
                     forloop_range=bg.forloop_range, dtensor_shape=tuple(d.dims), index=i,
                     source=sources[i] if i < len(sources) else None)
        elif node.op is Op.OUTPUT:
            i = savers.index(node)
            d = saver_dtensor(bg, node)
            tile = bg.tensors[node.inputs[0]]
            a.update(omap=tuple(node.attr("omap")), grid=tuple(bg.grid), shape=tuple(tile.dims),
                     dtype=tile.dtype.value, dtensor_shape=tuple(d.dims), index=i,
                     target=targets[i] if i < len(targets) else None)
        g.add_node(j, **a)
    _edges(g, bg.nodes, bg.tensors)
    return g


def to_networkx(graph: KernelGraph | KernelGraphBuilder | BlockGraph) -> nx.DiGraph:
    """The μGraph as a ``networkx.DiGraph`` (a ``LabDiGraph``: its subclass with a readable repr), one node per op
    (key: its index in ``graph.nodes``).

    Node attributes: ``op`` (its name), ``kind``, ``inputs``/``outputs`` (tensor ids), ``shape``/``dtype`` (the
    first output's), ``shapes``/``dtypes`` (every output's), ``attrs`` (the op's attributes); a custom kernel also
    ``grid``, ``forloop_range``, ``block`` and ``body``, its block graph as a nested DiGraph whose loaders carry
    ``imap``, ``fmap`` and ``source`` (the kernel tensor they read) and whose savers carry ``omap`` and ``target``.
    Edges carry the tensor they pass: ``tensor`` (id), ``dims``, ``dtype`` (and ``tensors``/``slots`` when one
    pair of nodes is joined more than once). The graph's own attributes: ``level`` and, for a kernel graph,
    ``outputs`` (the marked tensors) and ``output_shapes``. Accepts a builder, a frozen KernelGraph or a BlockGraph.
    """
    digraph = import_networkx()
    if isinstance(graph, BlockGraph):
        return _block(graph, digraph)
    kg = as_graph(graph)
    g = digraph(level="kernel", outputs=tuple(kg.outputs),
                   output_shapes=tuple(tuple(kg.tensors[t].dims) for t in kg.outputs))
    for k, node in enumerate(kg.nodes):
        a = _op_attrs(node, kg.tensors)
        if node.body is not None:
            bg = node.body
            a.update(grid=tuple(bg.grid), forloop_range=bg.forloop_range, block=tuple(bg.block),
                     body=_block(bg, digraph, tuple(node.inputs), tuple(node.outputs)))
        g.add_node(k, **a)
    _edges(g, kg.nodes, kg.tensors)
    return g
