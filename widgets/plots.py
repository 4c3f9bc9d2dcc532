"""Plots for notebooks (``mirage_lab.widgets.plots``): plain plotly Figures over tidy pandas DataFrames
(``widget=True`` for a FigureWidget with Python callbacks); ``save_figure`` writes one as PDF, SVG or PNG for print.

Each figure has a companion ``*_frame`` that builds its table from the engine's data without plotly:

* kernel timings — ``timing_frame`` (measured CSV from benchmarks/kernels.py), ``cost_model_timing_frame``
  (the same table from the proxy cost model, for machines without timings), ``timing_figure``,
  ``speedup_figure``;
* ablations — ``search_bench_frame`` / ``pruning_frame`` (benchmarks/search.py JSON), ``sweep_frame``
  (label → SearchResult / SearchReport), ``ablation_figure``, ``pruning_figure``; by check —
  ``check_ablation_frame`` / ``check_ablation_figure`` (each named check on and off, ``mirage-lab ablate``);
* roofline — ``roofline_frame``, ``roofline_figure``;
* print — ``save_figure`` / ``save_figures`` (PDF, SVG, PNG via kaleido), ``print_style``.

In a Jupyter kernel, importing this module makes figures carry an HTML rendering beside the live one, so exported
notebooks draw them (``plots_renderer``).
"""

from .plots_ablation import (
    SWEEP_COLUMNS,
    ablation_figure,
    pruning_figure,
    pruning_frame,
    search_bench_frame,
    sweep_frame,
)
from .plots_checks import CHECK_ABLATION_COLUMNS, check_ablation_figure, check_ablation_frame
from .plots_export import FORMATS, browser_path, print_style, save_figure, save_figures
from .plots_renderer import use_exportable_renderer
from .plots_roofline import ROOFLINE_COLUMNS, roofline_figure, roofline_frame
from .plots_style import OKABE_ITO, PALETTE, ROLE_COLORS
from .plots_timing import TIMING_COLUMNS, cost_model_timing_frame, speedup_figure, timing_figure, timing_frame

use_exportable_renderer()

__all__ = [
    "CHECK_ABLATION_COLUMNS",
    "FORMATS",
    "OKABE_ITO",
    "PALETTE",
    "ROLE_COLORS",
    "ROOFLINE_COLUMNS",
    "SWEEP_COLUMNS",
    "TIMING_COLUMNS",
    "ablation_figure",
    "browser_path",
    "check_ablation_figure",
    "check_ablation_frame",
    "cost_model_timing_frame",
    "print_style",
    "pruning_figure",
    "pruning_frame",
    "roofline_figure",
    "roofline_frame",
    "save_figure",
    "save_figures",
    "search_bench_frame",
    "speedup_figure",
    "sweep_frame",
    "timing_figure",
    "timing_frame",
]
