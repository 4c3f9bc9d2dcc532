"""The kernel analysis in the viewer's kernel panel (computed when asked) and in the HTML report, with a note where
nvcc or cuobjdump is missing."""

from __future__ import annotations

import pytest

from mirage_lab.bench import fused
from mirage_lab.codegen import sass
from mirage_lab.widgets.export import _analysis
from mirage_lab.widgets.graph_view import GraphView
from mirage_lab.widgets.viewer import MuGraphViewer

needs_sass = pytest.mark.skipif(sass.toolchain_missing() is not None,
                                reason=f"no SASS here: {sass.toolchain_missing()}")


def _without_disassembler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sass, "tool_path", lambda name: None)
    sass._compile_sass.cache_clear()  # a source compiled earlier in the session would not look for the tools


@needs_sass
def test_the_viewer_analyses_an_open_kernel_when_asked() -> None:
    viewer = MuGraphViewer(fused.gqa(1), arch="sm_80")
    assert viewer.analysis == ""  # the kernel graph: nothing to analyse
    viewer.click("n3")
    assert "data-mirage-analyze" in viewer.analysis and not viewer.view.analysed("sm_80")  # lazy: a button
    row = viewer.analyze()
    assert isinstance(row, dict) and row["kernel"] == "mirage_k3" and row["HMMA"] > 0
    assert "SASS analysis (sm_80" in viewer.analysis and "<th>registers</th>" in viewer.analysis
    viewer.goto(0)
    viewer.click("n4")  # the second kernel: computed with the first, shown at once
    assert "<td>mirage_k4</td>" in viewer.analysis
    viewer._on_front_end(None, {"kind": "analyze"}, None)
    assert viewer.message == "" and "<td>mirage_k4</td>" in viewer.analysis


def test_the_viewer_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    _without_disassembler(monkeypatch)
    view = GraphView(fused.lora(1))
    assert view.kernel_analysis() == "open a custom kernel to analyse its SASS"
    view.click(next(f"n{k}" for k, n in enumerate(view.graph.nodes) if n.body is not None))
    note = view.kernel_analysis("sm_90")
    assert isinstance(note, str) and note.startswith("no SASS analysis for sm_90")
    assert "pip install" in note or "nvcc not found" in note  # without nvcc (a CI without the toolkit) it says so


@needs_sass
def test_the_report_has_a_table_per_architecture() -> None:
    html = "".join(_analysis(fused.rmsnorm(1), ptx=True))
    assert "sm_80 on A100" in html and "sm_90 on H100" in html and html.count("mx-table") == 2
    assert "mirage_k2" in html and "% LDG 128-bit" in html and "DRAM floor" in html


def test_the_report_skips_with_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "Not analysed: ptx=False" in "".join(_analysis(fused.rmsnorm(1), ptx=False))
    _without_disassembler(monkeypatch)
    html = "".join(_analysis(fused.rmsnorm(1), ptx=True))
    assert "Not analysed here" in html and "mx-table" not in html
    assert "pip install" in html or "nvcc not found" in html
