"""A graph's canonical dict form (the body of the JSON ``ir.io`` writes) and the content hash taken over it."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from mirage_lab.ir.tensor import TensorType

if TYPE_CHECKING:
    from mirage_lab.ir.graph import BlockGraph, KernelGraph, Node


def tensor_dict(t: TensorType, block: bool) -> dict[str, Any]:
    d: dict[str, Any] = {"dims": list(t.dims), "dtype": t.dtype.value}
    if block:
        d["post_loop"] = t.post_loop
    return d


def _attr_json(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


def _node_dict(n: Node) -> dict[str, Any]:
    d: dict[str, Any] = {"op": n.op.value, "inputs": list(n.inputs), "outputs": list(n.outputs)}
    if n.attrs:
        d["attrs"] = {k: _attr_json(v) for k, v in n.attrs}
    if n.body is not None:
        d["body"] = block_graph_to_dict(n.body)
    return d


def block_graph_to_dict(bg: BlockGraph) -> dict[str, Any]:
    return {
        "grid": list(bg.grid),
        "block": list(bg.block),
        "forloop_range": bg.forloop_range,
        "reduction_dimx": bg.reduction_dimx,
        "tensors": [tensor_dict(t, True) for t in bg.tensors],
        "nodes": [_node_dict(n) for n in bg.nodes],
    }


def graph_to_dict(g: KernelGraph) -> dict[str, Any]:
    return {
        "tensors": [tensor_dict(t, False) for t in g.tensors],
        "nodes": [_node_dict(n) for n in g.nodes],
        "outputs": list(g.outputs),
    }


def canonical_hash(g: KernelGraph) -> str:
    """sha256 of the compact canonical JSON of ``g``: equal graphs, equal hashes, in every process."""
    text = json.dumps(graph_to_dict(g), separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()
