"""Ablation by check: the search run again with each named check switched off, one at a time.

``ablate(program, config)`` runs the search as configured (every check on), then once per optional check the
config applies (``checks.active_checks``, less those correctness needs) with that check named in
``SearchConfig.disabled_checks``, each under the same time limit, and records states, μGraphs checked and
verified, the stop reason, wall seconds and the best μGraph's proxy cost. A search a check's absence lets run
into its time limit stops early, so its states and seconds are lower bounds (``stop`` says so).

``mirage-lab ablate RUN`` writes the sweep of a run folder's program and config to ``RUN/ablation.json``
(``ABLATION_FILE``), which ``mirage-lab report RUN --figures`` draws (``check_ablation_figure``).
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mirage_lab.errors import FormatError, InputError
from mirage_lab.ir.builder import as_graph
from mirage_lab.ir.io import write_atomic
from mirage_lab.search.checks import BY_NAME, CHECKS, active_checks, refused_checks
from mirage_lab.search.config import SearchConfig

__all__ = ["ABLATION_FILE", "ALL_ON", "FORMAT", "ablate", "optional_checks", "read_ablation", "write_ablation"]

ABLATION_FILE = "ablation.json"
FORMAT = "mirage-lab/ablation"
ALL_ON = "all checks on"  # the baseline row's name


def optional_checks(config: SearchConfig) -> list[str]:
    """The checks a walk with ``config`` applies that can be switched off, in the walk's order."""
    on = active_checks(config)
    return [c.name for c in CHECKS if c.name in on and not c.required]


def _row(name: str, config: SearchConfig, program: Any, executor: Any, repeats: int) -> dict[str, Any]:
    from mirage_lab.search.runner import superoptimize

    walls = []
    for _ in range(repeats):  # the states are the same each time; the fastest wall is the least disturbed
        t0 = time.perf_counter()
        res = superoptimize(program, config, executor=executor, run_dir=False, progress=False)
        walls.append(time.perf_counter() - t0)
    wall = min(walls)
    best = res.best
    return {"check": name, "states": res.report.states, "checked": sum(res.report.candidates.values()),
            "verified": res.report.verified, "stop": res.report.stop_reason, "wall_s": round(wall, 3),
            "best_proxy_us": res.costs[best.hash] * 1e6 if best is not None else None,
            "best": best.hash[:16] if best is not None else None}


def ablate(program: Any, config: SearchConfig, checks: Sequence[str] | None = None, *, executor: Any = "serial",
           repeats: int = 1, log: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """The sweep (module docstring) as a JSON-ready dict: ``rows`` holds the baseline (``ALL_ON``) and one row
    per check switched off. ``checks`` restricts it to some of ``optional_checks(config)``; each search runs
    ``repeats`` times and keeps its fastest wall time (the first run of a process also pays for imports)."""
    if repeats < 1:
        raise InputError(f"ablate: repeats must be at least 1, got {repeats}")
    prog = as_graph(program)
    base = config.replace(disabled_checks=())
    chosen = optional_checks(base) if checks is None else list(checks)
    inactive = [c for c in chosen if c in BY_NAME and c not in active_checks(base)]
    refused = refused_checks(tuple(chosen)) or (f"{inactive} are not applied by this config, so switching them "
                                                "off changes nothing" if inactive else None)
    if refused:
        raise InputError(f"ablate: {refused}; choose among {optional_checks(base)}")
    rows = []
    for name in (ALL_ON, *chosen):
        log(f"ablation: {name if name == ALL_ON else name + ' off'} …")
        cfg = base if name == ALL_ON else base.replace(disabled_checks=(name,))
        rows.append(_row(name, cfg, prog, executor, repeats))
    return {"format": FORMAT, "version": 1, "program": repr(prog), "config": repr(base),
            "time_limit_s": base.time_limit_s, "executor": str(executor), "repeats": repeats,
            "hardware": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
            "rows": rows}


def write_ablation(doc: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    import json

    return write_atomic(Path(path), json.dumps(doc, indent=1))


def read_ablation(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A sweep ``ablate`` wrote; a FormatError names what is wrong and how to write one."""
    import json

    p = Path(path)
    fix = "write one with `mirage-lab ablate RUN` (or mirage_lab.search.ablation.ablate)"
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise InputError(f"no ablation sweep at {str(p)!r}; {fix}") from None
    except (OSError, ValueError) as e:
        raise FormatError(f"{str(p)!r} is not an ablation sweep ({e}); {fix}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("rows"), list) \
            or not doc["rows"] or doc["rows"][0].get("check") != ALL_ON:
        raise FormatError(f"{str(p)!r} is not an ablation sweep (format {FORMAT!r}, a first row {ALL_ON!r}); {fix}")
    return doc
