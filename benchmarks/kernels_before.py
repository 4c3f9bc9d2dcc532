"""The "before" side of benchmarks/kernels.py --before-tree: the generator of an older tree, in its own interpreter.

Never run by hand: ``mirage_lab.bench.before`` starts it as ``python -P kernels_before.py`` with ``PYTHONPATH``
naming only the older tree (an export of its ``mirage_lab``, ``scripts/prepare_before.sh``), so that this process
imports that tree's package and nothing of today's: the two generators never share an interpreter.

Protocol: one JSON request on stdin, ``{"tree": ..., "points": [[program, batch], ...], "graphs":
{"<program> <batch>": {"search best": "<path of a μGraph .json>"}}, "warmup": n, "repeats": n}``; on stdout JSON
lines: first ``{"hello": {"mirage_lab": <its __init__.py>, "python": ...}}``, then one ``{"row": {...}}`` per
graph timed (program, batch, graph, median_us, p10_us, p90_us, samples_us, first_s, error, rel_error, result),
then ``{"done": <rows>}``. Without a usable GPU every row says why in ``error``.

Only APIs the older tree already had are used (those of commit 8fba1b8: ``codegen.run.compile``,
``time_callable``, ``unfused`` inputs as benchmarks/kernels.py makes them, the interpreter and
``bench.tolerance``); keep it so, or the older tree cannot run it.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def emit(kind: str, value: Any) -> None:
    print(json.dumps({kind: value}), flush=True)


def main() -> int:
    request = json.loads(sys.stdin.read())
    tree = Path(request["tree"]).resolve()
    import mirage_lab

    here = Path(mirage_lab.__file__).resolve()
    if tree not in here.parents:
        print(f"kernels_before.py imported mirage_lab from {here}, not from the tree {tree}; run it through "
              "benchmarks/kernels.py --before-tree", file=sys.stderr)
        return 2
    emit("hello", {"mirage_lab": str(here), "python": sys.version.split()[0]})

    import numpy as np

    from mirage_lab.bench import fused, programs
    from mirage_lab.bench.harness import input_scale
    from mirage_lab.bench.tolerance import agreement, tolerance_for, verdict
    from mirage_lab.ir.io import load
    from mirage_lab.semantics.interpret import interpret

    why = ""
    try:
        import cupy

        if not cupy.is_available():
            why = "CuPy finds no CUDA device"
        from mirage_lab.codegen import run
    except Exception as e:  # no CuPy, no driver: every row says so
        why = f"{type(e).__name__}: {e}"
    count = 0
    for name, batch in request["points"]:
        program = programs.PROGRAMS[name](batch)
        graphs: dict[str, Any] = {}
        if name in fused.FUSED:
            graphs["fused"] = lambda name=name, batch=batch: fused.FUSED[name](batch)
        for label, path in request["graphs"].get(f"{name} {batch}", {}).items():
            graphs[label] = lambda path=path: load(path)
        host: list[np.ndarray] = []
        want: list[np.ndarray] = []
        for label, make in graphs.items():
            row: dict[str, Any] = {"program": name, "batch": batch, "graph": label, "error": "", "result": ""}
            if why:
                emit("row", row | {"error": why})
                count += 1
                continue
            try:
                if not host:  # the inputs benchmarks/kernels.py times on (mirage_lab.bench.timing.point_inputs)
                    rng = np.random.default_rng(0)
                    host = [(rng.standard_normal(t.dims) * input_scale(name)).astype(np.float16)
                            for t in program.input_types]
                    want = interpret(program, [h.astype(np.float32) for h in host], dtype="float32")
                inputs = [cupy.asarray(h) for h in host]
                start = time.perf_counter()
                graph = make()
                fn = run.compile(graph)
                out = fn(*inputs)
                cupy.cuda.Device().synchronize()
                row["first_s"] = time.perf_counter() - start
                got = [cupy.asnumpy(o).astype(np.float32) for o in (out if isinstance(out, list | tuple) else [out])]
                kind, tol = tolerance_for(graph)
                agree = agreement(got, want, tol, kind)
                row.update(rel_error=agree.worst, result=verdict(agree))
                t = run.time_callable(fn, inputs, warmup=request["warmup"], repeats=request["repeats"])
                row.update(median_us=t.median_ms * 1e3, p10_us=t.p10_ms * 1e3, p90_us=t.p90_ms * 1e3,
                           samples_us=[s * 1e3 for s in t.samples_ms])
            except Exception as e:  # one failing graph must not stop the others
                row["error"] = f"{type(e).__name__}: {e}"[:200]
            emit("row", row)
            count += 1
    emit("done", count)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
