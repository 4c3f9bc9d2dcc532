"""Ablation plots: pruning on/off and configuration sweeps (explored states, search time, best cost).

Two sources: the search benchmark's JSON (``benchmarks/search.py --json``, e.g.
``data/search_cpu_epyc_2core.json``: ``search`` and ``pruning`` rows) and a user's own sweep, a mapping
label → ``SearchResult`` / ``SearchReport`` / ``SearchReport.to_dict()``. Both become the same columns
(``SWEEP_COLUMNS``), so one figure draws either.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeAlias

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from mirage_lab.errors import InputError
from mirage_lab.optimize import proxy_cost
from mirage_lab.search import SearchReport, SearchResult

from .plots_style import GREY, OKABE_ITO, PRUNING_COLORS, ROLE_COLORS, TIME_COLORS, finish, fmt, require_columns

__all__ = ["SWEEP_COLUMNS", "ablation_figure", "pruning_figure", "pruning_frame", "search_bench_frame",
           "sweep_frame"]

SWEEP_COLUMNS = ("label", "states", "checked", "verified", "stop", "wall_s", "enumeration_s", "oracle_s",
                 "verification_s", "first_verified_s", "best_proxy_us", "unfused_proxy_us")
BENCH_FIX = "pass the JSON that benchmarks/search.py --json writes (keys hardware, search, pruning), e.g. " \
            "data/search_cpu_epyc_2core.json, or its parsed dict"
Bench: TypeAlias = Mapping[str, Any] | str | os.PathLike[str]


def _bench(source: Bench, key: str) -> tuple[list[dict[str, Any]], str]:
    """The rows under ``key`` and a one-line hardware description."""
    doc: Any = source
    if not isinstance(source, Mapping):
        path = Path(source)
        if not path.is_file():
            raise InputError(f"search benchmark: no file {str(path)!r}; {BENCH_FIX}")
        try:
            doc = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise InputError(f"search benchmark: {str(path)!r} is not JSON ({e}); {BENCH_FIX}") from None
    if not isinstance(doc, Mapping) or not isinstance(doc.get(key), list) or not doc[key]:
        raise InputError(f"search benchmark: no {key!r} rows; {BENCH_FIX}")
    hw = doc.get("hardware") or {}
    where = ", ".join(f"{k} {v}" for k, v in hw.items() if k in ("cpu", "cores")) if isinstance(hw, Mapping) else ""
    return list(doc[key]), where


def search_bench_frame(source: Bench) -> pd.DataFrame:
    """The benchmark's ``search`` rows as ``SWEEP_COLUMNS`` (label "program b<batch> ×<processes>"), plus
    program, batch, processes and preset. Its oracle and verification seconds are summed over workers."""
    rows, where = _bench(source, "search")
    df = pd.DataFrame(rows)
    require_columns(df, ("program", "batch", "processes", "states", "checked", "verified", "stop", "total_s",
                         "oracle_s", "verification_s", "best_proxy_us"), "search benchmark rows", BENCH_FIX)
    df["label"] = [f"{p} b{b} ×{n}" for p, b, n in zip(df["program"], df["batch"], df["processes"], strict=True)]
    df = df.rename(columns={"total_s": "wall_s"})
    for col in (*SWEEP_COLUMNS, "preset"):
        if col not in df:
            df[col] = math.nan
    df.attrs["hardware"] = where
    return df[[*SWEEP_COLUMNS, "program", "batch", "processes", "preset"]]


def pruning_frame(source: Bench) -> pd.DataFrame:
    """The benchmark's ``pruning`` rows in long form: one row per program, batch and pruning on/off, with
    explored states and seconds; ``lower_bound`` marks comparisons whose unpruned walk hit its cap."""
    rows, where = _bench(source, "pruning")
    wide = pd.DataFrame(rows)
    require_columns(wide, ("program", "batch", "states_pruned", "states_unpruned", "seconds_pruned",
                           "seconds_unpruned", "ratio"), "pruning rows", BENCH_FIX)
    capped = wide.get("ratio_is_lower_bound", pd.Series(False, index=wide.index)).fillna(False).astype(bool)
    out = [{"program": r.program, "batch": int(r.batch), "case": f"{r.program} b{r.batch}", "pruning": side,
            "states": int(getattr(r, f"states_{suffix}")), "seconds": float(getattr(r, f"seconds_{suffix}")),
            "ratio": float(r.ratio), "lower_bound": bool(c), "roots": getattr(r, "roots", None)}
           for r, c in zip(wide.itertuples(), capped, strict=True)
           for side, suffix in (("on", "pruned"), ("off", "unpruned"))]
    df = pd.DataFrame(out)
    df.attrs["hardware"] = where
    return df


def _report_row(label: str, item: Any) -> dict[str, Any]:
    best = unfused = math.nan
    if isinstance(item, SearchResult):
        if item.best is not None:
            best = item.costs.get(item.best.hash, math.nan) * 1e6
        unfused = proxy_cost(item.program).microseconds  # the preset the search ranks with (H100)
        report = item.report
    elif isinstance(item, SearchReport):
        report = item
    elif isinstance(item, Mapping):
        try:
            report = SearchReport.from_dict(dict(item))
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"sweep entry {label!r} is not a SearchReport.to_dict() ({type(e).__name__}: {e}); "
                             "pass a SearchResult, a SearchReport or report.to_dict()") from None
    else:
        raise InputError(f"sweep entry {label!r} is a {type(item).__name__}; pass a SearchResult, a SearchReport "
                         "or report.to_dict()")
    s = report.seconds
    return {"label": str(label), "states": report.states, "checked": sum(report.candidates.values()),
            "verified": report.verified, "stop": report.stop_reason, "wall_s": s.get("wall", math.nan),
            "enumeration_s": s.get("enumeration", math.nan), "oracle_s": s.get("oracle", math.nan),
            "verification_s": s.get("verification", math.nan), "first_verified_s": report.first_verified_s,
            "best_proxy_us": best, "unfused_proxy_us": unfused}


def sweep_frame(results: Mapping[str, Any]) -> pd.DataFrame:
    """One row (``SWEEP_COLUMNS``) per entry of a sweep, label → SearchResult, SearchReport or its dict.
    ``best_proxy_us`` / ``unfused_proxy_us`` (H100 proxy, as the search ranks) need a SearchResult (a report
    holds no graphs); they are NaN otherwise."""
    if not isinstance(results, Mapping) or not results:
        raise InputError("sweep_frame needs a non-empty mapping label → SearchResult / SearchReport, e.g. "
                         "{'pruning on': res_on, 'pruning off': res_off}")
    return pd.DataFrame([_report_row(k, v) for k, v in results.items()], columns=list(SWEEP_COLUMNS))


# --------------------------------------------------------------------------- figures


def _hover(r: Any) -> str:
    return (f"<b>{r.label}</b> ({r.stop})<br>{r.states:,} states · {r.checked} checked · {r.verified} verified"
            f"<br>wall {fmt(r.wall_s, ' s')} · enumeration {fmt(r.enumeration_s, ' s')} · oracle "
            f"{fmt(r.oracle_s, ' s')} · verification {fmt(r.verification_s, ' s')}"
            f"<br>first verified at {fmt(r.first_verified_s, ' s')}<br>best {fmt(r.best_proxy_us, ' µs')} "
            f"(unfused {fmt(r.unfused_proxy_us, ' µs')}) proxy")


def ablation_figure(source: pd.DataFrame | Mapping[str, Any] | str | os.PathLike[str],
                    title: str = "Search ablation", widget: bool = False) -> go.Figure | go.FigureWidget:
    """Three panels per configuration: explored states (log), seconds (wall and the time split, summed
    over workers), best proxy cost (with the unfused program's when known). ``source``: a frame with
    ``SWEEP_COLUMNS``, a sweep mapping (``sweep_frame``) or the search benchmark JSON (``search_bench_frame``)."""
    if isinstance(source, pd.DataFrame):
        df = source
    elif isinstance(source, Mapping) and "search" not in source:
        df = sweep_frame(source)
    else:
        df = search_bench_frame(source)
    require_columns(df, SWEEP_COLUMNS, "ablation table", "build it with sweep_frame() or search_bench_frame()")
    hover = [_hover(r) for r in df.itertuples()]
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=("explored states", "search time", "best μGraph (proxy cost)"))
    # one colour per quantity, none per configuration (the shared x axis links the panels), so no bar is read
    # as a time component; the best found is coloured as "search best" and the unfused program as its baseline
    fig.add_trace(go.Bar(x=df["label"], y=df["states"], marker_color=OKABE_ITO["blue"], hovertext=hover,
                         hoverinfo="text", showlegend=False), row=1, col=1)
    for col, name in (("wall_s", "wall"), ("enumeration_s", "enumeration"), ("oracle_s", "oracle"),
                      ("verification_s", "verification")):
        if df[col].notna().any():
            fig.add_trace(go.Bar(x=df["label"], y=df[col], name=f"{name} (s)", marker_color=TIME_COLORS[col],
                                 legendgroup="time", hovertext=hover, hoverinfo="text"), row=2, col=1)
    fig.add_trace(go.Scatter(x=df["label"], y=df["best_proxy_us"], mode="markers", name="best found (µs)",
                             marker={"size": 10, "color": ROLE_COLORS["search best"], "symbol": "diamond"},
                             hovertext=hover, hoverinfo="text"), row=3, col=1)
    if df["unfused_proxy_us"].notna().any():
        fig.add_trace(go.Scatter(x=df["label"], y=df["unfused_proxy_us"], mode="markers", name="unfused (µs)",
                                 marker={"size": 9, "color": ROLE_COLORS["unfused baseline"], "symbol": "line-ew-open",
                                         "line": {"width": 3}}, hovertext=hover, hoverinfo="text"), row=3, col=1)
    fig.update_yaxes(type="log", title_text="states", row=1, col=1)
    fig.update_yaxes(title_text="seconds (split summed over workers)", row=2, col=1)
    fig.update_yaxes(title_text="proxy µs", rangemode="tozero", row=3, col=1)
    fig.update_xaxes(tickangle=-30, row=3, col=1)
    where = df.attrs.get("hardware")
    return finish(fig.update_layout(barmode="group"), title + (f" — {where}" if where else ""), height=760,
                  widget=widget)


def pruning_figure(source: pd.DataFrame | Bench, widget: bool = False) -> go.Figure | go.FigureWidget:
    """Pruning on vs off per program and batch: explored states and seconds, bars side by side (log scale).
    Where the unpruned walk hit its state cap the ratio is a lower bound, and the hover says so."""
    df = source if isinstance(source, pd.DataFrame) else pruning_frame(source)
    require_columns(df, ("case", "pruning", "states", "seconds", "ratio", "lower_bound"), "pruning table",
                    "build it with pruning_frame()")
    fig = make_subplots(rows=1, cols=2, subplot_titles=("explored states", "time (s)"), horizontal_spacing=0.1)
    for side, g in df.groupby("pruning", sort=False):
        hover = [f"<b>{r.case}</b>, pruning {side}<br>{r.states:,} states in {fmt(r.seconds, ' s')}"
                 f"<br>off / on = {'≥ ' if r.lower_bound else ''}{fmt(r.ratio, '×', 4)}"
                 + ("<br>(unpruned walk capped: a lower bound)" if r.lower_bound else "") for r in g.itertuples()]
        for col, y in ((1, "states"), (2, "seconds")):
            fig.add_trace(go.Bar(x=g["case"], y=g[y], name=f"pruning {side}", legendgroup=str(side),
                                 showlegend=col == 1, marker_color=PRUNING_COLORS.get(str(side), GREY),
                                 hovertext=hover, hoverinfo="text"), row=1, col=col)
    fig.update_yaxes(type="log", title_text="states", col=1)
    fig.update_yaxes(type="log", title_text="seconds", col=2)
    where = df.attrs.get("hardware")
    title = "Abstract-expression pruning on vs off" + (f" — {where}" if where else "")
    return finish(fig.update_layout(barmode="group"), title, height=440, widget=widget)
