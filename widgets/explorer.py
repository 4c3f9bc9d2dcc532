"""The search-tree explorer widget: step through a run's events and see why each branch died.

A thin anywidget over ``ExplorerState``. The front end sends ``{"kind": "step", "n": ±1}``,
``{"kind": "jump", "to": "verified", "direction": ±1}``, ``{"kind": "filter", "labels": [...]}``,
``{"kind": "select", "index": i}`` and ``{"kind": "toggle", "index": i}``; Python answers with HTML
and SVG, so headless tests drive the same methods.
"""

from __future__ import annotations

import html
from collections import OrderedDict
from typing import Any

import anywidget
import traitlets

from mirage_lab.widgets import draw
from mirage_lab.widgets.display import StaticBeside, check_widget_options
from mirage_lab.widgets.event_index import LABELS
from mirage_lab.widgets.explorer_state import ExplorerState, colour
from mirage_lab.widgets.svg import render_svg
from mirage_lab.widgets.viewer import STATIC, details_html

DRAWING_CACHE = 64  # states whose partial-graph drawings are kept


class SearchExplorer(StaticBeside, anywidget.AnyWidget):
    """``SearchExplorer(result_or_run_dir)``: a cursor over the search's events, filters, the tree, and for the
    selected event its partial μGraph, abstract expression and the oracle's explanation."""

    _esm = STATIC / "explorer.js"
    _css = STATIC / "explorer.css"
    status = traitlets.Unicode("").tag(sync=True)
    labels = traitlets.List(traitlets.Unicode()).tag(sync=True)
    active = traitlets.List(traitlets.Unicode()).tag(sync=True)
    counters = traitlets.Unicode("").tag(sync=True)
    tree = traitlets.Unicode("").tag(sync=True)
    details = traitlets.Unicode("").tag(sync=True)
    svg = traitlets.Unicode("").tag(sync=True)
    message = traitlets.Unicode("").tag(sync=True)

    def __init__(self, run: Any, engine: str = "auto", progress: bool = True, **kw: Any) -> None:
        check_widget_options(type(self), kw)
        super().__init__(**kw)
        self.state = ExplorerState(run, progress=progress)
        self.engine = engine
        self._drawings: OrderedDict[int, str] = OrderedDict()
        present = set(self.state.counts()["verdict"])
        self.labels = [lab for lab in LABELS if lab in present]
        self.on_msg(self._on_front_end)
        self._refresh()

    def __repr__(self) -> str:
        return f"SearchExplorer({self.state!r})"

    # ---- the same actions as the front end
    def step(self, n: int = 1) -> int:
        i = self.state.step(n)
        self._refresh()
        return i

    def jump(self, to: str, direction: int = 1) -> int | None:
        i = self.state.jump(to, direction)
        self.message = "" if i is not None else f"no {'next' if direction > 0 else 'previous'} {to} event"
        self._refresh(keep_message=True)
        return i

    def select(self, i: int) -> int:
        j = self.state.select(i)
        self._refresh()
        return j

    def toggle(self, i: int) -> None:
        self.state.toggle(i)
        self.tree = self._tree_html()

    def set_filter(self, labels: list[str]) -> None:
        self.state.set_filter(labels)
        self._refresh()

    def _on_front_end(self, _: Any, content: dict[str, Any], buffers: Any) -> None:
        kind = content.get("kind")
        try:
            if kind == "step":
                self.step(int(content.get("n", 1)))
            elif kind == "jump":
                self.jump(str(content["to"]), int(content.get("direction", 1)))
            elif kind == "filter":
                self.set_filter([str(x) for x in content.get("labels", [])])
            elif kind == "select":
                self.select(int(content["index"]))
            elif kind == "toggle":
                self.toggle(int(content["index"]))
        except Exception as e:  # keep the widget alive and say what went wrong
            self.message = f"{type(e).__name__}: {e}"

    # ---- rendering
    def to_html(self) -> str:
        """A static snapshot of what the widget shows now (its CSS inline, no buttons or script): an exported
        notebook's copy beside the live view (``StaticBeside``), a page, a screenshot."""
        css = "".join((STATIC / name).read_text() for name in ("viewer.css", "explorer.css"))
        return (f'<div class="mx-explorer mx-static"><style>{css}</style>'
                f'<div class="mx-status">{html.escape(self.status)}</div>'
                f'<div class="mx-body"><div class="mx-left">{self.counters}<div class="mx-tree">{self.tree}</div></div>'
                f'<div class="mx-right"><div class="mx-details">{self.details}</div>'
                f'<div class="mx-svg">{self.svg}</div></div></div></div>')

    def _refresh(self, keep_message: bool = False) -> None:
        st = self.state
        if not keep_message:
            self.message = ""
        i = st.event_index
        self.status = (f"event {i + 1:,} of {len(st.index):,} · {st.index.label(i)} · "
                       f"{st.cursor + 1:,} of {len(st.positions):,} shown")
        self.active = list(st.active)
        self.counters = self._counters_html()
        self.tree = self._tree_html()
        self.details = details_html(st.explain(i))
        self.svg = self._drawing(st.node_of(i))

    def _counters_html(self) -> str:
        rows = []
        for r in self.state.counts().to_dict("records"):
            swatch = f'<span class="mx-swatch" style="background:{colour(r["verdict"])}"></span>'
            rows.append(f'<tr><td>{swatch}{html.escape(r["verdict"])}</td><td>{r["count"]:,}</td>'
                        f'<td>{r["so far"]:,}</td></tr>')
        return ('<table class="mx-counters"><tr><th>verdict</th><th>total</th><th>so far</th></tr>'
                + "".join(rows) + "</table>")

    def _tree_html(self) -> str:
        out = []
        for r in self.state.tree_rows():
            pad = f"padding-left:{r['depth'] * 14}px"
            if r["index"] < 0:
                out.append(f'<div class="mx-row mx-more" style="{pad}">{html.escape(r["text"])}</div>')
                continue
            arrow = ("▾" if r["open"] else "▸") if r.get("children") else "·"
            cls = "mx-row mx-current" if r["current"] else "mx-row"
            toggle = f'<span class="mx-toggle" data-toggle="{r["index"]}">{arrow}</span>' if r.get("children") \
                else f'<span class="mx-toggle">{arrow}</span>'
            out.append(f'<div class="{cls}" style="{pad}">{toggle}<span class="mx-node" data-select="{r["index"]}" '
                       f'style="color:{r["colour"]}">{html.escape(r["text"])}</span></div>')
        return "".join(out)

    def _drawing(self, node: int) -> str:
        """The partial μGraph of search state ``node``: the kernel graph so far and any open block graph."""
        if node in self._drawings:
            self._drawings.move_to_end(node)
            return self._drawings[node]
        try:
            pg = self.state.partial(node)
            parts = [render_svg(draw.kernel_dot(pg.kernel, "kernel graph so far"), self.engine)]
            if pg.block is not None:
                ins = [f"d{t}" for t in pg.block_inputs]
                parts.append(render_svg(draw.block_dot(pg.block, "open block graph", inputs=ins), self.engine))
            svg = "".join(f'<div class="mx-drawing">{p}</div>' for p in parts)
        except Exception as e:  # a state the builders reject: show why instead of a drawing
            svg = f'<div class="mx-error">cannot rebuild this state: {html.escape(str(e))}</div>'
        self._drawings[node] = svg
        if len(self._drawings) > DRAWING_CACHE:
            self._drawings.popitem(last=False)
        return svg
