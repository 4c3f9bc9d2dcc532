"""A search run's event log, indexed for random access without holding every event in memory.

A run's events are stored by column (``events.blocks``, event schema version 3): opening it reads only each
block's index stream (labels, ids, counts) into numpy arrays and works out every event's parent with array
operations (``search/run_log.py``); a full event is decoded only when a view asks for it, from its block's
details alone (the last few blocks kept decoded). Older logs are JSON lines: one pass reads each line's kind,
verdict and parent and remembers its byte offset (in the uncompressed stream, for a gzip-compressed log, plus
where each gzip member starts); a full event is parsed again only when asked for, decompressing just its member.
Runs with millions of events then cost a few bytes per event, and any step, filter or jump is an array operation.
"""

from __future__ import annotations

import json
import re
from collections import Counter, OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mirage_lab.errors import FormatError, InputError
from mirage_lab.jsonl import CHUNK, GZ, MemberFile, members
from mirage_lab.progress import progress as progress_report
from mirage_lab.search import EVENTS, LABELS, OUTCOMES, PRUNE_REASONS, EventBlock, RunLog, is_schema, schema_version

CODE = {label: i for i, label in enumerate(LABELS)}

GROUPS = {"expand": ("expand",), "pruned": tuple(f"pruned:{r}" for r in PRUNE_REASONS),
          "candidate": tuple(f"candidate:{o}" for o in OUTCOMES), "verified": ("candidate:verified",)}


#: the line shapes EventLog writes (compact JSON, fixed key order): read without a JSON parse, which is
#: ~10x faster; any other line falls back to json.loads
_FAST = re.compile(rb'^\{"e":"(expand|prune|candidate)","(?:id|parent|node)":(?:"([^"]*)"|null)'
                   rb'(?:,"parent":(?:"([^"]*)"|null))?(?:,"(?:why|outcome)":"(\w+)")?')
_COUNT = re.compile(rb',"n":(\d+)\}\s*$')
BLOCK = 1 << 16  # events per block of the kept counts (``EventIndex.counts``)
CACHED_BLOCKS = 8  # event blocks kept decoded (a path to the root touches a few)


def label_of(ev: dict[str, Any]) -> str:
    kind = ev.get("e")
    if kind == "expand":
        return "expand"
    if kind == "prune":
        return f"pruned:{ev.get('why')}"
    if kind == "candidate":
        return f"candidate:{ev.get('outcome')}"
    raise FormatError(f"unknown event kind {kind!r}")


class EventIndex:
    """Labels, parents and weights of every event of one run's event log (``events.blocks``, or, in older folders,
    JSON lines, plain or gzip-compressed, with each line's byte offset), and each event on demand."""

    def __init__(self, path: str | Path, progress: bool = True) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise InputError(f"{self.path} does not exist; a run folder holds its event log once its search has "
                             "finished (pass run_dir= to ml.superoptimize to keep one)")
        self._members: MemberFile | None = None  # a compressed log's members (set by _read)
        self._blocks: OrderedDict[int, EventBlock] = OrderedDict()  # (event blocks) the blocks last decoded
        self.node_index: Mapping[str, int]  # expand id → event index
        if self.path.name == EVENTS:
            cols = RunLog(self.path.parent).columns()
            self.node_index, self._located, self.block_starts = cols.node_index, cols.located, cols.block_starts
            self.offsets = np.zeros(0, dtype=np.int64)  # (JSON lines only)
            self.labels, self.parents, self.weights = cols.codes, cols.parents, cols.weights
        else:
            offsets: list[int] = []
            labels: list[int] = []
            parents: list[int] = []
            weights: list[int] = []
            nodes: dict[str, int] = {}
            self.node_index = nodes
            self._read(progress, offsets, labels, parents, weights, nodes)
            self.offsets = np.asarray(offsets, dtype=np.int64)
            self.labels = np.asarray(labels, dtype=np.int8)
            self.parents = np.asarray(parents, dtype=np.int32)  # index of the parent expand event, -1 for the root
            self.weights = np.asarray(weights, dtype=np.int64)  # counted prunes stand for n rejections
        self._children: tuple[np.ndarray, np.ndarray] | None = None
        self._cum: np.ndarray | None = None  # (``counts``) weighted counts per label before each block
        self._per_label: np.ndarray | None = None

    def nbytes(self) -> int:
        """The memory the index's arrays take."""
        return sum(a.nbytes for a in (self.offsets, self.labels, self.parents, self.weights))

    def _read(self, progress: bool, offsets: list[int], labels: list[int], parents: list[int],
              weights: list[int], nodes: dict[str, int]) -> None:
        size = self.path.stat().st_size
        with progress_report(total=size, unit="B", unit_scale=True, desc="events", disable=not progress,
                             leave=False) as bar:
            pos = lineno = 0
            for comp, data in self._chunks():
                for line in data.splitlines(keepends=True):
                    lineno += 1
                    if line.strip() and not (lineno == 1 and self._schema(line)):
                        self._add(line, lineno, pos, offsets, labels, parents, weights, nodes)
                    pos += len(line)
                bar.update(comp - bar.n)

    def _chunks(self) -> Iterator[tuple[int, bytes]]:
        """(bytes of the file read so far, the next piece of the uncompressed log), ending on line ends;
        for a compressed log, each gzip member, whose starts are recorded for ``event``."""
        if not self.path.name.endswith(GZ):
            with open(self.path, "rb") as f:
                while chunk := f.read(CHUNK) + f.readline():
                    yield f.tell(), chunk
            return
        comp_starts: list[int] = []
        plain_starts: list[int] = []
        for comp, plain, data in members(self.path):
            comp_starts.append(comp)
            plain_starts.append(plain)
            yield comp, data
        self._members = MemberFile(self.path, comp_starts, plain_starts)

    def _schema(self, line: bytes) -> bool:
        """Whether the log's first line is its schema line (checked: ``schema_version``); older logs have none."""
        try:
            ev = json.loads(line)
        except ValueError:
            return False  # (``_add`` says what is wrong with it)
        if not (isinstance(ev, dict) and is_schema(ev)):
            return False
        schema_version(ev, self.path)
        return True

    def _add(self, line: bytes, lineno: int, pos: int, offsets: list[int], labels: list[int], parents: list[int],
             weights: list[int], nodes: dict[str, int]) -> None:
        kind, node, parent, label, n = self._fields(line, lineno)
        if kind == "expand":
            nodes[node or ""] = len(offsets)
        offsets.append(pos)
        labels.append(CODE[label])
        parents.append(-1 if parent is None else nodes.get(parent, -1))
        weights.append(n)

    def _fields(self, line: bytes, lineno: int) -> tuple[str, str | None, str | None, str, int]:
        """(kind, own id, parent id, label, weight) of one line."""
        m = _FAST.match(line)
        if m is not None and (m.group(1) == b"expand") == (m.group(4) is None):
            kind = m.group(1).decode()
            first = None if m.group(2) is None else m.group(2).decode()
            if kind == "expand":
                parent = None if m.group(3) is None else m.group(3).decode()
                return kind, first, parent, "expand", 1
            label = f"{'pruned' if kind == 'prune' else 'candidate'}:{m.group(4).decode()}"
            if label in CODE:
                count = _COUNT.search(line) if kind == "prune" else None
                return kind, None, first, label, int(count.group(1)) if count else 1
        try:
            ev = json.loads(line)
            label = label_of(ev)
            CODE[label]
        except (ValueError, KeyError, FormatError) as e:
            raise FormatError(f"{self.path}:{lineno} is not a search event ({e}); the file is damaged — "
                              f"delete the run folder's {self.path.name} and rerun the search to rebuild it") from None
        parent = ev.get("node") if ev["e"] == "candidate" else ev.get("parent")
        return ev["e"], ev.get("id"), parent, label, int(ev.get("n", 1))

    def __len__(self) -> int:
        return len(self.labels)

    def __repr__(self) -> str:
        return f"EventIndex({str(self.path)!r}, {len(self)} events, {len(self.node_index)} states)"

    def event(self, i: int) -> dict[str, Any]:
        """Event ``i``, parsed from the file."""
        if not 0 <= i < len(self):
            raise InputError(f"no event {i}: the run has {len(self)} events")
        if self.path.name == EVENTS:
            k = int(np.searchsorted(self.block_starts, i, side="right")) - 1
            return self._block(k).event(i - int(self.block_starts[k]))
        if self._members is not None:
            line = self._members.line_at(int(self.offsets[i]))
        else:
            with open(self.path, "rb") as f:
                f.seek(int(self.offsets[i]))
                line = f.readline()
        ev: dict[str, Any] = json.loads(line)
        return ev

    def _block(self, k: int) -> EventBlock:
        """Event block ``k``, decoded (kept among the last ``CACHED_BLOCKS``)."""
        b = self._blocks.get(k)
        if b is None:
            b = self._blocks[k] = EventBlock(*self._located[k])
            if len(self._blocks) > CACHED_BLOCKS:
                self._blocks.popitem(last=False)
        else:
            self._blocks.move_to_end(k)
        return b

    def label(self, i: int) -> str:
        return LABELS[int(self.labels[i])]

    def codes(self, labels: Sequence[str]) -> np.ndarray:
        bad = sorted(set(labels) - set(CODE))
        if bad:
            raise InputError(f"unknown verdicts {bad}; choose from {list(LABELS)} or the groups {list(GROUPS)}")
        return np.asarray([CODE[x] for x in labels], dtype=np.int8)

    def counts(self, upto: int | None = None) -> Counter[str]:
        """Rejections per verdict (counted prunes weighted by how many they stand for), up to event ``upto``.

        Each step asks for this, so sums per block of ``BLOCK`` events are kept (built once): one count adds
        the blocks before ``upto`` and the rest of its own block, whatever the run's size."""
        end = len(self) if upto is None else max(0, min(upto, len(self)))
        cum = self._cumulative()
        start = (end // BLOCK) * BLOCK
        totals = cum[end // BLOCK] + np.bincount(self.labels[start:end], weights=self.weights[start:end],
                                                 minlength=len(LABELS))
        return Counter({LABELS[i]: int(n) for i, n in enumerate(totals) if n})

    def events_per_label(self) -> np.ndarray:
        """How many events carry each label (in ``LABELS`` order), counted once."""
        if self._per_label is None:
            self._per_label = np.bincount(self.labels, minlength=len(LABELS))
        return self._per_label

    def _cumulative(self) -> np.ndarray:
        """Row k: the weighted counts per label of the events before ``k * BLOCK``."""
        if self._cum is None:
            blocks = [np.bincount(self.labels[a:a + BLOCK], weights=self.weights[a:a + BLOCK], minlength=len(LABELS))
                      for a in range(0, (len(self) // BLOCK) * BLOCK, BLOCK)]
            self._cum = np.cumsum(np.vstack([np.zeros(len(LABELS)), *blocks]), axis=0)
        return self._cum

    def children(self, i: int) -> np.ndarray:
        """The events whose parent is expand event ``i``, in order (built once, on first use)."""
        if self._children is None:
            order = np.argsort(self.parents, kind="stable")
            self._children = (order, self.parents[order])
        order, sorted_parents = self._children
        # (the keys in the array's own dtype: int64 keys would make numpy convert the whole array each call)
        lo, hi = np.searchsorted(sorted_parents, np.asarray([i, i + 1], dtype=sorted_parents.dtype))
        return order[lo:hi]

    def ancestors(self, i: int) -> list[int]:
        """Expand events from the root down to ``i``'s parent."""
        out = []
        cur = int(self.parents[i])
        while cur >= 0:
            out.append(cur)
            cur = int(self.parents[cur])
        return out[::-1]
