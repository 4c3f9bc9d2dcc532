"""The space holds the program (issue 37, item 1): a gate Y·f(Y) after a matmul, searched whole with each
preset, with the program's own ops joining the op lists (``program_ops``, today) and without (the lists as
they were, which left sigmoid and tanh out).

For each gate (silu(Y), the fused op the lists hold; Y·sigmoid(Y), the same function written out; Y·tanh(Y)),
preset and setting: the stop reason, states, verified μGraphs, single-kernel ones among them, the warnings the
search gave, and seconds. Before and after run in one process, one after the other.

    .venv/bin/python benchmarks/space.py [--presets default,mlp] [--gates silu,sigmoid,tanh] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
from interpret import hardware  # benchmarks/interpret.py, beside this script

import mirage_lab as ml
from mirage_lab.search.space import SearchSpaceWarning


def gate(act: str, m: int, k: int, n: int) -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(m, k), dtype=ml.float16)
    w = g.new_input(dims=(k, n), dtype=ml.float16)
    y = g.matmul(x, w)
    g.mark_output(g.silu(y) if act == "silu" else g.mul(y, getattr(g, act)(y)))
    return g.freeze()


def row(act: str, preset: str, program_ops: bool, dims: tuple[int, int, int], time_limit: float) -> dict[str, Any]:
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SearchSpaceWarning)
        res = ml.superoptimize(gate(act, *dims), preset, executor="serial", run_dir=False, progress=False,
                               program_ops=program_ops, time_limit_s=time_limit)
    single = [c for c in res.candidates if sum(1 for n in c.graph.nodes if n.op.value == "customized") == 1
              and len([n for n in c.graph.nodes if n.op.value not in ("input", "output")]) == 1]
    return {"gate": "silu(Y)" if act == "silu" else f"Y·{act}(Y)", "preset": preset,
            "program_ops": program_ops, "stop": res.report.stop_reason, "states": res.report.states,
            "verified": res.report.verified, "single_kernel": len(single),
            "warnings": [str(w.message) for w in caught if issubclass(w.category, SearchSpaceWarning)],
            "seconds": round(time.perf_counter() - t0, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", default="default,mlp")
    ap.add_argument("--gates", default="silu,sigmoid,tanh")
    ap.add_argument("--dims", default="8,64,64", help="M,K,N of the matmul")
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    m, k, n = (int(v) for v in args.dims.split(","))
    rows = [row(act, preset, program_ops, (m, k, n), args.time_limit)
            for preset in args.presets.split(",") for act in args.gates.split(",") for program_ops in (False, True)]
    frame = pd.DataFrame(rows)
    print(frame.drop(columns="warnings").to_string(index=False))
    for r in rows:
        for line in r["warnings"]:
            print(f"{r['gate']} {r['preset']} program_ops={r['program_ops']}: {line}")
    if args.json:
        args.json.write_text(json.dumps({"hardware": hardware(), "dims": [m, k, n], "rows": rows}, indent=1) + "\n")
        print(f"written to {args.json}")


if __name__ == "__main__":
    main()
