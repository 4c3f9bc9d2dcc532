"""The μGraph search (SPEC §7).

    res = ml.superoptimize(program, "mlp")
    res.best.graph, res.report, res.to_frame()
"""

from mirage_lab.search.config import PRESETS, SearchConfig, preset
from mirage_lab.search.enumerate import Enumerator
from mirage_lab.search.events import OUTCOMES, PRUNE_REASONS, SearchReport
from mirage_lab.search.load import load_run
from mirage_lab.search.replay import PartialGraph, partial_graph
from mirage_lab.search.run_folder import EVENTS, RunFolder, events_file
from mirage_lab.search.runner import SearchResult, superoptimize
from mirage_lab.search.saved import ranked_candidates

__all__ = ["EVENTS", "OUTCOMES", "PRESETS", "PRUNE_REASONS", "Enumerator", "PartialGraph", "RunFolder", "SearchConfig",
           "SearchReport", "SearchResult", "events_file", "load_run", "partial_graph", "preset", "ranked_candidates",
           "superoptimize"]
