"""Figures for papers: ``save_figure(fig, "ablation.pdf")`` writes PDF, SVG or PNG in a house style fit for print.

The house style (``print_style``): Liberation Sans / Arial at sizes that read at print size (1 px is 1/96 in in
a PDF or SVG, so the default 700 px width is a 7.3 in text width and 12 px type is 9 pt), black axis lines with
ticks outside, light grid lines, a white background and the Okabe–Ito colours of ``plots_style``, which stay
distinct for colour-blind readers and in greyscale. The figure itself is left as it is; a styled copy is written.

Static export goes through kaleido (the ``lab`` extra), which drives a headless Chrome or Chromium found on the
machine: Debian's ``/usr/bin/chromium`` (``scripts/install_system_deps.sh`` installs it), any ``chromium`` or
``google-chrome`` on ``PATH``, or the binary named by ``BROWSER_PATH``. Every call starts one browser (a few
seconds); ``save_figures`` writes many files with one start. MathJax is not loaded (the figures use no LaTeX),
so export needs no network.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeAlias

import plotly.graph_objects as go

from mirage_lab.errors import DependencyError, InputError
from mirage_lab.paths import output_file, replaceable

from .plots_style import PALETTE

__all__ = ["FORMATS", "browser_path", "print_style", "save_figure", "save_figures"]

#: the formats save_figure writes, by file suffix
FORMATS = ("pdf", "svg", "png")
PRINT_FONT = "Liberation Sans, Arial, Helvetica, sans-serif"
#: default width in px (CSS pixels: 1/96 in in a PDF or SVG): a full text width of a two-column paper
PRINT_WIDTH = 700
#: default height when the figure sets none
PRINT_HEIGHT = 450
#: PNG pixels per CSS pixel: 3 gives about 290 dpi at print size
PNG_SCALE = 3
NO_BROWSER = ("save_figure needs Chrome or Chromium for kaleido and found none: run `sudo bash "
              "scripts/install_system_deps.sh` (Debian's chromium), or `kaleido_get_chrome`, or set BROWSER_PATH "
              "to a Chrome/Chromium binary")
NO_KALEIDO = "save_figure needs kaleido>=1 (static export for plotly): pip install 'mirage-lab[lab]' or 'kaleido>=1'"

Figures: TypeAlias = Mapping[str | os.PathLike[str], Any] | Iterable[tuple[Any, str | os.PathLike[str]]]


def browser_path() -> str | None:
    """The Chrome/Chromium binary kaleido will start (its own search: ``BROWSER_PATH``, kaleido's downloaded
    copy, then the usual names on ``PATH`` and the usual install paths), or None when there is none."""
    try:
        from choreographer.browsers.chromium import Chromium
    except ImportError:
        return None
    try:
        found = Chromium.find_browser(skip_local=False)
    except Exception:  # a best-effort search; kaleido raises its own error when it really finds none
        return None
    return found if found and Path(found).is_file() else None


def print_style(fig: Any, width: int | None = None, height: int | None = None,
                title: bool | str = True) -> go.Figure:
    """A copy of ``fig`` (a Figure or FigureWidget) in the house print style, ``width`` × ``height`` px (default
    700 px wide, the figure's own height). ``title``: True keeps the figure's title, False drops it (a paper's
    caption says it), a string replaces it."""
    if not isinstance(fig, go.Figure | go.FigureWidget):
        raise InputError(f"expected a plotly Figure or FigureWidget (e.g. mw.ablation_figure(...)), got "
                         f"{type(fig).__name__}")
    out = go.Figure(fig.to_dict())
    text = out.layout.title.text if title is True else (title or None)
    w = width or PRINT_WIDTH
    h = height or out.layout.height or PRINT_HEIGHT
    font = {"family": PRINT_FONT, "color": "black"}
    out.update_layout(
        template="simple_white", colorway=list(PALETTE), paper_bgcolor="white", plot_bgcolor="white",
        font={**font, "size": 12}, title={"text": text, "x": 0.01, "xanchor": "left", "font": {**font, "size": 14}},
        legend={"font": {**font, "size": 11}, "bgcolor": "rgba(255,255,255,0)"},
        margin={"l": 64, "r": 16, "t": 72 if text else 28, "b": 56}, width=w, height=h, hovermode=False,
    )
    axes = {"showline": True, "linecolor": "black", "linewidth": 1, "ticks": "outside", "tickcolor": "black",
            "tickfont": {**font, "size": 10}, "title_font": {**font, "size": 12}, "showgrid": True,
            "gridcolor": "#E5E5E5", "gridwidth": 0.5, "zeroline": False, "mirror": False}
    out.update_xaxes(**axes)
    out.update_yaxes(**axes)
    for a in out.layout.annotations:  # subplot titles (plotly draws them at 16 px) and notes
        a.font.family = PRINT_FONT
        a.font.size = min(a.font.size or 12, 12)
        if a.font.color is None:
            a.font.color = "black"
    return out


def save_figure(fig: Any, path: str | os.PathLike[str], width: int | None = None, height: int | None = None,
                scale: float | None = None, title: bool | str = True) -> Path:
    """Write ``fig`` to ``path`` as PDF, SVG or PNG (by its suffix) in the house print style (``print_style``);
    returns the path. ``scale`` multiplies the pixels of a PNG (default 3, about 290 dpi at print size).
    Starts a headless browser (kaleido), a few seconds; for many figures use ``save_figures``."""
    return save_figures({path: fig}, width=width, height=height, scale=scale, title=title)[0]


def save_figures(figures: Figures, width: int | None = None, height: int | None = None,
                 scale: float | None = None, title: bool | str = True) -> list[Path]:
    """Write several figures with one browser start: a mapping path → figure (or pairs (figure, path)); the
    same figure may go to several paths (``{"a.pdf": fig, "a.svg": fig}``). Each file is written whole or not
    at all. Returns the paths in order."""
    pairs = [(f, p) for p, f in figures.items()] if isinstance(figures, Mapping) else list(figures)
    if not pairs:
        raise InputError("save_figures needs at least one figure: {'ablation.pdf': fig, …}")
    jobs = []
    for fig, path in pairs:
        target = Path(path)
        fmt = target.suffix.lower().lstrip(".")
        if fmt not in FORMATS:
            raise InputError(f"save_figure writes .pdf, .svg or .png; {str(target)!r} has "
                             f"{('suffix ' + repr(target.suffix)) if target.suffix else 'no suffix'}")
        styled = print_style(fig, width, height, title)
        target = output_file(target, "figure file")
        tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
        opts = {"format": fmt, "width": styled.layout.width, "height": styled.layout.height,
                "scale": (scale or PNG_SCALE) if fmt == "png" else 1}
        jobs.append(({"fig": styled.to_dict(), "path": tmp, "opts": opts}, tmp, target))
    try:
        _render([spec for spec, _, _ in jobs])
        for _, tmp, target in jobs:
            os.replace(tmp, replaceable(target, "figure file"))  # (again: the render took seconds)
    finally:
        for _, tmp, _ in jobs:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
    return [target for _, _, target in jobs]


def _render(specs: list[dict[str, Any]]) -> None:
    """Render every spec with kaleido in one browser; a missing kaleido or browser is one line naming the fix."""
    try:
        import kaleido
        from kaleido.errors import ChromeNotFoundError
    except ImportError:
        raise DependencyError(NO_KALEIDO) from None
    try:
        from choreographer.errors import BrowserClosedError, BrowserFailedError
        browser_errors: tuple[type[BaseException], ...] = (BrowserClosedError, BrowserFailedError)
    except ImportError:  # pragma: no cover - choreographer is kaleido's own dependency
        browser_errors = ()
    try:
        kaleido.write_fig_from_object_sync(specs, kopts={"mathjax": False}, cancel_on_error=True)
    except ChromeNotFoundError:
        raise DependencyError(NO_BROWSER) from None
    except browser_errors as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise DependencyError(f"save_figure: the browser kaleido started ({browser_path() or 'none found'}) "
                              f"failed: {first}; check it runs headless (chromium --headless --version), or set "
                              "BROWSER_PATH to another Chrome/Chromium") from None
