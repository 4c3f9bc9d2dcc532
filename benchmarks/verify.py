"""Verification speed before and after a change, measured side by side in one run (issue 18).

"Before" is the code of a git revision (``--before``, default ``ba8c6f1``, the state before the verification
fast path), extracted once into a cache folder; "after" is this working tree. Every figure is taken in a fresh
worker process (this script with ``--worker``) whose ``PYTHONPATH`` points at one tree or the other, so that
``import mirage_lab`` loads that tree's code (each worker reports where every ``mirage_lab`` module came from,
and a worker that loaded the other tree's code counts as failed). The before and after workers of one case
run one right after the other, alternating which goes first, so machine noise hits both alike.

Per benchmark — the hand-written fused graphs (``bench.fused``) against their programs at batch 1 and 8, and
the first saved graph of each reference checkpoint (``bench.harness.CHECKPOINTS``, when ../shared is present)
— each worker measures, after a warm-up ``ml.verify`` on a tiny unrelated graph (imports and one-time costs):

* ``first_s``: the first ``ml.verify(candidate, program)`` in the process, after a warm-up call with another
  seed (so the process has touched that much memory before: a fresh VM process pays ~3 ms per MiB on first
  touch, once, whatever it verifies);
* ``repeat_s``: the median of ``--repeats`` further ``ml.verify(candidate, program)`` calls;
* ``per_candidate_s``: the median of ``--repeats`` ``Verifier(program).check(candidate)`` after one warm-up
  check on the same verifier (the program already seen, as inside a search); default settings (trials=3,
  float_check="auto"); the verdict and error bound are recorded and must agree before/after;
* ``interp_s``: the median of ``--repeats`` float64 ``ml.interpret(program, inputs)`` (uniform(-0.5, 0.5)
  float64 inputs, one warm-up run first), and ``ratio`` = per_candidate_s / interp_s.

Last, one complete RMSNorm+Linear batch-1 search (preset "mlp", serial executor, no run folder) before and after:
wall seconds, the report's verification seconds and their share, states and verified graphs (``--no-search``
skips it).
Printed: a table with before/after columns and speed-ups, then the issue's targets, each passed or failed.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/verify.py --json data/verify_before_after.json
    .venv/bin/python benchmarks/verify.py --programs lora --batch 1 --no-search      # a quick look

Options: ``--programs rmsnorm,gqa``, ``--batch 1,8``, ``--repeats 3``, ``--no-reference-graphs``,
``--before REV``, ``--before-dir DIR`` (where the before tree is kept; default ~/.cache/mirage-lab/), ``--json``.
On a shared or busy machine run it with ``OPENBLAS_NUM_THREADS=1`` (the workers inherit the environment): the
field matmuls are float64 GEMMs, and a multi-threaded OpenBLAS competing for the cores runs them up to ~10×
slower and far noisier. A full run (25 cases and the search) takes roughly 40–50 minutes on 2 cores, most of it
in the before workers of the batch-8 attention and GatedMLP cases. ``first_s`` is one sample per worker by its
nature, so first/repeat is the noisiest figure.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULT = "VERIFY-BENCH-RESULT "  # the prefix of a worker's one result line (libraries may print too)
SIDES = ("before", "after")
#: the issue's targets, printed beside the figures
TARGETS = {"ratio_rmsnorm_1": 20.0, "ratio_gqa_8": 10.0, "speedup": 10.0, "first_over_repeat": 1.5,
           "search_share": 0.30}


# --------------------------------------------------------------------------- worker side (runs in either tree)


def _median_time(fn: Callable[[], Any], repeats: int) -> float:
    from mirage_lab.bench.harness import median_time  # (in both trees: the worker imports its own)

    return median_time(fn, repeats)


def _tiny_pair() -> tuple[Any, Any]:
    """A small fused RMSNorm+Linear and its program: one customized kernel, so the warm-up passes through
    the same code (block graphs, field and float checks) as the measured graphs, at no cost."""
    from mirage_lab.ir.builder import new_kernel_graph, new_threadblock_graph

    g = new_kernel_graph()
    x, w = g.new_input(dims=(2, 64)), g.new_input(dims=(64, 32))
    g.mark_output(g.matmul(g.rms_norm(x, normalized_shape=(64,)), w))
    prog = g.freeze()
    g = new_kernel_graph()
    x, w = g.new_input(dims=(2, 64)), g.new_input(dims=(64, 32))
    tb = new_threadblock_graph(grid_dim=(4, 1, 1), forloop_range=4)
    tx = tb.new_input(dtensor=x, input_map=(-1, -1, -1), forloop_dim=1)
    tw = tb.new_input(dtensor=w, input_map=(1, -1, -1), forloop_dim=0)
    rms, acc = tb.forloop_accum(tx, "rms"), tb.forloop_accum(tb.matmul(tx, tw))
    tb.new_output(stensor=tb.div(acc, rms), output_map=(1, -1, -1))
    (out,) = g.customized([x, w], tb)
    g.mark_output(out)
    return g.freeze(), prog


def _build_case(spec: dict[str, Any]) -> tuple[Any, Any]:
    import mirage_lab as ml
    from mirage_lab.bench import fused, programs

    prog = programs.PROGRAMS[spec["program"]](spec["batch"])
    if spec["kind"] == "fused":
        return fused.FUSED[spec["program"]](spec["batch"]), prog
    return ml.load_reference_checkpoint(Path(spec["path"]))[0], prog


def _verdict(r: Any) -> dict[str, Any]:
    bound = r.error_bound
    return {"equivalent": bool(r.equivalent), "error_bound": None if bound is None else float(bound)}


def measure_case(spec: dict[str, Any]) -> dict[str, Any]:
    """The figures of one case, in the order a user meets them: first call, repeats, a search's checks; the
    plain interpretation last, so that it cannot warm anything up for the verifier."""
    import numpy as np

    import mirage_lab as ml
    from mirage_lab.verify import Verifier

    backend = spec.get("backend")  # None: the library's automatic choice
    ml.verify(*_tiny_pair(), backend=backend)
    cand, prog = _build_case(spec)
    if cand.input_types != prog.input_types:
        return {"skip": "the graph's inputs differ from the program's"}
    n = spec["repeats"]
    # Warm the process up with another seed, i.e. other random inputs: the measured first call then meets a
    # new (program, seed) in a process that has touched as much memory before. Without it, first_s would
    # mostly time this VM backing fresh pages on first touch (~3 ms per MiB, once per process).
    ml.verify(cand, prog, seed=1, backend=backend)
    t = time.perf_counter()
    first = ml.verify(cand, prog, backend=backend)
    out: dict[str, Any] = {"first_s": time.perf_counter() - t, "verify": _verdict(first)}
    out["repeat_s"] = _median_time(lambda: ml.verify(cand, prog, backend=backend), n)
    verifier = Verifier(prog, backend=backend)
    result = verifier.check(cand)  # the warm-up: the program's evaluation is made (and kept, where it is)
    out["per_candidate_s"] = _median_time(lambda: verifier.check(cand), n)
    out["check"], out["timings"] = _verdict(result), {k: float(v) for k, v in result.timings.items()}
    rng = np.random.default_rng(0)
    inputs = [rng.uniform(-0.5, 0.5, tt.dims) for tt in prog.input_types]
    ml.interpret(prog, inputs, backend=backend)
    out["interp_s"] = _median_time(lambda: ml.interpret(prog, inputs, backend=backend), n)
    return out


def measure_search(spec: dict[str, Any]) -> dict[str, Any]:
    from mirage_lab.bench import programs
    from mirage_lab.search import preset, superoptimize

    program = programs.PROGRAMS[spec["program"]](spec["batch"])
    t = time.perf_counter()
    res = superoptimize(program, preset(spec["preset"]), executor="serial", run_dir=False, progress=False)
    wall = time.perf_counter() - t
    r = res.report
    return {"wall_s": wall, "seconds": {k: float(v) for k, v in r.seconds.items()}, "states": r.states,
            "checked": sum(r.candidates.values()), "verified": r.verified, "stop": r.stop_reason,
            "cached": bool(getattr(r, "cached", False))}


def _foreign_modules(root: Path) -> list[str]:
    """The loaded mirage_lab modules whose files are not in ``root`` (the editable install of the working
    tree sits on sys.meta_path behind PYTHONPATH; a module only the working tree has would come from there)."""
    homes = (root / "mirage_lab", root / "widgets")  # pyproject maps mirage_lab.widgets to widgets/
    files = {name: getattr(mod, "__file__", None) for name, mod in list(sys.modules.items())
             if name == "mirage_lab" or name.startswith("mirage_lab.")}
    return [f"{name}: {f}" for name, f in files.items()
            if f and not any(Path(f).resolve().is_relative_to(h) for h in homes)]


def worker(spec_text: str) -> int:
    spec = json.loads(spec_text)
    out = measure_search(spec) if spec.get("search") else measure_case(spec)
    import mirage_lab

    out["mirage_lab_file"] = mirage_lab.__file__
    out["foreign_modules"] = _foreign_modules(Path(spec["root"]))
    print(RESULT + json.dumps(out), flush=True)
    return 0


# --------------------------------------------------------------------------- the before tree


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout.strip()


def _git_or_none(*args: str) -> str | None:
    """``_git``, or None where there is no repository (the device machine gets a copy of the tree only)."""
    try:
        return _git(*args)
    except (OSError, subprocess.CalledProcessError):
        return None


def before_tree(rev: str, base: Path) -> Path:
    """An extracted copy of ``rev`` (``git archive``: no worktree is registered in the shared .git), kept in
    ``base`` and reused while its stamp names the same commit."""
    sha = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    tree = base / f"before-{sha[:12]}"
    stamp = tree / ".verify-bench-commit"
    if stamp.exists() and stamp.read_text().strip() == sha:
        return tree
    base.mkdir(mode=0o700, parents=True, exist_ok=True)  # per user, like the project's other caches
    tmp = Path(tempfile.mkdtemp(prefix=".partial-", dir=base))  # renamed into place once complete
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", sha], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
    (tmp / stamp.name).write_text(sha + "\n")
    if tree.exists():
        subprocess.run(["rm", "-rf", str(tree)], check=True)
    tmp.rename(tree)
    return tree


# --------------------------------------------------------------------------- running workers


def run_worker(spec: dict[str, Any], root: Path, timeout: float) -> dict[str, Any]:
    """One worker on the code in ``root``; a failure comes back as {"error": ...} with its stderr's tail."""
    spec = {**spec, "root": str(root)}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return {"error": f"timed out after {timeout:.0f} s", "stderr_tail": _tail(e.stderr)}
    lines = [ln[len(RESULT):] for ln in p.stdout.splitlines() if ln.startswith(RESULT)]
    if p.returncode != 0 or not lines:
        return {"error": f"exit status {p.returncode}", "stderr_tail": _tail(p.stderr)}
    out: dict[str, Any] = json.loads(lines[-1])
    out["process_s"] = time.perf_counter() - t
    if out["foreign_modules"] or not Path(out["mirage_lab_file"]).resolve().is_relative_to(root):
        return {"error": f"imported code from outside {root}: mirage_lab from {out['mirage_lab_file']}, "
                         f"{len(out['foreign_modules'])} modules elsewhere, e.g. {out['foreign_modules'][:3]}"}
    return out


def _tail(text: str | bytes | None, lines: int = 15) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return "\n".join((text or "").splitlines()[-lines:])


def side_by_side(spec: dict[str, Any], roots: dict[str, Path], flip: bool, timeout: float) -> dict[str, Any]:
    """Before and after of one case, one right after the other; ``flip`` runs after first."""
    out = {}
    sides = [s for s in SIDES if s in roots]
    for side in (sides[::-1] if flip else sides):
        out[side] = run_worker(spec, roots[side], timeout)
        if "error" in out[side]:
            print(f"  !! {side} worker failed ({out[side]['error']}):\n{_indent(out[side].get('stderr_tail', ''))}",
                  file=sys.stderr)
    return out


def _indent(text: str) -> str:
    return "\n".join("     | " + ln for ln in text.splitlines())


# --------------------------------------------------------------------------- cases and rows


def case_specs(ref_dir: Path | None, batches: set[int], names: set[str] | None, repeats: int
               ) -> list[dict[str, Any]]:
    """The fused graphs at batch 1 and 8, then the first graph of each reference checkpoint."""
    from mirage_lab.bench import fused
    from mirage_lab.bench.harness import CHECKPOINTS

    def wanted(name: str, b: int) -> bool:
        return b in batches and (names is None or name in names)

    specs: list[dict[str, Any]] = [{"kind": "fused", "graph": "fused", "program": name, "batch": b}
                                   for name in fused.FUSED for b in (1, 8) if wanted(name, b)]
    for stem, (name, b) in sorted(CHECKPOINTS.items()):
        path = ref_dir / f"{stem}.json" if ref_dir is not None else None
        if path is not None and path.exists() and wanted(name, b):
            specs.append({"kind": "ref", "graph": f"ref:{stem}[0]", "program": name, "batch": b, "path": str(path)})
    return [{**s, "repeats": repeats} for s in specs]


def case_row(spec: dict[str, Any], res: dict[str, dict[str, Any]]) -> dict[str, Any]:
    row: dict[str, Any] = {"graph": spec["graph"], "program": spec["program"], "batch": spec["batch"]}
    for side, r in res.items():
        if "error" in r or "skip" in r:
            row[f"{side}_error"] = r.get("error") or r.get("skip")
            continue
        row.update({f"{side}_{k}": r[k] for k in ("per_candidate_s", "interp_s", "first_s", "repeat_s")})
        row[f"{side}_ratio"] = r["per_candidate_s"] / r["interp_s"]
        row[f"{side}_first_over_repeat"] = r["first_s"] / r["repeat_s"]
        row[f"{side}_equivalent"] = r["check"]["equivalent"]
        row[f"{side}_error_bound"] = r["check"]["error_bound"]
        row[f"{side}_verify_equivalent"] = r["verify"]["equivalent"]
        row[f"{side}_timings"], row[f"{side}_mirage_lab_file"] = r["timings"], r["mirage_lab_file"]
        row[f"{side}_process_s"] = r["process_s"]  # the whole worker, start-up included
    if "before_per_candidate_s" in row and "after_per_candidate_s" in row:
        row["speedup"] = row["before_per_candidate_s"] / row["after_per_candidate_s"]
        verdicts = {row[f"{s}_{k}"] for s in SIDES for k in ("equivalent", "verify_equivalent")}
        row["verdicts_agree"] = len(verdicts) == 1
    return row


def search_rows(res: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for side, r in res.items():
        if "error" in r:
            rows.append({"side": side, "error": r["error"]})
            continue
        ver = r["seconds"].get("verification", float("nan"))
        rows.append({"side": side, "wall_s": r["wall_s"], "verification_s": ver, "share": ver / r["wall_s"],
                     "states": r["states"], "checked": r["checked"], "verified": r["verified"], "stop": r["stop"],
                     "cached": r["cached"], "seconds": r["seconds"]})
    return rows


def _progress(spec: dict[str, Any], row: dict[str, Any]) -> None:
    def fig(side: str) -> str:
        if f"{side}_error" not in row and f"{side}_per_candidate_s" not in row:
            return f"{side}: -"
        if f"{side}_error" in row:
            return f"{side}: {row[f'{side}_error']}"
        return (f"{side}: {row[f'{side}_per_candidate_s']:.3f} s/candidate, ratio {row[f'{side}_ratio']:.1f}×, "
                f"first {row[f'{side}_first_s']:.3f} s, repeat {row[f'{side}_repeat_s']:.3f} s")

    speed = f"  speed-up {row['speedup']:.1f}×" if "speedup" in row else ""
    print(f"{spec['graph']:>20} {spec['program']:>10} b={spec['batch']}  {fig('before')}  |  {fig('after')}{speed}",
          file=sys.stderr, flush=True)
    if row.get("verdicts_agree") is False:
        print("!" * 100 + f"\n!! VERDICTS DIFFER for {spec['graph']} {spec['program']} b={spec['batch']}: before "
              f"{row['before_equivalent']}/{row['before_verify_equivalent']}, after {row['after_equivalent']}/"
              f"{row['after_verify_equivalent']} (Verifier.check / ml.verify)\n" + "!" * 100, file=sys.stderr)


# --------------------------------------------------------------------------- report


#: (table heading, row key) of the before/after figures, in print order
COLUMNS = [("s/candidate", "per_candidate_s"), ("interp s", "interp_s"), ("ratio", "ratio"), ("first s", "first_s"),
           ("repeat s", "repeat_s"), ("first/repeat", "first_over_repeat"), ("equivalent", "equivalent"),
           ("failed", "error")]


def print_table(rows: list[dict[str, Any]]) -> None:
    """One column pair (before, after) per figure, the speed-up beside the per-candidate pair."""
    import pandas as pd

    table: dict[tuple[str, str], list[Any]] = {(k, ""): [r[k] for r in rows] for k in ("graph", "program", "batch")}
    for head, key in COLUMNS:
        if any(f"{side}_{key}" in r for r in rows for side in SIDES):
            missing = "-" if key in ("equivalent", "error") else float("nan")
            table.update({(head, side): [r.get(f"{side}_{key}", missing) for r in rows] for side in SIDES})
        if key == "per_candidate_s":
            table[("speed-up", "")] = [r.get("speedup", float("nan")) for r in rows]
    print(pd.DataFrame(table).to_string(index=False, float_format=lambda v: f"{v:.3g}", na_rep="-"))


def _verdict_line(name: str, values: list[float], target: float, better: str, unit: str = "×") -> str:
    if not values:
        return f"  [ n/a] {name}: no figures"
    worst = max(values) if better == "low" else min(values)
    # a NaN figure fails (max and min would keep or drop it by where it stands, and NaN compares False)
    ok = all(math.isfinite(v) for v in values) and (worst <= target if better == "low" else worst >= target)
    sign = "≤" if better == "low" else "≥"
    shown = ", ".join(f"{v:.2f}{unit}" for v in values)
    return f"  [{'PASS' if ok else 'FAIL'}] {name}: {shown} (target {sign} {target:g}{unit})"


def _before(values: list[float]) -> str:
    return f" [before {', '.join(f'{v:.2f}×' for v in values)}]" if values else ""


def _col(rows: list[dict[str, Any]], key: str, program: str | None = None, batch: int | None = None) -> list[float]:
    return [r[key] for r in rows if key in r and (program is None or r["program"] == program)
            and (batch is None or r["batch"] == batch)]


def print_targets(rows: list[dict[str, Any]], search: list[dict[str, Any]]) -> None:
    print("\nissue 18 targets (after; the before figures in brackets for comparison):")
    for key, prog, b in (("ratio_rmsnorm_1", "rmsnorm", 1), ("ratio_gqa_8", "gqa", 8)):
        print(_verdict_line(f"per candidate / float64 interpretation, {prog} batch {b}",
                            _col(rows, "after_ratio", prog, b), TARGETS[key], "low")
              + _before(_col(rows, "before_ratio", prog, b)))
    sp = _col(rows, "speedup")
    print(_verdict_line("per-candidate speed-up before/after, every case (min shown last)", sorted(sp, reverse=True),
                        TARGETS["speedup"], "high") + (f" [median {statistics.median(sp):.1f}×]" if sp else ""))
    print(_verdict_line("first call / repeat, every case", _col(rows, "after_first_over_repeat"),
                        TARGETS["first_over_repeat"], "low") + _before(_col(rows, "before_first_over_repeat")))
    shares = {r["side"]: r["share"] for r in search if "share" in r}
    if search:
        line = _verdict_line("verification share of the RMSNorm+Linear search",
                             [100 * shares["after"]] if "after" in shares else [], 100 * TARGETS["search_share"],
                             "low", " %")
        print(line + (f" [before {100 * shares['before']:.1f} %]" if "before" in shares else ""))
    if any(r.get("verdicts_agree") is False for r in rows):
        print("  !! VERDICTS DIFFER before/after in: " + ", ".join(
            f"{r['graph']} b={r['batch']}" for r in rows if r.get("verdicts_agree") is False))


def print_search(search: list[dict[str, Any]]) -> None:
    import pandas as pd

    print("\ncomplete RMSNorm+Linear batch-1 search (preset mlp, serial):")
    print(pd.DataFrame(search).drop(columns=["seconds"], errors="ignore").to_string(
        index=False, float_format=lambda v: f"{v:.3g}"))
    if searches_differ(search):
        print("  !! the searches differ before/after in states or verified graphs")


def searches_differ(search: list[dict[str, Any]]) -> bool:
    """Did the before and after searches (both finished) explore other states or verify other graphs?"""
    ok = [r for r in search if "states" in r]
    return len(ok) == 2 and any(ok[0][k] != ok[1][k] for k in ("states", "verified"))


# --------------------------------------------------------------------------- main


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="ba8c6f1",
                    help="git revision of the 'before' code (default ba8c6f1); 'none' measures the working tree alone")
    ap.add_argument("--backend", help="array backend of every measurement: numpy or cupy (default automatic)")
    ap.add_argument("--before-dir", help="where the before tree is extracted and kept (default ~/.cache/mirage-lab)")
    ap.add_argument("--programs", help="comma-separated program names (default all with a fused or saved graph)")
    ap.add_argument("--batch", default="1,8", help="batch sizes to include (default 1,8)")
    ap.add_argument("--repeats", type=int, default=3, help="timed calls per median (default 3; the issue wants ≥ 3)")
    ap.add_argument("--no-reference-graphs", action="store_true", help="only the hand-written fused graphs")
    ap.add_argument("--reference-dir", help="folder of reference checkpoints (default ../shared/...)")
    ap.add_argument("--no-search", action="store_true", help="skip the RMSNorm+Linear search")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per worker before it is abandoned")
    ap.add_argument("--json", help="write hardware, settings, case rows and search rows to this JSON file")
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # internal: one measurement, as JSON
    return ap.parse_args()


def main() -> int:
    args = parse_args()
    if args.worker:
        return worker(args.worker)
    if args.repeats < 3:
        print(f"note: --repeats {args.repeats} is below the issue's 'median of ≥ 3'", file=sys.stderr)
    from mirage_lab.bench.harness import find_reference_dir

    base = Path(args.before_dir) if args.before_dir else \
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mirage-lab"
    roots = {"after": ROOT} if args.before == "none" else {"before": before_tree(args.before, base), "after": ROOT}
    print(f"before: {args.before} in {roots.get('before', '-')}; after: the working tree {ROOT}; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}", file=sys.stderr)
    ref_dir = None if args.no_reference_graphs else find_reference_dir(args.reference_dir, "--reference-dir")
    if ref_dir is None and not args.no_reference_graphs:
        print("no reference checkpoints found (../shared absent): fused graphs only", file=sys.stderr)
    names = set(args.programs.split(",")) if args.programs else None
    specs = [{**s, "backend": args.backend}
             for s in case_specs(ref_dir, {int(x) for x in args.batch.split(",")}, names, args.repeats)]
    rows = []
    for i, spec in enumerate(specs):
        rows.append(case_row(spec, side_by_side(spec, roots, flip=i % 2 == 1, timeout=args.timeout)))
        _progress(spec, rows[-1])
    search: list[dict[str, Any]] = []
    if not args.no_search:
        print("searching RMSNorm+Linear batch 1 (preset mlp, serial), before and after …", file=sys.stderr)
        spec = {"search": True, "program": "rmsnorm", "batch": 1, "preset": "mlp", "backend": args.backend}
        search = search_rows(side_by_side(spec, roots, flip=False, timeout=args.timeout))
    if rows:
        print_table(rows)
    if search:
        print_search(search)
    print_targets(rows, search)
    if args.json:
        write_json(Path(args.json), args, roots, rows, search)
    return 0 if (rows or search) and agree(rows, search) else 1


def agree(rows: list[dict[str, Any]], search: list[dict[str, Any]]) -> bool:
    """Did before and after reach the same verdicts and, where both searched, the same states and verified
    graphs? (The speed targets are reported, not enforced: they depend on the machine.)"""
    return not searches_differ(search) and not any(r.get("verdicts_agree") is False for r in rows)


def write_json(path: Path, args: argparse.Namespace, roots: dict[str, Path], rows: list[dict[str, Any]],
               search: list[dict[str, Any]]) -> None:
    from interpret import hardware  # benchmarks/interpret.py, beside this script

    hw = {**hardware(), "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "unset")}
    dirty = _git_or_none("status", "--porcelain")
    settings = {"before": args.before, "before_commit": None if args.before == "none" else
                _git_or_none("rev-parse", f"{args.before}^{{commit}}"),
                "after_commit": _git_or_none("rev-parse", "HEAD"),
                "after_dirty": None if dirty is None else bool(dirty), "repeats": args.repeats,
                "backend": args.backend or "automatic", "verifier": {"trials": 3, "float_check": "auto"},
                "interp": "float64, uniform(-0.5, 0.5) inputs", "search": "rmsnorm batch 1, preset mlp, serial",
                "targets": TARGETS, "command": " ".join(sys.argv)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hardware": hw, "settings": settings, "cases": rows, "search": search},
                               indent=1, default=str) + "\n")
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
