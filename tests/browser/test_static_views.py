"""The explorer's static snapshot and the candidate diff in headless chromium: nothing overflows its box.

The explorer sits on a state inside a block graph (its oracle explanation is a long line of rules) at a
narrow width: the explanation wraps inside the details box, and every tree row that opens a custom
kernel shows its imaps. Screenshots land in reports/screenshots/ (explorer-static.png, diff.png)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mirage_lab as ml
from mirage_lab.widgets.diff import GraphDiff
from mirage_lab.widgets.explorer import SearchExplorer
from tests.browser.lab import SCREENSHOT_DIR
from tests.search.test_search import search

REPO = Path(__file__).resolve().parents[2]
OVERFLOWING = """(sel) => [...document.querySelectorAll(sel)]
    .filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => e.textContent.slice(0, 60))"""


def _show(page: Any, fragment: str, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.set_content(f"<!doctype html><html><head><meta charset='utf-8'></head><body>{fragment}</body></html>")


def test_explorer_snapshot_wraps_the_oracle_and_shows_imaps(page: Any, tmp_path: Path) -> None:
    x = SearchExplorer(search(run_dir=tmp_path / "runs"), progress=False)
    verified = x.jump("verified")
    assert verified is not None
    st = x.state
    inside = [i for i in st.index.ancestors(verified) if st.partial(i).block is not None]
    x.select(inside[-1])
    assert "oracle" in st.explain() and len(st.explain()["oracle"]) > 120
    _show(page, x.to_html(), 900)

    oracle = page.locator(".mx-details tr", has_text="oracle").locator("td").first
    box, details = oracle.bounding_box(), page.locator(".mx-details").bounding_box()
    assert box["x"] + box["width"] <= details["x"] + details["width"] + 1 and box["height"] > 30  # wrapped
    assert page.evaluate(OVERFLOWING, ".mx-details, .mx-details td, .mx-tree") == []
    tree = page.locator(".mx-tree").bounding_box()
    rows = page.locator(".mx-node", has_text="custom kernel on")
    assert rows.count() >= 1
    for i in range(rows.count()):
        text = rows.nth(i).inner_text()
        assert text.count("imap") == 2, text  # both loaders' imaps are on the page, not cut
        r = rows.nth(i).bounding_box()
        assert r["x"] + r["width"] <= tree["x"] + tree["width"] + 1
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT_DIR / "explorer-static.png"), full_page=True)


def test_diff_of_the_program_and_its_best_fits_the_page(page: Any) -> None:
    best = ml.load(REPO / "data" / "search_best" / "rmsnorm_bs1.json")
    diff = GraphDiff(ml.bench.programs.rmsnorm(1), best, labels=("program", "search best"))
    _show(page, diff.to_html(), 1400)
    table = page.locator("table.mlw-rows")
    assert table.locator("tr").count() == len(diff.rows) + 1
    assert table.locator("tr.mlw-changed").count() == len(diff.changed_rows) <= 9
    assert "k0 s2 accum_rms" in table.inner_text()
    assert table.bounding_box()["width"] <= 1400
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT_DIR / "diff.png"), full_page=True)
