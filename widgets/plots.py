"""Plots for notebooks (``mirage_lab.widgets.plots``): plotly FigureWidgets over tidy pandas DataFrames.

Each figure has a companion ``*_frame`` that builds its table from the engine's data without plotly:

* kernel timings — ``timing_frame`` (measured CSV from benchmarks/kernels.py), ``cost_model_timing_frame``
  (the same table from the proxy cost model, for machines without timings), ``timing_figure``,
  ``speedup_figure``;
* ablations — ``search_bench_frame`` / ``pruning_frame`` (benchmarks/search.py JSON), ``sweep_frame``
  (label → SearchResult / SearchReport), ``ablation_figure``, ``pruning_figure``;
* roofline — ``roofline_frame``, ``roofline_figure``.
"""

from .plots_ablation import (
    SWEEP_COLUMNS,
    ablation_figure,
    pruning_figure,
    pruning_frame,
    search_bench_frame,
    sweep_frame,
)
from .plots_roofline import ROOFLINE_COLUMNS, roofline_figure, roofline_frame
from .plots_style import ROLE_COLORS
from .plots_timing import TIMING_COLUMNS, cost_model_timing_frame, speedup_figure, timing_figure, timing_frame

__all__ = [
    "ROLE_COLORS",
    "ROOFLINE_COLUMNS",
    "SWEEP_COLUMNS",
    "TIMING_COLUMNS",
    "ablation_figure",
    "cost_model_timing_frame",
    "pruning_figure",
    "pruning_frame",
    "roofline_figure",
    "roofline_frame",
    "search_bench_frame",
    "speedup_figure",
    "sweep_frame",
    "timing_figure",
    "timing_frame",
]
