"""Acceptance (issue 3): the verifier rejects every really-different mutant and accepts every rewrite.

Sources of μGraphs that compute their benchmark program:

* every saved reference μGraph (``../shared/reference_mugraphs``, ``ml.load_reference_checkpoint``)
  except the QKNorm+GQA files, whose graphs are themselves *not* equivalent to their program
  (a known finding, see ``benchmarks/reference_equivalence.py``); ``--include-qknorm`` adds them,
  reported separately;
* the hand-written fused graphs (``bench/fused.py``, ``fused:<name>_bs<b>``);
* the unfused programs themselves (``program:<name>_bs<b>``), the only graphs with explicit
  kernel reductions (so the only ``reduction_dim`` mutants).

For each graph: ``mutate.mutants`` (valid, same input/output types), interleaved across kinds
(round robin, so a per-graph limit samples every kind); each is compared with its source graph by
the float64 interpreter (``mutate.really_different``) until ``limit`` really-different ones are
found; each of those is verified against the benchmark program with ``ml.verify``'s defaults
(3 trials, DEFAULT_FIELD, float check "auto"), through one ``Verifier`` per program so the
program is evaluated once per trial. ``rewrites`` candidates, interleaved by kind the same way, are
float-checked against their source graph, and the float-equal ones verified the same way.
Every mutant must be rejected and every rewrite accepted; exceptions are listed.

Field evaluation at the paper shapes is slow on a CPU (rmsnorm / gated_mlp ≈ 2–5 s, attention bs8
up to ≈ 45 s per candidate), so ``PLAN`` samples the expensive files (graphs per file, mutants per
graph, rewrites per source); the cheap ones are taken whole.

    .venv/bin/python benchmarks/verify_mutants.py [--files STEM ...] [--limit-per-graph N]
        [--graphs-per-file N] [--rewrites N] [--include-qknorm] [--json PATH]
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import os
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mirage_lab as ml
from mirage_lab.bench import fused, harness, programs
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.verify import Verifier
from mirage_lab.verify.mutate import KINDS, Mutant, mutants, really_different, rewrites
from mirage_lab.verify.rewrite import REWRITES

#: source → (graphs taken, really-different mutants verified per graph, rewrites verified per source);
#: None = all. Tuned so that the default run passes 2,000 really-different mutants on a 2-core CPU.
PLAN: dict[str, tuple[int | None, int | None, int | None]] = {
    "ntrans_bs1": (None, None, 12), "ntrans_bs8": (None, None, 12),
    "lora": (None, None, None), "single_lora": (None, None, None),
    "gqa_bs1": (None, 18, 6), "mha_bs1": (None, 16, 4), "mqa_bs1": (None, 14, 3), "single_mqa_bs1": (None, 10, 2),
    "rmsnorm_bs1": (6, 5, 2), "rmsnorm_bs8": (6, 5, 2), "gated_mlp": (3, 4, 1), "single_gated_mlp": (None, 4, 1),
    "gqa_bs8": (2, 3, 1), "mqa_bs8": (1, 2, 1), "mha_bs8": (1, 2, 0),
    "qknorm_gqa_bs1": (5, 4, 0), "qknorm_gqa_bs8": (1, 2, 0),
    "fused:rmsnorm_bs1": (None, 12, 3), "fused:gated_mlp_bs1": (None, 8, 2), "fused:lora_bs1": (None, None, None),
    "fused:gqa_bs1": (None, 20, 4), "fused:rmsnorm_bs8": (None, 6, 2), "fused:gqa_bs8": (None, 3, 1),
    "program:ntrans_bs1": (None, None, None), "program:lora_bs1": (None, None, None),
    "program:rmsnorm_bs1": (None, 8, 2), "program:gqa_bs1": (None, 20, 4), "program:mha_bs1": (None, 12, 2),
    "program:mqa_bs1": (None, 10, 2), "program:gated_mlp_bs1": (None, 6, 2),
}
QKNORM = ("qknorm_gqa_bs1", "qknorm_gqa_bs8")


@dataclass
class KindCount:
    generated: int = 0
    checked: int = 0
    equal: int = 0
    inconclusive: int = 0
    different: int = 0
    rejected: int = 0
    accepted: int = 0


@dataclass
class Outcome:
    """What one graph (or a whole source, once merged) gave."""

    kinds: dict[str, KindCount] = field(default_factory=lambda: defaultdict(KindCount))
    rewrites: Counter[str] = field(default_factory=Counter)  # accepted / rejected / discarded, and per kind
    accepted_mutants: list[dict[str, Any]] = field(default_factory=list)
    rejected_rewrites: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    def merge(self, other: Outcome) -> None:
        for k, c in other.kinds.items():
            self.kinds[k] = total([self.kinds[k], c])
        self.rewrites.update(other.rewrites)
        self.accepted_mutants += other.accepted_mutants
        self.rejected_rewrites += other.rejected_rewrites
        self.seconds += other.seconds


@dataclass
class SourceResult:
    source: str
    program: str
    graphs: int
    outcome: Outcome = field(default_factory=Outcome)
    wall: float = 0.0


@dataclass(frozen=True)
class Unit:
    """One graph of one source, with its limits: the work of one task."""

    source: str
    graph: int
    mutants: int | None
    rewrites: int | None


def program_for(stem: str, g: KernelGraph) -> KernelGraph:
    """The file's benchmark program at the file's input dims (SPEC §9; the file's dims are the truth)."""
    name, b = harness.CHECKPOINTS[stem]
    prog = programs.PROGRAMS[name](b)
    if [t.dims for t in prog.input_types] == [t.dims for t in g.input_types]:
        return prog
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    ref_eq = importlib.import_module("reference_equivalence")
    result: KernelGraph = ref_eq.program_at_dims(name, [t.dims for t in g.input_types])
    return result


FUSED_SOURCES = [("rmsnorm", 1), ("gated_mlp", 1), ("lora", 1), ("gqa", 1), ("rmsnorm", 8), ("gqa", 8)]
PROGRAM_SOURCES = ("ntrans", "lora", "rmsnorm", "gqa", "mha", "mqa", "gated_mlp")


def source_names(root: Path | None, include_qknorm: bool) -> list[str]:
    """Every source in a fixed order: reference files, fused graphs, programs."""
    files = [s for s in sorted(harness.CHECKPOINTS) if include_qknorm or s not in QKNORM] if root else []
    return files + [f"fused:{n}_bs{b}" for n, b in FUSED_SOURCES] + [f"program:{n}_bs1" for n in PROGRAM_SOURCES]


_LOADED: dict[str, tuple[KernelGraph, list[KernelGraph]]] = {}
_VERIFIERS: dict[str, Verifier] = {}


def load(name: str) -> tuple[KernelGraph, list[KernelGraph]]:
    """(benchmark program, graphs) of a source; cached per process."""
    if name not in _LOADED:
        if name.startswith("fused:"):
            prog_name, b = name[6:].rsplit("_bs", 1)
            _LOADED[name] = programs.PROGRAMS[prog_name](int(b)), [fused.FUSED[prog_name](int(b))]
        elif name.startswith("program:"):
            prog = programs.PROGRAMS[name[8:].rsplit("_bs", 1)[0]](1)
            _LOADED[name] = prog, [prog]
        else:
            root = harness.find_reference_dir()
            assert root is not None
            graphs = ml.load_reference_checkpoint(root / f"{name}.json")
            _LOADED[name] = program_for(name, graphs[0]), graphs
    return _LOADED[name]


def round_robin(ms: Sequence[Mutant], order: Sequence[str] = KINDS) -> list[Mutant]:
    """Interleave by kind (in ``order``), so that a prefix samples every kind."""
    by_kind: dict[str, list[Mutant]] = defaultdict(list)
    for m in ms:
        by_kind[m.kind].append(m)
    lanes = [by_kind[k] for k in order if k in by_kind]
    return [m for group in itertools.zip_longest(*lanes) for m in group if m is not None]


def run_unit(unit: Unit) -> Outcome:
    """Mutate one graph, verify its really-different mutants and its rewrites against the program."""
    t0 = time.perf_counter()
    prog, graphs = load(unit.source)
    g = graphs[unit.graph]
    key = prog.canonical_hash()
    if key not in _VERIFIERS:
        if len(_VERIFIERS) >= 3:  # sources run roughly in order: keep the recent programs' cached trials
            del _VERIFIERS[next(iter(_VERIFIERS))]
        _VERIFIERS[key] = Verifier(prog)
    ver = _VERIFIERS[key]
    res = Outcome()
    found = 0
    for m in round_robin(list(mutants(g))):
        kc = res.kinds[m.kind]
        kc.generated += 1
        if unit.mutants is not None and found >= unit.mutants:
            continue
        kc.checked += 1
        diff = really_different(g, m.graph)
        if diff is None:
            kc.inconclusive += 1
            continue
        if not diff:
            kc.equal += 1
            continue
        kc.different += 1
        found += 1
        r = ver.check(m.graph)
        if r.equivalent:
            kc.accepted += 1
            res.accepted_mutants.append({"graph": unit.graph, "kind": m.kind, "description": m.description,
                                         "result": r.summary()})
        else:
            kc.rejected += 1
    if unit.rewrites != 0:  # candidates interleaved by kind, float-checked in that order
        done = 0
        for m in round_robin(list(rewrites(g, check=False)), tuple(REWRITES)):
            if unit.rewrites is not None and done >= unit.rewrites:
                break
            diff = really_different(g, m.graph)
            if diff is not False:
                res.rewrites["discarded"] += 1
                continue
            done += 1
            r = ver.check(m.graph)
            verdict = "accepted" if r.equivalent else "rejected"
            res.rewrites[verdict] += 1
            res.rewrites[f"{m.kind} {verdict}"] += 1
            if not r.equivalent:
                res.rejected_rewrites.append({"graph": unit.graph, "kind": m.kind, "description": m.description,
                                              "result": r.summary()})
    res.seconds = time.perf_counter() - t0
    return res


def spread(n: int, k: int | None) -> list[int]:
    """``k`` indices spread evenly over ``range(n)`` (all of them when ``k`` is None or ≥ n)."""
    if k is None or k >= n:
        return list(range(n))
    return [i * n // k for i in range(k)]


def prog_name(source: str) -> str:
    if source in harness.CHECKPOINTS:
        return harness.CHECKPOINTS[source][0]
    return source.split(":", 1)[1].rsplit("_bs", 1)[0]


def total(counts: Any) -> KindCount:
    t = KindCount()
    for c in counts:
        for k in vars(t):
            setattr(t, k, getattr(t, k) + getattr(c, k))
    return t


HEAD = (f"{'source':<22} {'program':<10} {'gr':>3} {'gen':>5} {'chk':>5} {'equal':>5} {'inc':>4} {'differ':>6} "
        f"{'reject':>6} {'accpt':>5}  rw acc/verif  {'cpu s':>6}")


def units_of(name: str, limit: int | None, graphs_per_file: int | None, rewrites_per: int | None) -> list[Unit]:
    n, per, rw = PLAN.get(name, (None, 5, 1))
    n = graphs_per_file if graphs_per_file is not None else n
    per = limit if limit is not None else per
    rw = rewrites_per if rewrites_per is not None else rw
    picked = spread(len(load(name)[1]), n)
    if rw is None:
        return [Unit(name, i, per, None) for i in picked]
    # ``rw`` rewrites in all: one (or more) on each of ``rw`` graphs spread over the picked ones
    with_rw = set(spread(len(picked), rw))
    each = -(-rw // len(picked))
    return [Unit(name, i, per, each if k in with_rw else 0) for k, i in enumerate(picked)]


def run(files: Sequence[str] | None, limit: int | None, graphs_per_file: int | None, rewrites_per: int | None,
        include_qknorm: bool, jobs: int, out: Any = sys.stdout) -> list[SourceResult]:
    root = harness.find_reference_dir()
    if root is None:
        print("reference checkpoints not found: only the fused graphs and programs are used", file=out)
    names = [n for n in source_names(root, include_qknorm or bool(files and set(files) & set(QKNORM)))
             if not files or n in files]
    work = {n: units_of(n, limit, graphs_per_file, rewrites_per) for n in names}
    print(HEAD, file=out)
    print("-" * len(HEAD), file=out, flush=True)
    results = []
    pool = ProcessPoolExecutor(jobs) if jobs > 1 else None
    try:
        t0 = time.perf_counter()
        futures = {n: [pool.submit(run_unit, u) if pool else None for u in work[n]] for n in names}
        for n in names:
            res = SourceResult(n, prog_name(n), len(work[n]))
            for u, fut in zip(work[n], futures[n], strict=True):
                res.outcome.merge(fut.result() if fut is not None else run_unit(u))
            res.wall = time.perf_counter() - t0
            results.append(res)
            o, tot = res.outcome, total(res.outcome.kinds.values())
            verified = o.rewrites["accepted"] + o.rewrites["rejected"]
            print(f"{n:<22} {res.program:<10} {res.graphs:>3} {tot.generated:>5} {tot.checked:>5} {tot.equal:>5} "
                  f"{tot.inconclusive:>4} {tot.different:>6} {tot.rejected:>6} {tot.accepted:>5}  "
                  f"{o.rewrites['accepted']:>5}/{verified:<5}  {o.seconds:>7.1f}", file=out, flush=True)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    report(results, out)
    return results


def report(results: list[SourceResult], out: Any) -> None:
    main = [r for r in results if r.source not in QKNORM]
    print("-" * len(HEAD), file=out)
    print("\nper mutation kind (all sources but QKNorm+GQA):", file=out)
    print(f"{'kind':<16} {'generated':>9} {'checked':>8} {'equal':>6} {'inconcl':>7} {'different':>9} "
          f"{'rejected':>8} {'accepted':>8}", file=out)
    for kind in KINDS:
        c = total(r.outcome.kinds[kind] for r in main if kind in r.outcome.kinds)
        print(f"{kind:<16} {c.generated:>9} {c.checked:>8} {c.equal:>6} {c.inconclusive:>7} {c.different:>9} "
              f"{c.rejected:>8} {c.accepted:>8}", file=out)
    c = total(k for r in main for k in r.outcome.kinds.values())
    print(f"{'total':<16} {c.generated:>9} {c.checked:>8} {c.equal:>6} {c.inconclusive:>7} {c.different:>9} "
          f"{c.rejected:>8} {c.accepted:>8}", file=out)
    rw: Counter[str] = Counter()
    for r in main:
        rw.update(r.outcome.rewrites)
    rate = 100.0 * c.rejected / c.different if c.different else float("nan")
    print(f"\nmutants: {c.different} really different, {c.rejected} rejected ({rate:.1f} %), {c.accepted} accepted",
          file=out)
    verified = rw["accepted"] + rw["rejected"]
    per_kind = ", ".join(f"{k} {rw[k + ' accepted']}/{rw[k + ' accepted'] + rw[k + ' rejected']}" for k in REWRITES)
    print(f"rewrites: {rw['accepted']} of {verified} verified rewrites accepted ({rw['rejected']} rejected) — "
          f"{per_kind}; {rw['discarded']} candidates tried on the way were not float-equal (not verified)",
          file=out)
    for r in results:
        for a in r.outcome.accepted_mutants:
            print(f"ACCEPTED MUTANT {r.source} graph {a['graph']}: {a['description']}\n  {a['result']}", file=out)
        for a in r.outcome.rejected_rewrites:
            print(f"REJECTED REWRITE {r.source} graph {a['graph']}: {a['description']}\n  {a['result']}", file=out)
    for r in results:
        if r.source in QKNORM:
            t = total(r.outcome.kinds.values())
            print(f"(reported separately) {r.source}: {t.different} different mutants, {t.rejected} rejected, "
                  f"{t.accepted} accepted — the source graphs are not equivalent to the program", file=out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", nargs="*", help="sources to run: checkpoint stems, 'fused:…', 'program:…' (default all)")
    ap.add_argument("--limit-per-graph", type=int, help="really-different mutants verified per graph (overrides PLAN)")
    ap.add_argument("--graphs-per-file", type=int, help="graphs taken per source (overrides PLAN)")
    ap.add_argument("--rewrites", type=int, help="rewrites verified per source (overrides PLAN)")
    ap.add_argument("--include-qknorm", action="store_true", help="also mutate the QKNorm+GQA graphs (separately)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes (default 2)")
    ap.add_argument("--json", type=Path, help="write the per-source, per-kind counts here")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    results = run(args.files, args.limit_per_graph, args.graphs_per_file, args.rewrites,
                  args.include_qknorm, args.jobs)
    secs = time.perf_counter() - t0
    print(f"\ntotal time {secs:.0f} s")
    if args.json:
        doc = {"seconds": secs, "plan": {k: list(v) for k, v in PLAN.items()},
               "sources": [{"source": r.source, "program": r.program, "graphs": r.graphs,
                            "cpu_seconds": r.outcome.seconds, "kinds": {k: vars(c) for k, c in r.outcome.kinds.items()},
                            "rewrites": dict(r.outcome.rewrites), "accepted_mutants": r.outcome.accepted_mutants,
                            "rejected_rewrites": r.outcome.rejected_rewrites} for r in results]}
        args.json.write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
