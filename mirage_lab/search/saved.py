"""Reading a finished run's ranked candidates back, trusting only what still matches its manifest: a
candidate file that was edited, damaged or never recorded is verified again with the search's own verifier
and dropped (with a warning) when it fails, so it is never served as verified."""

from __future__ import annotations

import warnings
from typing import Any

from mirage_lab.errors import FormatError, MirageError
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.search.config import SearchConfig
from mirage_lab.search.run_folder import MISSING, RunFolder
from mirage_lab.search.state import Candidate
from mirage_lab.search.task import candidate_from_doc, search_verifier
from mirage_lab.verify.verifier import Verifier


def ranked_candidates(folder: RunFolder, ranking: list[str], program: KernelGraph | None = None,
                      config: SearchConfig | None = None) -> list[Candidate | None]:
    """The candidates a finished run ranked (``result.json``'s hashes), read from ``candidates/``.

    A file whose bytes do not match the manifest (edited, damaged, or never recorded) is verified again with
    the search's own verifier (``program`` and ``config``, default the folder's); ``None`` where it fails (with
    a warning naming it) or where the file is missing (deleted by hand: the caller decides what to do).
    """
    out: list[Candidate | None] = []
    verifier: Verifier | None = None
    dropped = []
    for h in ranking:
        name = RunFolder.candidate_name(h)
        why = folder.check(name)
        if why == MISSING:
            out.append(None)
            continue
        try:
            doc = folder.read(name)
        except FormatError:
            doc = None
        if why is None and isinstance(doc, dict):
            out.append(candidate_from_doc(doc))
            continue
        if verifier is None:
            verifier = search_verifier(program or folder.program(), config or folder.config())
        cand, failure = reverified(doc, h, verifier)
        if cand is None:
            dropped.append(f"{name} ({why}): {failure}")
        out.append(cand)
    if dropped:
        warnings.warn(f"{folder.path}: dropped {len(dropped)} ranked candidate(s) that no longer verify: "
                      f"{'; '.join(dropped)}. Rerun the search with the same run_dir to rebuild them",
                      RuntimeWarning, stacklevel=2)
    return out


def reverified(doc: Any, graph_hash: str, verifier: Verifier) -> tuple[Candidate | None, str]:
    """A saved candidate checked afresh: (it, "") when it is the verified μGraph ``graph_hash`` names, else
    (None, why not)."""
    try:
        cand = candidate_from_doc(doc)
        res = verifier.check(cand.graph)
    except (MirageError, KeyError, TypeError, ValueError) as e:
        return None, f"it no longer loads ({type(e).__name__}: {e})"
    if not res.equivalent:
        return None, f"it fails verification: {res.reason}"
    if list(res.permutation or ()) != list(range(len(cand.graph.outputs))):
        return None, "its outputs now compute the program's in another order"
    if cand.graph.canonical_hash() != graph_hash or cand.hash != graph_hash:
        return None, "it holds another μGraph than the one the search ranked"
    cand.verification = {**res.evidence(), "checked_again": True}
    return cand, ""
