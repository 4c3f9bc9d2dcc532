"""Write the benchmark definitions (SPEC §9) as data: ``data/benchmarks/``.

The programs are defined in code (``mirage_lab.bench.programs``; the hand-written fused μGraphs in
``mirage_lab.bench.fused``). This script saves each at batch 1 and 8 in mirage-lab's own JSON format
(``ml.load`` reads it, and so can any tool), and writes ``index.csv``: one row per file, with the
formula, the input and output shapes, the search preset the CLI uses, and the reference checkpoint
files for that program and batch. ``tests/bench/test_benchmark_data.py`` fails when the files drift
from the code; rerun this script then.

    .venv/bin/python scripts/export_benchmarks.py [--out data/benchmarks]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.bench.harness import CHECKPOINTS
from mirage_lab.cli.sources import PRESET_OF_BENCHMARK

ROOT = Path(__file__).resolve().parents[1]
BATCHES = (1, 8)


def definitions() -> dict[str, tuple[ml.KernelGraph, dict[str, object]]]:
    """file name → (graph, its index row), for every program and fused graph at batch 1 and 8."""
    out: dict[str, tuple[ml.KernelGraph, dict[str, object]]] = {}
    for name, make in programs.PROGRAMS.items():
        for b in BATCHES:
            for kind, graph in [("program", make(b))] + ([("fused", fused.FUSED[name](b))] if name in fused.FUSED
                                                          else []):
                file = f"{name}_bs{b}.json" if kind == "program" else f"fused_{name}_bs{b}.json"
                out[file] = (graph, {
                    "file": file, "program": name, "batch": b, "kind": kind,
                    "formula": (make.__doc__ or "").split("\n")[0].replace("``", ""),
                    "inputs": " ".join(str(t) for t in graph.input_types),
                    "outputs": " ".join(str(t) for t in graph.output_types),
                    "kernels": len(graph.compute_nodes), "preset": PRESET_OF_BENCHMARK.get(name, "mlp"),
                    "reference_checkpoints": " ".join(s for s, (p, bb) in CHECKPOINTS.items() if (p, bb) == (name, b)),
                })
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "data" / "benchmarks"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for file, (graph, row) in definitions().items():
        ml.save(graph, out / file)
        rows.append(row)
    pd.DataFrame(rows).to_csv(out / "index.csv", index=False)
    print(f"wrote {len(rows)} μGraphs and index.csv to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
