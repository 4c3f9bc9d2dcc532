"""Record the search runs the notebooks open, into data/runs/ (the notebooks' "recorded data").

A run folder is the search's cache: ``ml.superoptimize(program, config, run_dir=ROOT/"data"/"runs")``
returns at once from a complete folder whose program and config hashes match. The notebooks make
exactly that call, so they open these recordings instantly and never search (nor write) themselves.

    .venv/bin/python scripts/record_runs.py            # record what is missing; list stale folders
    .venv/bin/python scripts/record_runs.py --clean    # ... and delete folders no recording names
    .venv/bin/python scripts/record_runs.py --force    # re-record everything

Rerun it whenever ``tests/notebooks/test_recorded_runs.py`` says a recording no longer matches the
current program or config (a changed preset, op table or program changes the hashes). Keep each
recording small (a few MB): narrow the config, not the program.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import mirage_lab as ml
from mirage_lab.search.config import SearchConfig, preset
from mirage_lab.search.run_folder import events_file
from mirage_lab.search.runner import run_folder_path

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "data" / "runs"

#: the narrowed mlp search of tests/search/test_search.py: one loop range, one grid divisor, the five block
#: ops the fused RMSNorm needs plus exp (so the oracle has something to prune); ~20 s on one core
NARROW_MLP = dict(forloop_ranges=(4,), grid_divisors=(8,),
                  block_ops=("matmul", "exp", "div", "accum_no_red", "accum_rms"), max_block_ops=6,
                  kernel_ops=("matmul", "exp", "customized"))


@dataclass(frozen=True)
class Recording:
    """One recorded search: a benchmark program and a config; the notebooks rebuild both the same way."""

    name: str
    used_by: str
    program: Callable[[], ml.KernelGraph]
    config: Callable[[], SearchConfig]

    def folder(self, root: Path = RUNS) -> Path:
        return run_folder_path(self.program(), self.config(), root)


def rmsnorm_program() -> ml.KernelGraph:
    return ml.bench.programs.rmsnorm(batch_size=1)


def rmsnorm_config() -> SearchConfig:
    return preset("mlp", **NARROW_MLP)


RECORDINGS: tuple[Recording, ...] = (
    Recording("rmsnorm_bs1_narrow_mlp", "notebooks/03_walking_the_search_tree", rmsnorm_program, rmsnorm_config),
)


def complete(folder: Path) -> bool:
    """Does ``folder`` hold a finished search (what ``superoptimize`` answers from without searching)?"""
    from mirage_lab.ir.io import read_json

    result = folder / "result.json"
    if not result.is_file() or not (folder / events_file(folder)).is_file():
        return False
    doc = read_json(result)
    return bool(doc["report"]["stop_reason"] == "complete"
                and all((folder / "candidates" / f"{h[:16]}.json").is_file() for h in doc["ranking"]))


def size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def record(rec: Recording, force: bool = False) -> Path:
    folder = rec.folder()
    if force and folder.exists():
        shutil.rmtree(folder)
    if complete(folder):
        print(f"{rec.name}: up to date ({folder.relative_to(ROOT)}, {size_of(folder) / 1e6:.2f} MB)")
        return folder
    start = time.perf_counter()
    res = ml.superoptimize(rec.program(), rec.config(), executor="serial", run_dir=RUNS, progress=True)
    assert res.run_dir == folder, (res.run_dir, folder)
    print(f"{rec.name}: recorded in {time.perf_counter() - start:.1f} s → {folder.relative_to(ROOT)} "
          f"({size_of(folder) / 1e6:.2f} MB); {res.report!r}")
    return folder


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--force", action="store_true", help="delete and re-record every recording")
    ap.add_argument("--clean", action="store_true", help="delete folders under data/runs that no recording names")
    args = ap.parse_args(argv)
    RUNS.mkdir(parents=True, exist_ok=True)
    keep = {record(rec, args.force).name for rec in RECORDINGS}
    for stale in sorted(p for p in RUNS.iterdir() if p.is_dir() and p.name not in keep):
        if args.clean:
            shutil.rmtree(stale)
            print(f"deleted stale {stale.relative_to(ROOT)}")
        else:
            print(f"stale (no recording names it; --clean deletes it): {stale.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
