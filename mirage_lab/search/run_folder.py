"""Run folders: the cache and the checkpoint of a search (DESIGN principle 7).

A folder is named by the program's canonical hash and the search config's hash, so the
same question maps to the same folder. Every file is written atomically (a temporary
file, then ``os.replace``), so a killed process leaves either the old file or the new one:

    program.json             the input program (own JSON format)
    config.json              the SearchConfig (without budgets); written when the search starts
    tasks.gz                 every finished task: its record (candidates, counts, oracle verdicts, time split)
                             and its events (event blocks), appended as it finishes (mirage_lab.task_log)
    candidates/<h>.json      each verified μGraph, written the moment it is verified
    events.blocks            the whole event stream in task order: the frontier's events, and where each
                             task's events lie in tasks.gz (search/run_log.py)
    verdicts.json.gz         the oracle's verdict per pruned expression
    result.json              the ranking and the SearchReport; written last
    manifest.json            the sha256 of every file above
    lock                     present while a search holds the folder (mirage_lab.search.lock)

Events are stored by column in compressed blocks (``search/event_blocks.py``, event schema version 3), each
once: in its task's entry of ``tasks.gz``, which ``events.blocks`` names. Folders written before held the
events as gzip-compressed JSON lines, twice (``events.jsonl.gz`` copied every task's log), and ``verdicts.json``
uncompressed; before that, two files per task, ``tasks/<i>.json.gz`` and ``tasks/<i>.events.jsonl.gz``, and
before that ``events.jsonl``, ``tasks/<i>.json`` and ``tasks/<i>.events.jsonl`` uncompressed; every reader takes
any of them (``events_file``, ``verdicts_file``, ``task_names``, ``task``, ``task_events``), and a resumed old
folder appends its new tasks to ``tasks.gz`` and rewrites its stream as ``events.blocks``.

**Integrity.** ``manifest.json`` maps each file's path (relative to the folder) to the sha256
of its bytes (a task's entry in ``tasks.gz`` is recorded as ``tasks.gz#<i>``). Only the process that
holds the folder's lock (the search's parent process) writes it, so it has one writer and needs no
merging. Workers return their task's events with its result, and write only ``candidates/<h>.json``
(when the run folder is on their machine), without touching the manifest, returning the hashes of what
they wrote; the parent records them together with the task's entry. The parent rewrites the
manifest at most once a second while results stream in, and always when the search stops; a file
written after the last manifest write (the parent was killed) simply has no recorded hash.
Readers (``check``) compare a file's bytes with the manifest; on a mismatch they re-read the
manifest once (a writer may have just replaced both). What a mismatch means is the reader's
decision: the runner runs a task whose files do not match again and rebuilds the files of a
finished run from its checked tasks;
``load_run`` verifies a candidate whose file does not match again and drops it if it fails.
The hashes guard against edits and damage, not against someone who rewrites the manifest too.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mirage_lab.cache import sha256_file as file_sha256
from mirage_lab.errors import FormatError, PathError, RunFolderError
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.io import graph_from_dict, read_json, write_atomic
from mirage_lab.jsonl import GZ, compress, inflate
from mirage_lab.paths import file_in_the_way, output_dir
from mirage_lab.search.config import SearchConfig
from mirage_lab.search.run_log import NAME as RUN_LOG
from mirage_lab.search.verdicts import VerdictTally
from mirage_lab.task_log import NAME as TASK_LOG
from mirage_lab.task_log import TaskLog, entry_name


class _DefaultRoot(str):
    """``"runs"``, marked as the default: a root given as this object means "not chosen" (``runs_root``)."""

    __slots__ = ()


#: where run folders go when nothing chooses: ``runs`` in the working directory
DEFAULT_ROOT = _DefaultRoot("runs")
#: an environment variable that moves the default root (the CLI's --runs and a run_dir= argument come first)
RUNS_ENV = "MIRAGE_LAB_RUNS"


def runs_root(root: str | os.PathLike[str] = DEFAULT_ROOT) -> str | os.PathLike[str]:
    """``root`` as chosen: given explicitly, itself; left at the default, ``$MIRAGE_LAB_RUNS`` or ``./runs``."""
    if root is DEFAULT_ROOT:
        return os.environ.get(RUNS_ENV, "").strip() or str(DEFAULT_ROOT)
    return root


MANIFEST = "manifest.json"
MANIFEST_FORMAT = "mirage-lab/run-manifest"
SUBFOLDERS = ("candidates",)

#: what ``check`` says about a file: nothing (intact) or one of these
CHANGED, UNRECORDED, MISSING = "was changed since the search wrote it", "has no recorded hash", "is missing"


#: the run's event stream: event blocks (schema version 3), or JSON lines, compressed or plain, in older folders
EVENTS, JSONL_EVENTS, OLD_EVENTS = RUN_LOG, "events.jsonl.gz", "events.jsonl"
VERDICTS, OLD_VERDICTS = "verdicts.json.gz", "verdicts.json"


def events_file(folder: Path) -> str:
    """The name of the run's event log: event blocks, or JSON lines (compressed, or plain) as older folders hold
    it."""
    return next((name for name in (EVENTS, JSONL_EVENTS, OLD_EVENTS) if (folder / name).exists()), EVENTS)


def verdicts_file(folder: Path) -> str:
    """The name of the run's oracle verdicts: compressed, or plain as older folders hold them."""
    return OLD_VERDICTS if not (folder / VERDICTS).exists() and (folder / OLD_VERDICTS).exists() else VERDICTS


def sha256_file(path: Path) -> str | None:
    """The sha256 of a file's bytes, or None when it does not exist (or is not a readable file)."""
    try:
        return file_sha256(path)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def check_place(folder: Path, root: Path) -> None:
    """A PathError when ``folder`` (a run folder under ``root``) cannot be a folder: it, or a folder above it, is
    a file."""
    p = file_in_the_way(folder)
    if p is None:
        return
    if p == root:
        raise PathError(f"run_dir (--runs) {root} is a file, not a folder; pass a folder to keep run folders "
                        "in (default ./runs), or run_dir=False to keep nothing")
    if p == folder:
        raise PathError(f"{folder} is a file where a run folder belongs; delete it, or pass another run_dir")
    raise PathError(f"run_dir (--runs) {root} lies below {p}, which is a file; pass a folder to keep run "
                    "folders in (default ./runs), or run_dir=False to keep nothing")


def _guarded(path: Path, write: Any) -> None:
    """``write(path)``, an unwritable run folder (disk full, made read-only) being one RunFolderError."""
    try:
        write(path)
    except (OSError, PathError) as e:
        why = e.strerror if isinstance(e, OSError) else str(e)
        raise RunFolderError(f"cannot write {path} ({why}); free some space or make the run folder writable, or "
                             "pass another run_dir") from None


class RunFolder:
    """One run folder. Reading creates nothing; ``create`` makes the folder. Every ``write`` returns the file's
    hash; the lock holder (``writer``) also records it, and ``save_manifest`` stores the record."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._hashes: dict[str, str] | None = None  # the manifest as read, plus what this process recorded
        self._dirty = False
        self._saved_at = 0.0
        self.writer = False  # the lock holder: records what it writes; its record is authoritative, never re-read
        self._tasks: TaskLog | None = None

    @staticmethod
    def name_for(program_hash: str, config_hash: str) -> str:
        """The folder name of a search: ``<program hash>-<config hash>``, 12 hex digits each."""
        return f"{program_hash[:12]}-{config_hash[:12]}"

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    def create(self) -> None:
        """Make the folder and its subfolders, checked writable; a PathError naming the place when impossible."""
        check_place(self.path, self.path.parent)
        for sub in SUBFOLDERS:
            output_dir(self.path / sub, "run folder")

    # ---- JSON documents
    def write(self, name: str, doc: Any) -> str:
        """Write ``doc`` atomically (gzip-compressed when ``name`` ends in .gz) and record its hash; returns it."""
        if name.endswith(GZ):
            return self._written(name, lambda p: write_atomic(p, compress(json.dumps(doc, separators=(",", ":")))))
        return self._written(name, lambda p: write_atomic(p, json.dumps(doc, indent=1, sort_keys=True)))

    def write_events(self, blocks: Iterable[bytes]) -> str:
        """Stream event blocks to events.blocks, atomically (a temporary file renamed into place)."""
        digest = self._written(EVENTS, lambda p: write_atomic(p, blocks))
        self._superseded(JSONL_EVENTS, OLD_EVENTS)
        return digest

    def write_verdicts(self, verdicts: VerdictTally) -> str:
        """The oracle's verdicts, to verdicts.json.gz."""
        digest = self._written(VERDICTS, lambda p: write_atomic(p, compress(verdicts.json())))
        self._superseded(OLD_VERDICTS)
        return digest

    def _superseded(self, *names: str) -> None:
        """Delete an older folder's files that a newer one replaces."""
        for name in names:
            if (self.path / name).exists():
                (self.path / name).unlink()
                self.hashes().pop(name, None)
                self._dirty = True

    def _written(self, name: str, write: Any) -> str:
        _guarded(self.path / name, write)
        digest = sha256_file(self.path / name)
        if digest is None:
            raise RunFolderError(f"{self.path / name} vanished right after it was written; is another program "
                                 "deleting files in the run folder?")
        if self.writer:
            self.record({name: digest})
        return digest

    def read(self, name: str) -> Any | None:
        p = self.path / name
        if not p.exists():
            return None
        try:
            if name.endswith(GZ):
                try:
                    return json.loads(inflate(p.read_bytes(), p))
                except ValueError as e:  # (json's complaint; inflate raises FormatError itself)
                    raise FormatError(str(e)) from None
            return read_json(p)
        except FormatError as e:
            raise FormatError(f"{p} is damaged ({e}); delete it (or the whole run folder) to recompute it") from None

    def holds(self, name: str, doc: Any) -> bool:
        """Whether the folder holds ``doc`` as ``name`` (False when it holds none); a RunFolderError when it holds
        another (an edit, or a hash collision of folder names)."""
        have = self.read(name)
        if have is None:
            return False
        if have != json.loads(json.dumps(doc, sort_keys=True)):
            raise RunFolderError(f"{self.path / name} differs from this search's {name.removesuffix('.json')}: it "
                                 "was edited, or the folder belongs to another search. Restore the file, delete "
                                 "the folder to search again, or pass another run_dir")
        return True

    def ensure(self, name: str, doc: Any) -> None:
        """Write ``doc`` unless the folder already holds it, as recorded (a reformatted copy is rewritten)."""
        if not self.holds(name, doc) or self.check(name) is not None:
            self.write(name, doc)

    # ---- integrity
    def hashes(self, reload: bool = False) -> dict[str, str]:
        """The recorded sha256 per file (empty when the manifest is missing or damaged)."""
        if self._hashes is None or (reload and not self.writer):
            doc: Any = None
            try:
                doc = read_json(self.path / MANIFEST) if (self.path / MANIFEST).is_file() else None
            except FormatError:
                doc = None
            ok = isinstance(doc, dict) and doc.get("format") == MANIFEST_FORMAT and isinstance(doc.get("sha256"),
                                                                                                 dict)
            self._hashes = {str(k): str(v) for k, v in doc["sha256"].items()} if ok else {}
        return self._hashes

    def check(self, name: str) -> str | None:
        """None when ``name``'s bytes match the manifest; else what is wrong (CHANGED, UNRECORDED or MISSING)."""
        actual, recorded = self._sha256(name), self.hashes().get(name)
        if actual is not None and actual == recorded:
            return None
        if not self.writer:  # a writer may have replaced the file and the manifest since we read the manifest
            recorded = self.hashes(reload=True).get(name)
            actual = self._sha256(name)
            if actual is not None and actual == recorded:
                return None
        return MISSING if actual is None else UNRECORDED if recorded is None else CHANGED

    def _sha256(self, name: str) -> str | None:
        """A file's sha256, or a task entry's (``tasks.gz#<i>``)."""
        if name.startswith(f"{TASK_LOG}#"):
            index = name.partition("#")[2]
            return self.tasks.digest(int(index)) if index.isdigit() else None
        return sha256_file(self.path / name)

    def damaged(self, names: Iterable[str]) -> list[str]:
        """``"<name> <what is wrong>"`` for each of ``names`` that does not match the manifest."""
        return [f"{n} {why}" for n in names if (why := self.check(n)) is not None]

    def record(self, hashes: dict[str, str]) -> None:
        """Record files' hashes (ours, or reported by the workers that wrote them)."""
        self.hashes().update(hashes)
        self._dirty = True

    def save_manifest(self, every: float = 0.0) -> None:
        """Store the record (if it changed and ``every`` seconds have passed since the last store)."""
        if not self._dirty or time.monotonic() - self._saved_at < every:
            return
        doc = {"format": MANIFEST_FORMAT, "version": 1, "sha256": dict(sorted(self.hashes().items()))}
        _guarded(self.path / MANIFEST, lambda p: write_atomic(p, json.dumps(doc, indent=0)))
        self._dirty, self._saved_at = False, time.monotonic()

    def remove_temporaries(self) -> None:
        """Delete what killed writers left (temporary files, partial event logs); only the lock holder calls it."""
        for sub in ("", *SUBFOLDERS):
            for p in (self.path / sub).glob(".*.tmp"):
                p.unlink(missing_ok=True)
        for p in (self.path / "tasks").glob("*.part"):  # (older folders')
            p.unlink(missing_ok=True)
        self.tasks.repair()

    # ---- tasks and candidates
    @property
    def tasks(self) -> TaskLog:
        """The finished tasks' log (``tasks.gz``)."""
        if self._tasks is None:
            self._tasks = TaskLog(self.path / TASK_LOG)
        return self._tasks

    def task_names(self, index: int) -> tuple[str, ...]:
        """What holds a finished task, as the manifest names it: its entry in ``tasks.gz``, or, in folders
        written before that, its record and event log files (compressed, or older still, plain)."""
        if index in self.tasks:
            return (entry_name(index),)
        for names in ((f"tasks/{index}.json.gz", f"tasks/{index}.events.jsonl.gz"),
                      (f"tasks/{index}.json", f"tasks/{index}.events.jsonl")):
            if (self.path / names[0]).exists():
                return names
        return (entry_name(index),)

    def task_count(self) -> int:
        """How many tasks the folder holds finished."""
        old = {p.name.split(".")[0] for p in self.path.glob("tasks/*.json*") if not p.name.endswith(".part")}
        return len(old | {str(i) for i in self.tasks.entries()})

    def task(self, index: int) -> dict[str, Any] | None:
        names = self.task_names(index)
        return self.tasks.record(index) if len(names) == 1 else self.read(names[0])

    def task_events(self, index: int) -> bytes:
        """A finished task's event log as gzip members (an older folder's plain log compressed on the way)."""
        names = self.task_names(index)
        if len(names) == 1:
            return self.tasks.events(index)
        raw = (self.path / names[1]).read_bytes()
        return raw if names[1].endswith(GZ) else compress(raw.decode())

    def save_task(self, index: int, doc: dict[str, Any], events: bytes, head: bytes | None = None) -> None:
        """Append a finished task (its record, encoded already when ``head`` is given, and its compressed events)
        to ``tasks.gz`` and record its hash."""
        try:
            digest = self.tasks.append(index, doc, events, head)
        except OSError as e:
            raise RunFolderError(f"cannot write {self.path / TASK_LOG} ({e.strerror}); free some space or make the "
                                 "run folder writable, or pass another run_dir") from None
        self.record({entry_name(index): digest})

    @staticmethod
    def candidate_name(graph_hash: str) -> str:
        return f"candidates/{graph_hash[:16]}.json"

    def save_candidate(self, doc: dict[str, Any]) -> str:
        return self.write(self.candidate_name(doc["hash"]), doc)

    # ---- what a finished (or interrupted) search left, for views and scripts
    def program(self) -> KernelGraph:
        """The searched program."""
        return graph_from_dict(self._identity("program.json", "is it a run folder (runs/<program>-<config>)?"))

    def config(self) -> SearchConfig:
        """The search's config (budgets are not stored: a run folder answers the same question at any budget)."""
        return SearchConfig.from_json(self._identity("config.json", "the search never started; rerun it"))

    def _identity(self, name: str, hint: str) -> Any:
        """program.json or config.json, refused when edited since the search wrote it."""
        doc = self.read(name)
        if doc is None:
            raise PathError(f"{self.path} has no {name}; {hint}")
        if self.check(name) == CHANGED:
            raise RunFolderError(f"{self.path / name} {CHANGED} (its sha256 differs from manifest.json): every "
                                 "result in the folder answers another question now. Restore the file, or delete the "
                                 "folder and search again")
        return doc

    def verdicts(self) -> dict[str, Any]:
        """The oracle's verdict (reason, rules) per pruned expression."""
        return self.read(verdicts_file(self.path)) or {}
