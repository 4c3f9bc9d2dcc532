"""Shared pieces of the plots: colour-blind-safe colours per role, input checks that name the fix, the common look.

Colours come from the Okabe–Ito palette (Okabe & Ito 2008, "Color Universal Design"), which stays distinct under
the common colour-vision deficiencies and in greyscale print; the same colours are used on screen and on paper
(``save_figure`` in ``plots_export`` adds the print layout: fonts, sizes, lines)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeAlias

import pandas as pd
import plotly.graph_objects as go

from mirage_lab.errors import InputError, MirageError
from mirage_lab.optimize import HARDWARE, Hardware, get_hardware

#: the Okabe–Ito palette by name
OKABE_ITO: dict[str, str] = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky blue": "#56B4E9",
    "bluish green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish purple": "#CC79A7",
}
#: a neutral grey for baselines (distinct from every Okabe–Ito hue by lightness)
GREY = "#8C8C8C"
#: one colour per role, the same in every figure, so a baseline looks like a baseline everywhere
ROLE_COLORS: dict[str, str] = {
    "unfused baseline": GREY,
    "torch baseline": OKABE_ITO["orange"],
    "hand-fused": OKABE_ITO["blue"],
    "reference μGraph": OKABE_ITO["bluish green"],
    "search best": OKABE_ITO["vermillion"],
}
#: colours for the two sides of an on/off ablation and for time components
PRUNING_COLORS: dict[str, str] = {"on": OKABE_ITO["blue"], "off": OKABE_ITO["vermillion"]}
TIME_COLORS: dict[str, str] = {"wall_s": OKABE_ITO["black"], "enumeration_s": OKABE_ITO["orange"],
                               "oracle_s": OKABE_ITO["sky blue"], "verification_s": OKABE_ITO["bluish green"]}
#: series colours in order (yellow last: it is faint on white)
PALETTE = tuple(OKABE_ITO[c] for c in ("blue", "vermillion", "bluish green", "reddish purple", "orange", "sky blue",
                                       "black", "yellow"))

TableSource: TypeAlias = pd.DataFrame | str | os.PathLike[str]


def role_of(graph: str) -> str:
    """What a timing row's ``graph`` label stands for (the labels benchmarks/kernels.py writes)."""
    if graph == "unfused":
        return "unfused baseline"
    if graph in ("torch", "torch eager", "torch.compile", "SDPA"):  # the library baselines (bench.baselines)
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


def finish(fig: go.Figure, title: str, height: int = 420, widget: bool = False) -> go.Figure | go.FigureWidget:
    """``fig`` with the common look (white template, Okabe–Ito colourway, title, hover by point): a plain
    ``go.Figure``, which renders wherever plotly.js does (JupyterLab, VS Code, nbconvert HTML, GitHub), or with
    ``widget=True`` a ``go.FigureWidget`` for Python callbacks (it needs a live Jupyter kernel to show)."""
    fig.update_layout(title={"text": title, "x": 0.01}, template="plotly_white", colorway=list(PALETTE),
                      height=height, hoverlabel={"align": "left"}, legend={"groupclick": "togglegroup"})
    return go.FigureWidget(fig) if widget else fig


def fmt(v: Any, unit: str = "", digits: int = 3) -> str:
    """A number for hover text: 3 significant digits, "–" for missing."""
    if v is None or (isinstance(v, float) and v != v):
        return "–"
    return f"{v:.{digits}g}{unit}" if isinstance(v, int | float) else str(v)
