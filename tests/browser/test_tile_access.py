"""The tile-access view in headless chromium: its front end (static/tile_access.js) mounted on a page over a
stand-in model (what anywidget hands it in JupyterLab), and its static export. The hand-fused RMSNorm+Linear
kernel, block 3 at iteration 1: the slider moves the tile of W that the block reads down one tile row at once,
and asks Python for iteration 5. Screenshots land in reports/screenshots/ (tile_access*.png)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mirage_lab.bench import fused
from mirage_lab.widgets import TileAccessView
from mirage_lab.widgets.tile_access_view import STATIC
from tests.browser.lab import SCREENSHOT_DIR, Lab

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


def test_live_in_jupyterlab_the_slider_asks_python(lab: Lab) -> None:
    """In JupyterLab the slider's iteration goes to the kernel and the heading and table come back from Python."""
    lab.run_notebook("tile_access")
    view = lab.wait_for_output(".mirage-tile-access:has(> .mta-controls)")  # the live view, around Python's HTML
    lab.wait_for_output(".mirage-tile-access svg.mta-tensor")
    lab.wait_for_output(".mta-heading", has_text="iteration 1")
    assert view.locator("svg.mta-tensor").count() == 3
    lab.screenshot("tile_access_lab", target=view)  # docs/images/tile_access.png is a copy
    before = view.locator('svg[data-tensor="d1"] g.mta-tile[data-iteration="1"] rect').bounding_box()
    view.locator("input.mta-iteration").fill("5")
    lab.wait_for_output(".mta-heading", has_text="iteration 5")
    lab.wait_for_output("table.mta-table", has_text="640:768, 3072:3096")
    after = view.locator('svg[data-tensor="d1"] g.mta-tile[data-iteration="5"] rect').bounding_box()
    assert after["y"] > before["y"] and abs(after["x"] - before["x"]) < 1
    view.locator('input[data-axis="x"]').fill("0")
    view.locator('input[data-axis="x"]').dispatch_event("change")
    lab.wait_for_output("table.mta-table", has_text="640:768, 0:24")
    lab.screenshot("tile_access_lab_moved", target=view)


def test_an_exported_notebook_draws_the_view(page: Any, tmp_path: Path) -> None:
    """nbconvert's HTML of a cell whose output is the view (no saved widget state) draws the static copy."""
    nbconvert = pytest.importorskip("nbconvert", reason="exporting notebooks needs nbconvert")
    nbformat = pytest.importorskip("nbformat")
    data, metadata = TileAccessView(fused.rmsnorm(1), block=(128, 0, 0), iteration=1)._repr_mimebundle_()
    shown = nbformat.v4.new_output("display_data", data=data, metadata=metadata)
    cell = nbformat.v4.new_code_cell("view", outputs=[shown])
    body, _ = nbconvert.HTMLExporter().from_notebook_node(nbformat.v4.new_notebook(cells=[cell]))
    path = tmp_path / "tile_access.html"
    path.write_text(body, encoding="utf-8")
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())
    page.goto(path.as_uri(), wait_until="load")
    cards = page.locator(".jp-OutputArea-output svg.mta-tensor")
    assert cards.count() == 3 and cards.first.is_visible()
    assert "128:256, 3072:3096" in page.locator("table.mta-table").inner_text()
