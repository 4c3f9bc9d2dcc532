"""The search's results and event streams are those recorded before the search became named parts (issue 20,
item 3): for a few small searches, the verified μGraphs and the sha256 of the event stream (its schema line
left out) equal ``golden/search_fingerprints.json``, written by the code before that change.

Rewrite the file (``python -m tests.search.test_identical_results``) only for a change meant to alter what the
search does, and say so in the commit.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from mirage_lab.search.config import preset
from mirage_lab.search.event_schema import event_line
from mirage_lab.search.events import read_events
from mirage_lab.search.run_folder import events_file
from mirage_lab.search.runner import superoptimize
from tests.search.test_search import SMALL, small_rmsnorm

GOLDEN = Path(__file__).parent / "golden" / "search_fingerprints.json"
#: name → (preset, overrides of the small search ``test_search.SMALL``): the default checks, with commutative ops
#: and a kernel cap that makes the customized op the last (twin and goal prunes), the cost bound, semantic
#: deduplication, and the reference's checks only
SEARCHES: dict[str, tuple[str, dict[str, Any]]] = {
    "mlp": ("mlp", {}),
    "mlp_commutative_capped": ("mlp", {"block_ops": ("matmul", "exp", "mul", "div", "accum_no_red", "accum_rms"),
                                       "kernel_ops": ("matmul", "mul", "customized"), "max_kernel_ops": 3}),
    "mlp_cost_bound": ("mlp", {"cost_bound": True}),
    "mlp_semantic_order": ("mlp", {"order": "semantic"}),
    "reference": ("reference", {}),
}


def fingerprint(name: str, **more: Any) -> dict[str, Any]:
    base, overrides = SEARCHES[name]
    with tempfile.TemporaryDirectory() as runs:
        res = superoptimize(small_rmsnorm(), preset(base, **{**SMALL, **overrides, **more}), executor="serial",
                            run_dir=runs, progress=False)
        assert res.run_dir is not None
        # (the events as the JSON lines run folders held before event blocks, so the recorded hashes still apply)
        lines = [event_line(e) + "\n" for e in read_events(res.run_dir / events_file(res.run_dir))]
    return {"verified": [c.hash for c in res.candidates], "states": res.report.states,
            "pruned": dict(sorted(res.report.pruned.items())), "events": len(lines),
            "events_sha256": hashlib.sha256("".join(lines).encode()).hexdigest()}


@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_the_search_does_what_it_did(name: str) -> None:
    """Issue 37's ``intermediate_parts`` lets the index checks see how a kernel op's output is tiled, so some tuples
    the oracle rejected are rejected by the index check first: the same states and μGraphs, other prune reasons.
    Without it, every event is the recorded one."""
    expected = json.loads(GOLDEN.read_text())[name]
    assert fingerprint(name, disabled_checks=("intermediate_parts",)) == expected
    got = fingerprint(name)
    assert (got["verified"], got["states"]) == (expected["verified"], expected["states"])
    assert sum(got["pruned"].values()) == sum(expected["pruned"].values())
    assert got["pruned"].get("index", 0) >= expected["pruned"].get("index", 0)


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps({name: fingerprint(name) for name in sorted(SEARCHES)}, indent=1) + "\n")
    print(GOLDEN.read_text(), file=sys.stderr)
