"""The μGraph viewer's state, with no front end: which level is open, what is selected, what to show.

Levels form a stack: the kernel graph, then a custom kernel's block graph, then one of its fused
chains (thread graphs). ``click`` does what a click in the drawing does: a custom kernel or a fused
chain opens, anything else is selected and described (shapes, dtypes, bytes, shared memory, the
abstract expression). The notebook widget (``widgets.viewer``) and the static export only render it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import pandas as pd

import mirage_lab as ml
from mirage_lab.absexpr import GraphExpressions, graph_expressions
from mirage_lab.errors import InputError, MirageError
from mirage_lab.ir import (
    BlockGraph,
    KernelGraph,
    Kind,
    Node,
    Op,
    ThreadGraph,
    as_graph,
    derive_thread_graphs,
    loader_dtensor,
    saver_dtensor,
    smem_bytes,
)
from mirage_lab.widgets import draw
from mirage_lab.widgets.svg import render_svg
from mirage_lab.widgets.tiling import block_tilings_html

EXPR_CHARS = 600  # long attention expressions are cut for the side panel


@dataclass(frozen=True)
class Level:
    """One open level: the kernel graph, custom kernel ``node``'s block graph, or its ``thread``-th chain."""

    node: int | None = None
    thread: int | None = None

    @property
    def name(self) -> str:
        if self.node is None:
            return "kernel"
        return "block" if self.thread is None else "thread"


class GraphView:
    """Drill-down and selection over one μGraph (a ``KernelGraph`` or a builder)."""

    def __init__(self, graph: Any, engine: str = "auto") -> None:
        self.graph: KernelGraph = as_graph(graph)
        self.engine = engine
        self.stack: list[Level] = [Level()]
        self.selected: str | None = None
        self._analyses: dict[str, pd.DataFrame | str] = {}

    def __repr__(self) -> str:
        return f"GraphView({' › '.join(self.breadcrumbs())}; selected {self.selected or 'nothing'})"

    # ---- navigation
    @property
    def level(self) -> Level:
        return self.stack[-1]

    def breadcrumbs(self) -> list[str]:
        out = []
        for lv in self.stack:
            if lv.node is None:
                out.append("kernel graph")
            elif lv.thread is None:
                out.append(f"custom kernel #{lv.node}")
            else:
                out.append(f"thread graph {lv.thread}")
        return out

    def click(self, element: str) -> str:
        """Open ``element`` when it has a level below (a custom kernel, a fused chain), else select it.

        Returns what happened: ``"opened"`` or ``"selected"``.
        """
        self._check_element(element)
        lv = self.level
        if lv.name == "kernel" and element.startswith("n") and self.graph.nodes[int(element[1:])].body is not None:
            self.open_kernel(int(element[1:]))
            return "opened"
        if lv.name == "block" and element.startswith("tg"):
            self.open_thread(int(element[2:]))
            return "opened"
        self.selected = element
        return "selected"

    def open_kernel(self, k: int) -> None:
        if not 0 <= k < len(self.graph.nodes) or self.graph.nodes[k].body is None:
            custom = [i for i, n in enumerate(self.graph.nodes) if n.body is not None]
            raise InputError(f"node {k} is not a custom kernel; custom kernels are nodes {custom}")
        self.stack = [Level(), Level(k)]
        self.selected = None

    def open_thread(self, i: int) -> None:
        if self.level.node is None:
            raise InputError("open a custom kernel first: thread graphs live inside block graphs")
        chains = self.thread_graphs()
        if not 0 <= i < len(chains):
            raise InputError(f"block graph of #{self.level.node} has {len(chains)} fused chains; no chain {i}")
        self.stack = [Level(), Level(self.level.node), Level(self.level.node, i)]
        self.selected = None

    def up(self) -> None:
        """Back to the level above (no-op at the kernel graph)."""
        self.goto(len(self.stack) - 2)

    def goto(self, depth: int) -> None:
        """Jump to breadcrumb ``depth`` (0 = the kernel graph)."""
        depth = max(0, min(depth, len(self.stack) - 1))
        if depth != len(self.stack) - 1:
            self.stack = self.stack[: depth + 1]
            self.selected = None

    # ---- what the current level shows
    def block_graph(self) -> BlockGraph | None:
        k = self.level.node
        return None if k is None else self.graph.nodes[k].body

    def thread_graphs(self) -> tuple[ThreadGraph, ...]:
        bg = self.block_graph()
        return () if bg is None else derive_thread_graphs(bg)

    def _names(self) -> tuple[list[str], list[str]]:
        node = self.graph.nodes[self.level.node] if self.level.node is not None else None
        if node is None:
            return [], []
        return [f"d{t}" for t in node.inputs], [f"d{t}" for t in node.outputs]

    def dot(self) -> str:
        lv, bg = self.level, self.block_graph()
        if bg is None:
            return draw.kernel_dot(self.graph)
        ins, outs = self._names()
        if lv.thread is None:
            return draw.block_dot(bg, inputs=ins, outputs=outs)
        return draw.thread_dot(bg, self.thread_graphs()[lv.thread], lv.thread)

    def svg(self) -> str:
        return render_svg(self.dot(), self.engine)

    def tilings_html(self) -> str:
        """imap/fmap/omap cards of the open block graph ("" at the other levels)."""
        bg = self.block_graph()
        if bg is None or self.level.thread is not None:
            return ""
        return block_tilings_html(bg, *self._names())

    # ---- the open kernel's analysis (ptxas and SASS; compiled on first ask)
    def analysed(self, arch: str) -> bool:
        """Whether ``kernel_analysis(arch)`` has been computed (it compiles the whole graph once per arch)."""
        return arch in self._analyses

    def kernel_analysis(self, arch: str = "sm_90") -> dict[str, Any] | str:
        """The open custom kernel's row of ``ml.analyze_kernel(graph, arch)`` (metric → value), or a note saying
        why there is none (nvcc or cuobjdump missing, no kernel open)."""
        k = self.level.node
        if k is None:
            return "open a custom kernel to analyse its SASS"
        if arch not in self._analyses:
            try:
                self._analyses[arch] = ml.analyze_kernel(self.graph, arch)
            except MirageError as e:  # a missing nvcc or disassembler says what to install
                self._analyses[arch] = f"no SASS analysis for {arch}: {e}"
        frame = self._analyses[arch]
        if isinstance(frame, str):
            return frame
        rows = frame[frame["node"] == k].to_dict("records")
        return rows[0] if rows else f"custom kernel #{k} has no generated kernel in the analysis"

    # ---- details of the selection
    @functools.cached_property
    def expressions(self) -> GraphExpressions | None:
        try:
            return graph_expressions(self.graph)
        except MirageError:  # an op without an abstract rule: show the rest
            return None

    def details(self, element: str | None = None) -> dict[str, Any]:
        """What the side panel shows for ``element`` (default: the selection); {} when nothing is selected."""
        element = element if element is not None else self.selected
        if element is None:
            return self._level_details()
        self._check_element(element)
        if self.level.node is None:
            return self._kernel_details(element)
        return self._block_details(element)

    def _level_details(self) -> dict[str, Any]:
        bg = self.block_graph()
        if bg is None:
            g = self.graph
            return {"what": "kernel graph", "kernels": len(g.compute_nodes), "custom kernels": len(g.block_graphs),
                    "inputs": [draw.type_text(t) for t in g.input_types],
                    "outputs": [draw.type_text(t) for t in g.output_types]}
        return {"what": f"block graph of custom kernel #{self.level.node}", "grid": bg.grid,
                "thread block": bg.block, "for-loop": bg.forloop_range, "blocks": bg.num_blocks,
                "block ops": len(bg.compute_nodes), "shared memory": draw.kib(smem_bytes(bg)),
                "fused chains": [str(t) for t in self.thread_graphs()]}

    def _kernel_details(self, element: str) -> dict[str, Any]:
        g = self.graph
        if element.startswith("o"):
            t = g.outputs[int(element[1:])]
            return {"what": f"output {element[1:]}", "tensor": f"d{t}", "type": draw.type_text(g.tensors[t]),
                    "bytes": g.tensors[t].nbytes, "expression": self._expr(t)}
        node = g.nodes[int(element[1:])]
        out: dict[str, Any] = {"what": "input" if node.op is Op.INPUT else
                               "custom kernel" if node.body is not None else f"library kernel {node.op.value}",
                               "inputs": [f"d{t}: {draw.type_text(g.tensors[t])}" for t in node.inputs],
                               "outputs": [f"d{t}: {draw.type_text(g.tensors[t])}" for t in node.outputs],
                               "bytes written": sum(g.tensors[t].nbytes for t in node.outputs)}
        if node.attrs:
            out["attributes"] = dict(node.attrs)
        if node.body is not None:
            out["shared memory"] = draw.kib(smem_bytes(node.body))
        out["expression"] = self._expr(node.outputs[0])
        return out

    def _block_details(self, element: str) -> dict[str, Any]:
        bg = self.block_graph()
        assert bg is not None
        if element.startswith("tg"):
            return {"what": "fused chain", "chain": str(self.thread_graphs()[int(element[2:])])}
        node = bg.nodes[int(element[1:])]
        types = [f"s{t}: {draw.type_text(bg.tensors[t])}" for t in node.outputs]
        out: dict[str, Any] = {"what": _block_role(node), "outputs": types}
        if node.op is Op.INPUT:
            out.update(reads=draw.type_text(loader_dtensor(node)), imap=node.attr("imap"), fmap=node.attr("fmap"))
        elif node.op is Op.OUTPUT:
            out.update(writes=draw.type_text(saver_dtensor(bg, node)), omap=node.attr("omap"))
        else:
            out["inputs"] = [f"s{t}: {draw.type_text(bg.tensors[t])}" for t in node.inputs]
            out["phase"] = "after the loop" if draw.post_loop(bg, node) else "in the loop"
            out["shared memory"] = f"{sum(bg.tensors[t].nbytes for t in node.outputs):,} B"
        if node.attrs and node.op not in (Op.INPUT, Op.OUTPUT):
            out["attributes"] = dict(node.attrs)
        t = node.inputs[0] if node.op is Op.OUTPUT else node.outputs[0]
        out["expression"] = self._expr(t, block=True)
        return out

    def _expr(self, t: int, block: bool = False) -> str:
        ex = self.expressions
        if ex is None:
            return "(no abstract expression: an op of this graph has no abstract rule)"
        text = str(ex.blocks[self.level.node][t] if block and self.level.node is not None else ex.kernel[t])
        return text if len(text) <= EXPR_CHARS else text[:EXPR_CHARS] + " …"

    def elements(self) -> list[str]:
        """The clickable element ids of the current level."""
        bg = self.block_graph()
        if bg is None:
            return [f"n{k}" for k in range(len(self.graph.nodes))] + [f"o{i}" for i in range(len(self.graph.outputs))]
        if self.level.thread is not None:
            tg = self.thread_graphs()[self.level.thread]
            return [f"b{j}" for j in (tg.producer, *tg.chain)]
        return [f"b{j}" for j in range(len(bg.nodes))] + [f"tg{i}" for i in range(len(self.thread_graphs()))]

    def _check_element(self, element: str) -> None:
        if element not in self.elements():
            raise InputError(f"no element {element!r} at the {self.level.name} level; it has {self.elements()}")


def _block_role(node: Node) -> str:
    if node.op is Op.INPUT:
        return "loader"
    if node.op is Op.OUTPUT:
        return "saver"
    return f"accumulator {node.op.value}" if node.kind is Kind.ACCUM else f"block op {node.op.value}"
