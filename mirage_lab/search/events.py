"""The search as an event stream (DESIGN principle 5), and the report built from it.

Every state the search enters is an ``expand`` event holding the one *decision* that led
to it from its parent, so any node can be rebuilt by replaying the decisions on its path
(``path_to``, then ``replay``). Children that die are ``prune`` events with a reason —
``oracle`` (counted per state, with each expression's verdict in ``verdicts``; ``Enumerator.oracle_prunes``
lists them again), ``order``, ``shape``, ``phase``, ``smem``,
``cap``, ``goal`` (the last kernel op the cap allows cannot produce the program's outputs),
``duplicate``, ``bound`` (``cost_bound``: the kernels so far already cost more than a verified μGraph;
the state's whole subtree is cut) or ``twin`` (``skip_commuted_twins``: a commutative ``op(j, i)`` where
``op(i, j)`` is walked) — and complete graphs are ``candidate`` events whose outcome is ``precheck``
(their outputs' expressions differ from the targets'), ``rejected`` or ``verified``. Events are plain
dicts with short keys, stored by column (``event_blocks``); a state's many rejections of one reason are one
event with ``n``.

Decisions are ``search/decision.py``'s; the events' kinds, their fields and the schema version of a run's
log are ``search/event_schema.py``'s.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mirage_lab.jsonl import read_lines
from mirage_lab.search.decision import Decision
from mirage_lab.search.event_blocks import BLOCK_EVENTS, BlockWriter
from mirage_lab.search.event_schema import (
    OUTCOMES,
    PRUNE_REASONS,
    SearchEvent,
    event_line,
    expand_event,
    is_schema,
    prune_event,
    schema_version,
)
from mirage_lab.search.run_log import NAME as RUN_LOG
from mirage_lab.search.run_log import RunLog

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["OUTCOMES", "PRUNE_REASONS", "Event", "EventLog", "SearchReport", "event_line", "merge_verdicts", "path_to",
           "read_events"]

#: an event as read from a log (the search writes the kinds of ``event_schema``)
Event = dict[str, Any]


def path_to(events: Sequence[Any], node: str) -> list[Decision]:
    """The decisions from the root to ``node`` (an ``expand`` event's id)."""
    by_id = {e["id"]: e for e in events if e["e"] == "expand"}
    out: list[Decision] = []
    cur: str | None = node
    while cur is not None:
        ev = by_id.get(cur)
        if ev is None:
            raise KeyError(f"no expand event with id {cur!r}")
        if ev.get("d") is not None:
            out.append(Decision.from_json(ev["d"]))
        cur = ev.get("parent")
    return out[::-1]


def merge_verdicts(into: dict[str, dict[str, Any]], more: dict[str, dict[str, Any]]) -> None:
    """Add a walk's oracle verdicts to ``into``, summing how many prunes named each expression."""
    for expr, v in more.items():
        have = into.get(expr)
        if have is None:
            into[expr] = dict(v)
        else:
            have["n"] = have.get("n", 0) + v.get("n", 0)


def read_events(path: Any) -> Iterator[Event]:
    """The events of a run's log: event blocks (``events.blocks``, its tasks' events followed into ``tasks.gz``),
    or, in older folders, JSON lines, plain or gzip-compressed, whose schema line is checked (``event_schema``),
    not yielded."""
    path = Path(path)
    if path.name == RUN_LOG:
        yield from RunLog(path.parent).events()
        return
    first = True
    for line in read_lines(Path(path)):
        ev = json.loads(line)
        if first and is_schema(ev):
            schema_version(ev, path)
        else:
            yield ev
        first = False


class EventLog:
    """Where a walk's events go: counted only (``keep=False``), kept in memory, or (``packed``) kept as event
    blocks (``event_blocks``), encoded every ``flush_every`` events (what a search task returns to its parent).

    Counting only suits a search without a run folder: it has nowhere to show its events, and large ones
    would not fit in memory. Oracle verdicts are stored once per expression (``verdicts``: expression →
    reason, rules and ``n``, how many prunes named it).

    A state's oracle prunes are *counted* like its cheap rejections: one ``prune`` event with ``n``. They were
    83 % of a heavy attention task's log (1.9 M lines in GQA's task 933) and a sixth of its time. Which
    children they were is re-derived on demand from the state's decisions (``Enumerator.oracle_prunes``,
    which the explorer calls), by a log with ``list_oracle=True`` that lists each as an event with its
    decision and expression (the format of run folders written before, which still load).

    A packed log that keeps nothing in memory (a search task's) puts its hot events (one ``expand`` per
    state, the per-state counts) straight into columns, without building their dicts.
    """

    def __init__(self, flush_every: int = BLOCK_EVENTS, keep: bool = True, packed: bool = False,
                 list_oracle: bool = False) -> None:
        self.flush_every, self.keep, self.packed, self.list_oracle = flush_every, keep, packed, list_oracle
        self.members: list[bytes] = []  # (packed) the event blocks so far
        self.events: list[SearchEvent] = []  # (keep) the events
        self.block = BlockWriter()  # (packed) the events not yet encoded, by column
        self.verdicts: dict[str, dict[str, Any]] = {}
        self.counts: dict[str, Counter[str]] = {"pruned": Counter(), "candidates": Counter()}
        self.states = 0
        self.recording = keep or packed

    def append(self, ev: SearchEvent) -> None:
        if ev["e"] == "expand":
            self.states += 1
        elif ev["e"] == "prune":
            self.counts["pruned"][ev["why"]] += ev.get("n", 1)
            if ev["why"] == "oracle":
                self.verdict(ev["expr"], ev.pop("reason", None), ev.pop("rules", None))
        elif ev["e"] == "candidate":
            self.counts["candidates"][ev["outcome"]] += 1
        if self.keep:
            self.events.append(ev)
        elif self.packed:
            self.block.add(ev)
        self._maybe_flush()

    def expanded(self, node: str, parent: str | None, decision: Decision | None, level: str) -> None:
        """An ``expand`` event (one per state: the second hot path), put in columns at once in a packed log."""
        self.states += 1
        if not self.recording:
            return
        d = None if decision is None else decision.to_json()
        if self.keep:
            self.events.append(expand_event(node, parent, d, level))
        else:
            self.block.expand(node, parent, event_line(d), level)
        self._maybe_flush()

    def counted(self, parent: str, counts: dict[str, int]) -> None:
        """The rejections of one state (oracle, order, shape, phase, smem, index, twin), one ``n`` prune event per
        reason."""
        pruned = self.counts["pruned"]
        for why, n in counts.items():
            if not n:
                continue
            pruned[why] += n
            if self.keep:
                self.events.append(prune_event(parent, why, n=n))
            elif self.recording:
                self.block.counted(parent, why, n)
        self._maybe_flush()

    def pruned_by_oracle(self, parent: str, what: Any, decision_of: Callable[[Any], Decision], expr: str,
                         reason: str | None, rules: list[str] | None, counts: dict[str, int]) -> None:
        """One child of ``parent`` the oracle rejected, naming ``expr``: counted in ``counts`` (the state's, written
        by ``counted``), or, in a log that lists them, an event of its own with its decision (``decision_of(what)``,
        built only then: this is the hot path of large searches)."""
        self.verdict(expr, reason, rules)
        if not self.list_oracle:
            counts["oracle"] += 1
            return
        self.counts["pruned"]["oracle"] += 1
        ev = prune_event(parent, "oracle", decision_of(what).to_json(), expr=expr)
        if self.keep:
            self.events.append(ev)
        elif self.packed:
            self.block.add(ev)
        self._maybe_flush()

    def verdict(self, expr: str, reason: str | None, rules: list[str] | None) -> None:
        """One more prune naming ``expr``; its verdict is stored the first time."""
        v = self.verdicts.get(expr)
        if v is None:
            v = self.verdicts[expr] = {"reason": reason, "rules": rules, "n": 0}
        v["n"] += 1

    def _maybe_flush(self) -> None:
        if self.packed and len(self.events) + len(self.block.code) >= self.flush_every:  # (hot: no __len__ call)
            self.flush()

    def flush(self) -> None:
        """(packed) Encode the events held in memory as one more event block."""
        if self.packed and (self.events or len(self.block)):
            for ev in self.events:  # (a log that keeps its events and packs them too: kept ones first)
                self.block.add(ev)
            self.members.append(self.block.flush())
            self.events = []

    def packed_events(self) -> bytes:
        """(packed) Every event so far, as event blocks (``event_blocks``)."""
        self.flush()
        return b"".join(self.members)

    def summary(self) -> dict[str, Any]:
        rules: Counter[str] = Counter()
        for v in self.verdicts.values():
            for r in v["rules"] or ():
                rules[r] += v["n"]
        return {"states": self.states, "oracle_rules": dict(rules), **{k: dict(v) for k, v in self.counts.items()}}


@dataclass
class SearchReport:
    """Counts per verdict and reason, the stop reason, and where the time went."""

    states: int = 0
    pruned: Counter[str] = field(default_factory=Counter)
    oracle_rules: Counter[str] = field(default_factory=Counter)
    candidates: Counter[str] = field(default_factory=Counter)
    verified: int = 0
    tasks_done: int = 0
    tasks_total: int = 0
    stop_reason: str = "complete"
    seconds: dict[str, float] = field(default_factory=lambda: {"enumeration": 0.0, "oracle": 0.0,
                                                                "verification": 0.0, "wall": 0.0})
    first_verified_s: float | None = None
    cached: bool = False
    time_cap_s: float | None = None  # the MIRAGE_LAB_TIME_LIMIT cap, when it lowered the search's time limit
    space_gaps: list[str] = field(default_factory=list)  # ops the program uses that the space leaves out (space.py)

    def add_summary(self, summary: dict[str, Any]) -> None:
        """Add one walk's counts (``EventLog.summary``)."""
        self.states += summary["states"]
        self.pruned.update(summary["pruned"])
        self.oracle_rules.update(summary["oracle_rules"])
        self.candidates.update(summary["candidates"])

    def add_seconds(self, seconds: dict[str, float]) -> None:
        for k, v in seconds.items():
            if k != "wall":
                self.seconds[k] = self.seconds.get(k, 0.0) + v

    def to_dict(self) -> dict[str, Any]:
        return {"states": self.states, "pruned": dict(self.pruned), "oracle_rules": dict(self.oracle_rules),
                "candidates": dict(self.candidates), "verified": self.verified, "tasks_done": self.tasks_done,
                "tasks_total": self.tasks_total, "stop_reason": self.stop_reason, "seconds": self.seconds,
                "first_verified_s": self.first_verified_s, "cached": self.cached,
                **({} if self.time_cap_s is None else {"time_cap_s": self.time_cap_s}),
                **({"space_gaps": list(self.space_gaps)} if self.space_gaps else {})}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SearchReport:
        r = cls()
        r.states, r.verified = int(d["states"]), int(d["verified"])
        r.pruned, r.oracle_rules = Counter(d["pruned"]), Counter(d["oracle_rules"])
        r.candidates = Counter(d["candidates"])
        r.tasks_done, r.tasks_total, r.stop_reason = d["tasks_done"], d["tasks_total"], d["stop_reason"]
        r.seconds, r.first_verified_s = dict(d["seconds"]), d.get("first_verified_s")
        r.time_cap_s = d.get("time_cap_s")
        r.space_gaps = [str(line) for line in d.get("space_gaps") or ()]
        return r

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd  # here, not at the top: search workers never load pandas
        rows: list[tuple[str, str, int | float]] = [("states", "explored", int(self.states))]
        rows += [("pruned", k, int(v)) for k, v in sorted(self.pruned.items())]
        rows += [("candidates", k, int(v)) for k, v in sorted(self.candidates.items())]
        rows += [("seconds", k if k == "wall" else f"{k} (summed over workers)", round(v, 3))
                 for k, v in self.seconds.items()]
        # one column of counts and seconds: object dtype keeps the counts integers (a float column prints 3996.000)
        what, kind, value = zip(*rows, strict=True)
        return pd.DataFrame({"what": what, "kind": kind, "value": pd.Series(value, dtype=object)})

    def __repr__(self) -> str:
        pruned = ", ".join(f"{k} {v}" for k, v in self.pruned.most_common())
        s = self.seconds
        return (f"SearchReport({self.stop_reason}: {self.states} states, {self.verified} verified, "
                f"{sum(self.candidates.values())} complete graphs checked; pruned: {pruned or 'none'}; "
                f"{s['wall']:.1f} s wall (enumeration {s['enumeration']:.1f}, oracle {s['oracle']:.1f}, "
                f"verification {s['verification']:.1f}, summed over workers); "
                f"tasks {self.tasks_done}/{self.tasks_total}"
                f"{', from the cache' if self.cached else ''}{self.cap_note()}{self.gaps_note()})")

    def gaps_note(self) -> str:
        """The ops the space left out ("" when none)."""
        return "".join(f"\n  ⚠ {line}" for line in self.space_gaps)

    def cap_note(self) -> str:
        """How MIRAGE_LAB_TIME_LIMIT capped this search ("" when it did not)."""
        return "" if self.time_cap_s is None else f"; capped at {self.time_cap_s:g} s by MIRAGE_LAB_TIME_LIMIT"

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(repr(self))}</pre>{self.to_frame().to_html(index=False)}"
