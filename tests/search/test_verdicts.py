"""The run's oracle verdicts tallied as tasks finish (``search/verdicts.py``): the same dict as merging them in
task order, whatever the order they come in, written with its keys sorted."""

from __future__ import annotations

import itertools
import json
import pickle
from typing import Any

from mirage_lab.search.events import merge_verdicts
from mirage_lab.search.verdicts import Packed, VerdictTally

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


def test_packed_verdicts_are_the_same_mapping_and_tally_alike() -> None:
    """A worker returns its verdicts ``Packed`` (lists, one entry per distinct reason): pickled and back they are
    the same mapping, merge the same, and tally to the same text as the dicts, mixed with dicts in any order."""
    packed = [pickle.loads(pickle.dumps(Packed(w))) for w in WALKS]
    for walk, p in zip(WALKS, packed, strict=True):
        assert dict(p.items()) == walk and p == walk and len(p) == len(walk) and list(p) == list(walk)
    assert len(packed[2].said) == 1 and packed[2].says == [0, 0]  # (one reason, said once)
    assert repr(packed[1]) == "Packed(2 expressions, 2 reasons)"
    merged: dict[str, dict[str, Any]] = {}
    for walk in WALKS:
        merge_verdicts(merged, walk)
    for order in itertools.permutations([packed[0], WALKS[1], packed[2]]):
        tally = VerdictTally()
        for walk in order:
            tally.add(walk)
        assert tally.json() == json.dumps(dict(sorted(merged.items())), separators=(",", ":"))
    again: dict[str, dict[str, Any]] = {}
    for p in packed:
        merge_verdicts(again, p)
    assert again == merged
