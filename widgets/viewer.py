"""The μGraph viewer widget: the drawing, breadcrumbs, a details panel and the tiling cards.

A thin anywidget over ``GraphView``: the front end only draws the SVG it is sent and reports
clicks (``{"kind": "click", "id": ...}``, ``{"kind": "crumb", "index": ...}``); every decision is
made in Python, so headless tests drive the same code by calling ``click`` / ``goto``.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from mirage_lab.widgets.display import check_widget_options
from mirage_lab.widgets.graph_view import GraphView

STATIC = Path(__file__).parent / "static"


def details_html(details: dict[str, Any]) -> str:
    """A two-column table of a selection's details."""
    rows = []
    for k, v in details.items():
        if isinstance(v, list):  # one item a line (an oracle-prune event's children, the rules)
            cell = "<br>".join(html.escape(str(x)) for x in v)
        else:
            cell = html.escape(json.dumps(v) if isinstance(v, dict) else str(v))
        cls = ' class="mirage-expr"' if k == "expression" else ""
        rows.append(f"<tr><th>{html.escape(k)}</th><td{cls}>{cell}</td></tr>")
    return f'<table class="mirage-details">{"".join(rows)}</table>'


class MuGraphViewer(anywidget.AnyWidget):
    """``MuGraphViewer(graph)``: click a custom kernel to open its block graph, a dashed chain for its thread graph."""

    _esm = STATIC / "viewer.js"
    _css = STATIC / "viewer.css"
    svg = traitlets.Unicode("").tag(sync=True)
    crumbs = traitlets.List(traitlets.Unicode()).tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    details = traitlets.Unicode("").tag(sync=True)
    tilings = traitlets.Unicode("").tag(sync=True)
    message = traitlets.Unicode("").tag(sync=True)

    def __init__(self, graph: Any, engine: str = "auto", **kw: Any) -> None:
        check_widget_options(type(self), kw)
        super().__init__(**kw)
        self.view = GraphView(graph, engine)
        self.on_msg(self._on_front_end)
        self._refresh(level_changed=True)

    def __repr__(self) -> str:
        return f"MuGraphViewer({self.view!r})"

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

    def _on_front_end(self, _: Any, content: dict[str, Any], buffers: Any) -> None:
        try:
            if content.get("kind") == "click":
                self.click(str(content["id"]))
            elif content.get("kind") == "crumb":
                self.goto(int(content["index"]))
        except Exception as e:  # a stale click from an old drawing: say so in the widget, keep the state
            self.message = str(e)

    def _refresh(self, level_changed: bool) -> None:
        v = self.view
        self.message = ""
        if level_changed:
            self.svg = v.svg()
            self.crumbs = v.breadcrumbs()
            self.tilings = v.tilings_html()
        self.selected = v.selected or ""
        self.details = details_html(v.details())
