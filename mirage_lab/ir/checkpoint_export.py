"""Export to the reference implementation's checkpoint format (current era, SPEC §10).

The export reproduces the 17 reference files record for record (``smem_offset``
included: the reference's scratch bump allocator, 16-byte aligned, with unary ops in
place) up to guid numbering and the era's data_type codes and accumulator names.
Extensions the reference format lacks: ``scalar`` on mul_scalar, ``min``/``max`` on clamp.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mirage_lab.ir.builder import KernelGraphBuilder, as_graph
from mirage_lab.ir.graph import PHI, BlockGraph, KernelGraph, Node
from mirage_lab.ir.io import write_atomic
from mirage_lab.ir.ops import Kind, Level, Op
from mirage_lab.ir.refformat import (
    CODE_OF,
    SMEM_ALIGN,
    Era,
    op_type_name,
)
from mirage_lab.ir.tensor import MAX_RANK, Dims, TensorType, contiguous_strides

# --------------------------------------------------------------------------- saving


class _Writer:
    """Exports kernel graphs in the current era's format with fresh, file-unique guids."""

    def __init__(self) -> None:
        self.next_d = 10_000_000
        self.next_s = 20_000_000

    def dguid(self) -> int:
        self.next_d += 1
        return self.next_d

    def sguid(self) -> int:
        self.next_s += 1
        return self.next_s

    @staticmethod
    def dtensor(t: TensorType, guid: int) -> dict[str, Any]:
        return {"data_type": CODE_OF[Era.CURRENT][t.dtype], "dim": _padded(t.dims), "guid": guid,
                "layout": "DmemRowMajor", "num_dims": len(t.dims)}

    @staticmethod
    def stensor(t: TensorType, guid: int, offset: int) -> dict[str, Any]:
        return {"after_accum": t.post_loop, "data_type": CODE_OF[Era.CURRENT][t.dtype], "dim": _padded(t.dims),
                "guid": guid, "layout": "SmemRowMajor", "num_dims": len(t.dims), "smem_offset": offset}

    def graph(self, g: KernelGraph) -> list[dict[str, Any]]:
        guid = {i: self.dguid() for i in range(len(g.tensors))}

        def rec(i: int) -> dict[str, Any]:
            return self.dtensor(g.tensors[i], guid[i])

        ops: list[dict[str, Any]] = []
        for n in g.nodes:
            if n.op is Op.INPUT:
                ops.append({"input_map": _NO_MAP, "input_strides": list(n.attr("strides")), "input_tensors": [],
                            "op_type": op_type_name(Level.KERNEL, Op.INPUT),
                            "output_tensors": [rec(n.outputs[0])]})
                continue
            d: dict[str, Any] = {"input_tensors": [rec(i) for i in n.inputs],
                                 "op_type": op_type_name(Level.KERNEL, n.op, n.attr("dim")),
                                 "output_tensors": [rec(i) for i in n.outputs]}
            if n.body is not None:
                d["bgraph"] = self.block_graph(n.body, [rec(i) for i in n.inputs], [rec(i) for i in n.outputs])
            d.update(_extras(n, g.tensors[n.inputs[0]].dims if n.inputs else ()))
            ops.append(d)
        for o in g.outputs:
            ops.append({"input_tensors": [rec(o)], "op_type": op_type_name(Level.KERNEL, Op.OUTPUT),
                        "output_map": _NO_MAP, "output_strides": list(contiguous_strides(g.tensors[o].dims)),
                        "output_tensors": []})
        return ops

    def block_graph(self, bg: BlockGraph, ins: list[dict[str, Any]], outs: list[dict[str, Any]]) -> dict[str, Any]:
        guid: dict[int, int] = {}
        offset: dict[int, int] = {}
        end = 0
        loaders = savers = 0
        ops: list[dict[str, Any]] = []

        def rec(i: int) -> dict[str, Any]:
            return self.stensor(bg.tensors[i], guid[i], offset[i])

        for n in bg.nodes:
            for i in n.outputs:  # the reference's scratch bump allocator; unary ops work in place (SPEC §3.6)
                guid[i] = self.sguid()
                if n.kind is Kind.UNARY:
                    offset[i] = offset[n.inputs[0]]
                else:
                    offset[i] = end
                    end += -(-bg.tensors[i].nbytes // SMEM_ALIGN) * SMEM_ALIGN
            name = op_type_name(Level.BLOCK, n.op, n.attr("dim"))
            if n.op is Op.INPUT:
                ops.append({"dtensor": ins[loaders], "forloop_dim": n.attr("fmap"),
                            "input_map": _xyz(n.attr("imap")), "input_tensors": [], "op_type": name,
                            "output_tensors": [rec(n.outputs[0])]})
                loaders += 1
            elif n.op is Op.OUTPUT:
                ops.append({"dtensor": outs[savers], "input_tensors": [rec(n.inputs[0])], "op_type": name,
                            "output_map": _xyz(n.attr("omap")), "output_tensors": []})
                savers += 1
            else:
                d = {"input_tensors": [rec(i) for i in n.inputs], "op_type": name,
                     "output_tensors": [rec(i) for i in n.outputs]}
                d.update(_extras(n, bg.tensors[n.inputs[0]].dims))
                ops.append(d)
        return {"block_dim": _xyz(bg.block), "forloop_range": bg.forloop_range,
                "graph_level": "thread_block_graph", "grid_dim": _xyz(bg.grid), "operators": ops,
                "reduction_dimx": bg.reduction_dimx, "smem_offset": end}


_NO_MAP = {"x": PHI, "y": PHI, "z": PHI}


def _xyz(v: Sequence[int]) -> dict[str, int]:
    return {"x": int(v[0]), "y": int(v[1]), "z": int(v[2])}


def _padded(dims: Dims) -> list[int]:
    return [*dims, *([0] * (MAX_RANK - len(dims)))]


def _extras(n: Node, in_dims: Dims) -> dict[str, Any]:
    """Per-op fields beyond the tensors: the reference's ``normalized_size``; scalars for mul_scalar/clamp."""
    if n.op is Op.RMS_NORM and n.attr("normalized_shape") is not None:
        return {"normalized_size": math.prod(n.attr("normalized_shape"))}
    if n.op is Op.MUL_SCALAR:
        return {"scalar": n.attr("scalar")}
    if n.op is Op.CLAMP:
        return {"min": n.attr("min"), "max": n.attr("max")}
    return {}


def dumps_reference_checkpoint(graphs: Any) -> str:
    """The current-era checkpoint JSON text of one kernel graph or a list of them."""
    gs = [graphs] if isinstance(graphs, KernelGraph | KernelGraphBuilder) else list(graphs)
    w = _Writer()
    return json.dumps([w.graph(as_graph(g)) for g in gs], indent=1, sort_keys=True)


def save_reference_checkpoint(graphs: Any, path: str | os.PathLike[str]) -> Path:
    """Write ``graphs`` as a current-era reference checkpoint, atomically (like ``ml.save``).

    A file whose graphs have no accumulator and only fp16 tensors is era-ambiguous (fp16 is 940,
    which the older era reads as double): load it back with ``era="current"``.
    """
    return write_atomic(path, dumps_reference_checkpoint(graphs))


