"""A run's event stream (``events.blocks``): the frontier's events, with each task's events spliced in at its root.

Up to event schema version 2 a run folder held every task's events twice: in ``tasks.gz`` (for resuming) and
copied into ``events.jsonl.gz`` (for reading the run in order). Version 3 stores them once: ``events.blocks``
holds the frontier's own events as event blocks (``event_blocks``) and, where a task's events belong, a
*splice* block naming the task and where its events lie in ``tasks.gz``. Readers follow the splices
(``RunLog.blocks``); a splice whose place no longer holds that task's blocks (the file was rewritten) is looked
up in ``tasks.gz`` by task index. A task whose events are not in ``tasks.gz`` as blocks (cut short, or saved by
an older mirage_lab as JSON lines) is copied into the stream as blocks instead.

``RunLog.columns`` reads only the blocks' index streams and works out, for every event, its label, its weight
and the event index of its parent state, with array operations: what a viewer needs to open a run of millions
of events in seconds.
"""

from __future__ import annotations

import itertools
import mmap
import threading
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mirage_lab.errors import FormatError
from mirage_lab.search.event_blocks import (
    _ID,
    EXPAND,
    OTHER,
    EventBlock,
    Head,
    encode,
    events_of,
    heads,
    is_blocks,
    splice_block,
)
from mirage_lab.task_log import NAME as TASK_LOG
from mirage_lab.task_log import TaskLog

NAME = "events.blocks"
_NUM = 41  # bits of an id's number in its key (the prefix's index above them)

#: (the block, the bytes it lies in, the file they are)
Located = tuple[Head, Any, Path]


class Segments:
    """The own events of a walk that hands tasks out (the frontier; a split task's walk, ``split.Family``) as event
    blocks, one segment between two ``task`` events at a time, encoded by a thread of their own (``start``) while
    the parent hands out tasks and waits for them: putting the tasks' events in place after the last task then only
    concatenates (``stream``). LoRA b1's frontier has 10 694 tasks, and its 12 183 segments took 0.2 s of the
    search's tail, while every worker of a cluster waits."""

    def __init__(self, events: Iterable[Mapping[str, Any]]) -> None:
        self._events = events
        self.segments: list[bytes] = []  # the blocks before each task event, and after the last
        self.tasks: list[int] = []  # the task each segment but the last comes before
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    #: False: ``start`` encodes at once, in the calling thread (``benchmarks/scaling.py --record`` times a search's
    #: calls one after another in one process, where a thread of the parent's would slow the calls it times)
    threaded = True

    def start(self) -> Segments:
        """Encode in a thread of its own (daemon: an interrupted search does not wait for it)."""
        if not self.threaded:
            return self.done()
        self._thread = threading.Thread(target=self._encode_all, name="event-segments", daemon=True)
        self._thread.start()
        return self

    def _encode_all(self) -> None:
        try:
            self._encode()
        except BaseException as e:  # (raised again in the parent by ``done``)
            self._error = e

    def _encode(self) -> None:
        own: list[Mapping[str, Any]] = []
        for ev in self._events:
            if ev.get("e") != "task":
                own.append(ev)
                continue
            self.segments.append(b"".join(encode(own)))
            self.tasks.append(ev["task"])
            own = []
        self.segments.append(b"".join(encode(own)))

    def done(self) -> Segments:
        """The segments, all encoded (waiting for the thread, or encoding here when none was started)."""
        if self._thread is None:
            self._thread = threading.current_thread()
            self._encode()
        elif self._thread is not threading.current_thread():
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self


def stream(frontier: Segments | Iterable[Mapping[str, Any]], tasks: TaskLog, unsaved: Mapping[int, bytes],
           saved: Callable[[int], bytes], merged: Container[int] | None = None) -> Iterator[bytes]:
    """The blocks of a run's stream: ``frontier``'s events (``{"e": "task", "task": i}`` where task ``i``'s events
    go, for each task in ``merged``, default all), each task copied from ``unsaved`` (tasks cut short, not in
    ``tasks.gz``), else spliced from ``tasks`` when its events lie there as blocks, else copied from ``saved(i)``
    (a task an older mirage_lab saved as JSON lines, converted to blocks)."""
    front = (frontier if isinstance(frontier, Segments) else Segments(frontier)).done()
    for segment, i in itertools.zip_longest(front.segments, front.tasks):
        yield segment
        if i is None or (merged is not None and i not in merged):
            continue
        entry = None if i in unsaved else tasks.entries().get(i)
        if entry is not None and is_blocks(tasks.read(entry.events_at, entry.events_at + 4)):
            yield splice_block(i, entry.events_at, entry.end - entry.events_at)
            continue
        data = unsaved[i] if i in unsaved else saved(i)
        yield data if is_blocks(data) else b"".join(encode(events_of(data, f"task {i}'s events")))


def _mapped(path: Path) -> Any:
    """A file's bytes, memory-mapped (read as needed)."""
    with open(path, "rb") as f:
        if f.seek(0, 2) == 0:
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


class RunLog:
    """The event stream of one run folder (``events.blocks``, splices followed into ``tasks.gz``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / NAME
        self._data: dict[Path, Any] = {}
        self._tasks: TaskLog | None = None  # (scanned only when a splice's place has moved)

    def _bytes(self, path: Path) -> Any:
        if path not in self._data:
            self._data[path] = _mapped(path)
        return self._data[path]

    def blocks(self) -> Iterator[Located]:
        """Every data block of the stream, in order."""
        data = self._bytes(self.path)
        for h in heads(data, self.path):
            if h.task is None:
                yield h, data, self.path
            else:
                yield from self._task(h)

    def _task(self, splice: Head) -> Iterator[Located]:
        path = self.folder / TASK_LOG
        data = self._bytes(path) if path.is_file() else b""
        at, size = splice.doc.get("at"), splice.doc.get("size")
        found: list[Head] | None = None
        if type(at) is int and type(size) is int and at >= 0 and at + size <= len(data) and is_blocks(data[at:at + 4]):
            try:
                found = list(heads(data, path, at, at + size))
            except FormatError:
                found = None
        if found is None or any(h.task is not None for h in found):
            if self._tasks is None:
                self._tasks = TaskLog(path)
            entry = self._tasks.entries().get(int(splice.task or 0))
            if entry is None:
                raise FormatError(f"{self.path} splices in task {splice.task}'s events, which {path} does not hold; "
                                  f"delete {self.path.name} (or the whole run folder) and rerun the search to rebuild "
                                  "it")
            found = list(heads(data, path, entry.events_at, entry.end))
            if any(h.task is not None for h in found):
                raise FormatError(f"{path}: task {splice.task}'s events hold a splice block; the file is damaged — "
                                  "delete the run folder and rerun the search")
        for h in found:
            yield h, data, path

    def events(self) -> Iterator[dict[str, Any]]:
        """Every event of the run, in order."""
        for h, data, where in self.blocks():
            yield from EventBlock(h, data, where).events()

    def columns(self) -> Columns:
        """Every event's label code, weight and parent event (see ``Columns``), from the index streams alone."""
        prefixes: dict[str, int] = {}
        parts: dict[str, list[np.ndarray]] = {k: [] for k in ("code", "pre", "num", "ppre", "pnum", "n")}
        located: list[Located] = []
        for h, data, where in self.blocks():
            if h.n == 0:
                continue
            b = EventBlock(h, data, where)
            ix = b.index
            table = np.asarray([prefixes.setdefault(p, len(prefixes)) for p in h.doc["p"]] + [-1], dtype=np.int64)
            code = ix["code"]
            if (code == OTHER).any():
                k = int(np.flatnonzero(code == OTHER)[0])
                raise FormatError(f"{where}: event {k} of the block at byte {h.at} is not a search event "
                                  f"({b.event(k)!r}); delete {self.path.name} and rerun the search to rebuild it")
            num = b.numbers
            parts["code"].append(code)
            parts["pre"].append(table[ix["rp"]])
            parts["num"].append(num)
            parts["ppre"].append(table[ix["pp"]])
            parts["pnum"].append(num[code == EXPAND] - ix["pn"])
            parts["n"].append(ix["n"])
            located.append((h, data, where))
        cat = {k: np.concatenate(v) if v else np.zeros(0, dtype=np.int64) for k, v in parts.items()}
        return Columns(cat, located, list(prefixes))


def _keys(pre: np.ndarray, num: np.ndarray) -> np.ndarray:
    """Ids as int64 keys (-1: no id)."""
    return np.where(pre >= 0, (pre << _NUM) | (num + 1), -1)


class Columns:
    """A run's events as arrays: ``codes`` (``event_schema.LABELS``), ``weights`` (a counted prune stands for ``n``
    rejections), ``parents`` (the event index of the ``expand`` event an event names: an expand's parent state,
    a prune's or candidate's state; -1 for none), ``block_starts`` (the first event of each block) and where each
    block lies; ``node_index`` maps an expand's id to its event index."""

    codes: np.ndarray
    weights: np.ndarray
    parents: np.ndarray
    block_starts: np.ndarray
    located: list[Located]
    node_index: NodeIndex

    def __init__(self, cat: dict[str, np.ndarray], located: list[Located], prefixes: list[str]) -> None:
        code = cat["code"].view(np.int8)
        size = len(code)
        self.codes, self.located = code, located
        n = cat["n"]
        self.weights = np.maximum(n, 1, dtype=np.int64)
        self.block_starts = np.cumsum([0, *(h.n for h, _, _ in located)])[:-1].astype(np.int64)
        is_expand = code == EXPAND
        at = np.flatnonzero(is_expand)
        key = _keys(cat["pre"], cat["num"])
        want = key.copy()  # the id each event's parent has
        want[at] = _keys(cat["ppre"], cat["pnum"])
        # mostly the parent is the last state entered before the event: try that first, search the rest
        before: np.ndarray = np.full(size, -1, dtype=np.int32 if size < 1 << 31 else np.int64)
        if size > 1:
            np.maximum.accumulate(np.where(is_expand[:-1], np.arange(size - 1, dtype=before.dtype), -1), out=before[1:])
        parents = np.where(key[before] == want, before, -1)  # (before -1 reads the last key: checked below)
        parents[(before < 0) | (want < 0)] = -1
        self.node_index = NodeIndex(key[at], at, prefixes)
        rest = np.flatnonzero((parents < 0) & (want >= 0))
        if len(rest):
            parents[rest] = self.node_index.find(want[rest])
        self.parents = parents.astype(np.int32)


class NodeIndex(Mapping[str, int]):
    """An expand event's id → its event index, searched in the sorted keys (no dict of millions of strings)."""

    def __init__(self, keys: np.ndarray, at: np.ndarray, prefixes: list[str]) -> None:
        self._keys, self._at, self._prefixes = keys, at, prefixes
        self._pre = {p: i for i, p in enumerate(prefixes)}
        self._sorted: tuple[np.ndarray, np.ndarray] | None = None

    def find(self, keys: np.ndarray) -> np.ndarray:
        """The event index of each key's expand (-1 when none)."""
        if self._sorted is None:
            order = np.argsort(self._keys, kind="stable")
            self._sorted = self._keys[order], self._at[order]
        sk, sat = self._sorted
        if not len(sk):
            return np.full(len(keys), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(sk, keys), len(sk) - 1)
        return np.where(sk[pos] == keys, sat[pos], -1)

    def _key(self, node: str) -> int:
        m = _ID.match(node)
        head, num = (m.group(1), int(m.group(2))) if m is not None else (node, -1)
        pre = self._pre.get(head)
        return -1 if pre is None else (pre << _NUM) | (num + 1)

    def __getitem__(self, node: str) -> int:
        key = self._key(node) if isinstance(node, str) else -1
        i = int(self.find(np.asarray([key], dtype=np.int64))[0]) if key >= 0 else -1
        if i < 0:
            raise KeyError(node)
        return i

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        mask = (1 << _NUM) - 1
        for k in self._keys.tolist():
            prefix, num = self._prefixes[k >> _NUM], (k & mask) - 1
            yield prefix if num < 0 else f"{prefix}{num}"
