"""DOT to SVG: graphviz ``dot`` (through the graphviz package) when it is installed, else a small layered layout
in pure Python. ``digraph`` turns the DOT of ``widgets.draw`` into the ``graphviz.Digraph`` both use.

The fallback keeps the element ids and classes of graphviz's output (``<g id=".." class="node">``,
``class="cluster"``), so views and tests work the same either way; it is plainer (straight edges,
no edge labels) and says so in its title.
"""

from __future__ import annotations

import functools
import html
import re
import shutil
from typing import Any

import graphviz
import networkx as nx

from mirage_lab.errors import InputError, MirageError


def have_dot() -> bool:
    return shutil.which("dot") is not None


@functools.lru_cache(maxsize=256)
def render_svg(dot: str, engine: str = "auto") -> str:
    """The SVG of a DOT source; ``engine`` is ``"dot"``, ``"python"`` or ``"auto"`` (dot when installed)."""
    if engine == "dot" or (engine == "auto" and have_dot()):
        return _with_dot(dot)
    return fallback_svg(dot)


def _with_dot(dot: str) -> str:
    svg = with_dot(dot, "svg").decode()
    return svg[svg.index("<svg"):]  # drop the XML prolog and doctype so the SVG can be inlined in HTML


def with_dot(dot: str, fmt: str) -> bytes:
    """``dot`` drawn by graphviz's ``dot`` in ``fmt`` (svg, png, pdf, …); a MirageError naming the fix without it."""
    if not have_dot():
        raise MirageError("graphviz's `dot` is not installed; install it (Debian: apt-get install graphviz, or run "
                          "scripts/install_system_deps.sh) or pass engine='python' for the built-in layout")
    try:
        out: bytes = digraph(dot).pipe(format=fmt)
    except graphviz.CalledProcessError as e:
        stderr = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else str(e.stderr or "")
        raise MirageError(f"graphviz dot failed: {stderr.strip()}") from None
    return out


# --------------------------------------------------------------------------- DOT as a graphviz.Digraph

_DEFAULTS = re.compile(r"^\s*(graph|node|edge) \[(.*)\];?\s*$")
_ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|<.*>|[^\s\]]+)')


class MuGraphDigraph(graphviz.Digraph):
    """A ``graphviz.Digraph`` of a μGraph drawing, with a readable repr and a fallback picture without ``dot``."""

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any) -> dict[str, Any]:
        if have_dot():
            return super()._repr_mimebundle_(include, exclude, **kwargs)
        return {"image/svg+xml": fallback_svg(self.source)}

    def __repr__(self) -> str:
        nodes = sum(1 for line in self.body if re.match(r"\s*\w+ \[id=", line))
        edges = sum(1 for line in self.body if " -> " in line)
        title = html.unescape(str(self.graph_attr.get("label", ""))).strip('"')
        return f"MuGraphDigraph({title!r}: {nodes} nodes, {edges} edges; .source for DOT, .pipe(format='svg'))"


def _attrs(text: str) -> dict[str, str]:
    out = {}
    for key, value in _ATTR.findall(text):
        # a quoted value keeps its DOT escapes (graphviz leaves escaped quotes and backslash escapes alone)
        out[key] = value[1:-1] if value.startswith('"') else value
    return out


def digraph(dot: str, name: str = "G") -> MuGraphDigraph:
    """The ``graphviz.Digraph`` of a DOT source written by ``widgets.draw`` (not a general DOT reader)."""
    lines = dot.strip().splitlines()
    if not lines or not lines[0].lstrip().startswith("digraph") or lines[-1].strip() != "}":
        raise InputError("expected a DOT digraph as widgets.draw writes it ('digraph G {' … '}')")
    defaults: dict[str, dict[str, str]] = {"graph": {}, "node": {}, "edge": {}}
    body = []
    for line in lines[1:-1]:
        m = _DEFAULTS.match(line) if not line.startswith("    ") else None
        if m and not defaults[m.group(1)]:  # the header's defaults (a cluster's own lines are indented deeper)
            defaults[m.group(1)] = _attrs(m.group(2))
        else:
            body.append(line + "\n")
    return MuGraphDigraph(name=name, graph_attr=defaults["graph"], node_attr=defaults["node"],
                          edge_attr=defaults["edge"], body=body)


# --------------------------------------------------------------------------- fallback layout

_NODE = re.compile(r'^\s*(\w+) \[id="(\w+)" label=<(.*?)> .*?fillcolor="([^"]+)"', re.M)
_EDGE = re.compile(r"^\s*(\w+) -> (\w+)", re.M)
_CLUSTER = re.compile(r'subgraph cluster_\w+ \{ id="(\w+)"(.*?)\n\s*\}', re.S)
_TITLE = re.compile(r'graph \[.*?label="((?:[^"\\]|\\.)*)"')
W, H, GAP_X, GAP_Y = 170, 56, 24, 40


def _label_lines(label: str) -> list[str]:
    text = re.sub(r"<BR/>", "\n", label)
    return [html.unescape(re.sub(r"<[^>]+>", "", line)) for line in text.split("\n")]


def fallback_svg(dot: str) -> str:
    """A layered drawing of the DOT written by ``widgets.draw`` (not a general DOT reader)."""
    g: nx.DiGraph = nx.DiGraph()
    for m in _NODE.finditer(dot):
        g.add_node(m.group(2), lines=_label_lines(m.group(3)), fill=m.group(4))
    g.add_edges_from((a, b) for a, b in _EDGE.findall(dot) if a in g and b in g)
    pos: dict[str, tuple[int, int]] = {}
    layers = list(nx.topological_generations(g))
    width = max((len(layer) for layer in layers), default=1) * (W + GAP_X) + GAP_X
    for y, layer in enumerate(layers):
        x0 = (width - len(layer) * (W + GAP_X) + GAP_X) // 2
        for x, n in enumerate(sorted(layer)):
            pos[n] = (x0 + x * (W + GAP_X), 40 + y * (H + GAP_Y))
    height = 40 + len(layers) * (H + GAP_Y)
    title = _TITLE.search(dot)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}pt" height="{height}pt" '
             f'viewBox="0 0 {width} {height}"><g id="graph0" class="graph">',
             f'<text x="{width / 2}" y="20" text-anchor="middle" font-family="Helvetica" font-size="12">'
             f'{html.escape(title.group(1) if title else "")} (built-in layout: install graphviz for a better one)'
             "</text>"]
    parts += _clusters(dot, pos)
    for a, b in g.edges:
        (x1, y1), (x2, y2) = pos[a], pos[b]
        parts.append(f'<g class="edge"><line x1="{x1 + W / 2}" y1="{y1 + H}" x2="{x2 + W / 2}" y2="{y2}" '
                     'stroke="#6b7280" marker-end="url(#arrow)"/></g>')
    for n, (x, y) in pos.items():
        parts.append(_fallback_node(n, x, y, g.nodes[n]["lines"], g.nodes[n]["fill"]))
    parts.append('<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" '
                 'orient="auto"><path d="M0,0L10,5L0,10z" fill="#6b7280"/></marker></defs></g></svg>')
    return "".join(parts)


def _fallback_node(nid: str, x: int, y: int, lines: list[str], fill: str) -> str:
    texts = "".join(f'<text x="{x + W / 2}" y="{y + 15 + 12 * i}" text-anchor="middle" font-family="Helvetica" '
                    f'font-size="{11 if i == 0 else 9}">{html.escape(line[:34])}</text>'
                    for i, line in enumerate(lines))
    return (f'<g id="{nid}" class="node"><title>{nid}</title><rect x="{x}" y="{y}" width="{W}" height="{H}" rx="6" '
            f'fill="{fill}" stroke="#111827"/>{texts}</g>')


def _clusters(dot: str, pos: dict[str, tuple[int, int]]) -> list[str]:
    out = []
    for m in _CLUSTER.finditer(dot):
        members = [n for n in re.findall(r'\[id="(\w+)"', m.group(2)) if n in pos]
        if not members:
            continue
        xs = [pos[n][0] for n in members]
        ys = [pos[n][1] for n in members]
        x, y = min(xs) - 8, min(ys) - 8
        out.append(f'<g id="{m.group(1)}" class="cluster"><title>{m.group(1)}</title><rect x="{x}" y="{y}" '
                   f'width="{max(xs) - min(xs) + W + 16}" height="{max(ys) - min(ys) + H + 16}" fill="none" '
                   'stroke="#0ea5e9" stroke-dasharray="5,3"/></g>')
    return out
