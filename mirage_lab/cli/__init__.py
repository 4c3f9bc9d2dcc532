"""mirage-lab: superoptimize tensor programs into fused μGraphs, verify them, generate CUDA, report.

    mirage-lab demo                                   superoptimize RMSNorm+Linear end to end; write a report
    mirage-lab search rmsnorm:1 --set 'forloop_ranges=[4]'
    mirage-lab verify fused:gated_mlp                 against its benchmark program (exit 1 if different)
    mirage-lab codegen runs/<run> --out best.cu --ptx sm_80 sm_90
    mirage-lab codegen fused:gqa --backend triton --out gqa.py --ptx sm_80 sm_90 --emulate
    mirage-lab codegen fused:rmsnorm --analyze        per kernel: registers, SASS mix, bound
    mirage-lab bench --programs rmsnorm gated_mlp     GPU timings, or the interpreter's on a CPU
    mirage-lab report runs/<run> --html run.html      a search run as one static HTML page
    mirage-lab report runs/<run> --figures figs/      its figures as PDF and SVG, styled for print
    mirage-lab ablate runs/<run> --time-limit 60      its search again with each check off (the ablation figure)
    mirage-lab runs --remove --older-than 7d --keep-best   list run folders; remove old ones

GRAPH arguments are described in ``mirage_lab/cli/sources.py`` (``mirage-lab search --help``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from mirage_lab.bench.programs import PROGRAMS
from mirage_lab.cli import commands, demo, interrupt
from mirage_lab.cli.argument_types import (
    Parser,
    UsageError,
    age,
    count,
    cuda_arch,
    figure_formats,
    positive_int,
    positive_seconds,
    tolerance,
)
from mirage_lab.cli.sources import FORMS, ProgramFileError
from mirage_lab.cli.warning_lines import one_line_warnings
from mirage_lab.errors import MirageError
from mirage_lab.search.run_folder import DEFAULT_ROOT
from mirage_lab.search.run_list import BEST_FOLDER
from mirage_lab.version import __version__

GRAPH_HELP = f"GRAPH: {FORMS}"


def _demo_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="superoptimize a benchmark, check and time the others; write a report")
    p.add_argument("--out", default="reports/demo", help="report folder (default: reports/demo)")
    p.add_argument("--reference-dir", help="folder of the reference implementation's saved μGraphs (default: "
                                           "$MIRAGE_REFERENCE_MUGRAPHS, else ../shared/reference_mugraphs)")
    p.add_argument("--no-references", action="store_true", help="skip the reference μGraphs' section")
    p.add_argument("--per-file", type=count, default=3, help="graphs checked per checkpoint (0 = all)")
    p.add_argument("--tol", type=tolerance, default=1e-4, help="relative error counted as a match")
    p.add_argument("--repeats", type=positive_int, default=3, help="timing repeats (median reported)")
    p.add_argument("--search", default="rmsnorm:1", help="the program to superoptimize, a GRAPH (default rmsnorm:1)")
    p.add_argument("--preset", help="search preset (default: the benchmark's)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a search setting (repeatable)")
    p.add_argument("--search-time", type=positive_seconds, default=600.0, help="time limit of that search, seconds")
    p.add_argument("--no-search", action="store_true", help="skip the superoptimization")
    p.add_argument("--programs", nargs="*", choices=list(PROGRAMS), help="benchmarks in the fused-vs-unfused table")
    p.set_defaults(func=demo.demo)


def _search_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("search", help="superoptimize a program: discover, verify and rank fused μGraphs",
                       epilog=GRAPH_HELP)
    p.add_argument("program", help="the program to superoptimize (a GRAPH)")
    p.add_argument("--preset", help="search preset: default, mlp, attention, lora, reference… (default: the "
                   "benchmark's, else default)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a search setting, VALUE as JSON "
                   "(repeatable): --set forloop_ranges=[4,16] --set pruning=false")
    p.add_argument("--time-limit", type=positive_seconds,
                   help="seconds; an interrupted search resumes from its run folder")
    p.add_argument("--executor", default="process", help="process (all cores), serial, or dask:ADDRESS")
    p.add_argument("--runs", default=DEFAULT_ROOT, help="root of the run folders, the search's cache (default "
                   "$MIRAGE_LAB_RUNS, else ./runs)")
    p.add_argument("--out", help="write best.json and ranking.csv here (default: the run folder)")
    p.add_argument("--html", help="also write the run's static HTML report to this file")
    p.add_argument("--top", type=positive_int, default=10, help="ranked μGraphs to print")
    p.set_defaults(func=commands.search)


def _verify_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify", help="is a μGraph equivalent to a program? finite-field testing with evidence",
                       epilog=GRAPH_HELP)
    p.add_argument("candidate", help="the μGraph to check (a GRAPH)")
    p.add_argument("--against", help="the program (a GRAPH; default: the benchmark or run it came from)")
    p.add_argument("--trials", type=count, default=3, help="independent random trials (default 3)")
    p.add_argument("--seed", type=count, default=0)
    p.set_defaults(func=commands.verify)


def _codegen_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("codegen", help="generate a μGraph's CUDA or Triton; compile it to PTX; emulate it on the CPU",
                       epilog=GRAPH_HELP)
    p.add_argument("graph", help="the μGraph (a GRAPH)")
    p.add_argument("--backend", choices=("cuda", "triton"), default="cuda",
                   help="CUDA C (default) or a Triton module (kernels and a launcher taking torch tensors)")
    p.add_argument("--out", help="write the .cu (or, with --backend triton, .py) file here (default, or --out -: "
                                 "print it); an existing FIFO or device is refused, never replaced")
    p.add_argument("--ptx", nargs="*", metavar="ARCH", type=cuda_arch,
                   help="compile to PTX for these (e.g. sm_80 sm_90; --ptx alone: sm_80 and sm_90): nvcc --ptx, or "
                        "Triton for a GPUTarget")
    p.add_argument("--no-prefetch", action="store_true", help="the load–wait–compute loop (no ring of loop tiles "
                   "copied iterations ahead)")
    p.add_argument("--no-async-copies", action="store_true", help="tiles copied through registers (no cp.async; "
                   "no prefetch either)")
    p.add_argument("--no-split", action="store_true", help="one thread per output of every sum, however few outputs")
    p.add_argument("--no-tensor-cores", action="store_true", help="CUDA-core loops for every matmul (no mma.sync)")
    p.add_argument("--no-padding", action="store_true", help="dense shared-memory tiles (no row padding)")
    p.add_argument("--emulate", action="store_true", help="run the generated code on the CPU (g++, or Triton's "
                   "interpreter) against the interpreter; exit 1 when they disagree")
    p.add_argument("--analyze", action="store_true", help="print each kernel's analysis from ptxas and the SASS "
                   "(registers, spills, occupancy, access widths, async copies, tensor cores, bytes in flight, "
                   "bound, DRAM floor) instead of the source (--out FILE still writes it); needs nvcc and "
                   "cuobjdump (pip install -e '.[analyze]')")
    p.add_argument("--arch", nargs="+", metavar="ARCH", type=cuda_arch, default=["sm_90"],
                   help="--analyze's architectures (default sm_90)")
    p.add_argument("--hardware", choices=["A100", "H100", "H200"],
                   help="--analyze's GPU for occupancy, peaks and the DRAM floor (default: A100 for sm_80, H100 "
                        "for sm_90)")
    p.set_defaults(func=commands.codegen)


def _bench_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="time the benchmark programs, unfused and fused (GPU, else the interpreter); "
                                     "exit 1 when a timed kernel's result is wrong")
    p.add_argument("--programs", nargs="*", default=["rmsnorm", "gated_mlp"], choices=list(PROGRAMS))
    p.add_argument("--batches", nargs="*", type=positive_int, default=[1])
    p.add_argument("--hardware", choices=["A100", "H100", "H200"], help="the cost model's preset for proxy_us")
    p.add_argument("--repeats", type=positive_int, default=None, help="timed runs (default 200 on a GPU, 3 on the CPU)")
    p.add_argument("--max-graphs", type=positive_int, default=None,
                   help="reference μGraphs timed per checkpoint (GPU; default 4)")
    p.add_argument("--reference-dir", help="folder of the reference implementation's saved μGraphs")
    p.add_argument("--cpu", action="store_true", help="time the interpreter even when a GPU is present")
    p.add_argument("--out", help="write <hardware>.csv here (data/timings for the notebooks' plots)")
    p.set_defaults(func=commands.bench)


def _report_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write a search run's static HTML report (viewer, verification, plots), or "
                                      "its figures for a paper")
    p.add_argument("run", help="a run folder (runs/<program>-<config>) of a finished search")
    p.add_argument("--html", help="where to write it (default: <run>/report.html; with --figures, only if given)")
    p.add_argument("--figures", metavar="DIR", help="write every figure of the report to DIR as <name>.<format> in "
                                                    "the print style (needs kaleido and Chrome/Chromium)")
    p.add_argument("--format", type=figure_formats, default=("pdf", "svg"), metavar="FMT[,FMT]",
                   help="figure formats for --figures: pdf, svg, png (default: pdf,svg)")
    p.add_argument("--reverify", action="store_true", help="verify the best μGraph afresh for the full evidence")
    p.add_argument("--ablation", metavar="FILE", help="the ablation sweep to draw (default: RUN/ablation.json, "
                   "written by mirage-lab ablate RUN)")
    p.set_defaults(func=demo.report)


def _ablate_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ablate", help="run a search again with each named check switched off, one at a time; "
                                      "writes the sweep report --figures draws",
                       description="Run the search of RUN (its program and config) as configured, then once per "
                                   "optional check it applies with that check off (SearchConfig.disabled_checks), "
                                   "and write states, time and the best found to RUN/ablation.json.")
    p.add_argument("run", help="a run folder (runs/<program>-<config>) of a finished search")
    p.add_argument("--checks", nargs="+", metavar="NAME", help="only these checks (default: every optional check "
                   "the config applies; mirage_lab.search.checks_frame() lists them)")
    p.add_argument("--time-limit", type=positive_seconds, help="seconds per search (default 600); a search that hits "
                   "it is drawn as a lower bound")
    p.add_argument("--repeats", type=positive_int, default=1, help="runs per search, the fastest wall time kept")
    p.add_argument("--executor", default="serial", help="serial (default: timings comparable run to run) or "
                   "process (all cores)")
    p.add_argument("--out", help="where to write the sweep (default: RUN/ablation.json, which report --figures reads)")
    p.set_defaults(func=demo.ablate)


def _runs_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("runs", help="list run folders (program, state, size, best μGraph); remove old ones",
                       description="List the run folders under ROOT. With --remove, delete those last written "
                                   "before --older-than (or --all); a folder a search holds is never touched.")
    p.add_argument("root", nargs="?", default=None, help="the folder of run folders (default "
                   "$MIRAGE_LAB_RUNS, else ./runs)")
    p.add_argument("--runs", default=None, metavar="ROOT", help="the same folder, named as the other subcommands "
                   "name it")
    p.add_argument("--remove", action="store_true", help="delete the selected run folders")
    p.add_argument("--older-than", type=age, metavar="AGE", help="select runs last written before AGE ago: 30m, 12h, "
                                                                   "7d, 2w (a bare number is days)")
    p.add_argument("--all", action="store_true", help="select every run folder")
    p.add_argument("--keep-best", action="store_true",
                   help=f"save each removed run's best μGraph as ROOT/{BEST_FOLDER}/<run>.json first")
    p.add_argument("--dry-run", action="store_true", help="say what --remove would delete, delete nothing")
    p.set_defaults(func=commands.runs)


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="mirage-lab", description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n")[1])  # every example line
    p.add_argument("--version", action="version", version=f"mirage-lab {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for add in (_demo_parser, _search_parser, _verify_parser, _codegen_parser, _bench_parser, _report_parser,
                _ablate_parser, _runs_parser):
        add(sub)
    for command in sub.choices.values():  # the conventions every subcommand shares
        command.add_argument("-q", "--quiet", action="store_true", help="no progress bars; only errors are logged")
        command.add_argument("-v", "--verbose", action="count", default=0,
                             help="log what the library does (-v: info, -vv: debug)")
    return p


def _logging(verbose: int, quiet: bool) -> None:
    """The library logs through ``logging.getLogger(__name__)``; the command line shows its records on stderr:
    warnings by default, errors only with -q, info with -v, debug with -vv."""
    level = logging.ERROR if quiet else logging.WARNING if not verbose else logging.INFO if verbose == 1 \
        else logging.DEBUG
    log = logging.getLogger("mirage_lab")
    log.setLevel(level)
    if not any(isinstance(h, _CliHandler) for h in log.handlers):
        handler = _CliHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("mirage-lab: %(message)s"))
        log.addHandler(handler)


class _CliHandler(logging.StreamHandler):  # type: ignore[type-arg, unused-ignore]
    """The command line's handler (one, however often ``main`` runs in a process)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr  # whatever stderr is now (tests swap it)
        super().emit(record)


def main(argv: Sequence[str] | None = None) -> int:
    with one_line_warnings():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = parser().parse_args(argv)
    except UsageError as e:
        print(f"mirage-lab: error: {e}", file=sys.stderr)
        return 2
    _logging(args.verbose, args.quiet)
    try:
        return int(args.func(args))
    except MirageError as e:
        if isinstance(e, ProgramFileError) and e.user_traceback:
            print(e.user_traceback, file=sys.stderr)
        print(f"mirage-lab: error: {e}", file=sys.stderr)
        return 2
    except MemoryError as e:
        print(f"mirage-lab: error: out of memory ({e}); use smaller shapes or a machine with more memory",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(interrupt.LINE, file=sys.stderr)
        return interrupt.STATUS
    except BrokenPipeError:  # `mirage-lab codegen … | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
