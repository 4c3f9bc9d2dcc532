"""Shared pieces of the benchmark harness: inputs, error metric, timing, checkpoint map."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from mirage_lab.ir.graph import KernelGraph

#: reference checkpoint file stem → (program name, batch size), SPEC §9
CHECKPOINTS: dict[str, tuple[str, int]] = {
    "rmsnorm_bs1": ("rmsnorm", 1), "rmsnorm_bs8": ("rmsnorm", 8),
    "gated_mlp": ("gated_mlp", 1), "single_gated_mlp": ("gated_mlp", 1),
    "lora": ("lora", 1), "single_lora": ("lora", 1),
    "gqa_bs1": ("gqa", 1), "gqa_bs8": ("gqa", 8), "mha_bs1": ("mha", 1), "mha_bs8": ("mha", 8),
    "mqa_bs1": ("mqa", 1), "mqa_bs8": ("mqa", 8), "single_mqa_bs1": ("mqa", 1),
    "qknorm_gqa_bs1": ("qknorm_gqa", 1), "qknorm_gqa_bs8": ("qknorm_gqa", 8),
    "ntrans_bs1": ("ntrans", 1), "ntrans_bs8": ("ntrans", 8),
}
ATTENTION = ("gqa", "mha", "mqa", "qknorm_gqa")


def random_inputs(g: KernelGraph, seed: int, scale: float = 1.0) -> list[np.ndarray]:
    """Uniform [-scale, scale) float32 inputs, one per program input."""
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-1.0, 1.0, t.dims) * scale).astype(np.float32) for t in g.input_types]


def input_scale(program: str) -> float:
    """Attention has no max subtraction (SPEC §9): small inputs keep exp(Q·K) finite in float32."""
    return 0.2 if program in ATTENTION else 1.0


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got − want| / max |want|: scale-free, and robust to tiny reference entries."""
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))


def median_time(fn: Callable[[], Any], repeats: int, warmup: int = 0) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def find_reference_dir(explicit: str | None = None) -> Path | None:
    """The reference μGraphs: ``explicit``, ``$MIRAGE_REFERENCE_MUGRAPHS``, or ``shared/reference_mugraphs``
    beside the working directory or beside a source checkout of mirage-lab."""
    checkout = Path(__file__).resolve().parents[2]
    candidates = [explicit] if explicit else [os.environ.get("MIRAGE_REFERENCE_MUGRAPHS"),
                                              str(Path.cwd().parent / "shared" / "reference_mugraphs"),
                                              str(checkout.parent / "shared" / "reference_mugraphs")]
    for c in candidates:
        if c and Path(c).is_dir():
            return Path(c)
    return None
