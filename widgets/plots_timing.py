"""Kernel timing plots: candidates against baselines per program and batch, as distributions, with speed-ups.

Rows come either from a measured timing CSV (``benchmarks/kernels.py`` on a GPU writes
``data/timings/<gpu>.csv``) or from the proxy cost model (``cost_model_timing_frame``), and every row
says which in its ``source`` column ("measured" or "cost model"), so a proxy estimate is never shown as
a measurement. A measured row whose kernel computed a wrong result (its ``result`` column, issue 35) has no
speed-up and is drawn as a cross, with a count above the figure; a reference μGraph that is not its program has
no speed-up either.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

import mirage_lab as ml
from mirage_lab.bench import CHECKPOINTS, find_reference_dir, fused, programs, tolerance
from mirage_lab.errors import InputError
from mirage_lab.ir import KernelGraph
from mirage_lab.optimize import proxy_cost

from .plots_style import (
    OKABE_ITO,
    ROLE_COLORS,
    TableSource,
    finish,
    fmt,
    hardware_preset,
    read_csv,
    require_columns,
    role_of,
)

__all__ = ["TIMING_COLUMNS", "cost_model_timing_frame", "speedup_figure", "timing_figure", "timing_frame"]

#: the columns benchmarks/kernels.py writes
TIMING_COLUMNS = ("program", "batch", "graph", "median_us", "p10_us", "p90_us", "proxy_us", "hardware", "error")
FIX = "expected a timing table as written by benchmarks/kernels.py (data/timings/<gpu>.csv), or use " \
      "cost_model_timing_frame() on a machine without timings"
SEARCH_BEST = Path(__file__).resolve().parents[1] / "data" / "search_best"


def timing_frame(source: TableSource, source_label: str = "measured") -> pd.DataFrame:
    """A timing table (DataFrame or CSV path) checked and completed with ``source``, ``group``, ``role``,
    ``result`` (empty where the table has none), ``wrong`` and ``speedup`` (the ``unfused`` row's median over this
    row's, per source, hardware, program and batch; none for a row that does not compute its program)."""
    df = read_csv(source, "timing table", FIX)
    require_columns(df, TIMING_COLUMNS, "timing table", FIX)
    if "source" not in df.columns:
        df["source"] = source_label
    df["error"] = df["error"].fillna("").astype(str)
    df["batch"] = df["batch"].astype(int)
    for col in ("median_us", "p10_us", "p90_us", "proxy_us"):
        df[col] = pd.to_numeric(df[col], errors="coerce")
    df["group"] = df["graph"].astype(str).str.replace(r"\[\d+\]$", "", regex=True)
    df["role"] = df["graph"].astype(str).map(role_of)
    df["result"] = df["result"].fillna("").astype(str) if "result" in df.columns else ""
    df["wrong"] = tolerance.wrong(df)
    return _with_speedup(df)


def _with_speedup(df: pd.DataFrame) -> pd.DataFrame:
    keys = ["source", "hardware", "program", "batch"]
    base = df[df["graph"] == "unfused"].groupby(keys)["median_us"].first().rename("_unfused_us")
    df = df.join(base, on=keys)
    df["speedup"] = (df["_unfused_us"] / df["median_us"]).where(~tolerance.no_speedup(df))
    return df.drop(columns="_unfused_us")


# --------------------------------------------------------------------------- the cost model's table


def cost_model_timing_frame(hardware_names: Iterable[str] = ("A100", "H100", "H200"),
                            program_names: Sequence[str] | None = None, batches: Sequence[int] = (1, 8),
                            reference_dir: str | Path | None = None,
                            search_best_dir: str | Path | None = SEARCH_BEST) -> pd.DataFrame:
    """The timing table built from the proxy cost model instead of a GPU (``source == "cost model"``).

    Per architecture, program and batch: the unfused program, the hand-written fused μGraph
    (``mirage_lab.bench.fused``), every reference μGraph of the matching checkpoint files
    (``find_reference_dir``) and the best μGraph of the project's own search (``data/search_best``).
    ``median_us`` and ``proxy_us`` hold the proxy estimate; ``p10_us`` / ``p90_us`` are empty (an
    estimate has no spread); a block that does not fit the GPU has an ``error`` and no time."""
    hws = [hardware_preset(h) for h in hardware_names]
    names = list(program_names) if program_names is not None else [p for p in programs.PROGRAMS if p != "moe"]
    unknown = [p for p in names if p not in programs.PROGRAMS]
    if unknown or not hws:
        raise InputError(f"unknown program(s) {unknown} or no hardware; programs are {', '.join(programs.PROGRAMS)}"
                         " and hardware one or more of A100, H100, H200")
    ref = find_reference_dir(None if reference_dir is None else str(reference_dir))
    rows = [_estimate_row(label, g, name, batch, hw.name)
            for name in names for batch in batches
            for label, g in _graphs(name, batch, ref, search_best_dir) for hw in hws]
    return timing_frame(pd.DataFrame(rows, columns=list(TIMING_COLUMNS)), source_label="cost model")


def _graphs(name: str, batch: int, ref: Path | None, best_dir: str | Path | None) -> list[tuple[str, KernelGraph]]:
    out = [("unfused", programs.PROGRAMS[name](batch))]
    if name in fused.FUSED:
        out.append(("fused", fused.FUSED[name](batch)))
    for stem, (prog, b) in CHECKPOINTS.items():
        if ref is not None and prog == name and b == batch and (ref / f"{stem}.json").is_file():
            out += [(f"{stem}[{i}]", g) for i, g in enumerate(ml.load_reference_checkpoint(ref / f"{stem}.json"))]
    best = None if best_dir is None else Path(best_dir) / f"{name}_bs{batch}.json"
    if best is not None and best.is_file():
        out.append(("search best", _one_graph(best)))
    return out


def _estimate_row(label: str, g: KernelGraph, name: str, batch: int, hw: str) -> dict[str, Any]:
    est = proxy_cost(g, hw)
    us = est.microseconds if math.isfinite(est.seconds) else math.nan
    error = "" if est.fits else f"a block does not fit one SM of {hw} (proxy cost is infinite)"
    return {"program": name, "batch": batch, "graph": label, "median_us": us, "p10_us": math.nan,
            "p90_us": math.nan, "proxy_us": us, "hardware": hw, "error": error}


# --------------------------------------------------------------------------- figures


def _select(df: pd.DataFrame, hw: str | None, source: str | None) -> tuple[pd.DataFrame, str, str]:
    """The rows of one hardware and one source, or an error listing the choices."""
    for col, want in (("source", source), ("hardware", hw)):
        have = sorted(df[col].astype(str).unique())
        if want is None and len(have) > 1:
            raise InputError(f"the timing table mixes {col} values {have}; pass {col}= one of them")
        pick = have[0] if want is None else want
        if pick not in have:
            raise InputError(f"no rows with {col} {pick!r} in the timing table; it has {have}")
        df = df[df[col] == pick]
    return df, str(df["hardware"].iloc[0]), str(df["source"].iloc[0])


def _panels(df: pd.DataFrame) -> list[tuple[str, int]]:
    order = {p: i for i, p in enumerate(programs.PROGRAMS)}
    keys = {(str(p), int(b)) for p, b in zip(df["program"], df["batch"], strict=True)}
    return sorted(keys, key=lambda k: (order.get(k[0], len(order)), k[0], k[1]))


def _hover(r: Any) -> str:
    spread = "" if math.isnan(r.p10_us) else f"<br>p10 {fmt(r.p10_us, ' µs')} · p90 {fmt(r.p90_us, ' µs')}"
    result = "" if r.result in ("", tolerance.OK) else f"<br><b>{html.escape(r.result)}</b>"
    return (f"<b>{r.graph}</b> ({r.role}, {r.source})<br>{r.program} batch {r.batch} on {r.hardware}"
            f"<br>median {fmt(r.median_us, ' µs')}{spread}<br>proxy {fmt(r.proxy_us, ' µs')}"
            f"<br>speed-up vs unfused {fmt(r.speedup, '×')}{result}")


def _measured_traces(rows: pd.DataFrame, seen: set[str]) -> list[go.BaseTraceType]:
    """One box per row from its quantiles (box and whiskers span p10–p90, line at the median)."""
    traces: list[go.BaseTraceType] = []
    for r in rows.itertuples():
        color = ROLE_COLORS[r.role]
        lo = r.median_us if math.isnan(r.p10_us) else r.p10_us
        hi = r.median_us if math.isnan(r.p90_us) else r.p90_us
        traces.append(go.Box(x=[r.graph], q1=[lo], median=[r.median_us], q3=[hi], lowerfence=[lo], upperfence=[hi],
                             name=r.role, legendgroup=r.role, showlegend=r.role not in seen, marker_color=color,
                             hoverinfo="skip"))
        marker = {"color": OKABE_ITO["vermillion"], "size": 11, "symbol": "x"} if r.wrong else \
            {"color": color, "size": 6}
        traces.append(go.Scatter(x=[r.graph], y=[r.median_us], mode="markers", marker=marker,
                                 legendgroup=r.role, showlegend=False, hovertext=[_hover(r)], hoverinfo="text"))
        seen.add(r.role)
    return traces


def _model_traces(rows: pd.DataFrame, seen: set[str]) -> list[go.BaseTraceType]:
    """One box per group over its graphs' estimates (e.g. every reference μGraph of a checkpoint), all points shown."""
    traces: list[go.BaseTraceType] = []
    for group, g in rows.groupby("group", sort=False):
        role = str(g["role"].iloc[0])
        traces.append(go.Box(x=[group] * len(g), y=g["median_us"], name=role, legendgroup=role,
                             showlegend=role not in seen, marker_color=ROLE_COLORS[role], boxpoints="all",
                             jitter=0.4, pointpos=0, hovertext=[_hover(r) for r in g.itertuples()],
                             hoverinfo="text", hoveron="points"))
        seen.add(role)
    return traces


def timing_figure(source: TableSource, hardware: str | None = None, source_label: str | None = None,
                  program_names: Sequence[str] | None = None, widget: bool = False) -> go.Figure | go.FigureWidget:
    """Times per program and batch (one panel each, log scale) for one hardware and one source.

    Measured rows are boxes from their quantiles (p10–p90, median line); cost-model rows are boxes over
    each group's graphs (the spread of the candidates' estimates). Colours mark the role: baselines,
    hand-fused, reference μGraphs, search best. Hover shows the quantiles, proxy and speed-up."""
    df = timing_frame(source)
    if program_names is not None:
        df = df[df["program"].isin(program_names)]
    df, hw, kind = _select(df, hardware, source_label)
    ok = df[df["median_us"].notna()]
    panels = _panels(ok)
    if not panels:
        raise InputError(f"no timed rows for {hw} ({kind}): every row has an error; see the 'error' column")
    cols = min(3, len(panels))
    n_rows = math.ceil(len(panels) / cols)
    fig = make_subplots(rows=n_rows, cols=cols, subplot_titles=[f"{p} · batch {b}" for p, b in panels],
                        vertical_spacing=0.3 / n_rows, horizontal_spacing=0.06)
    seen: set[str] = set()
    traces = _measured_traces if kind == "measured" else _model_traces
    for i, (p, b) in enumerate(panels):
        rows = ok[(ok["program"] == p) & (ok["batch"] == b)]
        for t in traces(rows, seen):
            fig.add_trace(t, row=i // cols + 1, col=i % cols + 1)
    what = "median (box p10–p90)" if kind == "measured" else "proxy estimate (not a measurement)"
    fig.update_yaxes(type="log", title_text="time (µs)", col=1)
    fig.update_yaxes(type="log")
    fig.update_xaxes(tickangle=-35, tickfont={"size": 9})
    failed = int((df["median_us"].isna()).sum())
    wrong_rows = int(df["wrong"].sum())
    notes = ([f"{failed} row(s) without a time (see 'error')"] if failed else []) + \
        ([f"{wrong_rows} row(s) with a WRONG result (×; see 'result')"] if wrong_rows else [])
    if notes:
        fig.add_annotation(text="; ".join(notes), showarrow=False, xref="paper", yref="paper", x=1, y=1.08,
                           font={"size": 11, "color": OKABE_ITO["vermillion"]})
    title = f"Kernel time on {hw} — {kind}: {what}"
    return finish(fig.update_layout(showlegend=True), title, height=300 * n_rows + 120, widget=widget)


def speedup_figure(source: TableSource, source_label: str | None = None,
                   widget: bool = False) -> go.Figure | go.FigureWidget:
    """Speed-up over the unfused program of every non-unfused row, one panel per hardware (log scale,
    one point per graph so the spread of candidates shows), coloured by role; 1× marks the baseline."""
    df = timing_frame(source)
    if source_label is None and df["source"].nunique() > 1:
        raise InputError(f"the timing table mixes sources {sorted(df['source'].unique())}; pass source_label=")
    df = df if source_label is None else df[df["source"] == source_label]
    df = df[(df["graph"] != "unfused") & df["speedup"].notna()]
    if df.empty:
        raise InputError("no row has a speed-up: each (program, batch) needs a timed 'unfused' row and another "
                         "timed row")
    hws = sorted(df["hardware"].astype(str).unique())
    fig = make_subplots(rows=1, cols=len(hws), subplot_titles=hws, shared_yaxes=True, horizontal_spacing=0.03)
    for c, hw in enumerate(hws, start=1):
        part = df[df["hardware"] == hw]
        for role, g in part.groupby("role", sort=False):
            fig.add_trace(go.Box(x=[f"{p} b{b}" for p, b in zip(g["program"], g["batch"], strict=True)],
                                 y=g["speedup"], name=str(role), legendgroup=str(role), showlegend=c == 1,
                                 marker_color=ROLE_COLORS[str(role)], boxpoints="all", jitter=0.5, pointpos=0,
                                 line={"width": 0}, fillcolor="rgba(0,0,0,0)",
                                 hovertext=[_hover(r) for r in g.itertuples()], hoverinfo="text", hoveron="points"),
                          row=1, col=c)
        fig.add_hline(y=1, line_dash="dot", line_color=ROLE_COLORS["unfused baseline"], row=1, col=c)
    fig.update_yaxes(type="log", title_text="speed-up over unfused (×)", col=1)
    fig.update_xaxes(tickangle=-35)
    kind = " + ".join(sorted(df["source"].unique()))
    return finish(fig.update_layout(boxmode="group"), f"Speed-up over the unfused program — {kind}", height=460,
                  widget=widget)


def _one_graph(path: Path) -> KernelGraph:
    graph = ml.load(path)
    if not isinstance(graph, KernelGraph):
        raise InputError(f"{path} holds {len(graph)} μGraphs; a search's best is one")
    return graph
