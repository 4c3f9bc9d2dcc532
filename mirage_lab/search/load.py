"""Open a finished search from its run folder, without searching: ``load_run("runs/<program>-<config>")``.

The folder's ``result.json`` (written last, so present only when the search finished or stopped at a
budget) gives the ranking and the report; each ranked μGraph comes from ``candidates/<hash>.json``.
Reading never writes and takes no lock. What it serves is checked against the folder's manifest
(``mirage_lab.search.run_folder``): an edited program.json, config.json or result.json is refused with a
``RunFolderError``; a ranked candidate whose file does not match its recorded hash (or has none, as in
folders written before manifests) is verified again with the search's own verifier, and dropped, with a
warning, when it fails. A folder that is not a finished run gives an ``InputError`` naming what is missing.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

from mirage_lab.arguments import checked
from mirage_lab.errors import InputError, PathError, RunFolderError
from mirage_lab.search.events import SearchReport
from mirage_lab.search.lock import RunLock, describe
from mirage_lab.search.result import SearchResult
from mirage_lab.search.run_folder import CHANGED, RunFolder, events_file, verdicts_file
from mirage_lab.search.saved import ranked_candidates


@checked
def load_run(path: str | os.PathLike[str]) -> SearchResult:
    """The SearchResult a finished search left in ``path`` (its ranking, report, program and config)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise PathError(f"{p} is a file, not a run folder; run folders are runs/<program>-<config>, made by "
                        "ml.superoptimize(..., run_dir=...)")
    if not (p / "program.json").is_file():
        raise InputError(f"{p} is not a run folder (no program.json); run folders are runs/<program>-<config>, "
                         "made by ml.superoptimize(..., run_dir=...)")
    holder = RunLock.holder(p)
    if not (p / "result.json").is_file():
        if holder is not None:
            raise RunFolderError(f"{p} holds no result yet: {describe(holder)} is searching in it; load it when "
                                 "that search has finished")
        raise InputError(f"{p} holds no result.json: the search did not finish. Resume it by running the same "
                         "search with the same run_dir")
    folder = RunFolder(p)
    program, config = folder.program(), folder.config()  # a RunFolderError when edited
    if folder.check("result.json") == CHANGED:
        if holder is not None:
            raise RunFolderError(f"{p} is being rewritten by {describe(holder)}; load it when that search has "
                                 "finished")
        raise RunFolderError(f"{p}/result.json {CHANGED} (its sha256 differs from manifest.json); rerun the "
                             "search with the same run_dir to rebuild it, or delete the folder")
    doc: dict[str, Any] = folder.read("result.json") or {}
    try:
        ranking = doc["ranking"]
        missing = [h[:16] for h in ranking if not (p / RunFolder.candidate_name(h)).is_file()]
        if missing:
            raise InputError(f"{p}/candidates lacks {missing}; rerun the search with the same run_dir to restore them")
        found = ranked_candidates(folder, ranking, program, config)
        ranked = [c for c in found if c is not None]
        report = SearchReport.from_dict(doc["report"])
    except (KeyError, TypeError) as e:
        raise InputError(f"{p}/result.json is malformed ({type(e).__name__}: {e}); delete it and rerun the "
                         "search to rebuild it") from None
    shown = [name for name in (events_file(p), verdicts_file(p)) if folder.check(name) == CHANGED]
    if shown:
        warnings.warn(f"{p}: {' and '.join(shown)} {CHANGED}; the events may not show what the search did. Rerun "
                      "the search with the same run_dir to rebuild them", RuntimeWarning, stacklevel=2)
    report.cached = True
    report.verified = len(ranked)
    return SearchResult(program, config, ranked, report, p, doc.get("costs", {}))
