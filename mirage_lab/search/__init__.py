"""The μGraph search (SPEC §7).

    res = ml.superoptimize(program, "mlp")          # or program.superoptimize(...)
    res.best.graph, res.report, res.to_frame()
"""

from mirage_lab.search.config import PRESETS, SearchConfig, preset
from mirage_lab.search.events import SearchReport
from mirage_lab.search.load import load_run
from mirage_lab.search.runner import SearchResult, superoptimize

__all__ = ["PRESETS", "SearchConfig", "SearchReport", "SearchResult", "load_run", "preset", "superoptimize"]
