"""Subexpression engines compared: speed and agreement on the oracle's test corpus (issue 4).

For every benchmark program (and every saved reference checkpoint's program, when ../shared is present)
the corpus holds the *relevant* prefixes — every intermediate tensor of the program itself, of the
hand-written fused graphs and of the saved reference graphs, which must pass — and the *irrelevant*
prefixes of ``absexpr.corpus``, which must fail; and ``--random`` unlabelled random compositions of
the targets' subterms, on which the engines can only be compared with each other. Each engine answers
every distinct query once through a fresh ``Oracle`` (uncached: the engine decides), then all of them
again (cached: the oracle's memo).

Printed per engine: target build time (normal form, or e-graph saturation), uncached and cached queries
per second, the fraction of relevant prefixes kept and irrelevant ones rejected, undecided answers (a
limit or a solver "unknown"), and agreement with the normal-form engine — as answered, and with
undecided answers read as "prune", which is what the paper-era SMT pruner did.

    .venv/bin/python benchmarks/absexpr.py [--engines normal,egglog,z3] [--z3-queries 40] [--json out.json]

z3 answers by refutation under quantified axioms and is slow, so it gets at most ``--z3-queries``
queries of each label per program (a seeded sample) and a per-query timeout of ``--z3-timeout`` s.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pandas as pd
from interpret import hardware  # benchmarks/interpret.py, beside this script

import mirage_lab as ml
from mirage_lab.absexpr import Limits, Oracle, Term, program_targets
from mirage_lab.absexpr.corpus import irrelevant_prefixes, random_compositions, relevant_prefixes
from mirage_lab.absexpr.engine import Engine
from mirage_lab.absexpr.engines import make_engine
from mirage_lab.absexpr.terms import var
from mirage_lab.bench import fused, programs
from mirage_lab.bench.harness import CHECKPOINTS, find_reference_dir
from mirage_lab.errors import MirageError

EngineMaker = Callable[[Sequence[Term], Limits], Engine | None]


def engines(names: Sequence[str], z3_timeout: float) -> dict[str, tuple[EngineMaker, Limits]]:
    out: dict[str, tuple[EngineMaker, Limits]] = {}
    for name in names:
        limits = Limits(time_s=z3_timeout) if name == "z3" else Limits()
        try:
            make_engine(name, [var(0)], limits)  # fails early when the package is missing
        except MirageError as e:
            print(f"skipping {name}: {e}", file=sys.stderr)
            continue
        out[name] = (lambda t, lim, name=name: make_engine(name, t, lim), limits)  # type: ignore[misc]
    return out


def corpus(ref_dir: Any) -> Iterator[tuple[str, Any, list[Term], list[Term]]]:
    """(label, program, relevant queries, irrelevant queries) per program instance."""
    saved: dict[tuple[str, int], list[Any]] = {}
    if ref_dir is not None:
        for stem, key in CHECKPOINTS.items():
            saved.setdefault(key, []).extend(ml.load_reference_checkpoint(ref_dir / f"{stem}.json"))
    keys = sorted({(n, 1) for n in programs.PROGRAMS} | set(saved) | {(n, 8) for n in fused.FUSED})
    for name, batch in keys:
        program = programs.PROGRAMS[name](batch)
        graphs = [program, *([fused.FUSED[name](batch)] if name in fused.FUSED else []), *saved.get((name, batch), [])]
        relevant = [p.expr for p in relevant_prefixes(name, graphs)]
        irrelevant = [p.expr for p in irrelevant_prefixes(name, program)]
        yield f"{name} bs{batch}", program, relevant, irrelevant


def measure(maker: EngineMaker, limits: Limits, targets: Sequence[Term], relevant: list[Term],
            irrelevant: list[Term], unlabelled: list[Term]) -> dict[str, Any]:
    t0 = time.perf_counter()
    engine = maker(targets, limits)
    oracle = Oracle(tuple(targets), limits, engine=engine)
    build = time.perf_counter() - t0
    queries = relevant + irrelevant + unlabelled
    t0 = time.perf_counter()
    answers = [oracle.check(q).ok for q in queries]
    uncached = time.perf_counter() - t0
    repeats = max(1, 20_000 // max(1, len(queries)))
    t0 = time.perf_counter()
    for _ in range(repeats):
        for q in queries:
            oracle.check(q)
    cached = time.perf_counter() - t0
    rel, irr = answers[:len(relevant)], answers[len(relevant):len(relevant) + len(irrelevant)]
    return {"build_ms": build * 1e3, "queries": len(queries), "uncached_s": uncached,
            "uncached_qps": len(queries) / uncached, "cached_qps": repeats * len(queries) / cached,
            "relevant_kept": sum(a is not False for a in rel), "relevant": len(rel),
            "irrelevant_rejected": sum(a is False for a in irr), "irrelevant": len(irr),
            "random_passed": sum(a is True for a in answers[len(rel) + len(irr):]), "random": len(unlabelled),
            "undecided": sum(a is None for a in answers), "answers": answers}


def sample(xs: list[Term], k: int | None, seed: int) -> list[Term]:
    return xs if k is None or len(xs) <= k else random.Random(seed).sample(xs, k)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engines", default="normal,egglog,z3", help="comma-separated: normal, egglog, z3")
    ap.add_argument("--random", type=int, default=500, help="unlabelled random compositions per program")
    ap.add_argument("--z3-queries", type=int, default=40, help="queries of each label per program for z3")
    ap.add_argument("--z3-timeout", type=float, default=2.0, help="z3 seconds per query")
    ap.add_argument("--reference-dir", help="folder of reference checkpoints (default ../shared/...)")
    ap.add_argument("--json", help="also write the rows and a hardware block to this JSON file")
    args = ap.parse_args()

    chosen = engines(args.engines.split(","), args.z3_timeout)
    ref_dir = find_reference_dir(args.reference_dir, "--reference-dir")
    rows = []
    for label, program, relevant, irrelevant in corpus(ref_dir):
        targets = program_targets(program)
        mixed = [q for q in random_compositions(targets, args.random) if q not in set(relevant + irrelevant)]
        normal: dict[Term, bool | None] = {}
        for name, (maker, limits) in chosen.items():
            k = args.z3_queries if name == "z3" else None
            rel, irr, mix = sample(relevant, k, 0), sample(irrelevant, k, 1), sample(mixed, k, 2)
            row = {"engine": name, "program": label, **measure(maker, limits, targets, rel, irr, mix)}
            answers = dict(zip(rel + irr + mix, row.pop("answers"), strict=True))
            if name == "normal":
                normal = answers
            elif normal:
                row["agree_with_normal"] = sum(a == normal[q] for q, a in answers.items())
                # the paper-era pruner discarded whatever the solver could not prove
                row["agree_if_undecided_prunes"] = sum((a is True) == normal[q] for q, a in answers.items())
            rows.append(row)
            print(f"{name:7s} {label:16s} {row['queries']:5d} queries  build {row['build_ms']:8.1f} ms  "
                  f"uncached {row['uncached_qps']:10.0f} q/s  cached {row['cached_qps']:10.0f} q/s", file=sys.stderr)

    frame = pd.DataFrame(rows)
    summary = summarise(frame)
    print(summary.to_markdown(index=False, floatfmt=".4g"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"hardware": hardware(), "rows": rows, "summary": summary.to_dict("records"),
                       "command": " ".join(sys.argv)}, f, indent=1)
    return 0


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    out = []
    for name, g in frame.groupby("engine", sort=False):
        rec = {"engine": name, "programs": len(g), "queries": int(g["queries"].sum()),
               "build_ms_median": statistics.median(g["build_ms"]),
               "uncached_qps": g["queries"].sum() / g["uncached_s"].sum(),
               "uncached_qps_median": statistics.median(g["uncached_qps"]),
               "cached_qps_median": statistics.median(g["cached_qps"]),
               "relevant_kept": f"{int(g['relevant_kept'].sum())}/{int(g['relevant'].sum())}",
               "irrelevant_rejected": f"{int(g['irrelevant_rejected'].sum())}/{int(g['irrelevant'].sum())}",
               "random_passed": f"{int(g['random_passed'].sum())}/{int(g['random'].sum())}",
               "undecided": int(g["undecided"].sum())}
        for col in ("agree_with_normal", "agree_if_undecided_prunes"):
            if col in g and g[col].notna().any():
                rec[col] = f"{int(g[col].sum())}/{int(g['queries'].sum())}"
        out.append(rec)
    return pd.DataFrame(out)


if __name__ == "__main__":
    raise SystemExit(main())
