"""The demo's HTML report in headless chromium: ``mirage-lab demo`` (on a small program) writes report.html,
the page opens from disk with no network, its plots render, its μGraph viewer drills down on a click, and a
full-page screenshot lands in reports/screenshots/demo-report.png."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mirage_lab.cli.demo import INTERPRETER_SECTION, MODEL_SECTION
from tests.browser.lab import SCREENSHOT_DIR
from tests.cli.small import run_small_demo


def test_demo_report_renders(page: Any, tmp_path: Path) -> None:
    out = run_small_demo(tmp_path / "demo")
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())
    page.goto((out / "report.html").as_uri())

    headings = page.locator("h2").all_inner_texts()
    for h in ("The best μGraph", "Its verification", "How the search found it", "Generated CUDA of the best μGraph",
              INTERPRETER_SECTION, MODEL_SECTION):
        assert h in headings, (h, headings)
    page.locator(".plotly .main-svg").first.wait_for()  # plotly.js is embedded and drew the figures
    assert page.locator(".js-plotly-plot").count() >= 2

    viewer = page.locator(".mirage-static").first  # the best μGraph: one custom kernel, n2
    viewer.locator("section:not([hidden]) g#n2").click()
    assert viewer.locator(".mirage-crumb.current").inner_text() == "custom kernel #2"
    assert viewer.locator("section:not([hidden]) g.node").count() >= 5  # loaders, ops, saver
    assert "__global__" in page.locator("pre.mx-cuda").inner_text()
    assert "EQUIVALENT" in page.locator("body").inner_text()

    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOT_DIR / "demo-report.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 50_000
    assert not errors, errors
