"""Open a finished search from its run folder, without searching: ``load_run("runs/<program>-<config>")``.

The folder's ``result.json`` (written last, so present only when the search finished or stopped at a
budget) gives the ranking and the report; each ranked μGraph comes from ``candidates/<hash>.json``.
Reading never writes: a folder that is not a finished run gives an ``InputError`` naming what is missing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mirage_lab.errors import InputError
from mirage_lab.runs import RunFolder
from mirage_lab.search.events import SearchReport
from mirage_lab.search.runner import SearchResult, ranked_candidates


def load_run(path: str | os.PathLike[str]) -> SearchResult:
    """The SearchResult a finished search left in ``path`` (its ranking, report, program and config)."""
    p = Path(path)
    if not (p / "program.json").is_file():
        raise InputError(f"{p} is not a run folder (no program.json); run folders are runs/<program>-<config>, "
                         "made by ml.superoptimize(..., run_dir=...)")
    if not (p / "result.json").is_file():
        raise InputError(f"{p} holds no result.json: the search did not finish. Resume it by running the same "
                         "search with the same run_dir")
    folder = RunFolder(p)
    doc: dict[str, Any] = folder.read("result.json") or {}
    try:
        found = ranked_candidates(folder, doc["ranking"])
        missing = [h[:16] for h, c in zip(doc["ranking"], found, strict=True) if c is None]
        if missing:
            raise InputError(f"{p}/candidates lacks {missing}; rerun the search with the same run_dir to restore them")
        ranked = [c for c in found if c is not None]
        report = SearchReport.from_dict(doc["report"])
    except (KeyError, TypeError) as e:
        raise InputError(f"{p}/result.json is malformed ({type(e).__name__}: {e}); delete it and rerun the "
                         "search to rebuild it") from None
    report.cached = True
    return SearchResult(folder.program(), folder.config(), ranked, report, p, doc.get("costs", {}))
