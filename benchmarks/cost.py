"""Proxy cost (SPEC §8.1 [lab]) of every benchmark program: unfused, hand-fused, and the best saved reference graph.

For each program of ``mirage_lab.bench.programs`` and each batch size, prints the proxy cost of the
unfused program, of the hand-written fused μGraph (``mirage_lab.bench.fused``, where there is one) and
of the cheapest graph (under the proxy) of each reference checkpoint file for that program and batch,
with ``unfused/this``: the proxy speed-up over the unfused program. Every figure is a **proxy**
(a roofline estimate), not a measurement. ``equivalent`` is the stored verdict of
``benchmarks/verify_reference.py`` (``data/verify_reference_cpu.json``) on the chosen reference graph,
where that file has one: no QKNorm+GQA reference graph computes its program (docs/decisions.md).

With ``--ranking`` it instead prints, per reference file and hardware preset, the issue-6 check: how
many of the file's graphs the proxy ranks ahead of the unfused program, and the best graph's proxy
time against the unfused program's (also written to ``--json``).

    .venv/bin/python benchmarks/cost.py [--hardware H100] [--batches 1 8] [--programs gqa lora]
                                        [--reference-dir DIR] [--json out.json] [--ranking]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.bench.harness import CHECKPOINTS, find_reference_dir
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.optimize.cost import HARDWARE, CostEstimate, proxy_cost

VERDICTS = Path(__file__).resolve().parents[1] / "data" / "verify_reference_cpu.json"


def load_verdicts(path: Path) -> dict[tuple[str, int], bool]:
    """(checkpoint stem, graph index) → verified equivalent, from verify_reference.py's --json output."""
    if not path.is_file():
        return {}
    return {(r["file"], int(r["graph"])): bool(r["equivalent"]) for r in json.loads(path.read_text())}


def row(program: str, batch: int, graph: str, cost: CostEstimate, unfused: CostEstimate,
        count: int | None = None, equivalent: bool | None = None) -> dict[str, Any]:
    return {"program": program, "batch": batch, "graph": graph, "kernels": cost.launches,
            "DRAM MB": cost.bytes_moved / 1e6, "L2 MB": cost.l2_bytes_moved / 1e6, "GFLOP": cost.flops / 1e9,
            "proxy µs": cost.seconds * 1e6, "unfused/this": unfused.seconds / cost.seconds,
            "graphs in file": count, "equivalent": equivalent, "kind": cost.kind, "hardware": cost.hardware}


def best(graphs: list[KernelGraph], hardware: str) -> tuple[int, CostEstimate]:
    costs = [proxy_cost(g, hardware) for g in graphs]
    i = min(range(len(costs)), key=lambda j: costs[j].seconds)
    return i, costs[i]


def ranking(ref_dir: Path, names: list[str], batches: list[int]) -> list[dict[str, Any]]:
    """Per (file, hardware): graphs cheaper than the unfused program, and best vs unfused proxy µs."""
    rows = []
    for stem, (name, batch) in CHECKPOINTS.items():
        if name not in names or batch not in batches:
            continue
        graphs = ml.load_reference_checkpoint(ref_dir / f"{stem}.json")
        for hw in HARDWARE:
            unfused = proxy_cost(programs.PROGRAMS[name](batch), hw).seconds
            costs = [proxy_cost(g, hw).seconds for g in graphs]
            i = min(range(len(costs)), key=costs.__getitem__)
            rows.append({"file": stem, "program": name, "batch": batch, "hardware": hw,
                         "ahead": sum(c < unfused for c in costs), "graphs": len(costs), "best": i,
                         "best proxy µs": costs[i] * 1e6, "unfused proxy µs": unfused * 1e6,
                         "best ahead": costs[i] < unfused, "kind": "proxy"})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hardware", default="H100", choices=list(HARDWARE))
    ap.add_argument("--batches", nargs="*", type=int, default=[1, 8])
    ap.add_argument("--programs", nargs="*", choices=list(programs.PROGRAMS), help="default: all")
    ap.add_argument("--reference-dir")
    ap.add_argument("--verdicts", default=str(VERDICTS), help="verify_reference.py JSON rows (optional)")
    ap.add_argument("--json", help="write every row (and each graph's per-kernel costs) to this JSON file")
    ap.add_argument("--ranking", action="store_true",
                    help="per reference file and preset: graphs ranked ahead of the unfused program")
    args = ap.parse_args()
    ref_dir = find_reference_dir(args.reference_dir, "--reference-dir")
    if args.ranking:
        if ref_dir is None:
            print("--ranking needs the reference μGraphs (pass --reference-dir)", file=sys.stderr)
            return 2
        rank_rows = ranking(ref_dir, args.programs or list(programs.PROGRAMS), args.batches)
        table = pd.DataFrame(rank_rows)
        print("PROXY ranking (roofline estimate, not a measurement): reference graphs vs the unfused program")
        print(table.drop(columns=["kind"]).to_string(index=False, float_format=lambda v: f"{v:.3g}"))
        totals = table.groupby("hardware")[["ahead", "graphs"]].sum()
        for hw, r in totals.iterrows():
            print(f"{hw}: {r['ahead']}/{r['graphs']} reference graphs ranked ahead of their unfused program; "
                  f"best of every file ahead: {bool(table[table['hardware'] == hw]['best ahead'].all())}")
        if args.json:
            Path(args.json).write_text(json.dumps({"kind": "proxy", "rows": rank_rows}, indent=1))
        return 0
    if ref_dir is None:
        print("reference μGraphs not found (pass --reference-dir); reporting programs and fused graphs only",
              file=sys.stderr)
    verdicts = load_verdicts(Path(args.verdicts))
    rows: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    for name in args.programs or programs.PROGRAMS:
        for batch in args.batches:
            unfused = proxy_cost(programs.PROGRAMS[name](batch), args.hardware)
            entries: list[tuple[str, CostEstimate, int | None, bool | None]] = [("unfused", unfused, None, None)]
            if name in fused.FUSED:
                entries.append(("fused", proxy_cost(fused.FUSED[name](batch), args.hardware), None, None))
            for stem, (prog, b) in sorted(CHECKPOINTS.items()):
                if ref_dir is not None and prog == name and b == batch:
                    graphs = ml.load_reference_checkpoint(ref_dir / f"{stem}.json")
                    i, cost = best(graphs, args.hardware)
                    entries.append((f"ref {stem}[{i}]", cost, len(graphs), verdicts.get((stem, i))))
            for label, cost, count, equivalent in entries:
                rows.append(row(name, batch, label, cost, unfused, count, equivalent))
                details.append({"program": name, "batch": batch, "graph": label, **cost.to_dict()})
    df = pd.DataFrame(rows).drop(columns=["kind", "hardware"])
    df["graphs in file"] = df["graphs in file"].map(lambda v: "" if pd.isna(v) else str(int(v)))
    df["equivalent"] = df["equivalent"].map({True: "yes", False: "NO"}).fillna("")
    print(f"PROXY cost on {args.hardware} (roofline estimate, not a measurement; SPEC §8.1)")
    print(df.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    if args.json:
        Path(args.json).write_text(json.dumps({"kind": "proxy", "hardware": args.hardware,
                                               "hardware_figures": vars(HARDWARE[args.hardware]),
                                               "rows": rows, "graphs": details}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
