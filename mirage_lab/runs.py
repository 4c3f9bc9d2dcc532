"""Run folders: the cache and the checkpoint of a search (DESIGN principle 7).

A folder is named by the program's canonical hash and the search config's hash, so the
same question maps to the same folder. Every file is written atomically (a temporary
file, then ``os.replace``), so a killed process leaves either the old file or the new one:

    program.json        the input program (own JSON format)
    config.json         the SearchConfig
    tasks/<i>.json      one finished task: its events, candidates and time split
    candidates/<h>.json each verified μGraph, written the moment it is verified
    events.jsonl        the whole event stream, assembled in task order
    result.json         the ranking and the SearchReport; written last
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mirage_lab.errors import FormatError, InputError
from mirage_lab.ir.io import read_json, write_atomic

DEFAULT_ROOT = "runs"


class RunFolder:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        (self.path / "tasks").mkdir(parents=True, exist_ok=True)
        (self.path / "candidates").mkdir(exist_ok=True)

    @staticmethod
    def name_for(program_hash: str, config_hash: str) -> str:
        """The folder name of a search: ``<program hash>-<config hash>``, 12 hex digits each."""
        return f"{program_hash[:12]}-{config_hash[:12]}"

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    # ---- JSON documents
    def write(self, name: str, doc: Any) -> Path:
        return write_atomic(self.path / name, json.dumps(doc, indent=1, sort_keys=True))

    def read(self, name: str) -> Any | None:
        p = self.path / name
        if not p.exists():
            return None
        try:
            return read_json(p)
        except FormatError as e:
            raise FormatError(f"{p} is damaged ({e}); delete it (or the whole run folder) to recompute it") from None

    def ensure(self, name: str, doc: Any) -> None:
        """Write ``doc`` unless the folder already holds it; a different one means a hash collision or tampering."""
        have = self.read(name)
        if have is None:
            self.write(name, doc)
        elif have != json.loads(json.dumps(doc, sort_keys=True)):
            raise InputError(f"{self.path / name} differs from this search's {name}; the folder belongs to another "
                             "search. Use another run_dir, or delete the folder")

    # ---- tasks and candidates
    def task(self, index: int) -> dict[str, Any] | None:
        return self.read(f"tasks/{index}.json")

    def save_task(self, index: int, doc: dict[str, Any]) -> None:
        self.write(f"tasks/{index}.json", doc)

    def save_candidate(self, doc: dict[str, Any]) -> None:
        self.write(f"candidates/{doc['hash'][:16]}.json", doc)

    # ---- what a finished (or interrupted) search left, for views and scripts
    def program(self) -> Any:
        """The searched program (a KernelGraph)."""
        from mirage_lab.ir.io import graph_from_dict

        doc = self.read("program.json")
        if doc is None:
            raise InputError(f"{self.path} has no program.json; is it a run folder (runs/<program>-<config>)?")
        return graph_from_dict(doc)

    def config(self) -> Any:
        """The SearchConfig (budgets are not stored: a run folder answers the same question at any budget)."""
        from mirage_lab.search.config import SearchConfig

        doc = self.read("config.json")
        if doc is None:
            raise InputError(f"{self.path} has no config.json: the search never finished a task; rerun it")
        return SearchConfig.from_json(doc)

    def verdicts(self) -> dict[str, Any]:
        """The oracle's verdict (reason, rules) per pruned expression."""
        return self.read("verdicts.json") or {}

    def write_events(self, lines: Iterable[str]) -> Path:
        """Stream JSONL lines to events.jsonl, atomically (a temporary file renamed into place)."""
        return write_atomic(self.path / "events.jsonl", lines)
