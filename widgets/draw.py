"""μGraphs as graphviz DOT, one level at a time: the kernel graph, a block graph, a thread graph.

Every drawn element carries an ``id`` that survives into the SVG (``<g id="n3" class="node">``), so
a view can map a click back to the graph: ``n<k>`` is kernel node k, ``o<i>`` output i; inside a
block graph ``b<j>`` is block node j and ``tg<i>`` the i-th fused chain (thread graph). The drawing
only reads the graph; rendering DOT to SVG lives in ``widgets.svg``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from mirage_lab.ir import (
    BlockGraph,
    KernelGraph,
    Kind,
    Node,
    Op,
    TensorType,
    ThreadGraph,
    derive_thread_graphs,
    loader_dtensor,
    plural,
    saver_dtensor,
    smem_bytes,
)

AXES = "xyz"
#: fill colours by role; the explorer and the static export reuse them
COLOURS = {"input": "#fef3c7", "output": "#dcfce7", "library": "#f3f4f6", "custom": "#dbeafe",
           "loader": "#fef3c7", "saver": "#dcfce7", "compute": "#ffffff", "accum": "#fde68a",
           "post": "#ede9fe", "thread": "#0ea5e9"}
FONT = 'fontname="Helvetica" fontsize=11'


def type_text(t: TensorType) -> str:
    return f"{t.dtype.short}[{','.join(map(str, t.dims))}]"


def map_text(m: Sequence[int], grid: Sequence[int]) -> str:
    """``x→1 y→φ``: which tensor dim each grid axis partitions (only the axes the grid uses)."""
    parts = [f"{AXES[a]}→{'φ' if d < 0 else d}" for a, d in enumerate(m) if grid[a] > 1]
    return " ".join(parts) or "replicated"


def kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB"


def _q(s: str) -> str:
    """A DOT string literal."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _html_label(lines: Sequence[str], bold_first: bool = True) -> str:
    """A graphviz HTML-like label: the first line bold, the rest small."""
    rows = []
    for i, line in enumerate(lines):
        text = html.escape(line)
        text = f"<B>{text}</B>" if i == 0 and bold_first else f'<FONT POINT-SIZE="9">{text}</FONT>'
        rows.append(text)
    return "<" + "<BR/>".join(rows) + ">"


def _node(nid: str, lines: Sequence[str], fill: str, shape: str = "box", extra: str = "") -> str:
    return (f'  {nid} [id={_q(nid)} label={_html_label(lines)} shape={shape} style="filled,rounded" '
            f'fillcolor="{fill}" {extra}];')


def _edge(src: str, dst: str, label: str) -> str:
    return f"  {src} -> {dst} [label={_q(label)} fontsize=9 fontcolor=\"#6b7280\"];"


def _header(title: str) -> list[str]:
    return ["digraph G {", f"  graph [rankdir=TB nodesep=0.3 ranksep=0.35 {FONT} label={_q(title)} labelloc=t];",
            f"  node [{FONT} penwidth=1.2 margin=\"0.12,0.06\"];", f"  edge [{FONT} arrowsize=0.7];"]


# --------------------------------------------------------------------------- kernel level


def kernel_node_lines(g: KernelGraph, k: int) -> list[str]:
    node = g.nodes[k]
    outs = [type_text(g.tensors[t]) for t in node.outputs]
    if node.op is Op.INPUT:
        return [f"d{node.outputs[0]}", *outs]
    if node.body is not None:
        bg = node.body
        return [f"custom kernel #{k}", f"grid {bg.grid} · for-loop ×{bg.forloop_range}",
                f"{len(bg.compute_nodes)} block ops · smem {kib(smem_bytes(bg))}", *outs]
    return [node.op.value, *outs]


def kernel_dot(g: KernelGraph, title: str = "") -> str:
    """The kernel graph: inputs, library ops, custom kernels (click to open) and marked outputs."""
    lines = _header(title or f"kernel graph · {plural(len(g.compute_nodes), 'kernel')}")
    producer: dict[int, str] = {}
    for k, node in enumerate(g.nodes):
        nid = f"n{k}"
        if node.op is Op.INPUT:
            lines.append(_node(nid, kernel_node_lines(g, k), COLOURS["input"], "ellipse"))
        elif node.body is not None:
            lines.append(_node(nid, kernel_node_lines(g, k), COLOURS["custom"], extra='penwidth=2 color="#2563eb"'))
        else:
            lines.append(_node(nid, kernel_node_lines(g, k), COLOURS["library"]))
        for t in node.inputs:
            lines.append(_edge(producer[t], nid, f"d{t}"))
        for t in node.outputs:
            producer[t] = nid
    for i, t in enumerate(g.outputs):
        lines.append(_node(f"o{i}", [f"output {i}", type_text(g.tensors[t])], COLOURS["output"], "ellipse"))
        lines.append(_edge(producer[t], f"o{i}", f"d{t}"))
    lines.append("}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- block level


def post_loop(bg: BlockGraph, node: Node) -> bool:
    """The op runs after the for-loop (its result is post-loop)."""
    return any(bg.tensors[t].post_loop for t in node.outputs)


def block_node_lines(bg: BlockGraph, j: int, inputs: Sequence[str] = (), outputs: Sequence[str] = ()) -> list[str]:
    node = bg.nodes[j]
    if node.op is Op.INPUT:
        i = bg.loaders.index(node)
        src = inputs[i] if i < len(inputs) else f"in{i}"
        return [f"load s{node.outputs[0]} ← {src}", f"imap {map_text(node.attr('imap'), bg.grid)}",
                f"fmap {'φ' if node.attr('fmap') < 0 else node.attr('fmap')}",
                f"{type_text(loader_dtensor(node))} → tile {type_text(bg.tensors[node.outputs[0]])}"]
    if node.op is Op.OUTPUT:
        i = bg.savers.index(node)
        dst = outputs[i] if i < len(outputs) else f"out{i}"
        return [f"save → {dst}", f"omap {map_text(node.attr('omap'), bg.grid)}",
                f"tile {type_text(bg.tensors[node.inputs[0]])} → {type_text(saver_dtensor(bg, node))}"]
    outs = " ".join(f"s{t}:{type_text(bg.tensors[t])}" for t in node.outputs)
    if node.kind is Kind.ACCUM:
        return [f"Σ {node.op.value}", outs, f"accumulates over {bg.forloop_range} iterations"]
    return [node.op.value, outs] + (["after the loop"] if post_loop(bg, node) else [])


def _block_fill(bg: BlockGraph, node: Node) -> tuple[str, str]:
    if node.op is Op.INPUT:
        return COLOURS["loader"], "box"
    if node.op is Op.OUTPUT:
        return COLOURS["saver"], "box"
    if node.kind is Kind.ACCUM:
        return COLOURS["accum"], "box"
    return (COLOURS["post"] if post_loop(bg, node) else COLOURS["compute"]), "box"


def block_dot(bg: BlockGraph, title: str = "", inputs: Sequence[str] = (), outputs: Sequence[str] = ()) -> str:
    """A block graph: loaders with their imap/fmap, ops, accumulators (Σ, double border) and savers.

    Fused element-wise chains (thread graphs) are dashed clusters ``tg<i>``; clicking one opens it.
    """
    fused = derive_thread_graphs(bg)
    member = {j: i for i, tg in enumerate(fused) for j in (tg.producer, *tg.chain)}
    head = title or (f"block graph · grid {bg.grid} · for-loop ×{bg.forloop_range} · "
                     f"smem {kib(smem_bytes(bg))}")
    lines = _header(head)
    clusters: dict[int, list[str]] = {i: [] for i in range(len(fused))}
    producer: dict[int, str] = {}
    edges = []
    for j, node in enumerate(bg.nodes):
        nid = f"b{j}"
        fill, shape = _block_fill(bg, node)
        extra = "peripheries=2" if node.kind is Kind.ACCUM else ""
        decl = _node(nid, block_node_lines(bg, j, inputs, outputs), fill, shape, extra)
        (clusters[member[j]] if j in member else lines).append(decl)
        edges += [_edge(producer[t], nid, f"s{t}") for t in node.inputs]
        for t in node.outputs:
            producer[t] = nid
    for i, decls in clusters.items():
        tg = fused[i]
        where = "registers" if tg.in_registers else "shared memory"
        lines.append(f"  subgraph cluster_tg{i} {{ id=\"tg{i}\" label={_q(f'thread graph {i} · result in {where}')} "
                     f'style="dashed,rounded" color="{COLOURS["thread"]}" fontcolor="{COLOURS["thread"]}";')
        lines += ["  " + d for d in decls]
        lines.append("  }")
    lines += edges
    lines.append("}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- thread level


def thread_dot(bg: BlockGraph, tg: ThreadGraph, index: int = 0) -> str:
    """One fused chain: what each thread does in registers between reading and writing shared memory."""
    where = "kept in registers" if tg.in_registers else "written to shared memory"
    lines = _header(f"thread graph {index}: epilogue of b{tg.producer} · result {where}")
    nodes = (tg.producer, *tg.chain)
    lines.append(_node("t_in", ["thread reads its elements"], COLOURS["loader"], "ellipse"))
    prev = "t_in"
    for j in nodes:
        node = bg.nodes[j]
        role = "computes" if j == tg.producer else "applies"
        fill = COLOURS["accum"] if node.kind is Kind.ACCUM else COLOURS["compute"]
        lines.append(_node(f"b{j}", [f"{role} {node.op.value}", *block_node_lines(bg, j)[1:]], fill))
        lines.append(_edge(prev, f"b{j}", "registers"))
        prev = f"b{j}"
    lines.append(_node("t_out", [where], COLOURS["saver"], "ellipse"))
    lines.append(_edge(prev, "t_out", type_text(bg.tensors[bg.nodes[nodes[-1]].outputs[0]])))
    lines.append("}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- every level at once

_BLOCK_IDS = re.compile(r"(?<![\w\"])b(\d+)(?= \[id=| ->|;|$)|(?<=-> )b(\d+)")


def _nested_block(bg: BlockGraph, k: int, inputs: Sequence[str], outputs: Sequence[str]) -> list[str]:
    """``block_dot``'s body as the cluster ``cluster_k<k>``, its ids prefixed ``k<k>`` so clusters never clash."""
    body = block_dot(bg, inputs=inputs, outputs=outputs).splitlines()[1:-1]
    title = body[0].split("label=", 1)[1].rsplit(" labelloc", 1)[0]
    out = [f"  subgraph cluster_k{k} {{ label={title} style=rounded color=\"#2563eb\";"]
    for line in body[3:]:  # after graph/node/edge defaults
        line = _BLOCK_IDS.sub(lambda m: f"k{k}b{m.group(1) or m.group(2)}", line)
        line = line.replace('id="b', f'id="k{k}b').replace("cluster_tg", f"cluster_k{k}tg").replace(
            'id="tg', f'id="k{k}tg')
        out.append("  " + line)
    out.append("  }")
    return out


def mugraph_dot(g: KernelGraph, title: str = "") -> str:
    """The whole μGraph in one drawing: the kernel graph, and each custom kernel's block graph as a cluster
    joined to its kernel by a dashed edge (what ``KNGraph.visualize`` renders)."""
    lines = kernel_dot(g, title).splitlines()[:-1]
    lines.insert(1, "  compound=true;")
    for k, node in enumerate(g.nodes):
        if node.body is None:
            continue
        lines += _nested_block(node.body, k, [f"d{t}" for t in node.inputs], [f"d{t}" for t in node.outputs])
        first = f"k{k}b0"
        lines.append(f'  n{k} -> {first} [style=dashed arrowhead=none lhead=cluster_k{k} color="#2563eb"];')
    lines.append("}")
    return "\n".join(lines)
