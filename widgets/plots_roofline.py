"""Roofline view of the proxy cost model: per kernel or per op, arithmetic intensity against the FLOP/s the
estimate implies, under the architecture's bandwidth and peak ceilings (``mirage_lab.optimize.hardware``).

Every point is a proxy estimate (``CostEstimate``), never a measurement; the figure's title says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from mirage_lab.errors import InputError
from mirage_lab.ir import BlockGraph, KernelGraph, KernelGraphBuilder
from mirage_lab.optimize import CostEstimate, proxy_cost

from .plots_style import PALETTE, ROLE_COLORS, finish, fmt, hardware_preset, require_columns, role_of

__all__ = ["LEVELS", "ROOFLINE_COLUMNS", "roofline_figure", "roofline_frame"]

#: memory level → the Hardware field holding its bandwidth
LEVELS = {"dram": "dram_bytes_per_s", "l2": "l2_bytes_per_s", "smem": "smem_bytes_per_s"}
ROOFLINE_COLUMNS = ("graph", "kernel", "node", "level", "op", "shape", "dram_bytes", "l2_bytes", "smem_bytes",
                    "tensor_flops", "vector_flops", "flops", "est_us", "bound", "hardware")
Graphish: TypeAlias = KernelGraph | KernelGraphBuilder | BlockGraph | CostEstimate
#: frame level → plotly marker symbol and the sign the subtitle names it by
MARKERS = {"kernel": ("circle", "●"), "block": ("diamond", "◆")}


def _estimates(graphs: Graphish | Mapping[str, Graphish], hardware: str) -> dict[str, CostEstimate]:
    items = graphs if isinstance(graphs, Mapping) else {"graph": graphs}
    if not items:
        raise InputError("roofline_frame needs a μGraph, a CostEstimate or a non-empty mapping label → either")
    hw = hardware_preset(hardware).name
    out: dict[str, CostEstimate] = {}
    for label, g in items.items():
        if isinstance(g, CostEstimate):
            out[str(label)] = g
        elif isinstance(g, KernelGraph | KernelGraphBuilder | BlockGraph):
            out[str(label)] = proxy_cost(g, hw)
        else:
            raise InputError(f"roofline entry {label!r} is a {type(g).__name__}; pass a kernel graph or builder, "
                             "a BlockGraph or a CostEstimate (proxy_cost(graph, hardware))")
    return out


def _kernel_rows(label: str, est: CostEstimate) -> list[dict[str, Any]]:
    return [{"graph": label, "kernel": k.node, "node": k.node, "level": "kernel", "op": k.op, "shape": "",
             "dram_bytes": k.dram_bytes, "l2_bytes": k.l2_bytes, "smem_bytes": k.smem_bytes,
             "tensor_flops": k.tensor_flops, "vector_flops": k.vector_flops, "flops": k.flops,
             "est_us": k.seconds * 1e6, "bound": k.bound, "hardware": est.hardware} for k in est.per_kernel]


def _op_rows(label: str, est: CostEstimate) -> list[dict[str, Any]]:
    ops = est.per_op()  # the engine's per-op table: bytes per level, FLOPs, est_us
    bound = {k.node: k.bound for k in est.per_kernel}
    ops["flops"] = ops["tensor_flops"] + ops["vector_flops"]
    ops["bound"] = ops["kernel"].map(bound)
    ops["graph"], ops["hardware"] = label, est.hardware
    return [{c: r[c] for c in ROOFLINE_COLUMNS} for r in ops.to_dict("records")]


def roofline_frame(graphs: Graphish | Mapping[str, Graphish], hardware: str = "H100",
                   per: str = "kernel") -> pd.DataFrame:
    """One row per kernel (``per="kernel"``) or per op (``per="op"``: kernel ops and the block ops inside
    customized kernels) of each μGraph's proxy estimate: bytes at DRAM / L2 / shared memory, FLOPs, the
    estimated time, and for each level the arithmetic intensity ``ai_<level>`` (FLOP/byte) and the
    implied rate ``flops_per_s``. A CostEstimate keeps its own hardware."""
    if per not in ("kernel", "op"):
        raise InputError(f"per must be 'kernel' or 'op', got {per!r}")
    rows: list[dict[str, Any]] = []
    for label, est in _estimates(graphs, hardware).items():
        rows += _kernel_rows(label, est) if per == "kernel" else _op_rows(label, est)
    df = pd.DataFrame(rows, columns=list(ROOFLINE_COLUMNS))
    seconds = df["est_us"].astype(float) * 1e-6
    df["flops_per_s"] = np.where(seconds > 0, df["flops"] / seconds.where(seconds > 0), np.nan)
    for level in LEVELS:
        b = df[f"{level}_bytes"].astype(float)
        df[f"ai_{level}"] = np.where(b > 0, df["flops"] / b.where(b > 0), np.nan)
    df["kind"] = "proxy"
    return df


def _ceilings(fig: go.Figure, hw: Any, level: str, x_lo: float, x_hi: float) -> None:
    """The roofline in TFLOP/s: bandwidth × intensity up to the tensor-core peak (solid) and the CUDA-core peak
    (dashed)."""
    bw = getattr(hw, LEVELS[level])
    xs = np.logspace(math.log10(x_lo), math.log10(x_hi), 200)
    for peak, name, dash in ((hw.flops_per_s, "tensor-core peak", "solid"),
                             (hw.vector_flops_per_s, "CUDA-core peak (fp32)", "dash")):
        fig.add_trace(go.Scatter(x=xs, y=np.minimum(peak, xs * bw) / 1e12, mode="lines",
                                 name=f"{name}, {peak / 1e12:.3g} TFLOP/s", line={"color": "#444", "dash": dash,
                                 "width": 1.5}, hovertemplate=f"{name}<br>{level.upper()} {bw / 1e12:.3g} TB/s<br>"
                                 "%{x:.3g} FLOP/byte → %{y:.3g} TFLOP/s<extra></extra>"))


def _label_positions(xs: Sequence[float], ys: Sequence[float]) -> list[str]:
    """Above or below each point, alternating among points close on the log-log plane, so labels of
    neighbouring points do not print over each other."""
    pos: list[str] = []
    placed: list[tuple[float, float, str]] = []
    for x, y in zip(xs, ys, strict=True):
        lx, ly = math.log10(x), math.log10(y)
        near = [p for px, py, p in placed if abs(px - lx) < 0.6 and abs(py - ly) < 0.4]
        side = "bottom center" if near and near[-1] == "top center" else "top center"
        pos.append(side)
        placed.append((lx, ly, side))
    return pos


def _point_label(r: Any) -> str:
    """``#3 matmul`` (kernel node 3, as the viewer numbers it) or ``#2·div`` (a block op of custom kernel #2)."""
    return f"#{r.kernel} {r.op}" if r.level == "kernel" else f"#{r.kernel}·{r.op}"


def _hover(r: Any, level: str) -> str:
    where = f"kernel {r.kernel}" + ("" if r.level == "kernel" else f", block op {fmt(r.node)}")
    return (f"<b>{r.graph}</b>: {r.op} {r.shape} ({where}, {r.bound})<br>{fmt(r.flops / 1e6, ' MFLOP')} · DRAM "
            f"{fmt(r.dram_bytes / 1e6, ' MB')} · L2 {fmt(r.l2_bytes / 1e6, ' MB')} · smem "
            f"{fmt(r.smem_bytes / 1e6, ' MB')}<br>{level.upper()} intensity {fmt(getattr(r, f'ai_{level}'))} FLOP/byte"
            f"<br>est. {fmt(r.est_us, ' µs')} → {fmt(r.flops_per_s / 1e12)} TFLOP/s (proxy)")


def roofline_figure(source: pd.DataFrame | Graphish | Mapping[str, Graphish], hardware: str = "H100",
                    level: str = "dram", per: str = "kernel", widget: bool = False) -> go.Figure | go.FigureWidget:
    """Log-log roofline for one architecture and memory level: a labelled point per kernel (``#3 matmul``) or op
    (one colour per μGraph) at (intensity in FLOP/byte, implied TFLOP/s), under the ceilings. Points with no
    FLOPs, no bytes at ``level`` or no time cannot sit on a log axis; the subtitle counts them, and names the
    marker of each level drawn (● kernel, ◆ block op)."""
    if level not in LEVELS:
        raise InputError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    df = source if isinstance(source, pd.DataFrame) else roofline_frame(source, hardware, per)
    require_columns(df, (*ROOFLINE_COLUMNS, "flops_per_s", f"ai_{level}"), "roofline table",
                    "build it with roofline_frame(graphs, hardware)")
    hws = sorted(df["hardware"].unique())
    if len(hws) > 1:
        raise InputError(f"the roofline table mixes hardware {hws}; filter it to one (df[df.hardware == 'H100'])")
    hw = hardware_preset(hws[0])
    ok = df[(df[f"ai_{level}"] > 0) & (df["flops_per_s"] > 0)]
    fig = go.Figure()
    where = pd.Series(_label_positions(list(ok[f"ai_{level}"]), list(ok["flops_per_s"])), index=ok.index, dtype=object)
    for i, (label, g) in enumerate(ok.groupby("graph", sort=False)):
        color = ROLE_COLORS.get(role_of(str(label)), PALETTE[i % len(PALETTE)]) if str(label) in (
            "unfused", "fused", "torch", "search best") else PALETTE[i % len(PALETTE)]
        for lv, rows in g.groupby("level", sort=False):
            x, y = rows[f"ai_{level}"], rows["flops_per_s"] / 1e12
            fig.add_trace(go.Scatter(x=x, y=y, mode="markers+text", name=str(label), legendgroup=str(label),
                                     showlegend=lv == g["level"].iloc[0], text=[_point_label(r) for r in
                                     rows.itertuples()], textposition=list(where[rows.index]),
                                     textfont={"size": 11, "color": color}, cliponaxis=False,
                                     marker={"color": color, "size": 10, "symbol": MARKERS[str(lv)][0],
                                             "line": {"width": 1, "color": "white"}},
                                     hovertext=[_hover(r, level) for r in rows.itertuples()], hoverinfo="text"))
    xs = ok[f"ai_{level}"]
    ridge = hw.flops_per_s / getattr(hw, LEVELS[level])
    lo = min(xs.min() if len(xs) else 1.0, ridge) / 4
    hi = max(xs.max() if len(xs) else 1.0, ridge) * 4
    _ceilings(fig, hw, level, lo, hi)
    hidden = len(df) - len(ok)
    note = f"; {hidden} row(s) with no FLOPs or no {level.upper()} bytes not shown" if hidden else ""
    drawn = " ".join(f"{MARKERS[lv][1]} {lv if lv == 'kernel' else 'block op'}" for lv in MARKERS
                     if (ok["level"] == lv).any())
    fig.update_xaxes(type="log", dtick=1, tickformat="~g", title_text=f"arithmetic intensity (FLOP/byte, "
                     f"{level.upper()})")
    fig.update_yaxes(type="log", dtick=1, tickformat="~g", title_text="TFLOP/s implied by the estimate")
    fig.update_layout(legend={"x": 0.99, "xanchor": "right", "y": 0.02, "yanchor": "bottom",
                              "bgcolor": "rgba(255,255,255,0.85)", "font": {"size": 11}})
    title = (f"Roofline on {hw.name} ({level.upper()} {getattr(hw, LEVELS[level]) / 1e12:.3g} TB/s) — proxy "
             f"estimates, not measurements<br><sup>points: {drawn}{note}</sup>")
    return finish(fig, title, height=520, widget=widget)
