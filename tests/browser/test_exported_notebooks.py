"""Exported notebooks stand on their own: every notebook, executed once per session (tests/notebooks/execute.py)
and exported to HTML with nbconvert, opens from disk in chromium with the network cut, and each output that was a
figure or a widget draws something — an SVG with shapes (a plotly figure: with its traces), a canvas, an image,
a table with rows or (a finished progress bar) a ``<progress>``. Each such output's cell is saved as
``<screenshots>/exported/NN-cell-I.png``."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab import SCREENSHOT_DIR
from tests.notebooks.execute import NOTEBOOKS, executed

nbconvert = pytest.importorskip("nbconvert", reason="exporting notebooks needs nbconvert (pip install -e '.[test]')")
PlaywrightTimeout = pytest.importorskip("playwright.sync_api").TimeoutError

#: outputs that are figures or widgets: they draw in a live front end and must also draw in the exported page
LIVE = ("application/vnd.jupyter.widget-view+json", "application/vnd.plotly.v1+json")
PICTURES = ("image/svg+xml", "image/png", "image/jpeg")

PLOTS_DRAWN = "() => [...document.querySelectorAll('.js-plotly-plot')].every((p) => p.querySelector('.main-svg'))"
PLOT_WAIT_MS = 15_000

#: what an output element draws (a plotly figure counts only with drawn traces)
DRAWS = """(el) => {
    const shown = (e) => { const r = e.getBoundingClientRect(); return r.width > 2 && r.height > 2; };
    const shapes = "path, polygon, polyline, rect, ellipse, circle, line, text";
    const plots = [...el.querySelectorAll(".js-plotly-plot")];
    return {
        plots: plots.length,
        traces: plots.filter((p) => p.querySelector(".main-svg .trace")).length,
        svg: [...el.querySelectorAll("svg")].filter((s) => shown(s) && s.querySelector(shapes)).length,
        canvas: [...el.querySelectorAll("canvas")].filter(shown).length,
        img: [...el.querySelectorAll("img")].filter((i) => i.naturalWidth > 0 && shown(i)).length,
        rows: [...el.querySelectorAll("table tr")].filter((r) => r.querySelector("td") && shown(r)).length,
        progress: [...el.querySelectorAll("progress")].filter(shown).length,
        height: el.getBoundingClientRect().height,
    };
}"""


def figure_outputs(nb: Any) -> list[tuple[int, int]]:
    """(cell index, output index) of every output that is a figure or a widget."""
    return [(i, j) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
            for j, out in enumerate(cell.get("outputs", []))
            if any(k in out.get("data", {}) for k in LIVE + PICTURES)]


def draws_something(seen: dict[str, int]) -> bool:
    if seen["plots"]:
        return seen["traces"] == seen["plots"]
    if seen["progress"]:  # a finished progress bar
        return True
    return seen["height"] > 20 and (seen["svg"] + seen["canvas"] + seen["img"] + seen["rows"]) > 0


def export_html(nb: Any, path: Path) -> Path:
    body, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    path.write_text(body, encoding="utf-8")
    return path


@pytest.mark.parametrize("script", NOTEBOOKS, ids=lambda p: p.stem)
def test_exported_notebook_draws_its_figures_and_widgets(script: Path, page: Any, tmp_path: Path) -> None:
    nb = executed(script)
    html = export_html(nb, tmp_path / f"{script.stem}.html")
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())
    page.goto(html.as_uri(), wait_until="load")
    with contextlib.suppress(PlaywrightTimeout):  # plotly draws asynchronously; a figure that never does fails below
        page.wait_for_function(PLOTS_DRAWN, timeout=PLOT_WAIT_MS)
    cells = page.locator(".jp-Notebook-cell")
    assert cells.count() == len(nb.cells), "the export lost or added cells"
    shots = SCREENSHOT_DIR / "exported"
    shots.mkdir(parents=True, exist_ok=True)
    blank = []
    for i, j in figure_outputs(nb):
        outputs = cells.nth(i).locator(".jp-OutputArea-child")
        assert outputs.count() == len(nb.cells[i].outputs), f"cell {i}: the export merged or dropped outputs"
        seen = outputs.nth(j).evaluate(DRAWS)
        if not draws_something(seen):
            blank.append((i, j, sorted(nb.cells[i].outputs[j].data), seen))
        cells.nth(i).screenshot(path=str(shots / f"{script.stem[:2]}-cell-{i}.png"))
    assert not blank, f"outputs that draw nothing in the exported HTML (cell, output, mime types, found): {blank}"
    assert not errors, errors
