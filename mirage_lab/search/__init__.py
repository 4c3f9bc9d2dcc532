"""The μGraph search (SPEC §7).

    res = ml.superoptimize(program, "mlp")
    res.best.graph, res.report, res.to_frame()
"""

from mirage_lab.search.ablation import ABLATION_FILE, ALL_ON, ablate, read_ablation, write_ablation
from mirage_lab.search.checks import CHECKS, checks_frame
from mirage_lab.search.config import PRESETS, SearchConfig, preset
from mirage_lab.search.decision import BlockOp, Close, Decision, KernelOp, OpenBlock
from mirage_lab.search.enumerate import Enumerator
from mirage_lab.search.event_blocks import EventBlock
from mirage_lab.search.event_schema import LABELS, SCHEMA_VERSION, is_schema, schema_version
from mirage_lab.search.events import OUTCOMES, PRUNE_REASONS, SearchReport
from mirage_lab.search.load import load_run
from mirage_lab.search.replay import PartialGraph, partial_graph
from mirage_lab.search.result import SearchResult
from mirage_lab.search.run_folder import EVENTS, RunFolder, events_file
from mirage_lab.search.run_log import RunLog
from mirage_lab.search.runner import TIME_LIMIT_ENV, superoptimize
from mirage_lab.search.saved import ranked_candidates
from mirage_lab.search.space import SearchSpaceWarning, space_gaps
from mirage_lab.search.tree import run_folder_of, search_tree

__all__ = ["ABLATION_FILE", "ALL_ON", "CHECKS", "EVENTS", "LABELS", "OUTCOMES", "PRESETS", "PRUNE_REASONS",
           "SCHEMA_VERSION", "TIME_LIMIT_ENV", "BlockOp", "Close", "Decision", "Enumerator", "EventBlock",
           "KernelOp", "OpenBlock", "PartialGraph", "RunFolder", "RunLog", "SearchConfig", "SearchReport",
           "SearchResult", "SearchSpaceWarning", "ablate", "checks_frame", "events_file", "is_schema", "load_run",
           "partial_graph", "preset", "ranked_candidates", "read_ablation", "run_folder_of", "schema_version",
           "search_tree", "space_gaps", "superoptimize", "write_ablation"]
