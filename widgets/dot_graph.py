"""μGraphs as ``graphviz.Digraph`` objects (``ml.to_graphviz``): the viewer's own drawings, restylable.

The DOT that ``widgets.draw`` writes is split into its defaults (``graph_attr``, ``node_attr``, ``edge_attr``, so
``d.graph_attr["rankdir"] = "LR"`` or ``d.attr(label="…")`` restyles it) and its statements (``body``). The
result is a real ``graphviz.Digraph`` (``pipe``, ``render``, ``subgraph``, ``node``, ``edge`` all work) that
renders inline in Jupyter; where graphviz's ``dot`` program is missing it shows the built-in layout instead of
an error. ``widgets.svg`` renders the viewer's static drawings through the same object.
"""

from __future__ import annotations

from mirage_lab.errors import InputError
from mirage_lab.ir import BlockGraph, KernelGraph, KernelGraphBuilder, as_graph
from mirage_lab.widgets import draw
from mirage_lab.widgets.svg import MuGraphDigraph, digraph

__all__ = ["to_graphviz"]

LEVELS = ("all", "kernel")


def to_graphviz(graph: KernelGraph | KernelGraphBuilder | BlockGraph, level: str = "all",
                title: str = "") -> MuGraphDigraph:
    """The μGraph as a ``graphviz.Digraph``, drawn as the viewer draws it; it renders inline in Jupyter.

    ``level="all"`` draws every custom kernel's block graph as a cluster beside the kernel graph;
    ``level="kernel"`` the kernel graph alone. A BlockGraph draws its block graph. Restyle it as any Digraph:
    ``d.graph_attr["rankdir"] = "LR"``, ``d.attr(label="…")``; ``d.source`` is its DOT, ``d.pipe(format="svg")``
    or ``d.render("mugraph", format="pdf")`` renders it with graphviz's ``dot``.
    """
    if isinstance(graph, BlockGraph):
        return digraph(draw.block_dot(graph, title))
    if level not in LEVELS:
        raise InputError(f"level={level!r}: expected one of {LEVELS}")
    g = as_graph(graph)
    return digraph(draw.mugraph_dot(g, title) if level == "all" else draw.kernel_dot(g, title))
