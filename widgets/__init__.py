"""The notebook layer (``mirage_lab.widgets``): views over what the engine computed.

It imports only the engine and renders data the engine wrote (graphs, run folders, verification
evidence, cost estimates, timing tables); it computes nothing a script could not get from the engine.

    from mirage_lab import widgets as mw
    mw.MuGraphViewer(graph)              # kernel → block → thread graph, click to drill down
    mw.SearchExplorer(result)            # step through a run's events; why each branch died
    mw.VerificationInspector(ml.verify(candidate, program))
    mw.GraphDiff(a, b, labels=("found", "reference"))
    mw.TileAccessView(graph, kernel=0, block=(3, 0, 0), iteration=1)   # what one block reads and writes
    mw.timing_figure(...), mw.ablation_figure(...), mw.roofline_figure(...)   # plotly Figures
    mw.check_ablation_figure("runs/<run>/ablation.json")   # each check on and off (mirage-lab ablate)
    mw.save_figure(fig, "ablation.pdf")    # PDF, SVG or PNG in a print style
    mw.export_html(result, "report.html")   # every view, static, for sharing
"""

from mirage_lab.widgets.diff import GraphDiff
from mirage_lab.widgets.explorer import SearchExplorer
from mirage_lab.widgets.explorer_state import ExplorerState
from mirage_lab.widgets.export import ablation_sweep, export_html, run_figures
from mirage_lab.widgets.graph_view import GraphView
from mirage_lab.widgets.inspector import VerificationInspector
from mirage_lab.widgets.plots import (
    ablation_figure,
    check_ablation_figure,
    check_ablation_frame,
    cost_model_timing_frame,
    print_style,
    pruning_figure,
    pruning_frame,
    roofline_figure,
    roofline_frame,
    save_figure,
    save_figures,
    search_bench_frame,
    speedup_figure,
    sweep_frame,
    timing_figure,
    timing_frame,
)
from mirage_lab.widgets.static_view import static_viewer_html
from mirage_lab.widgets.tile_access import TileAccess
from mirage_lab.widgets.tile_access_view import TileAccessView
from mirage_lab.widgets.viewer import MuGraphViewer

__all__ = [
    "ExplorerState",
    "GraphDiff",
    "GraphView",
    "MuGraphViewer",
    "SearchExplorer",
    "TileAccess",
    "TileAccessView",
    "VerificationInspector",
    "ablation_figure",
    "ablation_sweep",
    "check_ablation_figure",
    "check_ablation_frame",
    "cost_model_timing_frame",
    "export_html",
    "print_style",
    "pruning_figure",
    "pruning_frame",
    "roofline_figure",
    "roofline_frame",
    "run_figures",
    "save_figure",
    "save_figures",
    "search_bench_frame",
    "speedup_figure",
    "static_viewer_html",
    "sweep_frame",
    "timing_figure",
    "timing_frame",
]


def _check_arguments() -> None:
    """A mistyped keyword to any view is an ArgumentError naming it (``mirage_lab.arguments``)."""
    import inspect

    from mirage_lab.arguments import checked, checked_methods

    namespace = globals()
    for name in __all__:
        value = namespace[name]
        namespace[name] = checked_methods(value) if inspect.isclass(value) else checked(value)


_check_arguments()
