"""Shared pieces of the plots: fixed colours per role, input checks that name the fix, FigureWidget setup."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeAlias

import pandas as pd
import plotly.graph_objects as go

from mirage_lab.errors import InputError, MirageError
from mirage_lab.optimize import HARDWARE, Hardware, get_hardware

#: one colour per role, the same in every figure, so a baseline looks like a baseline everywhere
ROLE_COLORS: dict[str, str] = {
    "unfused baseline": "#7f7f7f",
    "torch baseline": "#ff7f0e",
    "hand-fused": "#1f77b4",
    "reference μGraph": "#2ca02c",
    "search best": "#9467bd",
}
#: colours for the two sides of an on/off ablation and for time components
PRUNING_COLORS: dict[str, str] = {"on": "#1f77b4", "off": "#d62728"}
TIME_COLORS: dict[str, str] = {"wall_s": "#333333", "enumeration_s": "#8c564b", "oracle_s": "#17becf",
                               "verification_s": "#bcbd22"}
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22")

TableSource: TypeAlias = pd.DataFrame | str | os.PathLike[str]


def role_of(graph: str) -> str:
    """What a timing row's ``graph`` label stands for (the labels benchmarks/kernels.py writes)."""
    if graph == "unfused":
        return "unfused baseline"
    if graph == "torch":
        return "torch baseline"
    if graph == "fused" or graph.startswith("fused ("):  # "fused (no prefetch)": the codegen ablation
        return "hand-fused"
    if graph.startswith("search"):
        return "search best"
    return "reference μGraph"


def require_columns(df: pd.DataFrame, columns: Iterable[str], what: str, fix: str) -> None:
    """Raise InputError naming every missing column, what the table was meant to be and how to get one."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(f"{what} is missing column(s) {', '.join(missing)} (it has {', '.join(map(str, df.columns))}"
                         f"); {fix}")
    if df.empty:
        raise InputError(f"{what} has no rows; {fix}")


def read_csv(source: TableSource, what: str, fix: str) -> pd.DataFrame:
    """A DataFrame as is, or a CSV file read with errors that say which file and what to do."""
    if isinstance(source, pd.DataFrame):
        return source.copy()
    path = Path(source)
    if not path.is_file():
        raise InputError(f"{what}: no file {str(path)!r}; {fix}")
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise InputError(f"{what}: {str(path)!r} is empty; {fix}") from None
    except pd.errors.ParserError as e:
        raise InputError(f"{what}: {str(path)!r} is not a readable CSV ({e}); {fix}") from None


def hardware_preset(name: str | Hardware) -> Hardware:
    """A hardware preset, with the project's input error (and the valid names) when it is unknown."""
    try:
        return get_hardware(name)
    except MirageError as e:
        raise InputError(str(e)) from None


def hardware_names() -> list[str]:
    return list(HARDWARE)


def widget(fig: go.Figure, title: str, height: int = 420) -> go.FigureWidget:
    """The interactive widget of ``fig`` with a common look (white template, title, hover by point)."""
    fig.update_layout(title={"text": title, "x": 0.01}, template="plotly_white", height=height,
                      hoverlabel={"align": "left"}, legend={"groupclick": "togglegroup"})
    return go.FigureWidget(fig)


def fmt(v: Any, unit: str = "", digits: int = 3) -> str:
    """A number for hover text: 3 significant digits, "–" for missing."""
    if v is None or (isinstance(v, float) and v != v):
        return "–"
    return f"{v:.{digits}g}{unit}" if isinstance(v, int | float) else str(v)
