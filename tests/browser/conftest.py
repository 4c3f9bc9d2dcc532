"""Fixtures for real-browser tests: one JupyterLab server per session, one chromium per session, a fresh
browser context (page) per test. Every test here is marked ``browser`` and skips — with the reason — when
JupyterLab, Playwright or Debian's chromium is missing (``scripts/install_system_deps.sh`` installs it).

Knobs (environment variables):
    MIRAGE_LAB_CHROMIUM     chromium executable (default /usr/bin/chromium); a missing path skips the tests
    MIRAGE_LAB_SCREENSHOTS  screenshot directory (default reports/screenshots)
    MIRAGE_LAB_HEADED=1     show the browser window (local debugging)
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab import NOTEBOOK_DIR, PAGE_TIMEOUT_MS, JupyterLabServer, Lab, start_jupyterlab

DEFAULT_CHROMIUM = "/usr/bin/chromium"


def chromium_path() -> str | None:
    """The chromium to drive, or ``None``: ``$MIRAGE_LAB_CHROMIUM`` if set (no fallback), else /usr/bin/chromium."""
    return shutil.which(os.environ.get("MIRAGE_LAB_CHROMIUM", DEFAULT_CHROMIUM))


def _missing_python(*modules: str) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Everything under tests/browser is a browser test, whether or not its author remembered the marker."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.browser)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keep each phase's report on the item, so the ``page`` fixture can screenshot failures."""
    report = yield
    setattr(item, f"_report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def jupyter_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLabServer]:
    """JupyterLab on a free 127.0.0.1 port with a token, serving a temp root that holds copies of
    tests/browser/notebooks/*.ipynb; its kernel is this venv's interpreter. Shut down at session end."""
    missing = _missing_python("jupyterlab", "ipykernel", "ipywidgets", "anywidget")
    if missing:
        pytest.skip(f"browser tests need {', '.join(missing)} (pip install -e '.[test]')")
    server = start_jupyterlab(tmp_path_factory.mktemp("jupyterlab"), sorted(NOTEBOOK_DIR.glob("*.ipynb")))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """A headless Playwright chromium (Debian's, via ``executable_path``; never ``playwright install``)."""
    if _missing_python("playwright"):
        pytest.skip("browser tests need the playwright Python package (pip install -e '.[test]')")
    exe = chromium_path()
    if exe is None:
        pytest.skip(
            f"chromium not found at {os.environ.get('MIRAGE_LAB_CHROMIUM', DEFAULT_CHROMIUM)!r}; install Debian's "
            "chromium (scripts/install_system_deps.sh as root) or set MIRAGE_LAB_CHROMIUM"
        )
    from playwright.sync_api import sync_playwright

    args = ["--disable-dev-shm-usage", "--disable-gpu", "--no-first-run", "--disable-extensions"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")
    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=exe, headless=os.environ.get("MIRAGE_LAB_HEADED") != "1", args=args, timeout=60_000
        )
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh browser context and page (1400x900) per test, default timeout ``PAGE_TIMEOUT_MS``."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    pg = context.new_page()
    try:
        yield pg
    finally:
        context.close()


@pytest.fixture
def lab(page: Any, jupyter_server: JupyterLabServer, request: pytest.FixtureRequest) -> Iterator[Lab]:
    """:class:`tests.browser.lab.Lab` bound to this test's page and the session's JupyterLab; collects the
    browser console, saves ``FAILED-<test>.png`` when the test fails, and shuts its kernels down afterwards."""
    session = Lab(page=page, server=jupyter_server)
    page.on("console", lambda msg: session.console.append(f"[{msg.type}] {msg.text}"))
    page.on("pageerror", lambda err: session.console.append(f"[pageerror] {err}"))
    yield session
    report = getattr(request.node, "_report_call", None)
    if report is not None and report.failed:
        session.screenshot(f"FAILED-{request.node.name}", quiet=True)
    page.context.close()  # drop the page's kernel connections first, then give each test a fresh kernel
    jupyter_server.shutdown_kernels()
