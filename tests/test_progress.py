"""Progress output (issue 19, quiet logs): a bar on a terminal, whole lines now and then in a log, none on request."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from tqdm.auto import tqdm

from mirage_lab.errors import InputError
from mirage_lab.progress import LineProgress, progress, progress_mode


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_mode_follows_the_output(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MIRAGE_LAB_PROGRESS", raising=False)
    assert progress_mode(_Tty()) == "bar"
    assert progress_mode(io.StringIO()) == "lines"
    monkeypatch.setenv("MIRAGE_LAB_PROGRESS", "None")
    assert progress_mode(_Tty()) == "none"
    monkeypatch.setenv("MIRAGE_LAB_PROGRESS", "quiet")
    with pytest.raises(InputError, match=r"MIRAGE_LAB_PROGRESS='quiet'.*bar, lines, none"):
        progress_mode()


def test_lines_are_whole_and_rate_limited() -> None:
    out = io.StringIO()
    p = LineProgress(total=4, desc="search", unit="task", every_s=3600, stream=out)
    for _ in range(4):
        p.update()
    assert out.getvalue() == ""  # nothing within the interval …
    p.close()
    p.close()
    assert out.getvalue().splitlines() == ["search: 4/4 task (100 %), 0 s"]  # … and one line at the end, once
    assert "\r" not in out.getvalue()


def test_lines_every_interval_and_iteration() -> None:
    out = io.StringIO()
    items = list(LineProgress(range(3), desc="graphs", every_s=0, stream=out))
    assert items == [0, 1, 2]
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["graphs: 1/3 it (33 %), 0 s", "graphs: 2/3 it (67 %), 0 s", "graphs: 3/3 it (100 %), 0 s"]
    assert "LineProgress('graphs: 3/3" in repr(LineProgress(range(3), desc="graphs", initial=3))


def test_the_factory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIRAGE_LAB_PROGRESS", "bar")
    bar = progress(total=2, desc="x", disable=False, leave=False)
    assert isinstance(bar, tqdm)
    bar.close()
    monkeypatch.setenv("MIRAGE_LAB_PROGRESS", "lines")
    assert isinstance(progress(total=2), LineProgress)
    quiet = progress(total=2, disable=True)
    assert isinstance(quiet, LineProgress) and quiet.quiet


def test_a_search_in_a_log_writes_no_bar_redraws(tmp_path: object) -> None:
    """A script whose stderr is a file (a CI log): no carriage returns, a handful of lines."""
    code = ("import mirage_lab as ml\n"
            "g = ml.new_kernel_graph(); x = g.new_input(dims=(8, 64)); w = g.new_input(dims=(64, 32))\n"
            "g.mark_output(g.matmul(x, w))\n"
            "ml.superoptimize(g.freeze(), 'mlp', executor='serial', run_dir=False, max_block_ops=2)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**__import__("os").environ, "MIRAGE_LAB_PROGRESS": ""})
    assert p.returncode == 0, p.stderr[-2000:]
    assert "\r" not in p.stderr
    assert [ln for ln in p.stderr.splitlines() if ln.startswith("search: ")], p.stderr[-2000:]


def test_byte_counts_read_as_sizes_on_lines_too() -> None:
    """``unit_scale`` (tqdm's) reaches the line reporter: a log reads 190kB/190kB, not 189970/190032 B."""
    out = io.StringIO()
    p = LineProgress(total=190_032, unit="B", scale=True, stream=out)
    p.update(189_970)
    p.close()
    assert out.getvalue().startswith("190kB/190kB (100 %)")
    assert isinstance(progress(total=10, unit="B", unit_scale=True, disable=True), LineProgress)
    assert progress(total=10, unit="B", unit_scale=True, disable=True).scale


def test_a_notebook_bar_ends_as_its_finished_state_in_text_and_html(monkeypatch: pytest.MonkeyPatch) -> None:
    """A saved or exported notebook shows where the bar ended, not the 0 % its widget was first shown at."""
    pytest.importorskip("ipywidgets")
    import IPython.display

    from mirage_lab.progress import _notebook_bar

    shown: list[dict[str, object]] = []

    class Output:
        def update(self, obj: object) -> None:
            shown.append(obj._repr_mimebundle_())  # type: ignore[attr-defined]

    monkeypatch.setattr(IPython.display, "display", lambda *_, **__: Output())
    bar = _notebook_bar()(total=3, desc="search", unit="task")
    bar.update(3)
    bar.close()
    bar.close()
    (data,) = shown
    assert "application/vnd.jupyter.widget-view+json" in data
    assert str(data["text/plain"]).startswith("search: 100%") and "3/3" in str(data["text/plain"])
    assert '<progress value="3" max="3"></progress> <code>search: 100% 3/3 [' in str(data["text/html"])
    _notebook_bar()(total=3, leave=False).close()  # a bar that leaves nothing leaves an empty output
    assert shown[-1] == {"text/plain": ""}
