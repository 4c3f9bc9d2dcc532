"""The static views: the drill-down viewer as one HTML fragment, and a whole run exported for sharing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mirage_lab.bench import fused
from mirage_lab.errors import InputError
from mirage_lab.search.run_folder import EVENTS
from mirage_lab.search.runner import SearchResult
from mirage_lab.widgets.export import export_html
from mirage_lab.widgets.graph_view import GraphView
from mirage_lab.widgets.static_view import static_viewer_html


def test_static_viewer_holds_every_level_and_every_element() -> None:
    g = fused.gated_mlp(1)
    page = static_viewer_html(g, engine="python")
    levels = re.findall(r'<section data-level="([\w.]+)"', page)
    assert levels == ["k", "b3", "t3.0", "t3.1"]
    data = json.loads(re.search(r'<script type="application/json" class="mirage-data">(.*?)</script>', page,
                                re.S).group(1))  # type: ignore[union-attr]
    assert data["opens"] == {"k:n3": "b3", "b3:tg0": "t3.0", "b3:tg1": "t3.1"}
    view = GraphView(g)
    assert {k.split(":")[1] for k in data["details"] if k.startswith("k:") and k != "k:"} == set(view.elements())
    assert "matmul" in data["details"]["b3:b3"] and "mirage-tiling" in page
    assert "</script>" not in json.dumps(data).replace("<\\/", "")  # embedded JSON cannot close its tag


def test_export_of_a_run(small_run: SearchResult, tmp_path: Path) -> None:
    out = export_html(small_run, tmp_path / "run.html", engine="python", progress=False)
    text = out.read_text()
    best = small_run.best
    assert best is not None
    for needle in ("Verified μGraphs, best first", best.hash[:12], "How the search found it", "pruned:oracle",
                   "What changed from the program", "class=\"plotly-graph-div\"", "mirage-static",
                   "Its kernels, from ptxas and the SASS"):
        assert needle in text, needle
    assert text.count("<section data-level=") >= 2  # the best graph's levels and the program's
    assert not re.search(r'<script[^>]*src="https?://', text)  # plotly.js is embedded: the file opens offline
    assert "Plotly.newPlot" in text and len(text) > 3_000_000


def test_export_refuses_an_unfinished_run(small_run_dir: Path, tmp_path: Path) -> None:
    partial = tmp_path / "partial"
    partial.mkdir()
    for name in (EVENTS, "tasks.gz"):  # (the run's stream splices its tasks' events from tasks.gz)
        (partial / name).write_bytes((small_run_dir / name).read_bytes())
    (partial / "program.json").write_bytes((small_run_dir / "program.json").read_bytes())
    with pytest.raises(InputError, match="did not finish"):
        export_html(partial, tmp_path / "x.html", progress=False)
    assert not (tmp_path / "x.html").exists()


def test_cli_report(small_run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mirage_lab.cli import main

    out = tmp_path / "r.html"
    assert main(["report", str(small_run_dir), "--html", str(out)]) == 0
    assert out.stat().st_size > 1_000_000 and "report written to" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "missing does not exist" in capsys.readouterr().err
