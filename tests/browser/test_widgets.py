"""The widgets in JupyterLab, driven by Debian's chromium: click a custom kernel in the viewer, step the
explorer, and see a plot and the verification inspector render. Screenshots go to reports/screenshots/."""

from __future__ import annotations

import pytest

from tests.browser.lab import ACTIVE_NOTEBOOK, PAGE_TIMEOUT_MS, Lab

pytestmark = pytest.mark.browser


def test_viewer_explorer_plot_and_inspector(lab: Lab) -> None:
    lab.run_notebook("widgets")
    page = lab.page

    viewer = lab.wait_for_output(".mirage-viewer")
    lab.wait_for_output(".mirage-viewer g#n3")
    assert "kernel graph" in viewer.locator(".mirage-crumbs").inner_text()
    viewer.locator("g#n3").click()  # the custom kernel opens its block graph
    lab.wait_for_output(".mirage-crumb.current", has_text="custom kernel #3")
    lab.wait_for_output(".mirage-viewer .mirage-tiling")
    assert viewer.locator("g.cluster").count() == 2  # two fused chains (thread graphs)
    viewer.locator("g#b3").click()  # select the first matmul
    lab.wait_for_output(".mirage-viewer .mirage-details", has_text="block op matmul")
    assert viewer.locator("g#b3.mirage-selected").count() == 1
    lab.screenshot("viewer-block-graph", target=viewer)

    explorer = lab.wait_for_output(".mx-explorer")
    lab.wait_for_output(".mx-status", has_text="event 1 of")
    explorer.locator("button.mx-step").click()
    lab.wait_for_output(".mx-status", has_text="event 2 of")
    explorer.locator("button.mx-jump-next", has_text="verified").click()
    lab.wait_for_output(".mx-status", has_text="candidate:verified")
    lab.wait_for_output(".mx-svg svg")
    assert explorer.locator(".mx-row.mx-current").count() == 1  # the tree opened down to it
    explorer.locator("button.mx-step-back").click()
    page.wait_for_timeout(100)
    lab.wait_for_output(".mx-details", has_text="verdict")
    lab.screenshot("explorer", target=explorer)

    # a plain plotly Figure (issue 24: figures are go.Figure), drawn by plotly's JupyterLab renderer: its SVG is
    # there, with the figure's labels
    drawn = page.locator(f"{ACTIVE_NOTEBOOK} .jp-OutputArea-output .main-svg")
    drawn.first.wait_for(state="attached", timeout=PAGE_TIMEOUT_MS)
    assert "best" in lab.outputs_text()
    lab.wait_for_output("*", has_text="EQUIVALENT")
    lab.screenshot("widgets-notebook")
