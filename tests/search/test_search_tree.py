"""ml.search.search_tree: a run's tree as a networkx graph, each node with its verdict and reason."""

from __future__ import annotations

import gzip
import json
import time
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest

import mirage_lab as ml
from mirage_lab.search import events_file, search_tree
from mirage_lab.search.events import read_events
from tests.search.test_search import search


@pytest.fixture(scope="module")
def run() -> ml.search.SearchResult:
    res = search(run_dir=Path(__import__("tempfile").mkdtemp()))
    assert res.run_dir is not None
    return res


def test_the_tree_holds_every_state_and_every_prune(run: ml.search.SearchResult) -> None:
    assert run.run_dir is not None
    tree = search_tree(run)
    evs = list(run.events())
    kinds = Counter(e["e"] for e in evs)
    assert tree.number_of_nodes() == kinds["expand"] + kinds["prune"]
    assert nx.is_arborescence(tree) and tree.graph["root"] == "f0" and tree.graph["events"] == len(evs)
    assert repr(tree).startswith(f"LabDiGraph(search tree of {run.run_dir.name}:")
    verdicts = Counter(a["verdict"] for _, a in tree.nodes(data=True))
    assert verdicts["candidate:verified"] == run.report.verified == len(run.candidates)
    # the counted prunes add up to the report's counts per reason
    pruned: Counter[str] = Counter()
    for _, a in tree.nodes(data=True):
        if a["kind"] == "pruned":
            pruned[a["rule"]] += a["n"]
    assert pruned == run.report.pruned
    # depth is the number of decisions from the root
    for node, a in tree.nodes(data=True):
        assert a["depth"] == nx.shortest_path_length(tree, "f0", node)
    verified = [n for n, a in tree.nodes(data=True) if a["verdict"] == "candidate:verified"]
    assert {tree.nodes[n]["hash"] for n in verified} == {c.hash for c in run.candidates}
    oracle = [a for _, a in tree.nodes(data=True) if a["verdict"] == "pruned:oracle" and "expr" in a]
    assert oracle and all(a["reason"] and a["reason"] != "oracle" for a in oracle)  # verdicts.json's words


def test_a_folder_path_gives_the_same_tree(run: ml.search.SearchResult) -> None:
    assert run.run_dir is not None
    assert nx.utils.graphs_equal(search_tree(run), search_tree(str(run.run_dir)))


def test_children_before_parents_still_get_their_depths(tmp_path: Path) -> None:
    lines = [{"e": "schema", "version": 2},
             {"e": "prune", "parent": "a", "why": "shape", "n": 3},
             {"e": "expand", "id": "a", "parent": "r", "d": ["k", "exp", [0], {}], "level": "kernel"},
             {"e": "expand", "id": "r", "parent": None, "d": None, "level": "kernel"},
             {"e": "candidate", "node": "a", "outcome": "precheck"},
             {"e": "candidate", "node": "a", "outcome": "rejected", "reason": "differs at x"}]
    with gzip.open(tmp_path / "events.jsonl.gz", "wt") as f:
        f.write("".join(json.dumps(x) + "\n" for x in lines))
    tree = search_tree(tmp_path)
    assert events_file(tmp_path) == "events.jsonl.gz"
    assert [tree.nodes[n]["depth"] for n in ("r", "a", "a/shape#0")] == [0, 1, 2]
    assert tree.nodes["a"]["verdict"] == "candidate:rejected" and tree.nodes["a"]["reason"] == "differs at x"
    assert tree.nodes["a/shape#0"] | {} == {"kind": "pruned", "depth": 2, "decision": None, "verdict": "pruned:shape",
                                            "rule": "shape", "reason": "shape", "n": 3, "event": 0}


def test_no_run_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ml.MirageError, match="no events"):
        search_tree(tmp_path)
    with pytest.raises(ml.MirageError, match="kept no run folder"):
        search_tree(search())


def test_a_hundred_thousand_events_take_seconds(tmp_path: Path) -> None:
    """A synthetic log of 100k events (a deep and wide tree, counted prunes, candidates) in a few seconds."""
    out, parents = [{"e": "schema", "version": 2}, {"e": "expand", "id": "f0", "parent": None, "d": None,
                                                     "level": "kernel"}], ["f0"]
    for i in range(1, 50_000):
        parent = parents[(i * 7919) % len(parents)]
        out.append({"e": "expand", "id": f"s{i}", "parent": parent, "d": ["k", "exp", [0], {}], "level": "kernel"})
        out.append({"e": "prune", "parent": f"s{i}", "why": "oracle" if i % 3 else "shape", "n": i % 5 + 1})
        parents.append(f"s{i}")
    with gzip.open(tmp_path / "events.jsonl.gz", "wt") as f:
        f.write("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in out))
    start = time.perf_counter()
    tree = search_tree(tmp_path)
    took = time.perf_counter() - start
    assert tree.number_of_nodes() == len(list(read_events(tmp_path / "events.jsonl.gz"))) == 99_999
    assert took < 10, f"{took:.1f} s for 100k events"
