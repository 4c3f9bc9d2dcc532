"""Run every bad input we know of and count what a user would see: a clear error, an unclear one, silence, or a
raw traceback — or nothing at all within the time limit (a hang). The goal is zero silent, zero tracebacks and zero
hangs.

    .venv/bin/python scripts/bad_inputs.py [--json out.json] [--verbose]

Two tables: ``tests/trust/bad_inputs.py`` (the command line and the API: paths, program files, settings, keywords,
sizes) and ``tests/ir/test_errors.py`` (invalid graphs, maps and JSON files, each with its exact error class).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mirage_lab.errors import MirageError  # noqa: E402
from tests.trust.bad_inputs import CASES, Case, Outcome, Workspace, run_case, summarize  # noqa: E402


def run_trust_table(limit: float) -> list[tuple[Case, Outcome]]:
    """Each case in a forked child, killed after ``limit`` seconds: a bad input that starts a search instead of
    being refused, or a write that waits on a pipe, counts as a hang, and no case can leave state behind."""
    results = []
    fork = multiprocessing.get_context("fork")
    for case in CASES:
        with tempfile.TemporaryDirectory(prefix="mirage_bad_") as tmp:
            receive, send = fork.Pipe(duplex=False)
            child = fork.Process(target=_run_in_child, args=(case, Path(tmp), send))
            child.start()
            send.close()
            outcome = receive.recv() if receive.poll(limit) else None
            child.kill()
            child.join()
            results.append((case, outcome or Outcome("hang", f"still running after {limit:.0f} s")))
        print(f"[{len(results)}/{len(CASES)}] {results[-1][1].kind:9} {case.id}", file=sys.stderr, flush=True)
    return results


def _run_in_child(case: Case, tmp: Path, send: Any) -> None:
    os.chdir(tmp)
    os.environ["MIRAGE_LAB_CACHE"] = str(tmp / "cache")
    try:
        outcome = run_case(case, Workspace(tmp))
    except BaseException as e:  # SystemExit and the like: whatever escaped is a traceback for the user
        outcome = Outcome("traceback", f"{type(e).__name__}: {e}")
    send.send(outcome)


def run_ir_table() -> list[tuple[Case, Outcome]]:
    """tests/ir/test_errors.py's cases: each must raise exactly its error class, naming every needle."""
    from tests.ir.test_errors import CASES as IR_CASES

    results = []
    for param in IR_CASES:
        build, error, needles = param.values
        case = Case(f"ir:{param.id}", error, tuple(needles), call=lambda w, b=build: b(w.root))
        with tempfile.TemporaryDirectory(prefix="mirage_bad_ir_") as tmp:
            results.append((case, _exact(case, Path(tmp))))
    return results


def _exact(case: Case, tmp: Path) -> Outcome:
    assert case.call is not None
    try:
        case.call(_Root(tmp))
    except MirageError as e:
        missing = [n for n in case.says if n not in str(e)]
        if type(e) is case.expect and not missing:
            return Outcome("clear", f"{type(e).__name__}: {e}")
        return Outcome("unclear", f"{type(e).__name__}: {e} (missing {missing})")
    except Exception as e:
        return Outcome("traceback", f"{type(e).__name__}: {e}")
    return Outcome("silent", "no error")


class _Root:
    def __init__(self, root: Path) -> None:
        self.root = root


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="write every case's outcome here")
    p.add_argument("--verbose", action="store_true", help="print every case, not only the ones that are not clear")
    p.add_argument("--case-timeout", type=float, default=60.0, help="seconds before a case counts as a hang: a "
                   "bad input that starts a search (or waits on a pipe) instead of being refused")
    args = p.parse_args()
    start = time.perf_counter()
    tables = {"cli + api (tests/trust)": run_trust_table(args.case_timeout),
              "graphs and files (tests/ir)": run_ir_table()}
    rows: list[dict[str, Any]] = []
    print(f"{'table':30} {'surface':8} {'tried':>6} {'clear':>6} {'unclear':>8} {'silent':>7} {'traceback':>10} "
          f"{'hang':>5}")
    for name, results in tables.items():
        for surface in sorted({c.surface for c, _ in results}):
            part = [(c, o) for c, o in results if c.surface == surface]
            n = summarize(part)
            print(f"{name:30} {surface:8} {n['tried']:>6} {n['clear']:>6} {n['unclear']:>8} {n['silent']:>7} "
                  f"{n['traceback']:>10} {n['hang']:>5}")
        rows += [{"table": name, "id": c.id, "surface": c.surface, "kind": o.kind, "detail": o.detail}
                 for c, o in results]
    total = summarize([(c, o) for results in tables.values() for c, o in results])
    print(f"{'all':30} {'':8} {total['tried']:>6} {total['clear']:>6} {total['unclear']:>8} {total['silent']:>7} "
          f"{total['traceback']:>10} {total['hang']:>5}   ({time.perf_counter() - start:.0f} s)")
    for r in rows:
        if args.verbose or r["kind"] != "clear":
            print(f"  {r['kind']:9} {r['id']}: {r['detail'][:300]}")
    if args.json:
        Path(args.json).write_text(json.dumps({"counts": total, "cases": rows}, indent=1))
    return 0 if total["silent"] == total["traceback"] == total["hang"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
