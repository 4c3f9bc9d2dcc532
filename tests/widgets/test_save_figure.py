"""Figures that go everywhere: every figure function returns a plain ``go.Figure`` (a ``FigureWidget`` only when
asked), ``save_figure`` writes PDF, SVG and PNG in the print style, refuses other suffixes and a missing
browser in one line, and ``mirage-lab report RUN --figures DIR`` writes every figure of a real run.

Writing files needs kaleido's headless Chrome/Chromium (``scripts/install_system_deps.sh`` installs Debian's);
those tests skip, with the reason, on a machine without one."""

from __future__ import annotations

import json
import shutil
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import pytest

from mirage_lab import widgets as mw
from mirage_lab.bench import fused, programs
from mirage_lab.cli import main
from mirage_lab.errors import DependencyError, InputError
from mirage_lab.search.runner import SearchResult
from mirage_lab.widgets import plots

REPO = Path(__file__).resolve().parents[2]
SEARCH_JSON = REPO / "data" / "search_cpu_epyc_2core.json"
CHECK_SWEEP = REPO / "data" / "ablation_small_rmsnorm_cpu_xeon_2core.json"
MEASURED = pd.DataFrame([("rmsnorm", 1, "unfused", 30.0, 28.0, 33.0, 21.0, "H100", ""),
                         ("rmsnorm", 1, "fused", 12.0, 11.0, 14.0, 18.0, "H100", "")],
                        columns=list(plots.TIMING_COLUMNS))
needs_browser = pytest.mark.skipif(plots.browser_path() is None,
                                   reason="no Chrome/Chromium for kaleido on this machine (sudo bash "
                                          "scripts/install_system_deps.sh installs Debian's chromium)")

#: every figure function of the notebook layer, with a small real input
FIGURES: dict[str, Callable[..., Any]] = {
    "timing_figure": lambda **kw: mw.timing_figure(MEASURED, **kw),
    "speedup_figure": lambda **kw: mw.speedup_figure(MEASURED, **kw),
    "ablation_figure": lambda **kw: mw.ablation_figure(SEARCH_JSON, **kw),
    "pruning_figure": lambda **kw: mw.pruning_figure(SEARCH_JSON, **kw),
    "check_ablation_figure": lambda **kw: mw.check_ablation_figure(CHECK_SWEEP, **kw),
    "roofline_figure": lambda **kw: mw.roofline_figure({"unfused": programs.gqa(1), "fused": fused.gqa(1)}, "A100",
                                                       **kw),
}


def test_every_figure_function_is_listed() -> None:
    assert {n for n in mw.__all__ if n.endswith("_figure")} == set(FIGURES) | {"save_figure"}


@pytest.mark.parametrize("name", FIGURES)
def test_figures_are_plain_figures_unless_a_widget_is_asked_for(name: str) -> None:
    fig = FIGURES[name]()
    assert type(fig) is go.Figure, "a plain Figure renders in nbconvert HTML and on GitHub; a FigureWidget does not"
    assert "plotly" in fig.to_html(full_html=False, include_plotlyjs=False)
    assert isinstance(FIGURES[name](widget=True), go.FigureWidget)


def test_print_style_is_a_styled_copy() -> None:
    fig = FIGURES["ablation_figure"]()
    before = json.loads(fig.to_json())
    styled = plots.print_style(go.FigureWidget(fig), width=500, title=False)
    assert json.loads(fig.to_json()) == before, "the figure itself is left as it is"
    assert styled.layout.width == 500 and styled.layout.height == fig.layout.height and not styled.layout.title.text
    assert "Liberation Sans" in styled.layout.font.family and styled.layout.font.size == 12
    assert all(a.font.size <= 12 for a in styled.layout.annotations)
    assert set(plots.PALETTE) <= set(plots.OKABE_ITO.values())
    assert {t.marker.color for t in fig.data if t.type == "bar" and isinstance(t.marker.color, str)} <= \
        set(plots.OKABE_ITO.values())


@pytest.mark.parametrize("path", ["fig.jpg", "fig.eps", "fig", "fig.pdf.txt"])
def test_an_unknown_suffix_is_a_clear_error(tmp_path: Path, path: str) -> None:
    with pytest.raises(InputError, match=r"writes \.pdf, \.svg or \.png"):
        mw.save_figure(FIGURES["pruning_figure"](), tmp_path / path)
    assert not any(tmp_path.iterdir()), "nothing is written"


def test_not_a_figure_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="plotly Figure"):
        mw.save_figure({"data": []}, tmp_path / "a.pdf")


def test_no_browser_is_one_line_naming_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-such-chrome"))
    with pytest.raises(DependencyError) as e:
        mw.save_figure(FIGURES["pruning_figure"](), tmp_path / "a.pdf")
    assert "\n" not in str(e.value) and "install_system_deps.sh" in str(e.value) and "BROWSER_PATH" in str(e.value)
    assert not (tmp_path / "a.pdf").exists() and not list(tmp_path.glob(".*.tmp"))


@needs_browser
def test_save_figure_writes_pdf_svg_and_png(tmp_path: Path) -> None:
    fig = FIGURES["roofline_figure"]()
    start = time.perf_counter()
    pdf = mw.save_figure(fig, tmp_path / "roofline.pdf")
    print(f"one save_figure (PDF, browser start included): {time.perf_counter() - start:.2f} s")
    assert pdf.read_bytes().startswith(b"%PDF")
    svg = mw.save_figure(fig, tmp_path / "roofline.SVG", title="Roofline")
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert "Liberation Sans" in svg.read_text() and "Roofline" in svg.read_text()
    png = mw.save_figure(fig, tmp_path / "roofline.png", scale=2)
    data = png.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert int.from_bytes(data[16:20], "big") == 2 * 700, "PNG width: 700 px × scale"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["roofline.SVG", "roofline.pdf", "roofline.png"]


@needs_browser
def test_save_figures_writes_many_with_one_browser(tmp_path: Path) -> None:
    figs = {name: FIGURES[name]() for name in ("timing_figure", "ablation_figure", "pruning_figure")}
    paths = mw.save_figures({tmp_path / f"{n}.{fmt}": f for n, f in figs.items() for fmt in ("pdf", "svg")})
    assert len(paths) == 6 and all(p.stat().st_size > 1000 for p in paths)


@needs_browser
def test_report_figures_writes_every_figure_of_a_run(small_run: SearchResult, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert small_run.run_dir is not None
    out = tmp_path / "figs"
    assert main(["report", str(small_run.run_dir), "--figures", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["roofline.pdf", "roofline.svg"]  # no sweep: no ablation
    said = capsys.readouterr()
    assert "figure written to" in said.out
    assert f"mirage-lab ablate {small_run.run_dir}" in said.err, "no sweep: the command that makes one"
    assert not (small_run.run_dir / "report.html").exists(), "--figures alone writes no HTML"
    assert main(["report", str(small_run.run_dir), "--figures", str(out), "--format", "png",
                 "--ablation", str(CHECK_SWEEP)]) == 0
    assert (out / "roofline.png").read_bytes().startswith(b"\x89PNG")
    assert (out / "ablation.png").read_bytes().startswith(b"\x89PNG")
    assert "no ablation figure" not in capsys.readouterr().err


def test_ablate_writes_the_sweep_report_figures_draws(small_run: SearchResult, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert small_run.run_dir is not None
    run = tmp_path / "run"
    shutil.copytree(small_run.run_dir, run)
    assert main(["ablate", str(run), "--checks", "cannot_close", "--time-limit", "60"]) == 0
    assert "ablation sweep written to" in capsys.readouterr().out
    figs = mw.run_figures(run)
    assert set(figs) == {"ablation", "roofline"} and mw.ablation_sweep(run) == run / "ablation.json"
    on, off = (next(t for t in figs["ablation"].data if t.name == f"check {side}") for side in ("on", "off"))
    assert list(on.y) == list(off.y) == ["cannot_close"] and off.x[0] >= on.x[0]
    assert main(["ablate", str(run), "--checks", "shape"]) == 2
    assert "correct results need it" in capsys.readouterr().err


def test_report_figures_refuses_a_bad_format(small_run: SearchResult, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(small_run.run_dir), "--figures", str(tmp_path), "--format", "pdf,jpg"]) == 2
    err = capsys.readouterr().err
    assert "expected one or more of pdf, svg, png" in err and "Traceback" not in err
