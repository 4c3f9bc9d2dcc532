"""Choosing the search's final μGraph (issue 36): measured on a GPU among the cost model's best k, else the model's.

The ranking (``runner._rank``) orders the verified μGraphs by the roofline proxy — the cost the branch and bound
prunes by, so its best and every tie of it are always found — and breaks its ties by the calibrated model
(``optimize/calibration.py``), which sees what the proxy cannot (codegen options, access widths, bytes in flight,
waves, tensor cores). ``select`` then takes the ranking's first ``k`` (``SearchConfig.profile_top_k``, 8 by default,
as the reference profiles its candidates) and, where a device is usable, runs each on every backend (the CUDA and
Triton backends' render → compile → run → time): a candidate whose outputs disagree with the interpreter's on the
same inputs (``bench.tolerance``) is never timed and never chosen; the fastest correct (candidate, backend) wins.
Without a device the choice is the ranking's first, and the ``Selection`` says so and why.

The backends and the device check are arguments, so that a test can hand in fake backends with injected timers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from mirage_lab.bench.tolerance import OK, agreement, tolerance_for, verdict
from mirage_lab.codegen.backend import Backend, Rendering
from mirage_lab.errors import MirageError
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.search.state import Candidate
from mirage_lab.semantics.interpret import interpret

__all__ = ["MEASURED", "MODEL", "Measurement", "Selection", "default_backends", "device_reason", "launch_parameters",
           "model_seconds", "select"]

MEASURED = "measured"
MODEL = "cost model"
#: inputs of the check before timing: uniform in ±INPUT_SCALE (small enough for attention's exp without a max)
INPUT_SCALE = 0.2


@dataclass(frozen=True)
class Measurement:
    """One candidate on one backend: its check against the interpreter (``result``: "ok", "WRONG: …" or
    "error: …"), its time where it was checked ok, and its launch parameters as the backend reports them."""

    hash: str
    backend: str
    result: str
    median_us: float | None = None
    p10_us: float | None = None
    p90_us: float | None = None
    launches: tuple[dict[str, Any], ...] = ()

    @property
    def ok(self) -> bool:
        return self.result == OK and self.median_us is not None and math.isfinite(self.median_us)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "launches": [dict(x) for x in self.launches]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Measurement:
        return cls(d["hash"], d["backend"], d["result"], d.get("median_us"), d.get("p10_us"), d.get("p90_us"),
                   tuple(d.get("launches", ())))


@dataclass(frozen=True)
class Selection:
    """How the final μGraph was chosen: ``method`` "measured" (the fastest correct of ``measurements``) or
    "cost model" (the ranking's first; ``reason`` says why nothing was measured), the ``chosen`` hash and
    ``backend``, the ``shortlist`` (the ranking's first ``top_k`` hashes) and its ``predicted_us`` (the calibrated
    model's figure of each, CUDA backend, default options)."""

    method: str
    chosen: str | None
    backend: str | None
    top_k: int
    shortlist: tuple[str, ...]
    reason: str = ""
    predicted_us: dict[str, float] = field(default_factory=dict)
    measurements: tuple[Measurement, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "chosen": self.chosen, "backend": self.backend, "top_k": self.top_k,
                "shortlist": list(self.shortlist), "reason": self.reason, "predicted_us": dict(self.predicted_us),
                "measurements": [m.to_dict() for m in self.measurements]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Selection:
        return cls(d["method"], d.get("chosen"), d.get("backend"), int(d.get("top_k", 0)),
                   tuple(d.get("shortlist", ())), d.get("reason", ""), dict(d.get("predicted_us", {})),
                   tuple(Measurement.from_dict(m) for m in d.get("measurements", ())))

    def __repr__(self) -> str:
        chosen = "none" if self.chosen is None else f"{self.chosen[:12]}" + (f" on {self.backend}" if self.backend
                                                                               else "")
        ran = f", {sum(m.ok for m in self.measurements)}/{len(self.measurements)} runs ok" if self.measurements \
            else ""
        why = f"; {self.reason}" if self.reason else ""
        return f"Selection({self.method}: {chosen} of the best {len(self.shortlist)}{ran}{why})"


def device_reason() -> str:
    """Why generated kernels cannot be timed here ("" when CuPy finds a device)."""
    from mirage_lab.semantics.backend import cupy_available

    return "" if cupy_available() else "CuPy finds no CUDA device: the choice is the cost model's"


def default_backends() -> list[Backend]:
    """The CUDA backend, and the Triton backend where Triton and torch are installed, for this device's arch."""
    import cupy

    from mirage_lab.codegen.cuda import CudaBackend

    major, minor = cupy.cuda.Device().compute_capability
    arch = f"sm_{major}{minor}"
    backends: list[Backend] = [CudaBackend(arch=arch)]
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401

        from mirage_lab.codegen.triton.backend import TritonBackend
        backends.append(TritonBackend(arch=arch))
    except ImportError:
        pass
    return backends


def launch_parameters(backend: Backend, rendering: Rendering) -> tuple[dict[str, Any], ...]:
    """Each kernel's launch as the backend reports it: grid, block threads and shared memory for CUDA; grid and
    ``num_warps`` / ``num_stages`` for Triton (where its kernels carry them); a backend's own
    ``launch_parameters(rendering)`` when it has one."""
    own = getattr(backend, "launch_parameters", None)
    if callable(own):
        return tuple(dict(x) for x in own(rendering))
    if backend.name == "cuda":
        from mirage_lab.codegen.cuda import plan_cuda

        program = plan_cuda(rendering.graph, getattr(backend, "options", None),
                            library_calls=bool(getattr(backend, "library_calls", False)))
        return tuple({"kernel": x.name, "grid": list(x.grid), "block": [x.threads, 1, 1], "smem_bytes": x.smem_bytes}
                     for x in program.launches)
    if backend.name == "triton":
        from mirage_lab.codegen.triton import triton_module

        module = triton_module(rendering.graph)
        out = []
        for k, kernel in module.kernels.items():
            body = module.graph.nodes[k].body
            out.append({"kernel": kernel.name, "grid": list(body.grid) if body is not None else None,
                        "num_warps": getattr(kernel, "num_warps", None),
                        "num_stages": getattr(kernel, "num_stages", None)})
        return tuple(out)
    return ()


def model_seconds(graph: KernelGraph) -> float:
    """The calibrated model's figure of ``graph`` as the CUDA backend generates it by default (inf where the
    backend cannot prepare it), on the hardware the search ranks for."""
    from mirage_lab.codegen.cuda import CodegenOptions, prepare
    from mirage_lab.optimize.calibration import predict
    from mirage_lab.search.bound import RANKING_HARDWARE

    try:
        return predict(prepare(graph), CodegenOptions(), RANKING_HARDWARE)
    except MirageError:
        return math.inf


def check_inputs(program: KernelGraph, seed: int = 0) -> list[np.ndarray]:
    """The inputs every candidate is checked and timed on: fp16-representable, uniform in ±INPUT_SCALE."""
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-1.0, 1.0, t.dims) * INPUT_SCALE).astype(np.float16).astype(np.float32)
            for t in program.input_types]


def select(program: KernelGraph, ranked: Sequence[Candidate], top_k: int, *,
           predicted: Callable[[KernelGraph], float] | None = None, backends: Sequence[Backend] | None = None,
           reason: str | None = None, warmup: int = 16, repeats: int = 100) -> Selection:
    """The final μGraph among ``ranked`` (best first; module docstring). ``backends``: those to measure on
    (default: ``default_backends()`` where ``device_reason()`` is empty); ``reason``: why nothing is measured
    (default: ``device_reason()``, or "" when ``backends`` are given). ``predicted``: the figure recorded for
    each of the shortlist (seconds)."""
    shortlist = list(ranked[:max(top_k, 0)])
    first = ranked[0].hash if ranked else None
    figures = {c.hash: round(predicted(c.graph) * 1e6, 4) for c in shortlist} if predicted else {}
    hashes = tuple(c.hash for c in shortlist)
    if backends is None:
        reason = device_reason() if reason is None else reason
        if not reason and shortlist:
            backends = default_backends()
    reason = reason or ""
    if not shortlist or not backends or reason:
        why = reason or ("no candidate to measure" if not shortlist else "no backend to measure on")
        return Selection(MODEL, first, None, top_k, hashes, why, figures)
    inputs = check_inputs(program)
    want = interpret(program, inputs, dtype="float32")
    runs = [_measure(c, b, inputs, want, warmup, repeats) for c in shortlist for b in backends]
    good = [m for m in runs if m.ok]
    if not good:
        return Selection(MODEL, first, None, top_k, hashes, "no candidate of the shortlist ran correctly on any "
                         "backend: the choice is the cost model's", figures, tuple(runs))
    best = min(good, key=lambda m: (m.median_us, hashes.index(m.hash)))
    return Selection(MEASURED, best.hash, best.backend, top_k, hashes, "", figures, tuple(runs))


def _measure(cand: Candidate, backend: Backend, inputs: list[np.ndarray], want: list[Any], warmup: int,
             repeats: int) -> Measurement:
    """Render, compile, check against the interpreter, and only then time one candidate on one backend."""
    try:
        rendering = backend.render(cand.graph)
        compiled = backend.compile(rendering)
        launches = launch_parameters(backend, rendering)
        kind, tol = tolerance_for(cand.graph)
        agree = agreement(backend.run(compiled, inputs), want, tol, kind)
        if not agree.ok:
            return Measurement(cand.hash, backend.name, verdict(agree), launches=launches)
        t = backend.time(compiled, inputs, warmup=warmup, repeats=repeats)
    except Exception as e:  # one candidate that fails to build or run must not stop the choice
        return Measurement(cand.hash, backend.name, f"error: {type(e).__name__}: {e}"[:300])
    return Measurement(cand.hash, backend.name, OK, t.median_ms * 1e3, t.p10_ms * 1e3, t.p90_ms * 1e3, launches)
