"""The networkx graph class ``to_networkx`` and ``search_tree`` return: a ``networkx.DiGraph`` with a readable repr.

A module of its own so that networkx loads only when one is built (``ir.nxgraph.import_networkx`` imports
this module), and so the class pickles (it is defined at module level).
"""

from __future__ import annotations

import networkx as nx

__all__ = ["LabDiGraph"]


class LabDiGraph(nx.DiGraph):
    """A ``networkx.DiGraph`` (every networkx algorithm takes it) whose repr says what it holds."""

    def __repr__(self) -> str:
        what = self.graph.get("name") or f"{self.graph.get('level', '?')}-level μGraph"
        return (f"LabDiGraph({what}: {self.number_of_nodes()} nodes, {self.number_of_edges()} edges; "
                ".nodes[k] and .edges[a, b] hold the attributes)")
