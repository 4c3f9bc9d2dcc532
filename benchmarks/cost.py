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

With ``--leave-one-out`` it evaluates the calibrated model (``optimize/calibration.py``) on a measured table
(``--table``, default ``data/timings/NVIDIA_H200.csv``): the candidates of each point are the table's μGraph
rows (unfused, as CuPy ran it; fused and its codegen ablation, each under its ``CodegenOptions``; search best;
reference graphs when ``--reference-dir`` has them), torch rows are baselines, not candidates. Each program is
predicted by the model fitted on the other programs; the pick at each point is compared with the measured best
(within 1.15×?), and pairs measuring ≥ 1.3× apart that share a figure are counted, before (today's roofline
proxy) and after, in one run. ``--fit`` refits on the whole table and writes ``mirage_lab/optimize/fitted.py``.

    .venv/bin/python benchmarks/cost.py [--hardware H100] [--batches 1 8] [--programs gqa lora]
                                        [--reference-dir DIR] [--json out.json] [--ranking]
    .venv/bin/python benchmarks/cost.py --leave-one-out [--table CSV] [--fit] [--json out.json]
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
from mirage_lab.bench.kernel_graphs import SEARCH_BEST_DIR
from mirage_lab.codegen.options import PLAIN, CodegenOptions
from mirage_lab.codegen.plan import prepare
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.io import load
from mirage_lab.optimize.calibration import Calibration, Sample, choice_quality, fit, leave_one_out, term_table
from mirage_lab.optimize.cost import HARDWARE, CostEstimate, proxy_cost
from mirage_lab.progress import progress

ROOT = Path(__file__).resolve().parents[1]
VERDICTS = ROOT / "data" / "verify_reference_cpu.json"
TABLE = ROOT / "data" / "timings" / "NVIDIA_H200.csv"
SEARCH_BEST = SEARCH_BEST_DIR
FITTED = ROOT / "mirage_lab" / "optimize" / "fitted.py"
#: the codegen ablation's row labels (mirage_lab.bench.timing) and the options each was generated with
ABLATION = {"fused": CodegenOptions(), "fused (no prefetch)": CodegenOptions(prefetch=False),
            "fused (no tensor cores)": CodegenOptions(tensor_cores=False),
            "fused (no padding)": CodegenOptions(padding=False),
            "fused (no async copies)": CodegenOptions(async_copies=False),
            "fused (no split sums)": CodegenOptions(split_sums=False), "fused (plain loops)": PLAIN}


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


def table_samples(table: pd.DataFrame, ref_dir: Path | None, search_best: Path = SEARCH_BEST
                  ) -> tuple[list[Sample], list[str]]:
    """The candidates of a measured table as samples (the graph as the CUDA backend prepared it, its options),
    and a note per row left out (baselines, failures, wrong results, rows whose graph is not here)."""
    samples: list[Sample] = []
    skipped: list[str] = []
    for r in table.itertuples(index=False):
        what = f"{r.program} b{r.batch} {r.graph}"
        result = str(getattr(r, "result", "") or "")
        if not (isinstance(r.median_us, float) and r.median_us > 0) or (isinstance(r.error, str) and r.error):
            skipped.append(f"{what}: no time ({r.error})")
            continue
        if result and result not in ("ok", "nan"):
            skipped.append(f"{what}: {result}")
            continue
        graph: KernelGraph | None = None
        options: CodegenOptions | None = CodegenOptions()
        if r.graph == "torch":
            skipped.append(f"{what}: a baseline, not a candidate")
            continue
        if r.graph == "unfused":  # CuPy op by op: the program's kernel ops as library calls
            graph, options = programs.PROGRAMS[r.program](r.batch), None
        elif r.graph in ABLATION and r.program in fused.FUSED:
            graph, options = prepare(fused.FUSED[r.program](r.batch)), ABLATION[r.graph]
        elif r.graph == "search best" and (search_best / f"{r.program}_bs{r.batch}.json").is_file():
            found = load(search_best / f"{r.program}_bs{r.batch}.json")
            graph = prepare(found) if isinstance(found, KernelGraph) else None
        elif "[" in r.graph and ref_dir is not None:
            stem, index = r.graph.rstrip("]").split("[")
            if (ref_dir / f"{stem}.json").is_file():
                graph = prepare(ml.load_reference_checkpoint(ref_dir / f"{stem}.json")[int(index)])
        if graph is None:
            skipped.append(f"{what}: its graph or backend is not modelled here")
            continue
        samples.append(Sample(r.program, int(r.batch), r.graph, graph, options, r.median_us * 1e-6))
    return samples, skipped


def evaluate(args: argparse.Namespace, ref_dir: Path | None) -> int:
    """--leave-one-out (and --fit): the calibrated model's picks against the measured best, before and after."""
    import hashlib

    path = Path(args.table)
    table = pd.read_csv(path)
    hw = preset_of(table)
    samples, skipped = table_samples(table, ref_dir)
    terms = term_table(samples, hw)
    after = leave_one_out(samples, hw, table=terms, progress=lambda xs: progress(list(xs), desc="leave one out"))
    frame = pd.DataFrame({"program": [s.program for s in samples], "batch": [s.batch for s in samples],
                          "graph": [s.label for s in samples], "measured_s": [s.measured_s for s in samples],
                          "before_s": [proxy_cost(s.graph, hw).seconds for s in samples], "after_s": after})
    points_before, before = choice_quality(frame, "before_s")
    points_after, summary = choice_quality(frame, "after_s")
    shown = points_after.rename(columns={"pick": "pick (after)", "pick_us": "µs", "ratio": "ratio",
                                         "within": "within", "ties": "ties"})
    shown.insert(4, "pick (before)", points_before["pick"])
    shown.insert(5, "ratio before", points_before["ratio"])
    print(f"Calibrated cost model on {path.name} ({hw}), each program predicted by the fit on the others; "
          f"{len(samples)} candidates, {len(skipped)} rows left out")
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    for name, s in (("before (roofline proxy)", before), ("after (calibrated, leave one out)", summary)):
        print(f"{name}: pick within {s['within_factor']}× of the measured best at {s['within']}/{s['points']} "
              f"points ({s['share_within']:.0%}); {s['ties']} pairs ≥ {s['tie_apart']}× apart share a figure")
    full = fit(samples, hw, table=terms, provenance={
        "table": f"data/timings/{path.name}", "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "hardware": hw, "programs": sorted({s.program for s in samples}), "fitted_by": "benchmarks/cost.py --fit"})
    print(f"fit on the whole table: latency {full.latency_s * 1e9:.0f} ns, burst {full.burst}, "
          f"log-RMSE {full.provenance['log_rmse']}; weights " +
          ", ".join(f"{k} {v:.3g}" for k, v in full.weights.items()))
    if args.fit:
        write_fitted(full, FITTED)
        print(f"wrote {FITTED.relative_to(ROOT)}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "kind": "leave-one-out evaluation of the calibrated cost model", "table": str(path.name), "hardware": hw,
            "before": before, "after": summary, "skipped": skipped, "fit": full.to_dict(),
            "points_before": points_before.to_dict("records"), "points_after": points_after.to_dict("records"),
            "rows": frame.to_dict("records")}, indent=1, default=str))
    return 0


def preset_of(table: pd.DataFrame) -> str:
    names = set(table["hardware"].dropna().astype(str))
    if len(names) != 1 or next(iter(names)) not in HARDWARE:
        raise SystemExit(f"the table should name one hardware preset of {list(HARDWARE)}, it names {sorted(names)}")
    return names.pop()


def write_fitted(cal: Calibration, path: Path) -> None:
    """The fitted constants as a module (``optimize/fitted.py``), with their provenance."""
    weights = ",\n".join(f"    {k!r}: {v!r}" for k, v in cal.weights.items())
    prov = ",\n".join(f"    {k!r}: {v!r}" for k, v in cal.provenance.items())
    path.write_text(f'''"""The calibrated cost model's constants (``optimize/calibration.py``), fitted by
``benchmarks/cost.py --fit``.

Written by that script; refit rather than edit (the provenance says on which table).
"""

WEIGHTS = {{
{weights},
}}
LATENCY_S = {cal.latency_s!r}
BURST = {cal.burst!r}
PROVENANCE = {{
{prov},
}}
''')


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
    ap.add_argument("--leave-one-out", action="store_true",
                    help="the calibrated model's picks on a measured table, each program left out of the fit")
    ap.add_argument("--table", default=str(TABLE), help="the measured table (--leave-one-out)")
    ap.add_argument("--fit", action="store_true", help="with --leave-one-out: write the whole table's fit to "
                                                       "mirage_lab/optimize/fitted.py")
    args = ap.parse_args()
    ref_dir = find_reference_dir(args.reference_dir, "--reference-dir")
    if args.leave_one_out:
        return evaluate(args, ref_dir)
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
