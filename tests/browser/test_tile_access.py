"""The tile-access view in headless chromium: its front end (static/tile_access.js) mounted on a page over a
stand-in model (what anywidget hands it in JupyterLab), and its static export. The hand-fused RMSNorm+Linear
kernel, block 3 at iteration 1: the slider moves the tile of W that the block reads down one tile row at once,
and asks Python for iteration 5. The screenshot lands in reports/screenshots/tile_access.png."""

from __future__ import annotations

import json
from typing import Any

from mirage_lab.bench import fused
from mirage_lab.widgets import TileAccessView
from mirage_lab.widgets.tile_access_view import STATIC
from tests.browser.lab import SCREENSHOT_DIR

MOUNT = """(state) => {
  const handlers = {};
  window.sent = [];
  const model = {
    get: (k) => state[k],
    set: (k, v) => { state[k] = v; window.sent.push([k, v]); },
    push: (k, v) => { state[k] = v; (handlers[`change:${k}`] || []).forEach((fn) => fn()); },  // from Python
    save_changes: () => {},
    on: (ev, fn) => { (handlers[ev] = handlers[ev] || []).push(fn); },
  };
  window.mtaModel = model;
  const el = document.createElement("div");
  el.id = "view";
  document.body.append(el);
  window.mtaWidget.render({ model, el });
}"""
VISIBLE_TILE = """(tensor) => {
  const g = [...document.querySelectorAll(`svg[data-tensor="${tensor}"] g.mta-tile`)]
    .filter((e) => getComputedStyle(e).display !== "none");
  return g.map((e) => [e.dataset.iteration, ...["x", "y"].map((k) => Number(e.querySelector("rect").getAttribute(k)))]);
}"""


def _mount(page: Any, view: TileAccessView) -> None:
    page.set_content("<!doctype html><html><head><meta charset='utf-8'></head><body></body></html>")
    page.add_script_tag(content=(STATIC / "tile_access.js").read_text().replace("export default", "window.mtaWidget ="))
    state = {k: getattr(view, k) for k in ("grid", "forloop_range", "block", "iteration", "body", "message")}
    page.evaluate(MOUNT, json.loads(json.dumps(state)))


def test_the_slider_moves_the_highlighted_tile(page: Any) -> None:
    view = TileAccessView(fused.rmsnorm(1), block=(3, 0, 0), iteration=1)
    _mount(page, view)
    assert page.locator("svg.mta-tensor").count() == 3
    (at1,) = page.evaluate(VISIBLE_TILE, "d1")
    assert at1[0] == "1"
    page.locator("input.mta-iteration").fill("5")
    (at5,) = page.evaluate(VISIBLE_TILE, "d1")
    assert at5[0] == "5" and at5[1] == at1[1] and at5[2] > at1[2]  # same column band, four tile rows down
    assert ["iteration", 5] in page.evaluate("window.sent")
    (out,) = page.evaluate(VISIBLE_TILE, "d2")
    assert out[0] == "all"  # the saver writes once, after the loop
    view.iteration = 5  # what the kernel does with the message; its answer redraws the table
    page.evaluate("(b) => window.mtaModel.push('body', b)", view.body)
    assert "iteration 5" in page.locator(".mta-heading").inner_text()
    assert page.evaluate(VISIBLE_TILE, "d1")[0][0] == "5"
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT_DIR / "tile_access.png"), full_page=True)


def test_the_static_export_shows_the_cards_and_the_numbers(page: Any) -> None:
    view = TileAccessView(fused.rmsnorm(1), block=(3, 0, 0), iteration=1)
    page.set_content(f"<!doctype html><html><head><meta charset='utf-8'></head><body>{view.to_html()}</body></html>")
    cards = page.locator("svg.mta-tensor")
    assert cards.count() == 3
    for i in range(3):
        box = cards.nth(i).bounding_box()
        assert box["width"] > 200 and box["height"] > 40
    assert "128:256, 72:96" in page.locator("table.mta-table").inner_text()
    assert page.evaluate(VISIBLE_TILE, "d1")[0][0] == "1"
    page.screenshot(path=str(SCREENSHOT_DIR / "tile_access_static.png"), full_page=True)
