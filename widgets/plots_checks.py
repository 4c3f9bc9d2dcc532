"""The ablation by check: explored states and search time with each named check on and off.

The source is a sweep ``mirage_lab.search.ablation.ablate`` wrote (``mirage-lab ablate RUN`` →
``RUN/ablation.json``): the search as configured, then once per optional check with that check switched off.
Each check gets a pair of bars, on (the configured search) and off; an off bar whose search stopped at its
time limit is a lower bound and is labelled ``≥``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from mirage_lab.search import ALL_ON, read_ablation

from .plots_style import PRUNING_COLORS, finish, fmt, require_columns

__all__ = ["CHECK_ABLATION_COLUMNS", "check_ablation_figure", "check_ablation_frame"]

CHECK_ABLATION_COLUMNS = ("check", "side", "states", "wall_s", "verified", "stop", "lower_bound", "best_proxy_us",
                          "same_best")
Sweep = Mapping[str, Any] | str | os.PathLike[str]


def check_ablation_frame(source: Sweep) -> pd.DataFrame:
    """Two rows per check (``side`` "on": the configured search, "off": this check switched off), in the walk's
    order, with ``CHECK_ABLATION_COLUMNS``; ``attrs`` keeps the program, config, time limit and hardware."""
    doc = read_ablation(source) if not isinstance(source, Mapping) else source
    rows = list(doc["rows"])
    base = rows[0]
    if base.get("check") != ALL_ON:
        raise ValueError(f"the sweep's first row must be {ALL_ON!r}, the search as configured")
    out = []
    for r in rows[1:]:
        for side, row in (("on", base), ("off", r)):
            out.append({"check": r["check"], "side": side, "states": row["states"], "wall_s": row["wall_s"],
                        "verified": row["verified"], "stop": row["stop"], "lower_bound": row["stop"] != "complete",
                        "best_proxy_us": row.get("best_proxy_us"), "same_best": row.get("best") == base.get("best")})
    df = pd.DataFrame(out, columns=list(CHECK_ABLATION_COLUMNS))
    hw = doc.get("hardware") or {}
    df.attrs.update(program=doc.get("program", ""), config=doc.get("config", ""),
                    time_limit_s=doc.get("time_limit_s"),
                    hardware=", ".join(f"{v} {k}" if k == "cores" else str(v) for k, v in hw.items() if v))
    return df


def _nice_ticks(lo: float, hi: float) -> list[float]:
    """1, 2, 5 × powers of ten within [lo, hi] (every decade's 1 when that is too many)."""
    decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    ticks = [m * 10.0 ** d for d in decades for m in (1, 2, 5) if lo <= m * 10.0 ** d <= hi]
    return ticks if len(ticks) <= 8 else [t for t in ticks if str(t).startswith("1")]


def _ratio(off: float, on: float, lower: bool) -> str:
    if not on:
        return ""
    r = off / on
    return ("≥ " if lower else "") + (f"×{r:.2g}" if r >= 1.05 or r <= 0.95 or lower else "=")


def _hover(r: Any) -> str:
    state = "the configured search" if r.side == "on" else f"{r.check} switched off"
    return (f"<b>{r.check}</b>: {state}<br>{r.states:,} states in {fmt(r.wall_s, ' s')} ({r.stop})<br>{r.verified} "
            f"verified; best {fmt(r.best_proxy_us, ' µs')} proxy" + ("" if r.same_best else
                                                                  " (its best is another μGraph)"))


def check_ablation_figure(source: pd.DataFrame | Sweep, title: str = "Each search check on and off",
                          widget: bool = False) -> go.Figure | go.FigureWidget:
    """Explored states and wall seconds per check, on vs off (horizontal bars, log scale), off bars labelled with
    their ratio to on (``≥``: the search without the check stopped at its time limit, a lower bound)."""
    df = source if isinstance(source, pd.DataFrame) else check_ablation_frame(source)
    require_columns(df, CHECK_ABLATION_COLUMNS, "check ablation table", "build it with check_ablation_frame()")
    order = list(dict.fromkeys(df["check"]))[::-1]  # the walk's first check at the top
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04)
    for side in ("off", "on"):  # plotly stacks groups bottom-up: "on" drawn last sits on top of each pair
        g = df[df["side"] == side].set_index("check").loc[order].reset_index()
        on = df[df["side"] == "on"].set_index("check").loc[order]
        hover = [_hover(r) for r in g.itertuples()]
        for col, y in ((1, "states"), (2, "wall_s")):
            text = [_ratio(v, b, lb) for v, b, lb in zip(g[y], on[y], g["lower_bound"], strict=True)] \
                if side == "off" else None
            fig.add_trace(go.Bar(y=g["check"], x=g[y], orientation="h", name=f"check {side}", legendgroup=side,
                                 showlegend=col == 1, marker_color=PRUNING_COLORS[side], text=text,
                                 textposition="outside", cliponaxis=False, textfont={"size": 10},
                                 hovertext=hover, hoverinfo="text"), row=1, col=col)
    for col, y, name in ((1, "states", "explored states"), (2, "wall_s", "search time (s, wall)")):
        lo, hi = df[y].min() / 3, df[y].max() * 3  # room for the ratio labels; every "on" bar visible
        fig.update_xaxes(type="log", range=[math.log10(lo), math.log10(hi)], tickvals=_nice_ticks(lo, hi),
                         tickformat="~s" if y == "states" else "~g", title_text=name, row=1, col=col)
    limit = df.attrs.get("time_limit_s")
    where = df.attrs.get("hardware")
    stopped = (f"≥: stopped at the {fmt(limit, ' s')} limit (a lower bound)" if df["lower_bound"].any() else
               "every search ran to completion")
    sub = f"off bars: ratio to on; {stopped}" + (f" · {where}" if where else "")
    fig.update_layout(barmode="group", bargap=0.25, bargroupgap=0.05, legend={"orientation": "h", "x": 1,
                      "xanchor": "right", "y": 1.0, "yanchor": "bottom", "traceorder": "reversed"})
    return finish(fig, f"{title}<br><sup>{sub}</sup>", height=max(300, 120 + 34 * len(order)), widget=widget)
