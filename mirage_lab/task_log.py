"""A run folder's finished tasks, in one append-only file (``tasks.gz``) instead of two files per task.

Each finished task is one *entry*: a gzip member holding its record (one JSON line: counts, candidates,
verdicts, times, and ``events_bytes``), then the task's event log exactly as its worker encoded it
(event blocks, ``search/event_blocks.py``; gzip-compressed JSON lines in folders written before event schema
version 3), ``events_bytes`` long. The run's ``events.blocks`` splices each task's log in by naming where it lies
here (``search/run_log.py``), so the events are stored once, and a reader finds every entry by decompressing
only the small records.

Only the search's parent process (the lock holder) appends, so the file has one writer. An append is
one ``write`` of the whole entry; a parent killed mid-write leaves a partial entry at the end, which
readers ignore and the next lock holder cuts off (``repair``) before appending. The manifest records
each entry's sha256 under ``tasks.gz#<index>`` (``RunFolder.check``), so a changed entry runs again as
a changed per-task file did. The same index may appear twice (a task run again after its entry was
found changed): the last complete entry wins.

Folders written before this file existed keep ``tasks/<i>.json[.gz]`` and ``tasks/<i>.events.jsonl[.gz]``,
and ``RunFolder`` reads those too.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from mirage_lab import jsonl
from mirage_lab.jsonl import compress

NAME = "tasks.gz"
#: bytes handed to zlib at a time while reading a record
CHUNK = 1 << 16


def entry_name(index: int) -> str:
    """The manifest's name for a task's entry."""
    return f"{NAME}#{index}"


@dataclass(frozen=True)
class Entry:
    """Where one task's entry lies in the file: [start, end), its record's member ending at ``events_at``."""

    start: int
    events_at: int
    end: int


def record_member(index: int, record: dict[str, Any], events_bytes: int) -> bytes:
    """A task's record as the first gzip member of its entry. A worker encodes it for a task it walked whole
    (``search/task.py``): done by the parent, encoding LoRA b1's 10 694 records took 3.6 s of the 20 s of CPU the
    parent of a 2-worker cluster spends while its workers walk."""
    return compress(json.dumps({**record, "index": index, "events_bytes": events_bytes}, separators=(",", ":"))
                    + "\n")


class TaskLog:
    """The ``tasks.gz`` of one run folder (see the module doc)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[int, Entry] | None = None
        self._complete_to = 0  # the end of the last complete entry: where the next append goes

    def __repr__(self) -> str:
        return f"TaskLog({str(self.path)!r}, {len(self.entries())} tasks)"

    def entries(self) -> dict[int, Entry]:
        """Task index → its (last complete) entry; scanned once, then kept up to date by ``append``."""
        if self._entries is None:
            self._entries, self._complete_to = self._scan()
        return self._entries

    def __contains__(self, index: int) -> bool:
        return index in self.entries()

    def record(self, index: int) -> dict[str, Any] | None:
        e = self.entries().get(index)
        if e is None:
            return None
        with open(self.path, "rb") as f:
            doc, _ = _record_at(f, e.start, self.path)
        return doc

    def events(self, index: int) -> bytes:
        """The task's event log: its worker's gzip members, byte for byte."""
        e = self.entries()[index]
        return self._read(e.events_at, e.end)

    def digest(self, index: int) -> str | None:
        """The sha256 of the task's entry, or None when there is none."""
        e = self.entries().get(index)
        return None if e is None else hashlib.sha256(self._read(e.start, e.end)).hexdigest()

    def append(self, index: int, record: dict[str, Any], events: bytes, head: bytes | None = None) -> str:
        """Add a finished task; returns the entry's sha256 (for the manifest). ``head``: the record as
        ``record_member`` encodes it, when the worker that walked the task did that already."""
        entries = self.entries()
        head = head or record_member(index, record, len(events))
        data = head + events
        with open(self.path, "ab") as f:
            if f.tell() != self._complete_to:  # a partial entry at the end: cut it off first
                f.truncate(self._complete_to)
                f.seek(self._complete_to)
            f.write(data)  # (no fsync: like the folder's other writes, this guards against killed processes)
        start = self._complete_to
        entries[index] = Entry(start, start + len(head), start + len(data))
        self._complete_to = start + len(data)
        return hashlib.sha256(data).hexdigest()

    def repair(self) -> None:
        """Cut off a partial entry a killed writer left at the end (only the lock holder calls this)."""
        self.entries()
        if self.path.exists() and self.path.stat().st_size > self._complete_to:
            with open(self.path, "r+b") as f:
                f.truncate(self._complete_to)

    # -- reading
    def read(self, start: int, end: int) -> bytes:
        """The file's bytes [start, end)."""
        return self._read(start, end)

    def _read(self, start: int, end: int) -> bytes:
        with open(self.path, "rb") as f:
            f.seek(start)
            return f.read(end - start)

    def _scan(self) -> tuple[dict[int, Entry], int]:
        """Every complete entry, reading only the records (each log is skipped by its length)."""
        if not self.path.exists():
            return {}, 0
        entries: dict[int, Entry] = {}
        at = 0
        with open(self.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            while at < size:
                try:
                    doc, events_at = _record_at(f, at, self.path)
                except _Partial:
                    break
                end = events_at + int(doc.get("events_bytes", -1))
                if end < events_at or end > size or not isinstance(doc.get("index"), int):
                    break  # cut short mid-log (or not an entry we wrote): what follows cannot be trusted
                entries[doc["index"]] = Entry(at, events_at, end)
                at = end
        return entries, at


class _Partial(Exception):
    """The bytes at an offset are not a complete record member."""


def _record_at(f: BinaryIO, at: int, path: Path) -> tuple[dict[str, Any], int]:
    """The record whose gzip member starts at byte ``at`` of ``f``, and where that member ends."""
    d = zlib.decompressobj(wbits=31)
    parts: list[bytes] = []
    size, fed = 0, at
    f.seek(at)
    while not d.eof:  # a piece at a time: a record is small, the log after it need not be read
        piece = f.read(CHUNK)
        if not piece:
            raise _Partial
        try:
            parts.append(d.decompress(piece, jsonl.MAX_MEMBER + 1 - size))
        except zlib.error:
            raise _Partial from None
        size += len(parts[-1])
        if size > jsonl.MAX_MEMBER or d.unconsumed_tail:
            raise jsonl.too_large(path, at)
        fed += len(piece)
    try:
        doc = json.loads(b"".join(parts))
    except ValueError:
        raise _Partial from None
    if not isinstance(doc, dict):
        raise _Partial
    return doc, fed - len(d.unused_data)
