"""The plots of ``mirage_lab.widgets``: tables built from the engine's real data, the traces drawn from them,
and errors on bad input that name the problem and the fix. Headless: figures are built, not shown."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.errors import InputError
from mirage_lab.optimize.cost import proxy_cost
from mirage_lab.optimize.hardware import HARDWARE
from mirage_lab.search.events import SearchReport
from mirage_lab.widgets import plots
from tests.search.test_search import search

pytest.importorskip("plotly")
REPO = Path(__file__).resolve().parents[2]
CHECK_SWEEP = REPO / "data" / "ablation_small_rmsnorm_cpu_xeon_2core.json"
SEARCH_JSON = REPO / "data" / "search_cpu_epyc_2core.json"


@pytest.fixture(scope="module")
def model_rows(reference_dir: Path) -> pd.DataFrame:
    return plots.cost_model_timing_frame(("H100", "A100"), ["rmsnorm"], batches=(1,), reference_dir=reference_dir)


@pytest.fixture
def measured_csv(tmp_path: Path) -> Path:
    """A schema fixture in benchmarks/kernels.py's format (test input only; no measured data ships yet)."""
    rows = [("rmsnorm", 1, "unfused", 30.0, 28.0, 33.0, 21.0, "H100", ""),
            ("rmsnorm", 1, "fused", 12.0, 11.0, 14.0, 18.0, "H100", ""),
            ("rmsnorm", 1, "rmsnorm_bs1[3]", 10.0, 9.5, 12.5, 17.0, "H100", ""),
            ("rmsnorm", 1, "rmsnorm_bs1[7]", None, None, None, 19.0, "H100", "CompileError: boom")]
    path = tmp_path / "H100.csv"
    pd.DataFrame(rows, columns=list(plots.TIMING_COLUMNS)).to_csv(path, index=False)
    return path


# --------------------------------------------------------------------------- timings


def test_cost_model_frame_has_every_graph_of_the_engine(model_rows: pd.DataFrame, reference_dir: Path) -> None:
    refs = ml.load_reference_checkpoint(reference_dir / "rmsnorm_bs1.json")
    h100 = model_rows[model_rows["hardware"] == "H100"]
    assert set(plots.TIMING_COLUMNS) <= set(model_rows.columns)
    assert (model_rows["source"] == "cost model").all()
    assert len(h100[h100["group"] == "rmsnorm_bs1"]) == len(refs)
    assert set(h100["role"]) == {"unfused baseline", "hand-fused", "reference μGraph", "search best"}
    unfused = h100.set_index("graph").loc["unfused"]
    assert unfused["median_us"] == pytest.approx(proxy_cost(programs.rmsnorm(1), "H100").microseconds)
    assert unfused["speedup"] == pytest.approx(1.0)
    fused_us = proxy_cost(fused.rmsnorm(1), "H100").microseconds
    assert h100.set_index("graph").loc["fused", "speedup"] == pytest.approx(unfused["median_us"] / fused_us)
    assert h100["p10_us"].isna().all(), "an estimate has no spread"


def test_timing_figure_from_cost_model_draws_one_box_per_group(model_rows: pd.DataFrame) -> None:
    fig = plots.timing_figure(model_rows, hardware="A100")
    boxes = [t for t in fig.data if t.type == "box"]
    assert {t.name for t in boxes} == {"unfused baseline", "hand-fused", "reference μGraph", "search best"}
    ref = next(t for t in boxes if t.name == "reference μGraph")
    assert len(ref.y) == len(model_rows[(model_rows["hardware"] == "A100") & (model_rows["group"] == "rmsnorm_bs1")])
    assert ref.marker.color == plots.ROLE_COLORS["reference μGraph"]
    assert "A100" in fig.layout.title.text and "not a measurement" in fig.layout.title.text
    assert fig.layout.yaxis.type == "log" and "µs" in fig.layout.yaxis.title.text


def test_timing_figure_from_measured_csv_uses_the_quantiles(measured_csv: Path) -> None:
    fig = plots.timing_figure(measured_csv)
    boxes = [t for t in fig.data if t.type == "box"]
    assert [b.x[0] for b in boxes] == ["unfused", "fused", "rmsnorm_bs1[3]"]
    fused_box = boxes[1]
    assert (fused_box.q1[0], fused_box.median[0], fused_box.q3[0]) == (11.0, 12.0, 14.0)
    assert any("1 row(s) without a time" in a.text for a in fig.layout.annotations)
    frame = plots.timing_frame(measured_csv)
    assert frame.set_index("graph").loc["fused", "speedup"] == pytest.approx(2.5)


def test_speedup_figure_has_one_panel_per_hardware(model_rows: pd.DataFrame) -> None:
    fig = plots.speedup_figure(model_rows)
    assert [a.text for a in fig.layout.annotations if a.text in HARDWARE] == ["A100", "H100"]
    names = {t.name for t in fig.data}
    assert "unfused baseline" not in names and "hand-fused" in names


def test_bad_timing_input_says_what_to_do(tmp_path: Path, measured_csv: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(InputError, match=r"is empty.*benchmarks/kernels.py"):
        plots.timing_frame(empty)
    with pytest.raises(InputError, match=r"missing column.*p90_us"):
        plots.timing_frame(pd.read_csv(measured_csv).drop(columns="p90_us"))
    with pytest.raises(InputError, match="no file"):
        plots.timing_figure(tmp_path / "B200.csv")
    with pytest.raises(InputError, match=r"unknown hardware 'B200'.*A100"):
        plots.cost_model_timing_frame(["B200"], ["rmsnorm"])
    with pytest.raises(InputError, match=r"no rows with hardware 'B200'.*H100"):
        plots.timing_figure(measured_csv, hardware="B200")
    with pytest.raises(InputError, match="unknown program"):
        plots.cost_model_timing_frame(["H100"], ["nope"])


def test_mixed_hardware_must_be_chosen(model_rows: pd.DataFrame) -> None:
    with pytest.raises(InputError, match="pass hardware="):
        plots.timing_figure(model_rows)


# --------------------------------------------------------------------------- ablations


def test_search_benchmark_frames_come_from_the_recorded_json() -> None:
    runs = plots.search_bench_frame(SEARCH_JSON)
    assert list(runs.columns[: len(plots.SWEEP_COLUMNS)]) == list(plots.SWEEP_COLUMNS)
    assert "rmsnorm b1 ×2" in set(runs["label"]) and (runs["states"] > 0).all()
    pruning = plots.pruning_frame(SEARCH_JSON)
    assert set(pruning["pruning"]) == {"on", "off"} and len(pruning) % 2 == 0
    on = pruning[pruning["pruning"] == "on"].set_index("case")["states"]
    off = pruning[pruning["pruning"] == "off"].set_index("case")["states"]
    assert (off > on).all(), "pruning explores fewer states"


def test_ablation_and_pruning_figures() -> None:
    fig = plots.ablation_figure(SEARCH_JSON)
    names = [t.name for t in fig.data]
    assert {"wall (s)", "oracle (s)", "verification (s)", "best found (µs)", "unfused (µs)"} <= set(names)
    assert "enumeration (s)" not in names, "the benchmark JSON has no enumeration split"
    assert fig.layout.yaxis.type == "log"
    pfig = plots.pruning_figure(SEARCH_JSON)
    assert [t.name for t in pfig.data] == ["pruning on", "pruning on", "pruning off", "pruning off"]
    assert "lower bound" in pfig.data[2].hovertext[0]


def _sweep(stop: str = "complete") -> dict[str, object]:
    row = {"states": 100, "checked": 3, "verified": 2, "stop": "complete", "wall_s": 1.0, "best_proxy_us": 5.0,
           "best": "a"}
    return {"format": "mirage-lab/ablation", "version": 1, "time_limit_s": 30, "hardware": {"cores": 2},
            "rows": [{**row, "check": "all checks on"}, {**row, "check": "oracle", "states": 5400, "wall_s": 30.2,
                                                        "stop": stop}, {**row, "check": "twin", "best": "b"}]}


def test_check_ablation_figure_has_on_and_off_for_each_check() -> None:
    df = plots.check_ablation_frame(CHECK_SWEEP)
    checks = list(dict.fromkeys(df["check"]))
    assert checks[:3] == ["foreign_ops", "precheck", "order"] and "oracle" in checks
    assert all(sorted(sides) == ["off", "on"] for sides in df.groupby("check")["side"].apply(list))
    fig = plots.check_ablation_figure(CHECK_SWEEP)
    bars = {(t.name, t.xaxis): t for t in fig.data}
    assert set(bars) == {("check on", "x"), ("check off", "x"), ("check on", "x2"), ("check off", "x2")}
    for t in fig.data:  # every check has a bar on each side, in both panels
        assert sorted(t.y) == sorted(checks) and all(v > 0 for v in t.x)
    states_off = dict(zip(bars["check off", "x"].y, bars["check off", "x"].x, strict=True))
    states_on = dict(zip(bars["check on", "x"].y, bars["check on", "x"].x, strict=True))
    assert states_off["oracle"] > 10 * states_on["oracle"]
    assert fig.layout.xaxis.type == fig.layout.xaxis2.type == "log"
    assert fig.layout.xaxis.title.text == "explored states" and fig.layout.xaxis2.title.text == "search time (s, wall)"
    assert "every search ran to completion" in fig.layout.title.text


def test_check_ablation_marks_a_search_stopped_at_its_limit_as_a_lower_bound() -> None:
    fig = plots.check_ablation_figure(_sweep(stop="time"))
    off = next(t for t in fig.data if t.name == "check off" and t.xaxis == "x")
    labels = dict(zip(off.y, off.text, strict=True))
    assert labels == {"oracle": "≥ ×54", "twin": "="}
    assert "≥: stopped at the 30 s limit" in fig.layout.title.text
    assert "its best is another μGraph" in next(t for t in fig.data if t.name == "check off").hovertext[0]
    with pytest.raises(ValueError, match="first row"):
        plots.check_ablation_frame({**_sweep(), "rows": _sweep()["rows"][1:]})  # type: ignore[index]


def test_sweep_frame_from_real_search_results(small_run: ml.search.SearchResult) -> None:
    """``small_run`` (tests/widgets/conftest.py) is the small RMSNorm+Linear search; the other side of the
    sweep is the same search without pruning, capped."""
    off = search(pruning=False, state_limit=3000)
    df = plots.sweep_frame({"pruning on": small_run, "pruning off": off, "report dict": small_run.report.to_dict()})
    assert list(df.columns) == list(plots.SWEEP_COLUMNS)
    assert df.loc[0, "states"] == small_run.report.states and df.loc[1, "states"] == off.report.states
    assert df.loc[1, "stop"] == "state limit"
    assert small_run.best is not None
    assert df.loc[0, "best_proxy_us"] == pytest.approx(small_run.costs[small_run.best.hash] * 1e6)
    assert df.loc[0, "unfused_proxy_us"] == pytest.approx(proxy_cost(small_run.program).microseconds)
    assert math.isnan(df.loc[2, "best_proxy_us"]), "a bare report holds no graphs"
    fig = plots.ablation_figure({"on": small_run, "off": off.report})
    assert list(fig.data[0].x) == ["on", "off"]


def test_bad_sweep_input() -> None:
    with pytest.raises(InputError, match="non-empty mapping"):
        plots.sweep_frame({})
    with pytest.raises(InputError, match="'x' is a int"):
        plots.sweep_frame({"x": 3})
    with pytest.raises(InputError, match=r"not a SearchReport.to_dict"):
        plots.sweep_frame({"x": {"states": 1}})
    assert plots.sweep_frame({"r": SearchReport(states=7)}).loc[0, "states"] == 7
    with pytest.raises(InputError, match="no 'pruning' rows"):
        plots.pruning_frame({"search": []})


# --------------------------------------------------------------------------- roofline


def test_roofline_frame_follows_the_cost_model() -> None:
    graphs = {"unfused": programs.gqa(1), "fused": fused.gqa(1)}
    df = plots.roofline_frame(graphs, "H100")
    est = proxy_cost(programs.gqa(1), "H100")
    unf = df[df["graph"] == "unfused"]
    assert len(unf) == len(est.per_kernel) and (df["kind"] == "proxy").all()
    k = est.per_kernel[0]
    assert unf.iloc[0]["ai_dram"] == pytest.approx(k.flops / k.dram_bytes)
    assert unf.iloc[0]["flops_per_s"] == pytest.approx(k.flops / k.seconds)
    ops = plots.roofline_frame(graphs, "H100", per="op")
    assert set(ops["level"]) == {"kernel", "block"}
    assert ops["est_us"].sum() == pytest.approx(sum(proxy_cost(g, "H100").microseconds for g in graphs.values()))


def test_roofline_figure_draws_points_under_the_ceilings() -> None:
    fig = plots.roofline_figure({"unfused": programs.gqa(1), "fused": fused.gqa(1)}, "A100")
    names = [t.name for t in fig.data]
    assert names[:2] == ["unfused", "fused"]
    peak = next(t for t in fig.data if t.name.startswith("tensor-core peak"))
    assert max(peak.y) == pytest.approx(HARDWARE["A100"].flops_per_s / 1e12)  # TFLOP/s
    assert all(y <= HARDWARE["A100"].flops_per_s / 1e12 * 1.0001 for t in fig.data[:2] for y in t.y)
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis.title.text == "arithmetic intensity (FLOP/byte, DRAM)"
    assert fig.layout.yaxis.title.text == "TFLOP/s implied by the estimate"
    assert all(t.name.endswith("TFLOP/s") for t in fig.data if t.mode == "lines")  # one unit style: SI, per second
    smem = plots.roofline_figure(plots.roofline_frame(fused.gqa(1), "A100", per="op"), level="smem")
    assert "not shown" in smem.layout.title.text


def _subtitle_markers(fig: Any) -> dict[str, str]:
    sub = fig.layout.title.text.split("<sup>")[1]
    return {sign: symbol for sign, symbol in (("●", "circle"), ("◆", "diamond")) if sign in sub}


def test_roofline_labels_every_point_and_draws_every_marker_its_subtitle_names() -> None:
    labels: set[str] = set()
    for per, level, markers in (("kernel", "dram", {"●": "circle"}), ("op", "dram", {"●": "circle"}),
                                ("op", "smem", {"◆": "diamond"})):
        graphs = {"program": programs.rmsnorm(1), "best": fused.rmsnorm(1)}
        fig = plots.roofline_figure(graphs, "H100", level=level, per=per)  # block ops move no DRAM bytes
        assert _subtitle_markers(fig) == markers, (per, level)
        points = [t for t in fig.data if t.mode == "markers+text"]
        for symbol in markers.values():
            assert any(t.marker.symbol == symbol and len(t.x) for t in points), (per, symbol)
        for t in points:  # a readable label per point: its kernel node and op
            assert len(t.text) == len(t.x) and all(x.startswith("#") for x in t.text)
        labels.update(x for t in points for x in t.text)
    assert {"#2 rms_norm", "#3 matmul", "#2 customized", "#2·matmul", "#2·accum_rms"} <= labels
    kernels = plots.roofline_figure({"program": programs.rmsnorm(1), "best": fused.rmsnorm(1)}, "H100")
    where = [p for t in kernels.data if t.mode == "markers+text" for p in t.textposition]
    assert sorted(where) == ["bottom center", "top center", "top center"]  # the two close points: one above, one below
    assert kernels.layout.legend.y < 0.5 and kernels.layout.legend.orientation is None  # inside, bottom right


def test_bad_roofline_input() -> None:
    with pytest.raises(InputError, match="level must be one of dram, l2, smem"):
        plots.roofline_figure(programs.rmsnorm(1), level="hbm")
    with pytest.raises(InputError, match="unknown hardware"):
        plots.roofline_frame(programs.rmsnorm(1), "TPU")
    mixed = pd.concat([plots.roofline_frame(programs.rmsnorm(1), h) for h in ("A100", "H100")])
    with pytest.raises(InputError, match="mixes hardware"):
        plots.roofline_figure(mixed)
    with pytest.raises(InputError, match="missing column"):
        plots.roofline_figure(mixed.drop(columns="flops"))


def test_library_baselines_are_coloured_as_baselines() -> None:
    """The timing table's baseline labels (bench.baselines) share the torch colour; μGraph rows keep theirs."""
    from mirage_lab.widgets.plots_style import role_of

    assert {role_of(g) for g in ("torch", "torch eager", "torch.compile", "SDPA")} == {"torch baseline"}
    assert role_of("fused (before)") == "hand-fused" and role_of("search best (before)") == "search best"
    assert role_of("single_lora") == "reference μGraph"


def test_figures_in_jupyter_also_carry_html_for_exported_notebooks(monkeypatch: pytest.MonkeyPatch) -> None:
    """plotly's Jupyter default (JSON only) leaves exported pages blank: it gains the ``notebook`` renderer; a
    renderer the user chose stays."""
    import plotly.io as pio

    from mirage_lab.widgets.plots_renderer import EXPORTABLE, JUPYTER_DEFAULT, use_exportable_renderer

    monkeypatch.delenv("PLOTLY_RENDERER", raising=False)
    monkeypatch.setattr(pio.renderers, "default", JUPYTER_DEFAULT)
    assert use_exportable_renderer() and pio.renderers.default == EXPORTABLE
    fig = {"data": [{"type": "bar", "y": [1, 2]}], "layout": {}}
    bundle = {k: v for name in EXPORTABLE.split("+") for k, v in pio.renderers[name].to_mimebundle(fig).items()}
    assert set(bundle) == {"application/vnd.plotly.v1+json", "text/html"} and "Plotly.newPlot" in bundle["text/html"]
    for chosen in ("browser", "png", "plotly_mimetype+svg"):
        monkeypatch.setattr(pio.renderers, "default", chosen)
        assert not use_exportable_renderer() and pio.renderers.default == chosen
    monkeypatch.setattr(pio.renderers, "default", JUPYTER_DEFAULT)
    monkeypatch.setenv("PLOTLY_RENDERER", "plotly_mimetype")
    assert not use_exportable_renderer() and pio.renderers.default == JUPYTER_DEFAULT
