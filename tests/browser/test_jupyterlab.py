"""JupyterLab end to end in Debian's chromium: the kernel is the venv, HTML reprs render, and widget comms
round-trip (anywidget ESM runs from the kernel, not a CDN)."""

from __future__ import annotations

import sys
import time

import pytest

from tests.browser.lab import Lab

pytestmark = pytest.mark.browser


def test_notebook_runs_and_widget_renders(lab: Lab) -> None:
    start = time.monotonic()
    lab.run_notebook("smoke")

    outputs = lab.outputs_text()
    assert f"kernel python: {sys.executable}" in outputs, lab.context("the notebook kernel is not this venv's python")
    assert "mirage_lab: " in outputs

    graph = lab.wait_for_output(".mirage-lab-graph")
    assert "KernelGraph" in graph.inner_text()

    lab.wait_for_output(".mirage-test-button", has_text="ipywidgets button")
    clicker = lab.wait_for_output(".mirage-test-clicker", has_text="clicks: 0")
    lab.wait_for_output(".mirage-test-status", has_text="python saw 0 click(s)")

    clicker.click()
    # JS -> kernel (custom message) -> kernel updates two widgets -> both changes sync back to the page
    lab.wait_for_output(".mirage-test-status", has_text="python saw 1 click(s)")
    lab.wait_for_output(".mirage-test-clicker", has_text="clicks: 1")

    lab.screenshot("jupyterlab-smoke")
    print(f"notebook opened, run and clicked in {time.monotonic() - start:.1f} s")
