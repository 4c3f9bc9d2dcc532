"""A real JupyterLab server and helpers to drive it from Playwright (sync API) in tests.

The fixtures in ``conftest.py`` wire these together; a widget test usually needs only the ``lab`` fixture::

    @pytest.mark.browser
    def test_viewer(lab):
        lab.run_notebook("viewer")                    # tests/browser/notebooks/viewer.ipynb
        lab.wait_for_output(".mirage-viewer svg")
        lab.screenshot("viewer")                      # reports/screenshots/viewer.png

Everything here runs offline: JupyterLab serves the ipywidgets / anywidget front-end extensions from
the virtual environment, the browser is Debian's ``/usr/bin/chromium``, and no CDN is reached.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

REPO_ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = Path(__file__).resolve().parent / "notebooks"

#: Where screenshots land: ``$MIRAGE_LAB_SCREENSHOTS`` or ``reports/screenshots`` (git-ignored, kept by CI).
SCREENSHOT_DIR = Path(os.environ.get("MIRAGE_LAB_SCREENSHOTS", REPO_ROOT / "reports" / "screenshots"))

#: Generous defaults (milliseconds for the browser, seconds for the server): CI has 2 cores and no GPU.
SERVER_START_TIMEOUT_S = 120.0
PAGE_TIMEOUT_MS = 90_000
RUN_ALL_TIMEOUT_MS = 180_000

KERNEL_NAME = "python3"

#: The notebook in the main area's current tab.
ACTIVE_NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook"

STDERR_MIME = "application/vnd.jupyter.stderr"  # stream stderr and error tracebacks alike
_ERROR_TEXT = re.compile(r"Traceback \(most recent call last\)|^\w*(Error|Exception)\b.*:", re.MULTILINE)

# Sets window.__mirageLabRunSeen once any code cell of the notebook shows a [*] prompt.
_WATCH_FOR_RUNNING_CELLS = """(sel) => {
    window.__mirageLabRunSeen = false;
    const nb = document.querySelector(sel);
    if (!nb) return;
    const running = () => [...nb.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
        .some(p => (p.textContent || '').includes('*'));
    const obs = new MutationObserver(() => {
        if (running()) { window.__mirageLabRunSeen = true; obs.disconnect(); }
    });
    obs.observe(nb, { subtree: true, childList: true, characterData: true });
}"""


# --------------------------------------------------------------------------------------------- server


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class JupyterLabServer:
    """A ``jupyter lab`` subprocess on ``127.0.0.1:<port>`` serving ``root_dir``; see :func:`start_jupyterlab`."""

    root_dir: Path
    port: int
    token: str
    log_path: Path
    proc: subprocess.Popen[bytes]
    env: dict[str, str] = field(repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.base_url}/{path.lstrip('/')}{sep}token={self.token}"

    def notebook_url(self, name: str) -> str:
        """``/lab/tree/<name>.ipynb?token=…`` (``name`` with or without the suffix, relative to ``root_dir``)."""
        return self.url(f"lab/tree/{_ipynb(name)}?reset")  # reset: no tabs restored from an earlier test

    def add_notebook(self, source: Path | str, name: str | None = None) -> Path:
        """Copy a notebook into the server's root (tests/browser/notebooks/*.ipynb are copied at start)."""
        source = Path(source)
        target = self.root_dir / (name or source.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        return target

    def api(self, path: str, method: str = "GET", timeout: float = 10.0) -> Any:
        req = urllib.request.Request(self.url(f"api/{path.lstrip('/')}"), method=method)
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """End every session and its kernel, so the next test's notebook starts a fresh kernel."""
        for session in self.api("sessions"):
            with contextlib.suppress(urllib.error.URLError, OSError):
                self.api(f"sessions/{session['id']}", method="DELETE", timeout=30.0)

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as exc:
            return f"<no JupyterLab log: {exc}>"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 20.0) -> None:
        """Shut the server down through its API (stops kernels), then SIGTERM/SIGKILL its process group and any
        kernel left behind (jupyter_client starts kernels in their own session, outside the group)."""
        kernels = _descendants(self.proc.pid)
        if self.proc.poll() is None:
            with contextlib.suppress(Exception):
                self.api("shutdown", method="POST", timeout=5.0)
            try:
                self.proc.wait(timeout=timeout / 2)
            except subprocess.TimeoutExpired:
                _kill_group(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout=timeout / 2)
                except subprocess.TimeoutExpired:
                    _kill_group(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(timeout=5)
        else:
            _kill_group(self.proc.pid, signal.SIGKILL)
        for child in kernels:
            with contextlib.suppress(Exception):
                if child.is_running():
                    child.kill()


def _descendants(pid: int) -> list[Any]:
    try:
        import psutil
    except ImportError:
        return []
    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []


def _kill_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))


def _isolated_jupyter_env(base: Path) -> dict[str, str]:
    """Environment for a JupyterLab that sees only this venv and a kernelspec pointing at ``sys.executable``.

    ``JUPYTER_PATH`` comes first in the kernelspec search, so our ``python3`` shadows any user or system one;
    config, data, runtime and settings live under ``base`` so a developer's ~/.jupyter cannot interfere.
    """
    kernel_root = base / "jupyter-path"
    _write_json(
        kernel_root / "kernels" / KERNEL_NAME / "kernel.json",
        {
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (mirage-lab venv)",
            "language": "python",
            "metadata": {"debugger": False},
        },
    )
    config_dir = base / "jupyter-config"
    # No "would you like news?" toast and no update check: nothing may cover the notebook or reach the net.
    settings = config_dir / "lab" / "user-settings" / "@jupyterlab"
    _write_json(settings / "apputils-extension" / "notification.jupyterlab-settings",
                {"fetchNews": "false", "checkForUpdates": False})
    # Every cell in the DOM (no virtual scrolling), so locators see all outputs; a notebook without kernelspec
    # metadata starts the default kernel instead of waiting on a "Select Kernel" dialog.
    _write_json(settings / "notebook-extension" / "tracker.jupyterlab-settings",
                {"windowingMode": "none", "autoStartDefaultKernel": True})
    env = dict(os.environ)
    env.update(
        JUPYTER_PATH=str(kernel_root),
        JUPYTER_CONFIG_DIR=str(config_dir),
        JUPYTER_DATA_DIR=str(base / "jupyter-data"),
        JUPYTER_RUNTIME_DIR=str(base / "jupyter-runtime"),
        JUPYTER_PLATFORM_DIRS="1",
        IPYTHONDIR=str(base / "ipython"),
        PYTHONUNBUFFERED="1",
    )
    env.pop("JUPYTER_TOKEN", None)
    return env


def start_jupyterlab(
    base: Path,
    notebooks: Iterable[Path] = (),
    timeout: float = SERVER_START_TIMEOUT_S,
) -> JupyterLabServer:
    """Start ``jupyter lab`` (this interpreter's) on a free localhost port with a random token, serving
    ``base/root`` with ``notebooks`` copied in; wait until ``/api/status`` answers.

    Raises ``RuntimeError`` with the log tail when the server exits or does not answer within ``timeout``.
    """
    base.mkdir(parents=True, exist_ok=True)
    root = base / "root"
    root.mkdir(exist_ok=True)
    for nb in notebooks:
        shutil.copy2(nb, root / nb.name)
    env = _isolated_jupyter_env(base)
    token = secrets.token_hex(16)
    last_error = ""
    for attempt in range(3):  # free_port() can race with another process; retry on a bind failure
        port = free_port()
        log_path = base / f"jupyterlab-{attempt}.log"
        cmd = [
            sys.executable, "-m", "jupyterlab",
            "--no-browser",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.root_dir={root}",
            f"--IdentityProvider.token={token}",
            "--ServerApp.terminals_enabled=False",
            f"--LabApp.user_settings_dir={env['JUPYTER_CONFIG_DIR']}/lab/user-settings",
            f"--LabApp.workspaces_dir={base / 'workspaces'}",
            "--LabApp.news_url=None",
            "--LabApp.extension_manager=readonly",
            "--LanguageServerManager.autodetect=False",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,  # own process group: teardown kills the whole tree
            )
        server = JupyterLabServer(root_dir=root, port=port, token=token, log_path=log_path, proc=proc, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                server.api("status", timeout=5.0)
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                time.sleep(0.25)
                continue
            _check_kernelspec(server)
            return server
        tail = server.log_tail()
        if proc.poll() is None:
            server.stop()
            raise RuntimeError(f"JupyterLab did not answer on port {port} within {timeout:.0f} s; log tail:\n{tail}")
        last_error = f"JupyterLab exited with code {proc.returncode} (port {port}); log tail:\n{tail}"
        if "address already in use" not in tail.lower():
            break
    raise RuntimeError(last_error)


def _check_kernelspec(server: JupyterLabServer) -> None:
    specs = server.api("kernelspecs")
    spec = specs.get("kernelspecs", {}).get(KERNEL_NAME, {}).get("spec", {})
    argv0 = (spec.get("argv") or [""])[0]
    if argv0 != sys.executable:
        server.stop()
        raise RuntimeError(
            f"JupyterLab's {KERNEL_NAME!r} kernelspec runs {argv0!r}, not this venv's {sys.executable!r}: {specs}"
        )


# -------------------------------------------------------------------------------------------- browser


def _ipynb(name: str) -> str:
    return name if name.endswith(".ipynb") else f"{name}.ipynb"


class LabTimeout(AssertionError):
    """A wait in JupyterLab ran out; the message carries the JupyterLab log and browser console tails."""


@dataclass
class Lab:
    """A Playwright page bound to a running :class:`JupyterLabServer`, with the steps widget tests repeat."""

    page: Page
    server: JupyterLabServer
    console: list[str] = field(default_factory=list)
    screenshot_dir: Path = SCREENSHOT_DIR

    # -- diagnostics
    def context(self, what: str) -> str:
        console = "\n".join(self.console[-40:]) or "<empty>"
        return (
            f"{what}\n--- page: {self.page.url}\n--- browser console (tail):\n{console}\n"
            f"--- JupyterLab log (tail):\n{self.server.log_tail()}"
        )

    def _fail(self, what: str, exc: BaseException) -> LabTimeout:
        shot = self.screenshot(f"FAILED-{_slug(what)}", quiet=True)
        return LabTimeout(self.context(f"{what}: {exc}\n--- screenshot: {shot}"))

    # -- steps
    def open(self, name: str, timeout_ms: float = PAGE_TIMEOUT_MS) -> None:
        """Open ``<root>/<name>.ipynb`` in JupyterLab and wait for its kernel to start and go idle."""
        try:
            self.page.goto(self.server.notebook_url(name), wait_until="domcontentloaded", timeout=timeout_ms)
            self.page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(state="visible", timeout=timeout_ms)
            self.wait_for_kernel_idle(timeout_ms=timeout_ms)
        except Exception as exc:
            raise self._fail(f"opening notebook {name!r}", exc) from exc

    def wait_for_kernel_idle(self, timeout_ms: float = PAGE_TIMEOUT_MS) -> None:
        """Wait until the active notebook's kernel is connected and idle.

        The toolbar's execution indicator says "idle" before any kernel exists, so this reads the status bar's
        kernel item, which goes "No Kernel | Initializing" → "<name> | Connecting" → "<name> | Idle"."""
        self.page.wait_for_function(
            """() => {
                const bar = document.querySelector('#jp-main-statusbar');
                const text = bar ? bar.innerText : '';
                return /\\|\\s*Idle\\b/.test(text) && !/No Kernel/.test(text);
            }""",
            timeout=timeout_ms,
        )

    def _prompts(self) -> list[str]:
        return [t.strip() for t in self.page.locator(f"{ACTIVE_NOTEBOOK} .jp-CodeCell .jp-InputArea-prompt")
                .all_inner_texts()]

    def run_all(self, timeout_ms: float = RUN_ALL_TIMEOUT_MS) -> None:
        """Run > Run All Cells (through the menu bar) and wait until no cell is queued or running (``[*]``) and
        the kernel is idle. Fails — with the traceback, console and server log — when a cell raised (JupyterLab
        then stops, leaving later cells ``[ ]``)."""
        page = self.page
        try:
            self.wait_for_kernel_idle(timeout_ms=timeout_ms)
            if not self._prompts():
                return  # no code cells
            for attempt in range(3):
                # Saved outputs may already show numbered prompts, so "it started" is seen by an observer on [*].
                page.evaluate(_WATCH_FOR_RUNNING_CELLS, ACTIVE_NOTEBOOK)
                page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click(timeout=timeout_ms)
                label = page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$"))
                page.locator(".lm-Menu-item").filter(has=label).click(timeout=timeout_ms)
                try:  # a command issued while the page is still settling can be dropped: retry then
                    page.wait_for_function("() => window.__mirageLabRunSeen === true", timeout=15_000)
                    break
                except Exception:
                    if attempt == 2:
                        prompts = self._prompts()
                        raise TimeoutError(f"Run All Cells did not start any cell (prompts {prompts})") from None
            page.wait_for_function(
                """(sel) => {
                    const nb = document.querySelector(sel);
                    return !!nb && ![...nb.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
                        .some(p => (p.textContent || '').includes('*'));
                }""",
                arg=ACTIVE_NOTEBOOK,
                timeout=timeout_ms,
            )
            self.wait_for_kernel_idle(timeout_ms=timeout_ms)
        except Exception as exc:
            raise self._fail("running all cells", exc) from exc
        stderr = page.locator(f"{ACTIVE_NOTEBOOK} .jp-OutputArea-output[data-mime-type='{STDERR_MIME}']")
        errors = [t for t in stderr.all_inner_texts() if _ERROR_TEXT.search(t)]
        prompts = self._prompts()
        if errors or not all(re.fullmatch(r"\[\d+\]:?", p) for p in prompts):
            shot = self.screenshot("FAILED-cell-error", quiet=True)
            raise AssertionError(self.context(
                f"a cell raised (prompts {prompts}); screenshot {shot}; error output:\n" + "\n\n".join(errors)
            ))

    def run_notebook(self, name: str, timeout_ms: float = RUN_ALL_TIMEOUT_MS) -> None:
        """:meth:`open` + :meth:`run_all`."""
        self.open(name)
        self.run_all(timeout_ms=timeout_ms)

    def wait_for_output(
        self, selector: str, timeout_ms: float = PAGE_TIMEOUT_MS, has_text: str | None = None
    ) -> Locator:
        """The first element matching ``selector`` inside an output of the active notebook, once visible
        (optionally containing ``has_text``)."""
        loc = self.page.locator(f"{ACTIVE_NOTEBOOK} .jp-OutputArea-output {selector}")
        if has_text is not None:
            loc = loc.filter(has_text=has_text)
        try:
            loc.first.wait_for(state="visible", timeout=timeout_ms)
        except Exception as exc:
            raise self._fail(f"waiting for output {selector!r}" + (f" with text {has_text!r}" if has_text else ""),
                             exc) from exc
        return loc.first

    def outputs_text(self) -> str:
        """The active notebook's outputs as text, for assertions and failure messages."""
        return "\n".join(self.page.locator(f"{ACTIVE_NOTEBOOK} .jp-OutputArea-output").all_inner_texts())

    def screenshot(self, name: str, target: Locator | None = None, quiet: bool = False) -> Path | None:
        """Save ``<screenshot_dir>/<name>.png`` of the page (or of ``target``, e.g. a widget's output) and return
        its path; with ``quiet``, a failure returns ``None`` instead of raising (used on the failure path)."""
        path = self.screenshot_dir / f"{_slug(name)}.png"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if target is None:
                self.page.screenshot(path=str(path), timeout=30_000)
            else:
                target.screenshot(path=str(path), timeout=30_000)
        except Exception:
            if quiet:
                return None
            raise
        return path


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:100] or "screenshot"
