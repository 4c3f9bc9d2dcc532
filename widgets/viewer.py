"""The μGraph viewer widget: the drawing, breadcrumbs, a details panel and the tiling cards.

A thin anywidget over ``GraphView``: the front end only draws the SVG it is sent and reports
clicks (``{"kind": "click", "id": ...}``, ``{"kind": "crumb", "index": ...}``, ``{"kind": "analyze"}``); every
decision is made in Python, so headless tests drive the same code by calling ``click`` / ``goto`` / ``analyze``.

An open custom kernel shows an "Analyse SASS" button: the analysis (``ml.analyze_kernel``: registers, spills,
occupancy, the instruction mix, bytes in flight, the bound) compiles the graph with nvcc, so it runs only when
asked, once per graph and architecture; without nvcc or cuobjdump the panel says what to install.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from mirage_lab.widgets.display import StaticBeside, check_widget_options
from mirage_lab.widgets.graph_view import GraphView
from mirage_lab.widgets.tile_access_view import TileAccessView

STATIC = Path(__file__).parent / "static"


def details_html(details: dict[str, Any]) -> str:
    """A two-column table of a selection's details; a dict value (a candidate's verification) is a table too."""
    rows = []
    for k, v in details.items():
        # a list one item a line (an oracle-prune event's children, the rules)
        cell = "<br>".join(html.escape(str(x)) for x in v) if isinstance(v, list) else _value_html(v)
        cls = ' class="mirage-expr"' if k == "expression" else ""
        rows.append(f"<tr><th>{html.escape(k)}</th><td{cls}>{cell}</td></tr>")
    return f'<table class="mirage-details">{"".join(rows)}</table>'


def _value_html(v: Any, seconds: bool = False) -> str:
    """A value in words: a dict as a small key/value table (nested dicts inside), numbers to 4 digits, the
    ``timings`` in milliseconds."""
    if isinstance(v, dict):
        rows = "".join(f"<tr><th>{html.escape(str(k).replace('_', ' '))}</th>"
                       f"<td>{_value_html(x, seconds or k == 'timings')}</td></tr>" for k, x in v.items())
        return f'<table class="mirage-subtable">{rows}</table>'
    if seconds and isinstance(v, int | float):
        return f"{v * 1e3:.3g} ms"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list | tuple):
        return html.escape(", ".join(map(str, v)) or "(none)")
    return html.escape("(none)" if v is None else str(v))


class MuGraphViewer(StaticBeside, anywidget.AnyWidget):
    """``MuGraphViewer(graph)``: click a custom kernel to open its block graph, a dashed chain for its thread graph."""

    _esm = STATIC / "viewer.js"
    _css = STATIC / "viewer.css"
    svg = traitlets.Unicode("").tag(sync=True)
    crumbs = traitlets.List(traitlets.Unicode()).tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    details = traitlets.Unicode("").tag(sync=True)
    tilings = traitlets.Unicode("").tag(sync=True)
    message = traitlets.Unicode("").tag(sync=True)
    analysis = traitlets.Unicode("").tag(sync=True)

    def __init__(self, graph: Any, engine: str = "auto", arch: str = "sm_90", **kw: Any) -> None:
        check_widget_options(type(self), kw)
        super().__init__(**kw)
        self.view = GraphView(graph, engine)
        self.arch = arch
        self.on_msg(self._on_front_end)
        self._refresh(level_changed=True)

    def __repr__(self) -> str:
        return f"MuGraphViewer({self.view!r})"

    def to_html(self) -> str:
        """The current state, static (no script): breadcrumbs, the drawing, the details and the tiling cards."""
        crumbs = self.crumbs
        buttons = "".join(f'<span class="mirage-crumb{" current" if i == len(crumbs) - 1 else ""}">'
                          f"{html.escape(c)}</span> " for i, c in enumerate(crumbs))
        css = (STATIC / "viewer.css").read_text()
        return (f'<div class="mirage-viewer mirage-static"><style>{css}</style><div class="mirage-crumbs">{buttons}'
                f'</div><div class="mirage-main"><div class="mirage-drawing">{self.svg}<div class="mirage-tiling-'
                f'panel">{self.tilings}</div></div><div class="mirage-side">{self.details}</div></div></div>')

    # ---- the same actions as the front end
    def click(self, element: str) -> str:
        what = self.view.click(element)
        self._refresh(level_changed=what == "opened")
        return what

    def goto(self, depth: int) -> None:
        self.view.goto(depth)
        self._refresh(level_changed=True)

    def up(self) -> None:
        self.goto(len(self.view.stack) - 2)

    def tile_access(self, block: tuple[int, int, int] = (0, 0, 0), iteration: int = 0) -> TileAccessView:
        """What one block of the open custom kernel (the first, at the kernel level) reads and writes."""
        node = self.view.level.node
        customs = [k for k, n in enumerate(self.view.graph.nodes) if n.body is not None]
        return TileAccessView(self.view.graph, customs.index(node) if node in customs else 0, block, iteration)

    def analyze(self) -> dict[str, Any] | str:
        """The open kernel's SASS analysis for ``arch`` (computed now if it was not), shown in the panel."""
        result = self.view.kernel_analysis(self.arch)
        self.analysis = analysis_html(result, self.arch)
        return result

    def _on_front_end(self, _: Any, content: dict[str, Any], buffers: Any) -> None:
        try:
            if content.get("kind") == "click":
                self.click(str(content["id"]))
            elif content.get("kind") == "crumb":
                self.goto(int(content["index"]))
            elif content.get("kind") == "analyze":
                self.analyze()
        except Exception as e:  # a stale click from an old drawing: say so in the widget, keep the state
            self.message = str(e)

    def _refresh(self, level_changed: bool) -> None:
        v = self.view
        self.message = ""
        if level_changed:
            self.svg = v.svg()
            self.crumbs = v.breadcrumbs()
            self.tilings = v.tilings_html()
            self.analysis = self._analysis_panel()
        self.selected = v.selected or ""
        self.details = details_html(v.details())

    def _analysis_panel(self) -> str:
        """At a custom kernel's block graph: its analysis when computed, else the button that asks for it."""
        lv = self.view.level
        if lv.node is None or lv.thread is not None:
            return ""
        if self.view.analysed(self.arch):
            return analysis_html(self.view.kernel_analysis(self.arch), self.arch)
        return (f'<button class="mirage-crumb" data-mirage-analyze>Analyse SASS ({html.escape(self.arch)})</button> '
                '<span class="mirage-note">compiles the graph with nvcc and reads ptxas and cuobjdump</span>')


def analysis_html(result: dict[str, Any] | str, arch: str) -> str:
    """A kernel's analysis row as a two-column table under a heading, or the note saying why there is none."""
    if isinstance(result, str):
        return f'<p class="mirage-note">{html.escape(result)}</p>'
    return f"<b>SASS analysis ({html.escape(arch)}, static counts)</b>" + details_html(result)
