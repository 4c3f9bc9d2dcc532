"""The μGraph viewer as one self-contained HTML fragment: every level drawn ahead of time.

For sharing without a kernel: each level (the kernel graph, every custom kernel's block graph with its
tiling cards, every fused chain) is a hidden section, the details of every element are embedded as
JSON, and a few lines of inline JavaScript do what the widget's Python side does — open on click,
select and describe, go back by the breadcrumbs.
"""

from __future__ import annotations

import html
import itertools
import json
from typing import Any

from mirage_lab.widgets.graph_view import GraphView, Level
from mirage_lab.widgets.viewer import STATIC, details_html

_ids = itertools.count()

SCRIPT = """
(function () {
  const root = document.getElementById(%(id)s);
  const data = JSON.parse(root.querySelector("script.mirage-data").textContent);
  const side = root.querySelector(".mirage-side"), crumbs = root.querySelector(".mirage-crumbs");
  let stack = ["k"];
  function show() {
    root.querySelectorAll("section[data-level]").forEach((s) => (s.hidden = s.dataset.level !== stack.at(-1)));
    crumbs.replaceChildren();
    stack.forEach((lv, i) => {
      const b = document.createElement("button");
      b.className = "mirage-crumb" + (i === stack.length - 1 ? " current" : "");
      b.textContent = data.names[lv];
      b.onclick = () => { stack = stack.slice(0, i + 1); side.innerHTML = data.details[lv + ":"]; show(); };
      crumbs.append(b);
    });
  }
  root.addEventListener("click", (ev) => {
    const g = ev.target.closest("g.node") || ev.target.closest("g.cluster");
    if (!g || !g.id) return;
    const lv = stack.at(-1), open = data.opens[lv + ":" + g.id];
    root.querySelectorAll(".mirage-selected").forEach((e) => e.classList.remove("mirage-selected"));
    if (open) { stack.push(open); side.innerHTML = data.details[open + ":"]; show(); return; }
    g.classList.add("mirage-selected");
    side.innerHTML = data.details[lv + ":" + g.id] || "";
  });
  side.innerHTML = data.details["k:"];
  show();
})();
"""


def _key(level: Level) -> str:
    if level.node is None:
        return "k"
    return f"b{level.node}" if level.thread is None else f"t{level.node}.{level.thread}"


def static_viewer_html(graph: Any, engine: str = "auto") -> str:
    """A ``<div>`` holding the whole drill-down viewer of ``graph`` (with its CSS and script inline)."""
    view = GraphView(graph, engine)
    sections: list[str] = []
    names: dict[str, str] = {}
    details: dict[str, str] = {}
    opens: dict[str, str] = {}
    levels = [Level()] + [Level(k) for k, n in enumerate(view.graph.nodes) if n.body is not None]
    for level in levels:
        view.stack = [level] if level.node is None else [Level(), level]
        sections.append(_section(view, _key(level), names, details, opens))
        for i in range(len(view.thread_graphs())):
            view.stack = [Level(), level, Level(level.node, i)]
            sections.append(_section(view, _key(view.level), names, details, opens))
    uid = f"mirage-static-{next(_ids)}"
    data = json.dumps({"names": names, "details": details, "opens": opens}).replace("</", "<\\/")
    css = (STATIC / "viewer.css").read_text()
    return (f'<div id="{uid}" class="mirage-viewer mirage-static"><style>{css}</style>'
            f'<div class="mirage-crumbs"></div><div class="mirage-main"><div class="mirage-drawing">'
            f'{"".join(sections)}</div><div class="mirage-side"></div></div>'
            f'<script type="application/json" class="mirage-data">{data}</script>'
            f"<script>{SCRIPT % {'id': json.dumps(uid)}}</script></div>")


def _section(view: GraphView, key: str, names: dict[str, str], details: dict[str, str],
             opens: dict[str, str]) -> str:
    names[key] = view.breadcrumbs()[-1]
    details[key + ":"] = details_html(view.details())
    for element in view.elements():
        details[f"{key}:{element}"] = details_html(view.details(element))
        if key == "k" and element.startswith("n") and view.graph.nodes[int(element[1:])].body is not None:
            opens[f"{key}:{element}"] = f"b{element[1:]}"
        elif key.startswith("b") and element.startswith("tg"):
            opens[f"{key}:{element}"] = f"t{key[1:]}.{element[2:]}"
    tilings = view.tilings_html()
    return (f'<section data-level="{html.escape(key)}" hidden>{view.svg()}'
            f'<div class="mirage-tiling-panel">{tilings}</div></section>')
