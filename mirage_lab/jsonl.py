"""JSON lines stored as a series of gzip members, with random access to any line.

A search's events are long runs of near-identical short lines: gzip shrinks them about 18×. Written as
*several* gzip members (one per flush of a worker's log, one per stretch of the search's own events),
the file is still one valid gzip stream (``gzip.open`` and ``zcat`` read members one after another), so
a task's compressed log is spliced into the run's log byte for byte, and a reader that knows where each
member starts decompresses only the member holding the line it wants (``MemberFile``). Plain ``.jsonl``
files, as older run folders hold them, read through the same functions.
"""

from __future__ import annotations

import bisect
import gzip
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

from mirage_lab.errors import FormatError

GZ = ".gz"
#: bytes read from the file at a time while scanning members
CHUNK = 1 << 20
#: decompressed members kept for random access
CACHED_MEMBERS = 4
#: the most one gzip member may expand to: a worker's flush is a few MB, so anything far larger is no log
#: we wrote (a decompression bomb in a folder someone handed over), refused before it fills memory
MAX_MEMBER = 256 << 20


def compress(text: str) -> bytes:
    """One gzip member (no timestamp, so equal text gives equal bytes)."""
    return gzip.compress(text.encode(), compresslevel=6, mtime=0)


def inflate(raw: bytes, path: Path) -> bytes:
    """One gzip member's bytes, refused (``FormatError``) beyond ``MAX_MEMBER`` or when damaged."""
    d = zlib.decompressobj(wbits=31)
    try:
        data = d.decompress(raw, MAX_MEMBER + 1)
    except zlib.error as e:
        raise FormatError(f"{path} is not valid gzip ({e})") from None
    if len(data) > MAX_MEMBER or d.unconsumed_tail:
        raise too_large(path, 0)
    return data


def too_large(path: Path, at: int) -> FormatError:
    """The refusal of a gzip member at byte ``at`` of ``path`` that expands beyond ``MAX_MEMBER``."""
    return FormatError(f"{path}: the gzip member at byte {at} expands beyond {MAX_MEMBER >> 20} MiB, which no "
                       "search writes; the file is not a run folder's (delete it, or the folder, and search again)")


def read_lines(path: Path) -> Iterator[str]:
    """The non-empty lines of a plain or gzip-compressed JSONL file."""
    with (gzip.open(path, "rt") if path.name.endswith(GZ) else open(path)) as f:
        for line in f:
            if line.strip():
                yield line


def members(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """(compressed offset, uncompressed offset, uncompressed bytes) of each gzip member of ``path``."""
    comp = plain = 0
    pending = b""
    with open(path, "rb") as f:
        while True:
            if not pending:
                pending = f.read(CHUNK)
                if not pending:
                    return
            d = zlib.decompressobj(wbits=31)  # one gzip member
            parts, start, size = [], comp, 0
            while True:
                try:
                    parts.append(d.decompress(pending, MAX_MEMBER + 1 - size))
                except zlib.error as e:
                    raise FormatError(f"{path} is not a complete gzip file at byte {comp} ({e})") from None
                size += len(parts[-1])
                if size > MAX_MEMBER or d.unconsumed_tail:
                    raise too_large(path, start)
                if d.eof:
                    comp += len(pending) - len(d.unused_data)
                    pending = d.unused_data
                    break
                comp += len(pending)
                pending = f.read(CHUNK)
                if not pending:
                    raise FormatError(f"{path} ends inside a gzip member (at byte {comp}): the file is truncated")
            data = b"".join(parts)
            yield start, plain, data
            plain += len(data)


class MemberFile:
    """Random access to the lines of a multi-member gzip file, by uncompressed offset."""

    def __init__(self, path: Path, comp_starts: list[int], plain_starts: list[int]) -> None:
        self.path, self.comp_starts, self.plain_starts = path, comp_starts, plain_starts
        self._cache: OrderedDict[int, bytes] = OrderedDict()

    def line_at(self, offset: int) -> bytes:
        k = bisect.bisect_right(self.plain_starts, offset) - 1
        data = self._member(k)
        start = offset - self.plain_starts[k]
        end = data.find(b"\n", start)
        return data[start:] if end < 0 else data[start:end + 1]

    def _member(self, k: int) -> bytes:
        if k in self._cache:
            self._cache.move_to_end(k)
            return self._cache[k]
        with open(self.path, "rb") as f:
            f.seek(self.comp_starts[k])
            end = self.comp_starts[k + 1] if k + 1 < len(self.comp_starts) else None
            raw = f.read() if end is None else f.read(end - self.comp_starts[k])
        data = inflate(raw, self.path)
        self._cache[k] = data
        if len(self._cache) > CACHED_MEMBERS:
            self._cache.popitem(last=False)
        return data
