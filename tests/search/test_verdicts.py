"""The run's oracle verdicts tallied as tasks finish (``search/verdicts.py``): the same dict as merging them in
task order, whatever the order they come in, written with its keys sorted."""

from __future__ import annotations

import itertools
import json
from typing import Any

from mirage_lab.search.events import merge_verdicts
from mirage_lab.search.verdicts import VerdictTally

SUM = "every summand occurs in a target, but never all of them together"
WALKS: list[dict[str, dict[str, Any]]] = [
    {"add(v0, v0)": {"reason": SUM, "rules": ["sub_add"], "n": 3}, "exp(v1)": {"reason": None, "rules": [], "n": 1}},
    {"exp(v1)": {"reason": None, "rules": [], "n": 4}, "sum(16, \"q\\u00e9\")": {"reason": "é \"quoted\"",
                                                                                "rules": ["a", "b"], "n": 2}},
    {"add(v0, v0)": {"reason": SUM, "rules": ["sub_add"], "n": 5}, "mul(v0, v1)": {"reason": SUM, "rules": ["sub_add"],
                                                                                   "n": 1}},
]


def test_a_tally_is_the_merged_dict_in_any_order() -> None:
    merged: dict[str, dict[str, Any]] = {}
    for walk in WALKS:
        merge_verdicts(merged, walk)
    assert merged["add(v0, v0)"]["n"] == 8
    for order in itertools.permutations(WALKS):
        tally = VerdictTally()
        for walk in order:
            tally.add(walk)
        assert tally.to_dict() == merged
        assert tally.json() == json.dumps(dict(sorted(merged.items())), separators=(",", ":"))
    assert len(tally) == 4 and repr(tally) == "VerdictTally(4 expressions, 16 prunes)"


def test_an_empty_tally_is_an_empty_object() -> None:
    assert VerdictTally().json() == "{}" and VerdictTally().to_dict() == {}
