"""The write lock of a run folder: one search at a time writes into it.

``RunLock(folder)`` takes an exclusive ``fcntl.flock`` on ``<folder>/lock``. The kernel releases
a flock when its holder dies, so ``kill -9`` leaves no stale lock: the next search finds the lock
file (with the dead holder's details) but takes the lock at once. While it holds the lock, the
holder records who it is in the file (pid, host, start time, command), and a search that finds
the folder held prints one line naming the holder, then waits. On release the holder deletes the
file before unlocking; a waiter that then wins the lock on the deleted file notices (the path no
longer names the inode it locked) and locks the new file instead, so two processes never both
believe they hold the folder.

Readers (``load_run``, the cache path of ``superoptimize``) take no lock: every file is replaced
atomically and the manifest tells them whether what they read belongs together. ``holder``
peeks (never waits) to say who is writing when a reader finds the folder mid-write.

Without ``fcntl`` (Windows) the lock does nothing.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from mirage_lab.errors import RunFolderError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCK = "lock"


LOG = logging.getLogger(__name__)


def _stderr(line: str) -> None:
    """Say that the search waits for another (a warning: shown without any logging set up)."""
    LOG.warning(line)


def describe(holder: dict[str, Any] | None) -> str:
    """``pid 123 on host (since 2024-05-01 12:00:00, python search.py)``, or a vaguer phrase."""
    if not holder:
        return "another process"
    command = f", {holder['command']}" if holder.get("command") else ""
    return f"pid {holder.get('pid', '?')} on {holder.get('host', '?')} (since {holder.get('started', '?')}{command})"


class RunLock:
    """``with RunLock(folder):`` — hold ``folder`` for writing; waits (saying for whom) while another holds it."""

    def __init__(self, folder: Path, notify: Callable[[str], None] = _stderr) -> None:
        self.folder, self.path, self.notify = folder, folder / LOCK, notify
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        if fcntl is None:
            return self
        told = False
        while True:
            fd = self._open()
            try:
                if not self._try(fd) and not self._try(fd, patience=0.05):  # a reader's peek lasts microseconds
                    if not told:
                        self.notify(f"run folder {self.folder} is being searched by {describe(self._info(fd))}; "
                                    "waiting for it to finish (Ctrl-C to stop waiting)")
                        told = True
                    fcntl.flock(fd, fcntl.LOCK_EX)
                if self._current(fd):
                    break
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # we locked a file its holder deleted on release: lock the new one
        self._fd = fd
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "started": datetime.datetime.now().isoformat(sep=" ", timespec="seconds"),
                "command": " ".join(sys.argv)[:200]}
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()  # before unlocking: see the module docstring
        os.close(self._fd)  # closing releases the flock
        self._fd = None

    def _open(self) -> int:
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise RunFolderError(f"cannot create the lock file {self.path} ({e.strerror}); a search must be able to "
                                 "write its run folder: make it writable, or pass another run_dir") from None

    @staticmethod
    def _try(fd: int, patience: float = 0.0) -> bool:
        time.sleep(patience)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _current(self, fd: int) -> bool:
        """Does the lock path still name the file we locked?"""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)

    @staticmethod
    def _info(fd: int) -> dict[str, Any] | None:
        try:
            doc = json.loads(os.pread(fd, 4096, 0) or b"null")
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None

    @staticmethod
    def holder(folder: Path) -> dict[str, Any] | None:
        """Who holds ``folder`` now (their recorded details; ``{}`` when they wrote none yet), or None when no
        one does. Peeks without waiting and creates nothing."""
        if fcntl is None:
            return None
        try:
            fd = os.open(folder / LOCK, os.O_RDONLY)
        except OSError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return RunLock._info(fd) or {}
            return None
        finally:
            os.close(fd)
