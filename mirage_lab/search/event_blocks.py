"""Search events stored by column, in compressed blocks (event schema version 3).

A large search writes millions of events (GQA b1: 19.6 M), nearly all of them ``expand`` events and per-state
prune counts. As JSON lines they took 5 bytes each even gzip-compressed, and reading them meant parsing every
line. A *block* holds up to ``BLOCK_EVENTS`` events as numpy columns instead, in two zlib streams:

* the *index* stream, what a viewer needs to open a run: ``code`` (the event's label, ``event_schema.LABELS``),
  the id the event names (``expand``: its own, ``prune``: its parent's, ``candidate``: its node's) as a prefix
  (``rp``, into the block's table ``p``) and a number (``rn``, difference-coded), an ``expand``'s parent the
  same way (``pp``, and ``pn``: its own number minus its parent's), and ``n`` (a counted prune's count, 0 when
  the event has none). Search ids are a prefix and a counter (``"933.1204"``), so these columns are small
  integers that compress to a fraction of a byte per event;
* the *details* stream: each ``expand``'s level (``lv``, into the table ``l``) and decision (one JSON line per
  ``expand``), and every field beyond those (a listed oracle prune's decision and expression, a bound prune's
  costs, a candidate's reason and hash) as one JSON object per event that has any (``xi``: which events).

Any event dict round-trips, key for key (what fits no column goes whole into the details); a viewer decodes only
the index streams to open a run and one block's details to show an event.

A block is ``MAGIC``, the length of its head (4 bytes, little-endian), the head (JSON: ``v`` the schema version,
``n`` events, ``ne`` expands, ``nx`` events with details, the tables, each column's dtype, the streams' lengths),
then the two streams. A *splice* block (head ``{"v": 3, "task": i, ...}``, no streams) stands for task ``i``'s
events in ``tasks.gz`` (``run_log``): the run's stream names each task's events instead of copying them.
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from mirage_lab.errors import FormatError
from mirage_lab.jsonl import MAX_MEMBER
from mirage_lab.search.event_schema import CODE, LABELS, OUTCOMES, PRUNE_REASONS, SCHEMA_VERSION, event_line

MAGIC = b"MLEB"
#: events per block (a worker's log flushes at this many; a viewer decodes one block's details per event shown)
BLOCK_EVENTS = 20_000
#: the code of an event that fits no column (stored whole in the details)
OTHER = 255
EXPAND = CODE["expand"]
LEVEL = 6  # zlib level: 9 is 1 % smaller here and 3x slower to write
_HEAD = struct.Struct("<4sI")
#: the columns of the index stream, in order (``NE``: one per expand event, else one per event)
INDEX_COLUMNS = ("code", "rp", "rn", "pp", "pn", "n")
PER_EXPAND = frozenset({"pp", "pn", "lv"})
#: an id as a prefix and a counter (no leading zeros, so that it reads back as the same string)
_ID = re.compile(r"(.*?)(0|[1-9][0-9]{0,17})\Z", re.DOTALL)
_CANON = {"expand": ("e", "id", "parent", "d", "level"), "prune": ("e", "parent", "why", "n"),
          "candidate": ("e", "node", "outcome")}
_PRUNE_CODE = {r: CODE[f"pruned:{r}"] for r in PRUNE_REASONS}
_OUTCOME_CODE = {o: CODE[f"candidate:{o}"] for o in OUTCOMES}


def damaged(where: Any, why: str) -> FormatError:
    """The refusal of a damaged event block, naming the file and the fix."""
    return FormatError(f"{where}: {why}; the file is damaged — delete the run folder's events.blocks (a damaged "
                       "tasks.gz: the whole run folder) and rerun the search to rebuild it")


class BlockWriter:
    """Events gathered column by column, encoded as a block by ``flush`` (one worker's log keeps one)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.code: list[int] = []
        self.ref: list[str | None] = []
        self.par: list[str | None] = []  # (expands)
        self.n: list[int] = []
        self.lv: list[str] = []  # (expands)
        self.d: list[str] = []  # (expands) the decision as a JSON line
        self.xi: list[int] = []
        self.x: list[str] = []

    def __len__(self) -> int:
        return len(self.code)

    def expand(self, node: str, parent: str | None, decision_json: str, level: str) -> None:
        """An ``expand`` event, its decision already in JSON."""
        self.code.append(EXPAND)
        self.ref.append(node)
        self.n.append(0)
        self.par.append(parent)
        self.lv.append(level)
        self.d.append(decision_json)

    def counted(self, parent: str, why: str, n: int) -> None:
        """A counted prune (``{"e": "prune", "parent": ..., "why": ..., "n": n}``)."""
        self.code.append(_PRUNE_CODE[why])
        self.ref.append(parent)
        self.n.append(n)

    def add(self, ev: Mapping[str, Any]) -> None:
        """Any event: its canonical fields (in their usual order) into the columns, the rest into the details."""
        kind, keys = ev.get("e"), list(ev)
        if kind == "expand" and keys[:5] == list(_CANON["expand"]) and _expand_fits(ev):
            self.expand(ev["id"], ev["parent"], event_line(ev["d"]), ev["level"])
            rest = keys[5:]
        elif kind == "prune" and keys[:3] == ["e", "parent", "why"] and isinstance(ev["parent"], str) \
                and ev["why"] in _PRUNE_CODE:
            n = ev.get("n")
            counted = keys[3:4] == ["n"] and type(n) is int and 0 < n < 1 << 62
            self.code.append(_PRUNE_CODE[ev["why"]])
            self.ref.append(ev["parent"])
            self.n.append(n if counted else 0)  # type: ignore[arg-type]
            rest = keys[4:] if counted else keys[3:]
        elif kind == "candidate" and keys[:3] == list(_CANON["candidate"]) and isinstance(ev["node"], str) \
                and ev["outcome"] in _OUTCOME_CODE:
            self.code.append(_OUTCOME_CODE[ev["outcome"]])
            self.ref.append(ev["node"])
            self.n.append(0)
            rest = keys[3:]
        else:
            self.code.append(OTHER)
            self.ref.append(None)
            self.n.append(0)
            rest = keys
        if rest:
            self.xi.append(len(self.code) - 1)
            self.x.append(event_line({k: ev[k] for k in rest}))

    def flush(self) -> bytes:
        """The events gathered so far as one block (b"" when none), and a fresh start."""
        if not self.code:
            return b""
        prefixes: dict[str, int] = {}
        rp, rn = _split_ids(self.ref, prefixes)
        pp, pnum = _split_ids(self.par, prefixes)
        own = rn[np.asarray(self.code, dtype=np.uint8) == EXPAND] if self.par else rn[:0]
        levels: dict[str, int] = {}
        cols = {"code": np.asarray(self.code, dtype=np.uint8), "rp": rp, "rn": np.diff(rn, prepend=0),
                "pp": pp, "pn": own - pnum, "n": np.asarray(self.n, dtype=np.int64),
                "lv": np.asarray([levels.setdefault(v, len(levels)) for v in self.lv], dtype=np.int64),
                "xi": np.asarray(self.xi, dtype=np.int64)}
        packed = {k: _narrow(v) for k, v in cols.items()}
        index = zlib.compress(b"".join(packed[k].tobytes() for k in INDEX_COLUMNS), LEVEL)
        d_text = "".join(s + "\n" for s in self.d).encode()
        details = zlib.compress(packed["lv"].tobytes() + packed["xi"].tobytes() + d_text
                                + "".join(s + "\n" for s in self.x).encode(), LEVEL)
        head = {"v": SCHEMA_VERSION, "n": len(self.code), "ne": len(self.par), "nx": len(self.xi),
                "p": list(prefixes), "l": list(levels), "t": {k: v.dtype.str for k, v in packed.items()},
                "dl": len(d_text), "s": [len(index), len(details)]}
        self._reset()
        return _block(head) + index + details


def _expand_fits(ev: Mapping[str, Any]) -> bool:
    return isinstance(ev["id"], str) and (ev["parent"] is None or isinstance(ev["parent"], str)) \
        and isinstance(ev["level"], str)


def _split_ids(ids: Sequence[str | None], prefixes: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """Each id as (its prefix's index in ``prefixes``, its number): -1 for no id, number -1 when it has none.
    Each distinct id is split once (a state's prune counts name the id just expanded)."""
    seen: dict[str | None, int] = {}
    at = [seen.setdefault(s, len(seen)) for s in ids]
    pre = np.full(len(seen), -1, dtype=np.int64)
    num = np.full(len(seen), -1, dtype=np.int64)
    for j, s in enumerate(seen):
        if s is None:
            continue
        m = _ID.match(s)
        if m is None:
            pre[j] = prefixes.setdefault(s, len(prefixes))
        else:
            pre[j], num[j] = prefixes.setdefault(m.group(1), len(prefixes)), int(m.group(2))
    index = np.asarray(at, dtype=np.int64)
    return pre[index], num[index]


def _narrow(a: np.ndarray) -> np.ndarray:
    """``a`` in the smallest signed integer dtype that holds it (little-endian)."""
    if a.dtype == np.uint8:
        return a
    lo, hi = (int(a.min()), int(a.max())) if len(a) else (0, 0)
    for t in ("<i1", "<i2", "<i4"):
        info = np.iinfo(t)
        if info.min <= lo and hi <= info.max:
            return a.astype(t)
    return a.astype("<i8")


def _block(head: dict[str, Any]) -> bytes:
    raw = json.dumps(head, separators=(",", ":")).encode()
    return _HEAD.pack(MAGIC, len(raw)) + raw


def splice_block(task: int, at: int, size: int) -> bytes:
    """A block standing for task ``task``'s events, ``size`` bytes at byte ``at`` of ``tasks.gz`` (a hint: a
    reader checks it and looks the task up when the file has changed)."""
    return _block({"v": SCHEMA_VERSION, "task": task, "at": at, "size": size})


def encode(events: Iterable[Mapping[str, Any]], per_block: int = BLOCK_EVENTS) -> Iterator[bytes]:
    """Events as blocks of ``per_block``."""
    w = BlockWriter()
    for ev in events:
        w.add(ev)
        if len(w) >= per_block:
            yield w.flush()
    if len(w):
        yield w.flush()


def is_blocks(data: bytes) -> bool:
    """Whether ``data`` (a file's first bytes) is event blocks (else JSON lines, plain or gzip-compressed)."""
    return data[:4] == MAGIC


@dataclass(frozen=True)
class Head:
    """One block's head and where its streams lie in the bytes it was read from."""

    doc: dict[str, Any]
    at: int  # where the block starts
    body: int  # where its streams start
    end: int  # where it ends

    @property
    def task(self) -> int | None:
        t = self.doc.get("task")
        return t if type(t) is int else None

    @property
    def n(self) -> int:
        return int(self.doc.get("n", 0))


def heads(data: bytes | memoryview, where: Any, start: int = 0, end: int | None = None) -> Iterator[Head]:
    """The blocks in ``data[start:end]``, in order (only their heads are read)."""
    end = len(data) if end is None else end
    at = start
    while at < end:
        if end - at < _HEAD.size:
            raise damaged(where, f"it ends inside an event block's head (byte {at})")
        magic, size = _HEAD.unpack_from(data, at)
        if magic != MAGIC:
            raise damaged(where, f"no event block starts at byte {at}")
        body = at + _HEAD.size + size
        try:
            doc = json.loads(bytes(data[at + _HEAD.size:body]))
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            raise damaged(where, f"the event block at byte {at} has a damaged head")
        version = doc.get("v")
        if type(version) is not int or version < 3:
            raise damaged(where, f"the event block at byte {at} names no schema version")
        if version > SCHEMA_VERSION:
            raise FormatError(f"{where} holds search events of schema version {version}; this mirage_lab reads "
                              f"versions up to {SCHEMA_VERSION}: upgrade mirage_lab to read it")
        streams = doc.get("s", [0, 0])
        stop = body + sum(streams)
        if stop > end:
            raise damaged(where, f"it ends inside the event block at byte {at}")
        yield Head(doc, at, body, stop)
        at = stop


class EventBlock:
    """One data block's columns, decoded when first asked for."""

    def __init__(self, head: Head, data: bytes | memoryview, where: Any) -> None:
        self.head, self.where = head, where
        self._data = data
        h = head.doc
        self.size, self.expands, self.extras = int(h["n"]), int(h["ne"]), int(h["nx"])
        self.types: dict[str, str] = h["t"]

    def _stream(self, k: int) -> bytes:
        s = self.head.doc["s"]
        start = self.head.body + sum(s[:k])
        d = zlib.decompressobj()
        try:
            raw = d.decompress(bytes(self._data[start:start + s[k]]), MAX_MEMBER + 1)
        except zlib.error as e:
            raise damaged(self.where, f"the event block at byte {self.head.at} does not decompress ({e})") from None
        if len(raw) > MAX_MEMBER or d.unconsumed_tail:
            raise FormatError(f"{self.where}: the event block at byte {self.head.at} expands beyond "
                              f"{MAX_MEMBER >> 20} MiB, which no search writes; the file is not a run folder's "
                              "(delete it, or the folder, and search again)")
        if not d.eof:
            raise damaged(self.where, f"the event block at byte {self.head.at} is cut short")
        return raw

    def _split(self, raw: bytes, names: Sequence[str], what: str) -> tuple[dict[str, np.ndarray], int]:
        out, at = {}, 0
        for name in names:
            count = self.expands if name in PER_EXPAND else self.extras if name == "xi" else self.size
            t = np.dtype(self.types[name])
            if at + count * t.itemsize > len(raw):
                raise damaged(self.where, f"the event block at byte {self.head.at} has a short {what} stream")
            out[name] = np.frombuffer(raw, dtype=t, count=count, offset=at)
            at += count * t.itemsize
        return out, at

    @cached_property
    def index(self) -> dict[str, np.ndarray]:
        """The index columns, as stored (``rn`` and ``pn`` difference-coded)."""
        cols, _ = self._split(self._stream(0), INDEX_COLUMNS, "index")
        return cols

    @cached_property
    def numbers(self) -> np.ndarray:
        """Each event's id number (-1: none)."""
        return np.cumsum(self.index["rn"], dtype=np.int64)

    @cached_property
    def expand_rank(self) -> np.ndarray:
        """For each event, how many expands come before it in the block."""
        is_expand = self.index["code"] == EXPAND
        return np.cumsum(is_expand) - is_expand

    @cached_property
    def details(self) -> tuple[dict[str, np.ndarray], list[bytes], dict[int, bytes]]:
        raw = self._stream(1)
        cols, at = self._split(raw, ("lv", "xi"), "details")
        dl = int(self.head.doc["dl"])
        d_lines = raw[at:at + dl].split(b"\n")[:-1]
        x_lines = raw[at + dl:].split(b"\n")[:-1]
        if len(d_lines) != self.expands or len(x_lines) != self.extras:
            raise damaged(self.where, f"the event block at byte {self.head.at} has a short details stream")
        return cols, d_lines, dict(zip(cols["xi"].tolist(), x_lines, strict=True))

    def _id(self, pre: int, num: int) -> str | None:
        if pre < 0:
            return None
        prefix: str = self.head.doc["p"][pre]
        return prefix if num < 0 else f"{prefix}{num}"

    def event(self, k: int) -> dict[str, Any]:
        """Event ``k`` of the block, as the search wrote it."""
        ix = self.index
        code = int(ix["code"][k])
        cols, d_lines, extras = self.details
        more = extras.get(k)
        rest: dict[str, Any] = {} if more is None else json.loads(more)
        if code == OTHER:
            return rest
        ref = self._id(int(ix["rp"][k]), int(self.numbers[k]))
        label = LABELS[code]
        if code == EXPAND:
            j = int(self.expand_rank[k])
            num = int(self.numbers[k])
            parent = self._id(int(ix["pp"][j]), num - int(ix["pn"][j]))
            ev: dict[str, Any] = {"e": "expand", "id": ref, "parent": parent, "d": json.loads(d_lines[j]),
                                  "level": self.head.doc["l"][int(cols["lv"][j])]}
        elif label.startswith("pruned:"):
            ev = {"e": "prune", "parent": ref, "why": label.partition(":")[2]}
            if ix["n"][k]:
                ev["n"] = int(ix["n"][k])
        else:
            ev = {"e": "candidate", "node": ref, "outcome": label.partition(":")[2]}
        ev.update(rest)
        return ev

    def events(self) -> Iterator[dict[str, Any]]:
        for k in range(self.size):
            yield self.event(k)


def decode(data: bytes, where: Any) -> Iterator[dict[str, Any]]:
    """Every event of a run of data blocks (a task's log); a splice block here is a FormatError."""
    for h in heads(data, where):
        if h.task is not None:
            raise damaged(where, f"a task's log holds a splice block (byte {h.at})")
        yield from EventBlock(h, data, where).events()


def events_of(data: bytes, where: Any) -> Iterator[dict[str, Any]]:
    """The events of a task's log, in whichever format: blocks, or (older folders) gzip-compressed or plain JSON
    lines."""
    if is_blocks(data):
        yield from decode(data, where)
        return
    import gzip

    text = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    for line in text.splitlines():
        if line.strip():
            ev = json.loads(line)
            if ev.get("e") != "schema":
                yield ev

