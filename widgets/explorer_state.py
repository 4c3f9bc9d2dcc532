"""The search-tree explorer's state, with no front end: a cursor over a run's events.

Step forward and back through the events a filter lets through, jump to the next candidate, verified
or pruned node, and, for the event under the cursor, rebuild its partial μGraph from the decisions on
its path, its abstract expression and the oracle's explanation. The tree is expanded lazily: only the
children of nodes a person opened are listed, so a run of millions of events stays responsive.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mirage_lab.absexpr import BY_NAME, Oracle, block_expressions, graph_expressions
from mirage_lab.errors import InputError, MirageError
from mirage_lab.ir import dim_text
from mirage_lab.search import (
    BlockOp,
    Close,
    Decision,
    Enumerator,
    KernelOp,
    OpenBlock,
    PartialGraph,
    RunFolder,
    events_file,
    partial_graph,
    run_folder_of,
)
from mirage_lab.widgets.event_index import GROUPS, LABELS, EventIndex

#: colour per verdict, shared by the tree, the counters and the export
VERDICT_COLOURS = {"expand": "#2563eb", "candidate:verified": "#15803d", "candidate:rejected": "#b91c1c",
                   "candidate:precheck": "#c2410c", "candidate:duplicate": "#6b7280", "pruned:oracle": "#7c3aed"}
DEFAULT_COLOUR = "#9ca3af"
CHILD_ROWS = 40  # children listed per opened node; the rest are summarised


def colour(label: str) -> str:
    return VERDICT_COLOURS.get(label, DEFAULT_COLOUR)


def decision_text(d: Decision | list[Any] | None) -> str:
    """A search decision (or its JSON form) in words."""
    if not d:
        return "the unfused program's inputs (root)"
    d = Decision.from_json(d)
    if isinstance(d, KernelOp):
        return f"kernel op {d.op}({', '.join(f'd{i}' for i in d.inputs)}){_attrs(d.attributes)}"
    if isinstance(d, OpenBlock):  # each input with its imap first: a narrow tree cuts the end of a line
        loads = ", ".join(f"d{i} imap {_grid_map(m, d.grid)} fmap {dim_text(f)}"
                          for i, m, f in zip(d.inputs, d.imaps, d.fmaps, strict=True))
        return f"custom kernel on {loads}; grid {d.grid}, for-loop ×{d.frange}"
    if isinstance(d, BlockOp):
        return f"block op {d.op}({', '.join(f's{i}' for i in d.inputs)}){_attrs(d.attributes)}"
    assert isinstance(d, Close)
    return f"close the block graph: save with omap {_grid_map(d.omap, None)}"


def _grid_map(m: Iterable[int], grid: Iterable[int] | None) -> str:
    """``(x→1)``: the map's grid axes that the grid uses (all three when it does not say), φ for none."""
    used = [a for a, g in enumerate(grid) if g > 1] if grid is not None else [0, 1, 2]
    pairs = [f"{'xyz'[a]}→{dim_text(v)}" for a, v in enumerate(m) if a in (used or [0])]
    return f"({', '.join(pairs)})"


def _pruned_what(ev: dict[str, Any]) -> str:
    if ev.get("d"):
        return decision_text(ev["d"])
    if "expr" in ev:
        return f"{ev.get('level', '')} {ev.get('op', 'op')} → {ev['expr']}".strip()
    n = ev.get("n", 1)
    return f"{n} option{'s' if n != 1 else ''}"


def _attrs(a: dict[str, Any] | None) -> str:
    return "" if not a else " " + ", ".join(f"{k}={v}" for k, v in a.items())


def run_path(run: Any) -> Path:
    """A run folder from a path or a SearchResult."""
    return run_folder_of(run, "explore its events")


class ExplorerState:
    """A cursor over a run's events, a verdict filter, and the lazily expanded tree."""

    def __init__(self, run: Any, progress: bool = True) -> None:
        self.path = run_path(run)
        self.folder = RunFolder(self.path)
        self.index = EventIndex(self.path / events_file(self.path), progress=progress)
        self.active: tuple[str, ...] = LABELS
        self.positions = np.arange(len(self.index))
        self.cursor = 0
        self.expanded: set[int] = {0} if len(self.index) else set()
        self._replayed = functools.lru_cache(maxsize=64)(self._replay)

    def __repr__(self) -> str:
        return (f"ExplorerState({self.path.name}: event {self.event_index} of {len(self.index)}, "
                f"{self.index.label(self.event_index) if len(self.index) else '-'}; "
                f"filter {len(self.positions)} events)")

    # ---- what the run holds
    @functools.cached_property
    def program(self) -> Any:
        return self.folder.program()

    @functools.cached_property
    def config(self) -> Any:
        return self.folder.config()

    @functools.cached_property
    def verdicts(self) -> dict[str, Any]:
        return self.folder.verdicts()

    @functools.cached_property
    def oracle(self) -> Oracle:
        return Oracle.for_program(self.program, engine=self.config.oracle_engine)

    # ---- the cursor
    @property
    def event_index(self) -> int:
        return int(self.positions[self.cursor]) if len(self.positions) else 0

    def step(self, n: int = 1) -> int:
        """Move ``n`` events (negative: back) among those the filter lets through; returns the event index."""
        if len(self.positions):
            self.cursor = max(0, min(self.cursor + n, len(self.positions) - 1))
        return self.event_index

    def select(self, i: int) -> int:
        """Put the cursor on event ``i`` (the filter's nearest event at or after it if it hides ``i``)."""
        if not 0 <= i < len(self.index):
            raise InputError(f"no event {i}: the run has {len(self.index)} events")
        self.cursor = min(int(np.searchsorted(self.positions, i)), max(len(self.positions) - 1, 0))
        self.expanded.update(self.index.ancestors(i))
        return self.event_index

    def jump(self, to: str, direction: int = 1) -> int | None:
        """The next (``direction=-1``: previous) event of verdict ``to`` (a label or a group such as
        ``"verified"``, ``"candidate"``, ``"pruned"``, ``"pruned:oracle"``); None when there is none."""
        codes = self.index.codes(GROUPS.get(to, (to,)))
        hits = np.flatnonzero(np.isin(self.index.labels, codes))
        here = self.event_index
        k = np.searchsorted(hits, here, side="right") if direction > 0 else np.searchsorted(hits, here) - 1
        if not 0 <= k < len(hits):
            return None
        target = int(hits[k])
        if not self._visible(target):  # a jump shows what it jumped to
            self.set_filter(tuple(self.active) + tuple(GROUPS.get(to, (to,))))
        return self.select(target)

    def _visible(self, i: int) -> bool:
        k = int(np.searchsorted(self.positions, i))
        return k < len(self.positions) and int(self.positions[k]) == i

    # ---- the filter
    def set_filter(self, labels: Iterable[str]) -> None:
        """Show only events of these verdicts (labels or groups; empty = all)."""
        chosen = [x for name in labels for x in GROUPS.get(name, (name,))]
        self.active = tuple(dict.fromkeys(chosen)) or LABELS
        here = self.event_index
        mask = np.isin(self.index.labels, self.index.codes(self.active))
        self.positions = np.flatnonzero(mask)
        self.cursor = min(int(np.searchsorted(self.positions, here)), max(len(self.positions) - 1, 0))

    def counts(self) -> pd.DataFrame:
        """Per verdict: events in the run, rejections they stand for, and how many the cursor has passed."""
        totals = self.index.counts()
        so_far = self.index.counts(upto=self.event_index + 1)
        events = self.index.events_per_label()
        rows = [{"verdict": lab, "events": int(events[i]), "count": totals.get(lab, 0), "so far": so_far.get(lab, 0),
                 "shown": lab in self.active} for i, lab in enumerate(LABELS) if events[i]]
        return pd.DataFrame(rows, columns=["verdict", "events", "count", "so far", "shown"])

    # ---- the event under the cursor
    def node_of(self, i: int) -> int:
        """The search state an event belongs to: itself for an expansion, else its parent."""
        return i if self.index.label(i) == "expand" else int(self.index.parents[i])

    def decisions(self, i: int) -> list[Decision]:
        """The decisions from the root to the state of event ``i``."""
        node = self.node_of(i)
        if node < 0:
            return []
        path = [*self.index.ancestors(node), node]
        return [Decision.from_json(d) for d in (self.index.event(j).get("d") for j in path) if d is not None]

    def partial(self, i: int) -> PartialGraph:
        """The graph of event ``i``'s search state (a step asks twice: for the expression and the drawing)."""
        return self._replayed(self.node_of(i))

    def _replay(self, node: int) -> PartialGraph:
        cfg = self.config
        return partial_graph(self.program, self.decisions(node), smem_limit=cfg.smem_budget,
                             reduction_dimx=cfg.reduction_dimx)

    def explain(self, i: int | None = None) -> dict[str, Any]:
        """What the event under the cursor (or event ``i``) means: its verdict, decision and reasons."""
        i = self.event_index if i is None else i
        ev, label = self.index.event(i), self.index.label(i)
        out: dict[str, Any] = {"event": i, "verdict": label, "depth": len(self.index.ancestors(i))}
        if "d" in ev:
            out["decision"] = decision_text(ev["d"])
        if label == "expand":
            out.update(self._expand_info(i))
        elif label.startswith("pruned:"):
            out.update(self._prune_info(ev, i))
        else:
            out.update(self._candidate_info(ev))
        return out

    def _expand_info(self, i: int) -> dict[str, Any]:
        try:
            expr = self.newest_expression(i)
        except MirageError as e:
            return {"expression": f"(cannot rebuild this state: {e})"}
        if expr is None:
            return {}
        verdict = self.oracle.check(expr)
        return {"expression": str(expr), "oracle": verdict.explain()}

    def newest_expression(self, i: int) -> Any:
        """The abstract expression of the tensor the state's last decision made (None at the root)."""
        pg = self.partial(i)
        kernel = graph_expressions(pg.kernel)
        if pg.block is not None:
            block = block_expressions(pg.block, [kernel.kernel[t] for t in pg.block_inputs])
            return block[max(block)] if block else None
        produced = [t for n in pg.kernel.compute_nodes for t in n.outputs]
        return kernel.kernel[produced[-1]] if produced else None

    def oracle_prunes(self, i: int | None = None) -> pd.DataFrame:
        """The children an oracle-prune event (the cursor's, or event ``i``) stands for: the decision tried, the
        expression it would have made, and the oracle's reason. A search counts each state's oracle prunes in one
        event; they are worked out again here, by the search's own checks, from the state's decisions (older run
        folders list each prune as its own event)."""
        i = self.event_index if i is None else i
        ev = self.index.event(i)
        if ev.get("e") != "prune" or ev.get("why") != "oracle":
            raise InputError(f"event {i} is a {self.index.label(i)} event, not an oracle prune")
        events = [ev] if "n" not in ev else self._recounted(int(self.index.parents[i]))
        return pd.DataFrame([{"decision": decision_text(e.get("d")), "expression": e["expr"],
                              "oracle": (self.verdicts.get(e["expr"]) or {}).get("reason", "")} for e in events],
                            columns=["decision", "expression", "oracle"])

    def _recounted(self, node: int) -> list[Any]:
        return self._walker.oracle_prunes(self.decisions(node), self.index.event(node)["id"])

    @functools.cached_property
    def _walker(self) -> Enumerator:  # (one for the session: its memos make the next recount cheap)
        return Enumerator(self.program, self.config, self.oracle, None, ids="explorer.")

    def _prune_info(self, ev: dict[str, Any], i: int) -> dict[str, Any]:
        why = ev["why"]
        out: dict[str, Any] = {"reason": why}
        if ev.get("n", 1) > 1:
            out["rejections"] = ev["n"]
        if why == "oracle" and "n" in ev:  # a state's oracle prunes, counted: the first, and each in a line
            listed = self.oracle_prunes(i)
            if len(listed):
                ev = {**ev, "expr": listed["expression"].iloc[0]}
                out["first rejected"] = listed["decision"].iloc[0]
                out["children"] = [f"{d} → {e}" for d, e in zip(listed["decision"][:CHILD_ROWS],
                                                                 listed["expression"][:CHILD_ROWS], strict=True)]
        if "expr" in ev:
            out["expression"] = ev["expr"]
            verdict = self.verdicts.get(ev["expr"], {})
            out["oracle"] = verdict.get("reason") or "(no recorded verdict)"
            out["rules"] = [str(BY_NAME[r]) if r in BY_NAME else r for r in verdict.get("rules") or ()]
        for key in ("op", "level", "detail"):
            if key in ev:
                out[key] = ev[key]
        if why != "oracle" and ev.get("reason"):  # cap, goal and bound prunes say why in words
            out["detail"] = ev["reason"]
        return out

    def _candidate_info(self, ev: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"outcome": ev["outcome"]}
        if "reason" in ev:
            out["reason"] = ev["reason"]
        if "hash" in ev:
            out["hash"] = ev["hash"]
            doc = self.folder.read(f"candidates/{ev['hash'][:16]}.json")
            if doc is not None:
                out["verification"] = doc.get("verification")
                out["found after (s)"] = round(doc.get("found_s", float("nan")), 2)
        return out

    def candidate_graph(self, i: int | None = None) -> Any:
        """The verified μGraph of a ``candidate:verified`` event (None for other events)."""
        ev = self.index.event(self.event_index if i is None else i)
        doc = self.folder.read(f"candidates/{ev['hash'][:16]}.json") if "hash" in ev else None
        if doc is None:
            return None
        from mirage_lab.ir import graph_from_dict

        return graph_from_dict(doc["graph"])

    # ---- the lazily expanded tree
    def toggle(self, i: int) -> None:
        """Open or close the children of state ``i``."""
        if self.index.label(i) != "expand":
            raise InputError(f"event {i} is a {self.index.label(i)} event; only expanded states have children")
        self.expanded.symmetric_difference_update({i})

    def tree_rows(self, limit: int = CHILD_ROWS) -> list[dict[str, Any]]:
        """Rows for the opened part of the tree, depth first, with at most ``limit`` children per node
        (always including the one on the cursor's path)."""
        if not len(self.index):
            return []
        on_path = {*self.index.ancestors(self.event_index), self.event_index}
        rows: list[dict[str, Any]] = []
        self._rows(0, 0, on_path, limit, rows)
        return rows

    def _rows(self, i: int, depth: int, on_path: set[int], limit: int, rows: list[dict[str, Any]]) -> None:
        rows.append(self._row(i, depth))
        if i not in self.expanded:
            return
        kids = self.index.children(i)
        shown = [int(k) for k in kids[:limit]] + [int(k) for k in kids[limit:] if int(k) in on_path]
        for k in shown:
            self._rows(k, depth + 1, on_path, limit, rows)
        if len(kids) > len(shown):
            rows.append({"index": -1, "depth": depth + 1, "label": "more", "text": f"… {len(kids) - len(shown)} more",
                         "colour": DEFAULT_COLOUR, "open": False, "current": False})

    def _row(self, i: int, depth: int) -> dict[str, Any]:
        ev, label = self.index.event(i), self.index.label(i)
        if label == "expand":
            text = decision_text(ev.get("d"))
        elif label.startswith("pruned:"):
            text = f"✗ {label[7:]}: {_pruned_what(ev)}"
        else:
            text = f"● {label[10:]} graph"
        return {"index": i, "depth": depth, "label": label, "text": text, "colour": colour(label),
                "open": i in self.expanded, "current": i == self.event_index,
                "children": len(self.index.children(i)) if label == "expand" else 0}
