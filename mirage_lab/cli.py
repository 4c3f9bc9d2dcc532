"""The ``mirage-lab`` command.

``mirage-lab demo`` is the main job: a superoptimization end to end — the search discovers
fused μGraphs for RMSNorm+Linear from the unfused program, verifies and ranks them — then,
for each benchmark program, the hand-written fused μGraph is checked against the unfused
program and both are timed, and the reference implementation's saved μGraphs are checked
against their programs. Everything goes into a report (Markdown, JSON, CSV).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from mirage_lab.bench import fused, programs
from mirage_lab.bench.harness import (
    CHECKPOINTS,
    find_reference_dir,
    input_scale,
    median_time,
    random_inputs,
    relative_error,
)
from mirage_lab.errors import MirageError
from mirage_lab.ir.checkpoint import load_reference_checkpoint
from mirage_lab.semantics.interpret import interpret


def fused_rows(repeats: int) -> list[dict[str, Any]]:
    rows = []
    cases = [(n, b) for n in fused.FUSED for b in ((1, 8) if n in ("rmsnorm", "gqa") else (1,))]
    for name, b in tqdm(cases, desc="fused μGraphs"):
        prog, graph = programs.PROGRAMS[name](b), fused.FUSED[name](b)
        ins = random_inputs(prog, seed=0, scale=input_scale(name))
        (want,) = interpret(prog, ins, dtype="float32")
        (got,) = interpret(graph, ins, dtype="float32")
        rows.append({
            "program": name, "batch": b, "kernels": len(graph.compute_nodes),
            "rel_error": relative_error(got, want),
            "unfused_ms": 1e3 * median_time(partial(interpret, prog, ins, dtype="float32"), repeats),
            "fused_ms": 1e3 * median_time(partial(interpret, graph, ins, dtype="float32"), repeats),
        })
    return rows


def checkpoint_rows(ref_dir: Path, per_file: int, tol: float) -> list[dict[str, Any]]:
    rows = []
    for stem, (name, b) in tqdm(sorted(CHECKPOINTS.items()), desc="reference checkpoints"):
        path = ref_dir / f"{stem}.json"
        if not path.exists():
            continue
        graphs = load_reference_checkpoint(path)
        prog = programs.PROGRAMS[name](b)
        ins = random_inputs(prog, seed=1, scale=input_scale(name))
        (want,) = interpret(prog, ins, dtype="float32")
        checked = graphs[:per_file] if per_file > 0 else graphs
        errors = [relative_error(interpret(g, ins, dtype="float32")[0], want) for g in checked
                  if g.input_types == prog.input_types]
        rows.append({"file": stem, "graphs": len(graphs), "checked": len(errors),
                     "matching": sum(e <= tol for e in errors), "worst_rel_error": max(errors, default=float("nan"))})
    return rows


def write_report(out: Path, sections: dict[str, pd.DataFrame]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    lines = ["# mirage-lab demo report", "", f"Generated {time.strftime('%Y-%m-%d %H:%M:%S')}.", ""]
    for title, df in sections.items():
        slug = "".join(c if c.isalnum() else "_" for c in title.lower())
        df.to_csv(out / f"{slug}.csv", index=False)
        lines += [f"## {title}", "", df.to_markdown(index=False), ""]
    (out / "report.json").write_text(json.dumps({k: v.to_dict("records") for k, v in sections.items()},
                                                indent=1, default=float))
    report = out / "report.md"
    report.write_text("\n".join(lines))
    return report


def search_sections(spec: str, time_limit: float, out: Path) -> dict[str, pd.DataFrame]:
    """Superoptimize one benchmark program from its unfused form (``name:batch``)."""
    from mirage_lab.search import superoptimize

    name, _, batch = spec.partition(":")
    if name not in programs.PROGRAMS:
        raise MirageError(f"unknown program {name!r} for --search; choose one of {sorted(programs.PROGRAMS)}")
    preset = {"lora": "lora", "gqa": "attention", "mqa": "attention", "mha": "attention"}.get(name, "mlp")
    res = superoptimize(programs.PROGRAMS[name](int(batch or 1)), preset, time_limit_s=time_limit,
                        run_dir=out / "runs")
    if res.run_dir is not None:
        try:
            print(f"search report (every view, static HTML): {html_report(res.run_dir, out / 'search.html')}")
        except MirageError as e:  # the Markdown report does not need it
            print(f"no HTML search report: {e}", file=sys.stderr)
    print(f"\nsuperoptimize({spec}, {preset!r}): {res}")
    if res.best is not None:
        print(f"best μGraph ({res.best.hash[:12]}):\n{res.best.graph}")
        (out / "best_graph.txt").parent.mkdir(parents=True, exist_ok=True)
        (out / "best_graph.txt").write_text(str(res.best.graph))
    report = res.report.to_frame()
    return {f"Superoptimization of {spec}": res.to_frame(), "Search report": report}


def html_report(run_dir: Path, out: Path, reverify: bool = False) -> Path:
    """The static HTML report of a search run (every widget view). The notebook layer draws it, so it is
    imported only here: the engine itself never needs plotly or ipywidgets (install the ``lab`` extra)."""
    try:
        from mirage_lab.widgets import export_html
    except ImportError as e:
        raise MirageError(f"the HTML report needs the notebook layer's packages ({e.name} is missing); "
                          "install them with: pip install -e '.[lab]'") from None
    return export_html(run_dir, out, reverify=reverify)


def report(args: argparse.Namespace) -> int:
    out = Path(args.html) if args.html else Path(args.run) / "report.html"
    print(f"report written to {html_report(Path(args.run), out, args.reverify)}")
    return 0


def demo(args: argparse.Namespace) -> int:
    sections = {} if args.no_search else search_sections(args.search, args.search_time, Path(args.out))
    sections["Fused vs unfused"] = pd.DataFrame(fused_rows(args.repeats))
    ref_dir = find_reference_dir(args.reference_dir)
    if ref_dir is None:
        print("reference μGraphs not found (pass --reference-dir); skipping that section", file=sys.stderr)
    else:
        sections["Reference checkpoints"] = pd.DataFrame(checkpoint_rows(ref_dir, args.per_file, args.tol))
    for title, df in sections.items():
        print(f"\n{title}\n{df.to_string(index=False)}")
    print(f"\nreport written to {write_report(Path(args.out), sections)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mirage-lab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="superoptimize a benchmark, check and time the others; write a report")
    p.add_argument("--out", default="reports/demo", help="report folder (default: reports/demo)")
    p.add_argument("--reference-dir", help="folder of the reference implementation's saved μGraphs")
    p.add_argument("--per-file", type=int, default=3, help="graphs checked per checkpoint (0 = all)")
    p.add_argument("--tol", type=float, default=1e-4, help="relative error counted as a match")
    p.add_argument("--repeats", type=int, default=3, help="timing repeats (median reported)")
    p.add_argument("--search", default="rmsnorm:1", help="program to superoptimize, name[:batch] (default rmsnorm:1)")
    p.add_argument("--search-time", type=float, default=600.0, help="time limit of that search, seconds")
    p.add_argument("--no-search", action="store_true", help="skip the superoptimization")
    p.set_defaults(func=demo)
    p = sub.add_parser("report", help="write a search run's static HTML report (viewer, explorer summary, plots)")
    p.add_argument("run", help="a run folder (runs/<program>-<config>) of a finished search")
    p.add_argument("--html", help="where to write it (default: <run>/report.html)")
    p.add_argument("--reverify", action="store_true", help="verify the best μGraph afresh for the full evidence")
    p.set_defaults(func=report)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except MirageError as e:
        print(f"mirage-lab: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
