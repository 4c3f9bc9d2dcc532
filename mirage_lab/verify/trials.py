"""The program's trials evaluated once per machine, shared through ``/dev/shm`` by the processes that verify.

Every search worker checks candidates against the program's outputs on the same random trials (``Verifier.program``),
and evaluating them is the costliest step of a worker's first verification (2.7 s for GQA b1, 5.9 s and 1.4 GB for
RMSNorm b1), paid again by every worker of a pool or cluster. ``SharedTrials`` lets the first process on a machine
that needs a trial evaluate it and write its arrays to ``/dev/shm`` (under a lock, so the others wait rather than
evaluate it too); every other process maps the files read-only, which costs neither the time nor a second copy of
the memory. The files are named by what determines the trials (the program, the field, the seed, the trial), so a
reader gets exactly what it would have evaluated. The folder is the user's own (mode 0700); one another user owns
or could write is never read, since the trials decide what verifies. The process that wrote them removes them when
it exits (a reader that has mapped them keeps its view), and the search's parent removes them when the search ends.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from mirage_lab.semantics.field import FieldValue

#: where the shared trials live: a memory-backed file system on Linux
ROOT = Path("/dev/shm")
PREFIX = "mirage-lab-trials-"

Program = tuple[list[FieldValue], list[FieldValue], tuple[str, ...]]


class SharedTrials:
    """The trials of one verification question (``key``), shared by the processes of this machine."""

    def __init__(self, key: str, root: Path = ROOT) -> None:
        self.dir = root / f"{PREFIX}{key}"

    @classmethod
    def usable(cls, root: Path = ROOT) -> bool:
        return root.is_dir() and os.access(root, os.W_OK)

    @staticmethod
    def key(*parts: Any) -> str:
        return hashlib.sha256(json.dumps([str(p) for p in parts]).encode()).hexdigest()[:24]

    def get(self, trial: int, evaluate: Callable[[], Program]) -> Program:
        """Trial ``trial``'s inputs, outputs and digests: mapped from this machine's copy, or evaluated (and written
        for the others) when no process has yet."""
        folder = self.dir / str(trial)
        with contextlib.suppress(OSError):
            self.dir.mkdir(mode=0o700, exist_ok=True)
        if not self._ours():  # another user's (or a planted) folder: trust nothing in it, evaluate here
            return evaluate()
        got = self._read(folder)
        if got is not None:
            return got
        with open(self.dir / f"{trial}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one process evaluates; the others wait for its files
            got = self._read(folder)
            if got is not None:
                return got
            value = evaluate()
            with contextlib.suppress(OSError):  # (a full /dev/shm: this process keeps its own copy only)
                self._write(folder, value)
                atexit.register(self.remove)
            return value

    def _ours(self) -> bool:
        """Whether the folder is this user's and no one else may write it (as the caches are: mode 0700). The
        trials decide what verifies, so files another user could have placed are never read."""
        try:
            st = self.dir.lstat()
        except OSError:
            return False
        return self.dir.is_dir() and not self.dir.is_symlink() and st.st_uid == os.getuid() and not st.st_mode & 0o077

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    @staticmethod
    def _write(folder: Path, value: Program) -> None:
        ins, outs, digests = value
        tmp = folder.with_name(f"{folder.name}.tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name, values in (("in", ins), ("out", outs)):
            for i, v in enumerate(values):
                np.save(tmp / f"{name}{i}p.npy", np.asarray(v.p))
                np.save(tmp / f"{name}{i}q.npy", np.asarray(v.q))
        (tmp / "meta.json").write_text(json.dumps({"ins": len(ins), "outs": len(outs), "digests": list(digests)}))
        tmp.rename(folder)  # (atomic: readers see a whole trial or none)

    @staticmethod
    def _read(folder: Path) -> Program | None:
        try:
            meta = json.loads((folder / "meta.json").read_text())

            def values(name: str, n: int) -> list[FieldValue]:
                return [FieldValue(np.load(folder / f"{name}{i}p.npy", mmap_mode="r"),
                                   np.load(folder / f"{name}{i}q.npy", mmap_mode="r")) for i in range(n)]

            return values("in", meta["ins"]), values("out", meta["outs"]), tuple(meta["digests"])
        except (OSError, ValueError, KeyError):  # not written yet, or removed meanwhile: evaluate instead
            return None


def shared_key(verifier: Any) -> str:
    """The name of ``verifier``'s shared trials: what determines them (``Verifier.share_trials``)."""
    return SharedTrials.key(verifier.reference.canonical_hash(), verifier.field, verifier.seed, verifier.parity,
                            type(verifier.ns).__name__, verifier.backend)


def remove_all(key: str, root: Path = ROOT) -> None:
    """Remove a search's shared trials from this machine (the search's parent, when it ends)."""
    SharedTrials(key, root).remove()
