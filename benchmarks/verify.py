"""Verification speed at the paper shapes: our default settings against the reference's.

For each benchmark μGraph — the hand-written fused graphs against their programs, and the first saved
reference graph of each checkpoint file (when ../shared is present) — time a one-shot
``ml.verify(candidate, program)`` with our defaults (``trials=3``, DEFAULT_FIELD, ``float_check="auto"``)
and with the reference's settings run by the same code (parity mode: p = 167, q = 83, one deterministic
trial, no float check; ``field=REFERENCE_FIELD, trials=1`` where the API has no parity mode). Printed per
graph: median seconds per verification and verifications/s for both, the ratio ours/reference, the split
of our time into program evaluation, candidate evaluation and the float64 cross-check, and — with the
program's field evaluation cached as a search holds it (``Verifier``) — candidate checks per second.

    .venv/bin/python benchmarks/verify.py [--repeats 3] [--backend numpy,cupy] [--json out.json]

CuPy figures are added when a CUDA device is usable (``--backend`` overrides). Without ``ml.verify`` the
script times the same procedure at the interpreter level (``ml.interpret(..., ns=FieldArith(...))``).

On a shared or busy machine run it with ``OPENBLAS_NUM_THREADS=1``: the field matmuls are float64 GEMMs, and
a multi-threaded OpenBLAS competing with other processes for the cores runs them up to ~10× slower.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from interpret import hardware  # benchmarks/interpret.py, beside this script

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.bench.harness import CHECKPOINTS, find_reference_dir
from mirage_lab.semantics.backend import cupy_available
from mirage_lab.semantics.field import DEFAULT_FIELD, REFERENCE_FIELD, FieldArith, FieldSpec

VERIFY: Callable[..., Any] | None = getattr(ml, "verify", None)
HAS_PARITY = VERIFY is not None and "parity" in inspect.signature(VERIFY).parameters


@dataclass(frozen=True)
class Settings:
    name: str
    kwargs: dict[str, Any]
    field: FieldSpec
    trials: int


def settings(float_check: str) -> tuple[Settings, Settings]:
    fc: bool | str = False if float_check == "off" else "auto"
    ours = Settings("ours", {"trials": 3, "field": DEFAULT_FIELD, "float_check": fc}, DEFAULT_FIELD, 3)
    if HAS_PARITY:
        ref = Settings("reference", {"parity": "current"}, REFERENCE_FIELD, 1)
    else:
        ref = Settings("reference", {"trials": 1, "field": REFERENCE_FIELD, "float_check": False}, REFERENCE_FIELD, 1)
    return ours, ref


# --------------------------------------------------------------------------- the interpreter-level stand-in


@dataclass
class _Result:
    """What the interpreter-level stand-in returns: the fields of VerificationResult this script reads."""

    equivalent: bool
    error_bound: float | None = None
    timings: dict[str, float] = field(default_factory=dict)


def _interpret_verify(candidate: ml.KernelGraph, reference: ml.KernelGraph, *, trials: int, field: FieldSpec,
                      backend: str, **_: Any) -> _Result:
    """k random trials over ``field``: draw, evaluate the program, evaluate the candidate, compare."""
    ns = FieldArith(field, backend)
    t_prog = t_cand = 0.0
    ok = True
    for k in range(trials):
        t = time.perf_counter()
        rng = np.random.default_rng([0, k])
        ins = [ns.random(tt.dims, rng) for tt in reference.input_types]
        want = ml.interpret(reference, ins, ns=ns)
        t_prog += time.perf_counter() - t
        t = time.perf_counter()
        got = ml.interpret(candidate, ins, ns=ns)
        ok = ok and all(g.equals(w) for g, w in zip(got, want, strict=True))
        t_cand += time.perf_counter() - t
    return _Result(ok, None, {"total": t_prog + t_cand, "program": t_prog, "candidate": t_cand, "float_check": 0.0})


def verify_once(candidate: ml.KernelGraph, reference: ml.KernelGraph, s: Settings, backend: str) -> Any:
    if VERIFY is None:
        return _interpret_verify(candidate, reference, trials=s.trials, field=s.field, backend=backend)
    return VERIFY(candidate, reference, backend=backend, **s.kwargs)


def cached_checker(reference: ml.KernelGraph, s: Settings, backend: str) -> Callable[[ml.KernelGraph], Any] | None:
    """A search's view: the program's field outputs are computed once and reused for every candidate."""
    try:
        from mirage_lab.verify import Verifier
    except ImportError:
        return None
    return Verifier(reference, backend=backend, **s.kwargs).check


# --------------------------------------------------------------------------- cases and measurement


def cases(ref_dir: Path | None, batches: set[int], names: set[str] | None
          ) -> list[tuple[str, str, int, ml.KernelGraph, ml.KernelGraph]]:
    """(kind, program name, batch, candidate, program) for the fused graphs and each checkpoint's first graph."""
    out: list[tuple[str, str, int, ml.KernelGraph, ml.KernelGraph]] = []
    for name in fused.FUSED:
        for b in (1, 8) if name in ("rmsnorm", "gqa") else (1,):
            if b in batches and (names is None or name in names):
                out.append(("fused", name, b, fused.FUSED[name](b), programs.PROGRAMS[name](b)))
    if ref_dir is not None:
        for stem, (name, b) in sorted(CHECKPOINTS.items()):
            path = ref_dir / f"{stem}.json"
            if not path.exists() or b not in batches or (names is not None and name not in names):
                continue
            graph, prog = ml.load_reference_checkpoint(path)[0], programs.PROGRAMS[name](b)
            if graph.input_types == prog.input_types:
                out.append((f"ref:{stem}[0]", name, b, graph, prog))
            else:
                print(f"skipping {stem}: its inputs differ from the program's", file=sys.stderr)
    return out


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def measure(candidate: ml.KernelGraph, program: ml.KernelGraph, s: Settings, backend: str, repeats: int,
            cached: bool) -> dict[str, Any]:
    """Median wall time of one-shot verifications (fresh program evaluation each), its split, the verdict;
    and the median time of a cached-program check."""
    walls: list[float] = []
    parts: dict[str, list[float]] = {"program": [], "candidate": [], "float_check": []}
    result = None
    for _ in range(repeats):
        t = time.perf_counter()
        result = verify_once(candidate, program, s, backend)
        walls.append(time.perf_counter() - t)
        for key, xs in parts.items():
            xs.append(float(result.timings.get(key, float("nan"))))
    assert result is not None
    row: dict[str, Any] = {
        f"{s.name}_s": _median(walls), f"{s.name}_per_s": 1.0 / _median(walls),
        **{f"{s.name}_{key}_s": _median(xs) for key, xs in parts.items()},
        f"{s.name}_equivalent": bool(result.equivalent),
    }
    if s.name == "ours":
        row["error_bound"] = result.error_bound
    check = cached_checker(program, s, backend) if cached else None
    if check is not None:
        check(candidate)  # evaluates and caches the program for every trial
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            check(candidate)
            times.append(time.perf_counter() - t)
        row[f"{s.name}_cached_s"] = _median(times)
        row[f"{s.name}_cached_per_s"] = 1.0 / _median(times)
    return row


def gpu_info() -> dict[str, Any]:
    if not cupy_available():
        return {}
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"]
    return {"gpu": name.decode() if isinstance(name, bytes) else str(name), "cupy": cupy.__version__}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="timed verifications per graph and setting")
    ap.add_argument("--backend", help="comma-separated: numpy, cupy (default numpy, plus cupy with a GPU)")
    ap.add_argument("--batch", default="1,8", help="batch sizes to include (default 1,8)")
    ap.add_argument("--programs", help="comma-separated program names (default all with a fused or saved graph)")
    ap.add_argument("--no-reference-graphs", action="store_true", help="only the hand-written fused graphs")
    ap.add_argument("--reference-dir", help="folder of reference checkpoints (default ../shared/...)")
    ap.add_argument("--float-check", choices=["auto", "off"], default="auto",
                    help="our float64 cross-check: the default 'auto', or 'off' for field trials alone")
    ap.add_argument("--no-cached", action="store_true", help="skip the cached-program (search) figures")
    ap.add_argument("--json", help="also write the rows and a hardware block to this JSON file")
    args = ap.parse_args()

    backends = args.backend.split(",") if args.backend else ["numpy"] + (["cupy"] if cupy_available() else [])
    ref_dir = None if args.no_reference_graphs else find_reference_dir(args.reference_dir)
    names = set(args.programs.split(",")) if args.programs else None
    ours, ref = settings(args.float_check)
    mode = ("ml.verify" + (" (parity='current' for the reference)" if HAS_PARITY else "")) if VERIFY else \
        "interpreter-level stand-in (ml.verify not available)"
    print(f"timing {mode}; ours: trials=3 over {DEFAULT_FIELD}, float_check={args.float_check}; "
          f"reference: 1 trial over {REFERENCE_FIELD}", file=sys.stderr)

    rows = []
    for kind, name, b, cand, prog in cases(ref_dir, {int(x) for x in args.batch.split(",")}, names):
        for backend in backends:
            row: dict[str, Any] = {"graph": kind, "program": name, "batch": b, "backend": backend,
                                   "kernels": len(cand.compute_nodes)}
            for s in (ours, ref):
                row.update(measure(cand, prog, s, backend, args.repeats, cached=not args.no_cached))
            row["ratio"] = row["ours_s"] / row["reference_s"]
            rows.append(row)
            print(f"{kind:>22} {name:>10} b={b} {backend:>5}: ours {row['ours_s']:7.3f} s "
                  f"({row['ours_per_s']:6.2f}/s; program {row['ours_program_s']:.3f}, candidate "
                  f"{row['ours_candidate_s']:.3f}, float {row['ours_float_check_s']:.3f})  reference "
                  f"{row['reference_s']:7.3f} s ({row['reference_per_s']:6.2f}/s)  ratio {row['ratio']:5.2f}  "
                  f"verdicts {row['ours_equivalent']}/{row['reference_equivalent']}", file=sys.stderr)
    if not rows:
        print("no graphs selected", file=sys.stderr)
        return 1
    df = pd.DataFrame(rows)
    cols = [c for c in ("graph", "program", "batch", "backend", "ours_s", "ours_per_s", "reference_s",
                        "reference_per_s", "ratio", "ours_program_s", "ours_candidate_s", "ours_float_check_s",
                        "ours_cached_per_s", "reference_cached_per_s", "ours_equivalent", "reference_equivalent")
            if c in df]
    print(df[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    for backend, sub in df.groupby("backend"):
        print(f"\n[{backend}] median s/verification: ours {sub['ours_s'].median():.3f} "
              f"({1 / sub['ours_s'].median():.2f}/s), reference {sub['reference_s'].median():.3f} "
              f"({1 / sub['reference_s'].median():.2f}/s); median ratio ours/reference {sub['ratio'].median():.2f} "
              f"(max {sub['ratio'].max():.2f})")
    if args.json:
        hw = {**hardware(), **gpu_info(), "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default")}
        meta = {"mode": mode, "repeats": args.repeats, "float_check": args.float_check,
                "ours": {"trials": 3, "field": str(DEFAULT_FIELD)}, "reference": {"trials": 1, "field":
                                                                                  str(REFERENCE_FIELD)}}
        Path(args.json).write_text(json.dumps({"hardware": hw, "settings": meta, "rows": rows}, indent=1,
                                              default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
