"""Interpreter speed and memory at the paper shapes.

For each benchmark μGraph — the unfused program, the hand-written fused graph (where one
exists) and the first saved reference graph of each checkpoint (when ../shared is
present) — print the interpreter's median time (float32, numpy) against a plain numpy
evaluation of the unfused program, their ratio, and the interpreter's peak memory.

    .venv/bin/python benchmarks/interpret.py [--repeats 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.bench.harness import CHECKPOINTS, find_reference_dir, input_scale, median_time, random_inputs


def _rms_norm(x: np.ndarray) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True))


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    e = np.exp(q @ k)
    return (e / e.sum(axis=2, keepdims=True)) @ v


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1 + np.exp(-x))


#: plain numpy versions of the unfused programs (the baseline)
NUMPY: dict[str, Callable[..., np.ndarray]] = {
    "rmsnorm": lambda x, w: _rms_norm(x) @ w,
    "gated_mlp": lambda x, w1, w2: _silu(x @ w1) * (x @ w2),
    "lora": lambda x, w, a, b: x @ w + (x @ a) @ b,
    "gqa": _attention, "mha": _attention, "mqa": _attention,
    "qknorm_gqa": lambda q, k, v: _attention(_rms_norm(q), k, _rms_norm(v)),
    "ntrans": lambda h, x, a: _rms_norm(x + a * (_rms_norm(h) + x)),
}


def peak_mib(fn: Callable[[], Any]) -> float:
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def cases(ref_dir: Path | None) -> list[tuple[str, str, int, ml.KernelGraph]]:
    out = []
    for name, b in [(n, b) for n in NUMPY for b in (1, 8) if not (n in ("gated_mlp", "lora") and b == 8)]:
        out.append(("program", name, b, programs.PROGRAMS[name](b)))
        if name in fused.FUSED:
            out.append(("fused", name, b, fused.FUSED[name](b)))
    if ref_dir is not None:
        for stem, (name, b) in sorted(CHECKPOINTS.items()):
            path = ref_dir / f"{stem}.json"
            if path.exists() and not stem.startswith("single_"):
                graph = ml.load_reference_checkpoint(path)[0]
                if graph.input_types == programs.PROGRAMS[name](b).input_types:
                    out.append((f"ref:{stem}[0]", name, b, graph))
    return out


def hardware() -> dict[str, Any]:
    """What machine made these figures (quoted beside them in data/)."""
    import os
    import platform

    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    info: dict[str, Any] = {"cpu": cpu, "cores": os.cpu_count(), "numpy": np.__version__,
                            "python": platform.python_version()}
    try:
        import cupy

        if cupy.is_available():
            props = cupy.cuda.runtime.getDeviceProperties(0)
            info["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
            info["cupy"] = cupy.__version__
    except Exception:  # no CuPy or no driver: a CPU-only record
        pass
    return info


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", help="also write the rows to this JSON file")
    ap.add_argument("--reference-dir", help="folder of reference checkpoints (default ../shared/...)")
    ap.add_argument("--backend", default="numpy", help="interpreter array backend: numpy or cupy")
    args = ap.parse_args()
    rows = []
    for kind, name, b, graph in cases(find_reference_dir(args.reference_dir, "--reference-dir")):
        ins = random_inputs(graph, seed=0, scale=input_scale(name))
        t_np = median_time(partial(NUMPY[name], *ins), args.repeats, warmup=1)
        run = partial(ml.interpret, graph, ins, dtype="float32", backend=args.backend)
        t_ml = median_time(run, args.repeats, warmup=1)
        rows.append({"graph": kind, "program": name, "batch": b, "kernels": len(graph.compute_nodes),
                     "numpy_ms": 1e3 * t_np, "interpret_ms": 1e3 * t_ml, "ratio": t_ml / t_np,
                     "numpy_peak_MiB": peak_mib(partial(NUMPY[name], *ins)),
                     "interpret_peak_MiB": peak_mib(run)})
        print(f"{kind:>22} {name:>10} b={b}: numpy {1e3 * t_np:8.2f} ms  interpret {1e3 * t_ml:8.2f} ms  "
              f"ratio {t_ml / t_np:5.2f}", file=sys.stderr)
    df = pd.DataFrame(rows)
    print(df.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print(f"\nmedian ratio interpret/numpy: {df['ratio'].median():.2f}  (max {df['ratio'].max():.2f})")
    if args.json:
        info = {"hardware": hardware(), "backend": args.backend, "rows": rows}
        Path(args.json).write_text(json.dumps(info, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
