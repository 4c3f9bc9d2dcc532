"""A search run's tree as a ``networkx.DiGraph``, for a user's own analysis (``ml.search.search_tree``).

Every state the search entered (an ``expand`` event) is a node keyed by its event id; its children that died
(``prune`` events) are leaves under it; a complete graph tested at a state (a ``candidate`` event) gives that
state its outcome. Each node says its ``verdict`` (the explorer's labels: ``expand``, ``pruned:<why>``,
``candidate:<outcome>``) and ``reason``. One pass over the log, about a second per few hundred thousand events;
networkx is imported when called (the ``lab`` extra), never by the search itself.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mirage_lab.errors import InputError
from mirage_lab.ir.nxgraph import import_networkx
from mirage_lab.search.events import read_events
from mirage_lab.search.result import SearchResult
from mirage_lab.search.run_folder import EVENTS, RunFolder, events_file

if TYPE_CHECKING:
    import os

    import networkx as nx

__all__ = ["search_tree"]

#: a tested state keeps the most telling of its candidates' outcomes
_RANK = {"precheck": 0, "duplicate": 1, "rejected": 2, "verified": 3}
#: what a prune event may say beyond its reason, copied onto its leaf
UNKNOWN = -(1 << 40)  # the depth of a node whose parent has not been read yet (fixed after the pass)
_DETAILS = ("op", "level", "expr", "rules", "spent_us", "bound_us", "best_us", "cost_us")


def run_folder_of(run: Any, purpose: str = "get its tree") -> Path:
    """The run folder of ``run`` (a SearchResult, or a folder's path) that holds the search's events; an
    InputError naming the fix otherwise (``purpose`` says what the caller wants the events for)."""
    path = getattr(run, "run_dir", run)
    if path is None:
        raise InputError(f"this search kept no run folder; rerun it with run_dir='runs' to {purpose}")
    p = Path(path)
    if not (p / events_file(p)).is_file():
        raise InputError(f"{p} holds no {EVENTS}; point at a run folder (runs/<program>-<config>) of a search "
                         "that finished or stopped at a budget")
    return p


def search_tree(run: SearchResult | str | os.PathLike[str]) -> nx.DiGraph:
    """The search tree of a run (a SearchResult with a run folder, or the folder's path) as a DiGraph.

    State nodes (``kind="state"``, key: the ``expand`` event's id) carry ``depth`` (decisions from the root),
    ``decision`` (the decision that led there, in its JSON form; None at the root), ``level``, ``verdict``
    (``expand``, or ``candidate:<outcome>`` when a complete graph was tested there), ``reason`` (the
    candidate's, if any) and ``event`` (its line in the log). Pruned leaves (``kind="pruned"``, key
    ``<parent>/<why>#<i>``) carry ``verdict="pruned:<why>"``, ``reason`` (the oracle's words for an
    expression, else the pruning rule), ``rule`` (``why``), ``n`` (how many rejected children the event stands
    for: the search counts most prunes per state), ``depth`` and what the event says (``expr``, ``op``, costs).
    Edges go parent → child. The graph's attributes: ``run_dir``, ``root`` and ``events``.
    """
    digraph = import_networkx()
    folder = run_folder_of(run)
    verdicts = RunFolder(folder).verdicts()
    depth: dict[str, int] = {}
    states: dict[str, dict[str, Any]] = {}
    leaves: list[tuple[str, dict[str, Any]]] = []
    edges: list[tuple[Any, str]] = []
    per_parent: Counter[tuple[str, str]] = Counter()
    root = None
    i = -1
    for i, ev in enumerate(read_events(folder / events_file(folder))):
        kind = ev.get("e")
        if kind == "expand":
            node, parent = ev["id"], ev.get("parent")
            d = 0 if parent is None else depth.get(parent, UNKNOWN) + 1
            depth[node] = d
            if parent is None and root is None:
                root = node
            else:
                edges.append((parent, node))
            states[node] = {"kind": "state", "depth": d, "decision": ev.get("d"), "level": ev.get("level"),
                            "verdict": "expand", "reason": "", "event": i}
        elif kind == "prune":
            parent, why = ev["parent"], ev["why"]
            k = per_parent[parent, why]
            per_parent[parent, why] += 1
            leaf = f"{parent}/{why}#{k}"
            info = {key: ev[key] for key in _DETAILS if key in ev}
            reason = ev.get("reason")
            if reason is None and "expr" in ev:
                reason = (verdicts.get(ev["expr"]) or {}).get("reason")
            leaves.append((leaf, {"kind": "pruned", "depth": depth.get(parent, UNKNOWN) + 1, "decision": ev.get("d"),
                                  "verdict": f"pruned:{why}", "rule": why, "reason": reason or why,
                                  "n": int(ev.get("n", 1)), "event": i, **info}))
            edges.append((parent, leaf))
        elif kind == "candidate":
            st = states.get(ev["node"])
            if st is None:
                continue  # (a log cut short: the state's expand event is missing)
            outcome = ev["outcome"]
            have = st["verdict"].partition(":")[2]
            if st["verdict"] == "expand" or _RANK.get(outcome, -1) >= _RANK.get(have, -1):
                st["verdict"], st["reason"] = f"candidate:{outcome}", ev.get("reason", "")
                if "hash" in ev:
                    st["hash"] = ev["hash"]
    if any(a["depth"] < 0 for a in states.values()) or any(a["depth"] < 0 for _, a in leaves):
        _fix_depths(states, leaves, edges, root)
    tree = digraph(name=f"search tree of {folder.name}", run_dir=str(folder), root=root, events=i + 1)
    tree.add_nodes_from(states.items())
    tree.add_nodes_from(leaves)
    tree.add_edges_from(edges)
    return tree


def _fix_depths(states: dict[str, dict[str, Any]], leaves: list[tuple[str, dict[str, Any]]],
                edges: list[tuple[Any, str]], root: str | None) -> None:
    """Depths by a walk from the root, for logs whose children come before their parents."""
    children: dict[str, list[str]] = {}
    for a, b in edges:
        children.setdefault(a, []).append(b)
    leaf = dict(leaves)
    stack = [(root, 0)] if root is not None else []
    while stack:
        node, d = stack.pop()
        (states.get(node) or leaf[node])["depth"] = d
        stack += [(c, d + 1) for c in children.get(node, ())]
