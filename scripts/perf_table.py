"""The README's performance table, generated from a GPU's timing table (issue 36).

Reads ``data/timings/<GPU>.csv`` (``benchmarks/kernels.py``, ``scripts/gpu_check.sh``) and rewrites the lines
between ``<!-- perf-table:begin -->`` and ``<!-- perf-table:end -->`` in README.md: per benchmark point, the
search's best μGraph and the hand-fused one, the baselines (torch eager, torch.compile, SDPA), the DRAM floor,
and speed-ups of ours over torch eager and over the best baseline. A time whose kernel computed a wrong result
reads WRONG and has no speed-up; a row that was not measured (or failed to run) reads "–".
``tests/scripts/test_perf_table.py`` checks that the committed README equals what this makes from the committed CSV.

    python scripts/perf_table.py [--csv data/timings/NVIDIA_H200.csv] [--readme README.md] [--check]
"""

from __future__ import annotations

import argparse
import math
import sys
import textwrap
from functools import partial
from pathlib import Path

import pandas as pd

from mirage_lab.bench import baselines, programs
from mirage_lab.bench.tolerance import no_speedup
from mirage_lab.errors import FormatError
from mirage_lab.optimize.hardware import get_hardware

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CSV = ROOT / "data" / "timings" / "NVIDIA_H200.csv"
BEGIN, END = "<!-- perf-table:begin -->", "<!-- perf-table:end -->"
NAMES = {"rmsnorm": "RMSNorm+Linear", "gated_mlp": "GatedMLP", "lora": "LoRA", "gqa": "GQA", "mha": "MHA",
         "mqa": "MQA", "qknorm_gqa": "QKNorm+GQA", "ntrans": "nTrans"}
#: before issue 36 the table's only PyTorch row was "torch" (the SPEC formula, its RMS in fp32)
LEGACY_EAGER = "torch"
OURS = ("search best", "fused")


def _times(df: pd.DataFrame) -> dict[tuple[str, int, str], float]:
    """(program, batch, graph) → median µs; NaN for a row that failed to run, -inf for a WRONG one."""
    bad = no_speedup(df)
    return {(r.program, int(r.batch), r.graph): (-math.inf if w else float(r.median_us))
            for r, w in zip(df.itertuples(), bad, strict=True)}


def _get(t: dict[tuple[str, int, str], float], name: str, batch: int, graph: str) -> float:
    return t.get((name, batch, graph), math.nan)


def _fmt(us: float) -> str:
    if us == -math.inf:
        return "WRONG"
    return "–" if not math.isfinite(us) else (f"{us:.1f}" if us < 100 else f"{us:.0f}")


def _ratio(num: float, den: float) -> str:
    if not (math.isfinite(num) and math.isfinite(den) and den > 0):
        return "–"
    r = num / den
    return f"{r:.2f}×" if r < 10 else f"{r:.1f}×" if r < 100 else f"{r:.0f}×"


def _floor_us(df: pd.DataFrame, name: str, batch: int) -> float:
    rows = df[(df["program"] == name) & (df["batch"] == batch)]
    if "dram_floor_us" in df.columns and rows["dram_floor_us"].notna().any():
        return float(rows["dram_floor_us"].dropna().iloc[0])
    return baselines.dram_floor_s(programs.PROGRAMS[name](batch), _preset(df)) * 1e6


def _preset(df: pd.DataFrame) -> str:
    names = df["hardware"].dropna().unique()
    if len(names) != 1:
        raise FormatError(f"a timing table should name one hardware preset in its 'hardware' column, not {names}")
    return str(names[0])


def table(df: pd.DataFrame, gpu: str) -> str:
    """The markdown table (with its caption) of the timing table ``df`` measured on ``gpu``."""
    t = _times(df)
    legacy = not any(g == baselines.EAGER for _, _, g in t)
    eager_label = LEGACY_EAGER if legacy else baselines.EAGER
    hw = get_hardware(_preset(df))
    head = ["point", "search best µs", "hand-fused µs", "torch eager µs", "torch.compile µs", "SDPA µs",
            "DRAM floor µs", "search best vs eager / best baseline", "hand-fused vs eager / best baseline",
            "search best / floor"]
    has_before = any(g.endswith(" (before)") for _, _, g in t)
    if has_before:
        head.append("before: search best / hand-fused µs")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    points = sorted({(p, b) for p, b, _ in t}, key=lambda pb: (list(programs.PROGRAMS).index(pb[0]), pb[1]))
    for name, batch in points:
        get = partial(_get, t, name, batch)
        base = {label: get(label) for label in (eager_label, baselines.COMPILE, baselines.SDPA)}
        valid = [v for v in base.values() if math.isfinite(v)]
        best = min(valid) if valid else math.nan
        floor = _floor_us(df, name, batch)
        cells = [f"{NAMES.get(name, name)} b{batch}", *(_fmt(get(g)) for g in OURS), *(_fmt(v) for v in base.values()),
                 f"{floor:.2g}" if floor < 10 else f"{floor:.1f}",
                 *(f"{_ratio(base[eager_label], get(g))} / {_ratio(best, get(g))}" for g in OURS),
                 _ratio(get("search best"), floor)]
        if has_before:
            cells.append(" / ".join(_fmt(get(f"{g} (before)")) for g in OURS))
        lines.append("| " + " | ".join(cells) + " |")
    caption = (f"Measured on {gpu.replace('_', ' ')}: CUDA-event medians in µs (`data/timings/{gpu}.csv`, "
               f"`benchmarks/kernels.py`); the DRAM floor moves the program's inputs and outputs once at the "
               f"{hw.name} preset's {hw.dram_bytes_per_s / 1e12:.2f} TB/s. Speed-ups are the baseline's time over "
               "ours (> 1: ours is faster); the best baseline is the fastest of torch eager, torch.compile and SDPA.")
    if legacy:
        caption += (" This table predates issue 36's baselines: its eager column is the older `torch` row (the SPEC "
                    "formula with an fp32 RMS), and torch.compile and SDPA were not measured.")
    return textwrap.fill(caption, 118) + "\n\n" + "\n".join(lines) + "\n"


def rewrite(readme: str, generated: str) -> str:
    """``readme`` with the text between the markers replaced by ``generated``."""
    if readme.count(BEGIN) != 1 or readme.count(END) != 1 or readme.index(BEGIN) > readme.index(END):
        raise FormatError(f"the README should hold {BEGIN} then {END} once each, around the performance table")
    head, rest = readme.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{generated}{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", type=Path, default=DEFAULT_CSV, help="a GPU's timing table (named after the GPU)")
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when the README's table is stale")
    ap.add_argument("--print", action="store_true", help="print the table instead of writing the README")
    args = ap.parse_args(argv)
    if args.check and args.print:
        ap.error("--check compares the README and --print prints the table: pass one of them")
    for path in (args.csv, *([] if args.print else [args.readme])):
        if not path.is_file():
            ap.error(f"{path} is not a file")
    try:
        generated = table(pd.read_csv(args.csv), args.csv.stem)
        if args.print:
            print(generated, end="")
            return 0
        readme = args.readme.read_text()
        new = rewrite(readme, generated)
    except FormatError as e:
        ap.error(str(e))
    if args.check:
        if new != readme:
            print(f"{args.readme}'s performance table differs from {args.csv}'s; run scripts/perf_table.py",
                  file=sys.stderr)
            return 1
        return 0
    args.readme.write_text(new)
    print(f"rewrote the performance table of {args.readme} from {args.csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
