"""The run folders under a root: what each holds, as a table, and removing the ones no longer wanted.

``runs_table("runs")`` (and ``mirage-lab runs``) lists every run folder with its program, state, size and
best μGraph. ``remove_runs`` deletes the selected ones: those last written before a given age, or all. It
never touches a folder a search holds (its lock), or a directory that is not a run folder. ``keep_best``
first saves each removed run's best μGraph as ``<root>/best/<folder>.json``, a graph file every command
reads.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mirage_lab.errors import FormatError, InputError, MirageError, PathError
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.search.lock import RunLock, describe
from mirage_lab.search.run_folder import DEFAULT_ROOT, RunFolder, runs_root

if TYPE_CHECKING:
    import pandas as pd

#: ``<program hash>-<config hash>``, as ``RunFolder.name_for`` names folders
FOLDER_NAME = re.compile(r"^[0-9a-f]{12}-[0-9a-f]{12}$")
#: where ``keep_best`` saves the best μGraphs of removed runs, inside the root
BEST_FOLDER = "best"


@dataclass(frozen=True)
class RunInfo:
    """One run folder, as the table shows it."""

    path: Path
    program: str
    state: str
    tasks: str
    verified: int | None
    best: str | None
    best_kernels: int | None
    best_cost_us: float | None
    bytes: int
    files: int
    modified: dt.datetime

    def row(self) -> dict[str, Any]:
        return {"run": self.path.name, "program": self.program, "state": self.state, "tasks": self.tasks,
                "verified": self.verified, "best": self.best, "best kernels": self.best_kernels,
                "best cost µs": self.best_cost_us, "MB": round(self.bytes / 1e6, 2), "files": self.files,
                "modified": self.modified.strftime("%Y-%m-%d %H:%M")}


def run_folders(root: str | os.PathLike[str] = DEFAULT_ROOT) -> list[Path]:
    """The run folders directly under ``root`` (named ``<program hash>-<config hash>``, holding program.json)."""
    base = Path(runs_root(root))
    if not base.exists():
        return []
    if not base.is_dir():
        raise PathError(f"{base} is a file; name the folder that holds run folders (default {DEFAULT_ROOT!r})")
    return sorted(p for p in base.iterdir()
                  if p.is_dir() and FOLDER_NAME.match(p.name) and (p / "program.json").is_file())


def describe_run(path: Path, names: dict[str, str] | None = None) -> RunInfo:
    """What the folder holds, read without changing it (a damaged file shows as such, not as an error)."""
    folder = RunFolder(path)
    size, count, latest = folder_usage(path)
    result = _read(folder, "result.json")
    try:
        program = folder.program()
        label = (names or {}).get(program.canonical_hash()) or _ops(program)
    except MirageError as e:  # damaged, or edited since the search (RunFolderError): listed, not fatal
        label = f"unreadable program ({e})"
    holder = RunLock.holder(path)
    total = folder.task_count()
    best = best_kernels = best_cost = verified = None
    if holder is not None:
        state, tasks = f"running ({describe(holder)})", f"{total} done"
    elif isinstance(result, dict) and "report" in result:
        report = result["report"]
        state, tasks = str(report.get("stop_reason")), f"{report.get('tasks_done')}/{report.get('tasks_total')}"
        ranking = result.get("ranking") or []
        verified = len(ranking)
        if ranking:
            best = ranking[0][:12]
            best_cost = round(float(result.get("costs", {}).get(ranking[0], float("nan"))) * 1e6, 2)
            graph = _best_graph(folder, ranking[0])
            best_kernels = None if graph is None else len(graph.compute_nodes)
    else:
        state, tasks = "unfinished (run the search again to resume it)", f"{total} done"
    return RunInfo(path, label, state, tasks, verified, best, best_kernels, best_cost, size, count,
                   dt.datetime.fromtimestamp(latest))


def runs_table(root: str | os.PathLike[str] = DEFAULT_ROOT) -> pd.DataFrame:
    """Every run folder under ``root``: program, state, tasks, verified, best μGraph, size, last write."""
    import pandas as pd  # here, not at the top: search workers never load pandas
    names = benchmark_names()
    rows = [describe_run(p, names).row() for p in run_folders(root)]
    columns = ["run", "program", "state", "tasks", "verified", "best", "best kernels", "best cost µs", "MB",
               "files", "modified"]
    return pd.DataFrame(rows, columns=columns)


def remove_runs(root: str | os.PathLike[str] = DEFAULT_ROOT, *, older_than_s: float | None = None,
                everything: bool = False, keep_best: bool = False, dry_run: bool = False) -> pd.DataFrame:
    """Delete the run folders last written more than ``older_than_s`` seconds ago (or ``everything``).

    Returns what happened to each selected folder. Folders a search holds stay. ``keep_best`` saves each
    removed run's best μGraph to ``<root>/best/<folder>.json`` first; ``dry_run`` only says what would go.
    """
    import pandas as pd  # here, not at the top: search workers never load pandas
    if older_than_s is None and not everything:
        raise InputError("say which runs to remove: older_than_s=SECONDS (--older-than 7d), or everything=True "
                         "(--all)")
    if older_than_s is not None and older_than_s < 0:
        raise InputError(f"older_than_s must be ≥ 0, got {older_than_s}")
    now, rows = time.time(), []
    for path in run_folders(root):
        size, _, latest = folder_usage(path)
        if not everything and older_than_s is not None and now - latest < older_than_s:
            continue
        rows.append({"run": path.name, "MB": round(size / 1e6, 2), **_remove(path, keep_best, dry_run)})
    return pd.DataFrame(rows, columns=["run", "MB", "action", "best kept in"])


def _remove(path: Path, keep_best: bool, dry_run: bool) -> dict[str, Any]:
    holder = RunLock.holder(path)
    if holder is not None:
        return {"action": f"kept: a search holds it ({describe(holder)})", "best kept in": None}
    kept = None
    if keep_best:
        result = _read(RunFolder(path), "result.json")
        ranking = result.get("ranking") if isinstance(result, dict) else None
        graph = _best_graph(RunFolder(path), ranking[0]) if ranking else None
        if graph is not None:
            kept = path.parent / BEST_FOLDER / f"{path.name}.json"
            if not dry_run:
                from mirage_lab.ir.io import save

                kept.parent.mkdir(exist_ok=True)
                save(graph, kept)
    if not dry_run:
        shutil.rmtree(path)
    return {"action": "would remove" if dry_run else "removed", "best kept in": None if kept is None else str(kept)}


def _best_graph(folder: RunFolder, graph_hash: str) -> KernelGraph | None:
    doc = _read(folder, RunFolder.candidate_name(graph_hash))
    if not isinstance(doc, dict) or "graph" not in doc:
        return None
    from mirage_lab.ir.io import graph_from_dict

    try:
        return graph_from_dict(doc["graph"])
    except (FormatError, InputError):
        return None


def _read(folder: RunFolder, name: str) -> Any:
    try:
        return folder.read(name)
    except FormatError:
        return None


def folder_usage(path: Path) -> tuple[int, int, float]:
    """Bytes, files and the newest modification time under ``path``."""
    size = count = 0
    latest = path.stat().st_mtime
    for parent, _, files in os.walk(path):
        for name in files:
            try:
                st = os.stat(os.path.join(parent, name))
            except OSError:  # (a search replacing it right now)
                continue
            size, count, latest = size + st.st_size, count + 1, max(latest, st.st_mtime)
    return size, count, latest


def _ops(program: KernelGraph) -> str:
    dims = ", ".join("×".join(map(str, t.dims)) for t in program.input_types)
    return f"{' → '.join(n.op.value for n in program.compute_nodes)} [{dims}]"


def benchmark_names() -> dict[str, str]:
    """canonical hash → ``name:batch`` for the paper's programs at batch 1 and 8 (for readable rows)."""
    from mirage_lab.bench.programs import PROGRAMS

    names = {}
    for name, build in PROGRAMS.items():
        for batch in (1, 8):
            with contextlib.suppress(MirageError):  # (a program without that batch size: nothing to name)
                names[build(batch).canonical_hash()] = f"{name}:{batch}"
    return names
