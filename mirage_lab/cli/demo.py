"""``mirage-lab demo``, the main job, and ``mirage-lab report``.

The demo is a superoptimization end to end: the search discovers fused μGraphs for RMSNorm+Linear
from the unfused program, verifies and ranks them; then, for each benchmark program, the hand-written
fused μGraph is checked against the unfused program and both are timed (on the CPU: the interpreter),
and the reference implementation's saved μGraphs are checked against their programs. It writes
``report.html`` (every view of the search — drawings, verification evidence, the path it took, cost
model, generated CUDA — followed by the demo's tables) and the same tables as Markdown, JSON and CSV. It exits 1,
after writing them, when a hand-fused μGraph disagrees with its program (its row's ``result`` says WRONG).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from mirage_lab.bench import fused, programs
from mirage_lab.bench.harness import CHECKPOINTS, find_reference_dir, input_scale, random_inputs
from mirage_lab.bench.timing import check_results, measure_cpu, with_speedups
from mirage_lab.bench.tolerance import agreement, within, worst_error
from mirage_lab.bounds import check_timed_runs
from mirage_lab.cli.interrupt import stop_if_interrupted
from mirage_lab.cli.sources import config_for, resolve
from mirage_lab.codegen.triton.tuned import TIMINGS_DIR
from mirage_lab.errors import InputError, MirageError
from mirage_lab.ir.checkpoint import load_reference_checkpoint
from mirage_lab.ir.io import write_atomic
from mirage_lab.paths import input_dir, input_file, output_dir, output_file
from mirage_lab.progress import progress
from mirage_lab.semantics.interpret import interpret

#: batch sizes of the fused-vs-unfused table (the attention and RMSNorm graphs are the batch-sensitive ones)
DEMO_BATCHES = {"rmsnorm": (1, 8), "gqa": (1, 8)}
MODEL_HARDWARE = "H100"
#: each search of ``mirage-lab ablate`` stops here unless --time-limit says otherwise (a run folder keeps no limit)
ABLATION_TIME_LIMIT_S = 600.0  # the cost model's target in the demo's tables (the search ranks on it too)


def fused_frame(names: list[str], repeats: int) -> pd.DataFrame:
    """The interpreter's time and error of each hand-written fused μGraph against its unfused program."""
    rows = [r for n in progress(names, desc="fused μGraphs")
            for r in measure_cpu([n], DEMO_BATCHES.get(n, (1,)), hardware=MODEL_HARDWARE, repeats=repeats,
                                 log=lambda _: None)]
    return with_speedups(pd.DataFrame(rows))


#: the interpreter's table is a correctness check; its times are numpy's on a CPU, not a kernel's on a GPU
INTERPRETER_SECTION = "Does each fused μGraph compute its program? (numpy interpreter on the CPU: not kernel time)"
MODEL_SECTION = f"Fused vs unfused: cost model ({MODEL_HARDWARE} proxy; a model, not a measurement)"


def speed_sections(cpu: pd.DataFrame, timings_dir: Path = TIMINGS_DIR) -> dict[str, pd.DataFrame]:
    """The fused-vs-unfused tables a reader can take speed from: the cost model's (labelled a model), and every
    GPU table under ``timings_dir`` (``mirage-lab time --out``), each named with its hardware; then the
    interpreter's table, kept for what it shows (agreement), without a speed-up column."""
    keys = cpu[["program", "batch"]].drop_duplicates()
    model = with_speedups(cpu[["program", "batch", "graph", "proxy_us"]].assign(median_us=cpu["proxy_us"]))
    names = {"proxy_us": "model_us", "speed-up vs unfused": "model speed-up"}
    out = {MODEL_SECTION: model.drop(columns="median_us").rename(columns=names).round(2)}
    for path in sorted(timings_dir.glob("*.csv")) if timings_dir.is_dir() else ():
        measured = _gpu_rows(path, keys)
        if measured is not None:
            hw = ", ".join(sorted(set(measured["hardware"])))
            out[f"Fused vs unfused: measured on {hw} (data/timings/{path.name})"] = measured.round(2)
    out[INTERPRETER_SECTION] = cpu.assign(interpreter_ms=(cpu["median_us"] / 1e3).round(1))[
        ["program", "batch", "graph", "interpreter_ms", "rel_error", "result", "hardware"]]
    note = batch_note(cpu)
    for df in out.values():
        df.attrs["note"] = note
    return out


def batch_note(cpu: pd.DataFrame) -> str:
    """Why a program has rows at several batch sizes (``DEMO_BATCHES``) and another at one."""
    batches = cpu.groupby("program", sort=False)["batch"].unique()
    several = [f"{p} at batch {' and '.join(map(str, b))}" for p, b in batches.items() if len(b) > 1]
    single = [f"{p} at batch {b[0]}" for p, b in batches.items() if len(b) == 1]
    if not several:
        return ""
    return (f"Rows per batch size: {', '.join(several)} (the batch-sensitive programs: their fused kernels tile "
            f"the batch differently)" + (f"; {', '.join(single)} only." if single else "."))


def _gpu_rows(path: Path, keys: pd.DataFrame) -> pd.DataFrame | None:
    """The unfused, fused, search-best and torch rows of one GPU timing table for the demo's programs, with their
    speed-up over the unfused program; None for a CSV of another shape."""
    try:
        df = pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError):
        return None
    if not {"program", "batch", "graph", "median_us", "hardware"} <= set(df.columns):
        return None
    df = df.merge(keys, on=["program", "batch"])
    df = df[df["graph"].isin(("unfused", "fused", "search best", "torch"))]
    if df.empty:
        return None
    errors = df["error"].astype(object).where(df["error"].notna(), "") if "error" in df else ""
    df = with_speedups(df.assign(error=errors))
    return df[["program", "batch", "graph", "median_us", "speed-up vs unfused", "hardware"]].reset_index(drop=True)


def checkpoint_rows(ref_dir: Path, per_file: int, tol: float) -> list[dict[str, Any]]:
    """Per checkpoint file: how many of the first ``per_file`` saved graphs match the program within ``tol`` (a
    graph with NaN or inf where the program has none does not), and the worst error among them."""
    rows = []
    for stem, (name, b) in progress(sorted(CHECKPOINTS.items()), desc="reference checkpoints"):
        path = ref_dir / f"{stem}.json"
        if not path.exists():
            continue
        graphs = load_reference_checkpoint(path)
        prog = programs.PROGRAMS[name](b)
        ins = random_inputs(prog, seed=1, scale=input_scale(name))
        (want,) = interpret(prog, ins, dtype="float32")
        checked = graphs[:per_file] if per_file > 0 else graphs
        errors = [agreement(interpret(g, ins, dtype="float32"), [want], tol).worst for g in checked
                  if g.input_types == prog.input_types]
        rows.append({"file": stem, "graphs": len(graphs), "checked": len(errors),
                     "matching": sum(within(e, tol) for e in errors), "worst_rel_error": worst_error(errors)})
    return rows


def write_tables(out: Path, sections: dict[str, pd.DataFrame]) -> Path:
    """report.md, report.json and one CSV per table."""
    output_dir(out, "report folder")
    lines = ["# mirage-lab demo report", "", f"Generated {time.strftime('%Y-%m-%d %H:%M:%S')}.", ""]
    for title, df in sections.items():
        slug = "".join(c if c.isalnum() else "_" for c in title.lower())
        write_atomic(out / f"{slug}.csv", df.to_csv(index=False))
        lines += [f"## {title}", "", df.to_markdown(index=False), ""]
        if df.attrs.get("note"):
            lines += [str(df.attrs["note"]), ""]
    write_atomic(out / "report.json", json.dumps({k: v.to_dict("records") for k, v in sections.items()},
                                                 indent=1, default=float))
    return write_atomic(out / "report.md", "\n".join(lines))


def run_search(args: argparse.Namespace, out: Path) -> tuple[dict[str, pd.DataFrame], Path | None]:
    """Superoptimize ``args.search`` from its unfused form; its tables and its run folder."""
    from mirage_lab.search import superoptimize

    source = resolve(args.search)
    config = config_for(source, args.preset, args.set or []).replace(time_limit_s=args.search_time)
    res = superoptimize(source.graph, config, run_dir=out / "runs")
    stop_if_interrupted(res.report)
    print(f"\nsuperoptimize({source.label}, {config!r}): {res}")
    if res.best is not None:
        print(f"best μGraph ({res.best.hash[:12]}):\n{res.best.graph}")
        write_atomic(out / "best_graph.txt", str(res.best.graph))
    return {f"Superoptimization of {source.label}": res.to_frame(), "Search report": res.report.to_frame()}, res.run_dir


def html_report(run_dir: Path, out: Path, reverify: bool = False, **kw: Any) -> Path:
    """The static HTML report of a search run (every widget view). The notebook layer draws it, so it is
    imported only here: the engine itself never needs plotly or ipywidgets (install the ``lab`` extra)."""
    try:
        from mirage_lab.widgets import export_html
    except ImportError as e:
        raise MirageError(f"the HTML report needs the notebook layer's packages ({e.name} is missing); "
                          "install them with: pip install -e '.[lab]'") from None
    return export_html(run_dir, out, reverify=reverify, **kw)


def report(args: argparse.Namespace) -> int:
    run = input_dir(args.run, "run folder")
    if args.figures is None or args.html:
        out = output_file(args.html if args.html else run / "report.html", "HTML report")
        print(f"report written to {html_report(run, out, args.reverify)}")
    if args.figures is not None:
        from mirage_lab.search.ablation import ABLATION_FILE, optional_checks
        from mirage_lab.search.run_folder import RunFolder

        sweep = input_file(args.ablation, "ablation sweep (--ablation)") if args.ablation else None
        for path in figure_files(run, output_dir(args.figures, "figure folder (--figures)"), args.format, sweep):
            print(f"figure written to {path}")
        if sweep is None and not (run / ABLATION_FILE).is_file():
            print(f"no ablation figure: {run} holds no ablation sweep. Make one with\n    mirage-lab ablate {run}"
                  f"\n({len(optional_checks(RunFolder(run).config()))} checks: one search each with that check off, "
                  "plus the search as configured; --time-limit caps each), then run this command again.",
                  file=sys.stderr)
    return 0


def figure_files(run_dir: Path, out: Path, formats: tuple[str, ...] = ("pdf", "svg"),
                 sweep: Path | None = None) -> list[Path]:
    """Every figure of a run's paper figures (``mirage_lab.widgets.run_figures``: the roofline, and the ablation
    when the run folder or ``sweep`` holds a sweep) saved to ``out/<name>.<format>`` in the print style, all with
    one browser start."""
    try:
        from mirage_lab.widgets import check_ablation_figure, run_figures, save_figures
    except ImportError as e:
        raise MirageError(f"figures need the notebook layer's packages ({e.name} is missing); "
                          "install them with: pip install -e '.[lab]'") from None
    figures = run_figures(run_dir)
    if sweep is not None:
        figures["ablation"] = check_ablation_figure(sweep)
    files: dict[str | os.PathLike[str], Any] = {out / f"{n}.{fmt}": fig for n, fig in figures.items()
                                                for fmt in formats}
    return save_figures(files)


def ablate(args: argparse.Namespace) -> int:
    """``mirage-lab ablate RUN``: the run's search again with each optional check off, to RUN/ablation.json."""
    from mirage_lab.search.ablation import ABLATION_FILE, optional_checks, write_ablation
    from mirage_lab.search.ablation import ablate as sweep
    from mirage_lab.search.run_folder import RunFolder

    run = input_dir(args.run, "run folder")
    folder = RunFolder(run)
    config = folder.config()
    config = config.replace(time_limit_s=args.time_limit or config.time_limit_s or ABLATION_TIME_LIMIT_S)
    out = output_file(args.out if args.out else run / ABLATION_FILE, "ablation sweep (--out)")
    checks = args.checks or optional_checks(config)
    print(f"ablation of {run.name}: {len(checks) + 1} searches ({', '.join(checks)} off, and all on), each up to "
          f"{config.time_limit_s:g} s, ×{args.repeats}", flush=True)
    doc = sweep(folder.program(), config, checks, executor=args.executor, repeats=args.repeats,
                log=lambda line: print(line, flush=True) if not args.quiet else None)
    doc["command"] = "mirage-lab ablate " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["ablate"] else ""
    print(f"ablation sweep written to {write_ablation(doc, out)}")
    return 0


def demo(args: argparse.Namespace) -> int:
    check_timed_runs(0, args.repeats)  # before the search: a count the timing would refuse is refused now
    out = output_dir(args.out, "report folder (--out)")
    if args.no_references and args.reference_dir is not None:
        raise InputError("--no-references skips the folder --reference-dir names; give one or the other")
    # a folder named wrongly is said before any work
    ref_dir = None if args.no_references else find_reference_dir(args.reference_dir, "--reference-dir")
    sections, run_dir = ({}, None) if args.no_search else run_search(args, out)
    fused_table = fused_frame(args.programs or list(fused.FUSED), args.repeats)
    sections |= speed_sections(fused_table)
    if ref_dir is not None:
        sections["Reference checkpoints"] = pd.DataFrame(checkpoint_rows(ref_dir, args.per_file, args.tol))
    elif not args.no_references:
        print("reference μGraphs not found (pass --reference-dir, or --no-references); skipping that section",
              file=sys.stderr)
    for title, df in sections.items():
        print(f"\n{title}\n{df.to_string(index=False)}")
    print(f"\nreport written to {write_tables(out, sections)}")
    if run_dir is not None:
        try:
            title = f"mirage-lab demo: superoptimizing {Path(args.search).name}"
            page = html_report(run_dir, out / "report.html", title=title, extra=sections)
            print(f"HTML report (open it in a browser): {page}")
        except MirageError as e:  # the Markdown report does not need it
            print(f"no HTML report: {e}", file=sys.stderr)
    return check_results(fused_table)  # a hand-fused μGraph that disagrees with its program fails the demo
