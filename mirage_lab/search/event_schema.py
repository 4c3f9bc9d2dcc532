"""The events a search writes, one typed record per kind, and the schema version of a run's event log.

Events are dicts with short keys in a fixed order (so a log's bytes are reproducible, and an event's canonical
fields fit the columns of an event block, ``event_blocks``); the constructors below are the only places that
build them. Kinds:

* ``expand``: a state entered: its node ``id``, its ``parent`` and the decision ``d`` that led there (JSON form);
* ``prune``: children of ``parent`` that died, with the reason ``why`` (``PRUNE_REASONS``): ``n`` of them when
  counted, else one, maybe with its decision and details (the expression, a reason in words, costs);
* ``candidate``: a complete graph tested at ``node``, with its ``outcome`` (``OUTCOMES``);
* ``task``: (the frontier's log only) where a task's events are spliced in.

A run folder's log opens with a ``schema`` line naming its version. Version 1 is the unversioned logs written
before it existed (they load as they are); version 2 adds that first line, the events are those of version 1.
Version 3 stores the same events by column, in compressed blocks (``event_blocks``), and a run's log names its
tasks' events in ``tasks.gz`` instead of copying them (``run_log``); logs of versions 1 and 2 still load. A log of a
newer version than this code knows is refused with a ``FormatError``.
"""

from __future__ import annotations

import json
from typing import Any, Literal, NotRequired, TypedDict

from mirage_lab.errors import FormatError

SCHEMA_VERSION = 3
#: the last version written as JSON lines (a ``schema`` line, then one event a line)
JSONL_VERSION = 2
SCHEMA_KIND = "schema"

#: why children die (``prune`` events), with what each means
PRUNE_REASONS = ("oracle", "order", "shape", "phase", "smem", "index", "cap", "goal", "duplicate", "bound", "twin")
#: what a complete graph's test says (``candidate`` events)
OUTCOMES = ("precheck", "rejected", "verified", "duplicate")
#: every verdict an event can carry, in the order views list them (an event block's ``code`` indexes it)
LABELS: tuple[str, ...] = ("expand", *(f"pruned:{r}" for r in PRUNE_REASONS), *(f"candidate:{o}" for o in OUTCOMES))
CODE = {label: i for i, label in enumerate(LABELS)}

#: an event as one compact JSON line (one encoder for all: json.dumps would build one per event)
event_line = json.JSONEncoder(separators=(",", ":")).encode


class ExpandEvent(TypedDict):
    e: Literal["expand"]
    id: str
    parent: str | None
    d: list[Any] | None
    level: str


class PruneEvent(TypedDict):
    e: Literal["prune"]
    parent: str
    why: str
    n: NotRequired[int]  # counted: how many children of this reason
    d: NotRequired[list[Any]]
    expr: NotRequired[str]
    op: NotRequired[str]
    level: NotRequired[str]
    reason: NotRequired[str]
    rules: NotRequired[list[str]]
    spent_us: NotRequired[float]
    bound_us: NotRequired[float]
    best_us: NotRequired[float]
    cost_us: NotRequired[float]


class CandidateEvent(TypedDict):
    e: Literal["candidate"]
    node: str
    outcome: str
    reason: NotRequired[str]
    hash: NotRequired[str]


class TaskEvent(TypedDict):
    e: Literal["task"]
    parent: str
    task: int


SearchEvent = ExpandEvent | PruneEvent | CandidateEvent | TaskEvent


def expand_event(node: str, parent: str | None, decision: list[Any] | None, level: str) -> ExpandEvent:
    return {"e": "expand", "id": node, "parent": parent, "d": decision, "level": level}


def prune_event(parent: str, why: str, decision: list[Any] | None = None, **info: Any) -> PruneEvent:
    ev: PruneEvent = {"e": "prune", "parent": parent, "why": why}
    if decision is not None:
        ev["d"] = decision
    ev.update(info)  # type: ignore[typeddict-item]
    return ev


def candidate_event(node: str, outcome: str, reason: str | None = None, graph_hash: str | None = None
                    ) -> CandidateEvent:
    ev: CandidateEvent = {"e": "candidate", "node": node, "outcome": outcome}
    if reason is not None:
        ev["reason"] = reason
    if graph_hash is not None:
        ev["hash"] = graph_hash
    return ev


def task_event(parent: str, task: int) -> TaskEvent:
    return {"e": "task", "parent": parent, "task": task}


def schema_line() -> str:
    """The first line of a run's event log as JSON lines (version 2, as folders before version 3 held it)."""
    return event_line({"e": SCHEMA_KIND, "version": JSONL_VERSION}) + "\n"


def is_schema(ev: dict[str, Any]) -> bool:
    return ev.get("e") == SCHEMA_KIND


def schema_version(ev: dict[str, Any], where: Any) -> int:
    """The version a log's ``schema`` line names; a FormatError when it is malformed or newer than this code."""
    version = ev.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise FormatError(f"{where}: its schema line {ev!r} names no version; the file is damaged — delete it and "
                          "rerun the search to rebuild it")
    if version > SCHEMA_VERSION:
        raise FormatError(f"{where} holds search events of schema version {version}; this mirage_lab reads "
                          f"versions up to {SCHEMA_VERSION}: upgrade mirage_lab to read it")
    return version
