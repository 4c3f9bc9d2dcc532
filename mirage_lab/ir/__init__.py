"""The μGraph IR: op table, tensors, frozen graphs, builders, printing and JSON.

The names below are the layer's public face, for the notebook layer and for scripts; the modules behind
them may move.
"""

from mirage_lab.ir.builder import BlockGraphBuilder, KernelGraphBuilder, as_graph
from mirage_lab.ir.graph import BlockGraph, KernelGraph, Node, loader_dtensor, saver_dtensor
from mirage_lab.ir.io import graph_from_dict, graph_to_dict, load, save, write_atomic
from mirage_lab.ir.node import plural
from mirage_lab.ir.nxgraph import to_networkx
from mirage_lab.ir.ops import Kind, Level, Op
from mirage_lab.ir.printer import dim_text, format_kernel_graph, map_text, smem_bytes, summary, to_python
from mirage_lab.ir.tensor import TensorType
from mirage_lab.ir.thread import ThreadGraph, derive_thread_graphs

__all__ = [
    "BlockGraph",
    "BlockGraphBuilder",
    "KernelGraph",
    "KernelGraphBuilder",
    "Kind",
    "Level",
    "Node",
    "Op",
    "TensorType",
    "ThreadGraph",
    "as_graph",
    "derive_thread_graphs",
    "dim_text",
    "format_kernel_graph",
    "graph_from_dict",
    "graph_to_dict",
    "load",
    "loader_dtensor",
    "map_text",
    "plural",
    "save",
    "saver_dtensor",
    "smem_bytes",
    "summary",
    "to_networkx",
    "to_python",
    "write_atomic",
]
