"""Shared pieces of the benchmark harness: inputs, error metric, timing, checkpoint map."""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from mirage_lab.bounds import timed_runs, wall_time
from mirage_lab.errors import PathError
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
    """max |got − want| / max |want|: scale-free, and robust to tiny reference entries.

    Never NaN, and ``inf`` wherever the two cannot be said to agree (issue 35): a NaN on either side (a NaN is no
    number to check), an infinity the other side does not hold at the same place with the same sign, a difference
    beyond the float range, or shapes that differ. Infinities both sides hold alike are left out of the quotient.
    """
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return math.inf
    finite = np.isfinite(got)
    if not (finite.all() and np.isfinite(want).all()):
        if (np.isnan(got).any() or np.isnan(want).any() or not np.array_equal(finite, np.isfinite(want))
                or not np.array_equal(got[~finite], want[~finite])):
            return math.inf
        got, want = got[finite], want[finite]
    if got.size == 0:
        return 0.0
    with np.errstate(over="ignore"):  # an overflowing difference is inf: a disagreement, not a warning
        diff = float(np.max(np.abs(got - want)))
    return diff / max(float(np.max(np.abs(want))), 1e-30)


def median_time(fn: Callable[[], Any], repeats: int, warmup: int = 0) -> float:
    """The median wall time of ``repeats`` calls of ``fn`` after ``warmup`` untimed ones (``bounds.timed_runs``:
    counts and the projected total are bounded)."""
    return statistics.median(timed_runs(partial(wall_time, fn), warmup, repeats, getattr(fn, "__name__", "a call")))


#: the environment variable naming the folder of the reference implementation's saved μGraphs
REFERENCE_ENV = "MIRAGE_REFERENCE_MUGRAPHS"


def find_reference_dir(explicit: str | os.PathLike[str] | None = None, named_by: str = "reference_dir") -> Path | None:
    """The reference μGraphs: ``explicit`` (``named_by`` says where the user wrote it, e.g. "--reference-dir"),
    else ``$MIRAGE_REFERENCE_MUGRAPHS``, else ``shared/reference_mugraphs`` beside the working directory or
    beside a source checkout of mirage-lab (None when neither exists). A folder the user named that is missing,
    not a folder, or holds no checkpoint file is a ``PathError``, never a silent fallback to another."""
    if explicit is not None and str(explicit):
        return _named_reference_dir(Path(explicit), named_by)
    env = os.environ.get(REFERENCE_ENV, "").strip()
    if env:
        return _named_reference_dir(Path(env), f"${REFERENCE_ENV}")
    checkout = Path(__file__).resolve().parents[2]
    for c in (Path.cwd().parent / "shared" / "reference_mugraphs", checkout.parent / "shared" / "reference_mugraphs"):
        if c.is_dir():
            return c
    return None


def _named_reference_dir(path: Path, named_by: str) -> Path:
    fix = "point it at the folder of the reference's saved μGraphs (rmsnorm_bs1.json, gqa_bs8.json, …)"
    if not path.exists():
        raise PathError(f"{named_by} names {path}, which does not exist; {fix}")
    if not path.is_dir():
        raise PathError(f"{named_by} names {path}, which is not a folder; {fix}")
    if not any((path / f"{stem}.json").is_file() for stem in CHECKPOINTS):
        raise PathError(f"{named_by} names {path}, which holds none of the reference μGraph files; {fix}")
    return path
