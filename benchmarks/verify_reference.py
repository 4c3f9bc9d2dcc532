"""Verify every saved reference μGraph against its benchmark program (issue 3 acceptance).

For each checkpoint file, one ``Verifier`` per program (the program is evaluated once per
trial), then every graph is checked: field trials (default p, k = 3), the degree bound, and
the float64 cross-check where it applies. Prints a per-file table and every rejection with
its witness; ``--json`` writes all rows.

    .venv/bin/python benchmarks/verify_reference.py [--files gqa_bs1 lora] [--limit N] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

import mirage_lab as ml
from mirage_lab.bench import programs
from mirage_lab.bench.harness import CHECKPOINTS, find_reference_dir
from mirage_lab.progress import progress
from mirage_lab.verify import Verifier


def verify_file(path: Path, name: str, batch: int, limit: int | None, trials: int) -> list[dict[str, Any]]:
    graphs = ml.load_reference_checkpoint(path)[:limit]
    verifier = Verifier(programs.PROGRAMS[name](batch), trials=trials)
    rows = []
    for i, g in enumerate(progress(graphs, desc=path.stem, leave=False)):
        r = verifier.check(g)
        rows.append({"file": path.stem, "graph": i, "equivalent": r.equivalent, "reason": r.reason,
                     "trials": len(r.trials), "error_bound": r.error_bound, "heuristic": r.bound_is_heuristic,
                     "float_check": r.float_check.passed, "float_rel_err": r.float_check.max_rel_error,
                     "witness": str(r.witness) if r.witness else "", "seconds": r.timings["total"]})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="*", help="checkpoint stems (default: all 17)")
    ap.add_argument("--limit", type=int, help="at most N graphs per file")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--reference-dir")
    ap.add_argument("--json", help="write every row to this JSON file")
    args = ap.parse_args()
    ref_dir = find_reference_dir(args.reference_dir, "--reference-dir")
    if ref_dir is None:
        print("reference μGraphs not found; pass --reference-dir", file=sys.stderr)
        return 2
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for stem, (name, batch) in sorted(CHECKPOINTS.items()):
        if not args.files or stem in args.files:
            rows += verify_file(ref_dir / f"{stem}.json", name, batch, args.limit, args.trials)
    df = pd.DataFrame(rows)
    table = df.groupby("file").agg(graphs=("graph", "size"), verified=("equivalent", "sum"),
                                   worst_bound=("error_bound", "max"), median_s=("seconds", "median"))
    table["rejected"] = table["graphs"] - table["verified"]
    print(table.to_string(float_format=lambda v: f"{v:.3g}"))
    print(f"\n{int(df['equivalent'].sum())} of {len(df)} graphs verified; {time.perf_counter() - start:.0f} s")
    for _, row in df[~df["equivalent"]].iterrows():
        print(f"REJECTED {row['file']}[{row['graph']}]: {row['reason']}; witness: {row['witness']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
