"""Argument checks shared by builders and loaders; each error names the argument and the fix."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mirage_lab.errors import MapError, ShapeError
from mirage_lab.ir.tensor import MAX_RANK, Dims


def _is_int(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or type(v).__name__.startswith(("int", "uint"))


def check_int(v: Any, what: str, minimum: int | None = None) -> int:
    if not _is_int(v):
        raise ShapeError(f"{what} must be an integer, got {v!r}")
    v = int(v)
    if minimum is not None and v < minimum:
        raise ShapeError(f"{what} must be ≥ {minimum}, got {v}")
    return v


def check_finite(v: Any, what: str) -> float:
    if isinstance(v, bool) or (not isinstance(v, int | float) and not hasattr(v, "__float__")):
        raise ShapeError(f"{what} must be a number, got {v!r}")
    try:
        f = float(v)
    except (OverflowError, ValueError, TypeError):
        raise ShapeError(f"{what} must be a finite number, got {v!r:.60} (too large for a float)") from None
    if not math.isfinite(f):
        raise ShapeError(f"{what} must be finite, got {f}")
    return f


#: Largest accepted dim: a dim must fit a 32-bit signed integer (also bounds hostile files).
MAX_DIM = 2**31 - 1


def check_dims(dims: Any, what: str, allow_zero: bool = False, maximum: int = MAX_DIM) -> Dims:
    if isinstance(dims, str | bytes) or not isinstance(dims, Sequence):
        raise ShapeError(f"{what} must be a sequence of positive integers, got {dims!r}")
    if not 1 <= len(dims) <= MAX_RANK:
        raise ShapeError(f"{what} {tuple(dims)} has {len(dims)} dims; tensors have 1 to {MAX_RANK} dims")
    out = []
    for i, d in enumerate(dims):
        if not _is_int(d):
            raise ShapeError(f"{what}[{i}] must be an integer, got {d!r}")
        if int(d) < (0 if allow_zero else 1):
            raise ShapeError(f"{what}[{i}] = {d} in {tuple(dims)}; every dim must be a positive integer")
        if int(d) > maximum:
            raise ShapeError(f"{what}[{i}] = {d} exceeds the largest supported size {maximum}")
        out.append(int(d))
    return tuple(out)


def check_triple(v: Any, what: str, minimum: int = 1) -> tuple[int, int, int]:
    """A 3-entry (x, y, z) tuple of integers ≥ ``minimum``; dicts ``{x, y, z}`` are accepted too."""
    if isinstance(v, dict):
        try:
            v = (v["x"], v["y"], v["z"])
        except KeyError as e:
            raise MapError(f"{what} {v!r} lacks key {e}; give x, y and z") from None
    if isinstance(v, str | bytes) or not isinstance(v, Sequence) or len(v) != 3:
        raise MapError(f"{what} must have exactly 3 entries (x, y, z), got {v!r}")
    out = []
    for axis, x in zip("xyz", v, strict=True):
        if not _is_int(x):
            raise MapError(f"{what}.{axis} must be an integer, got {x!r}")
        if int(x) < minimum:
            raise MapError(f"{what}.{axis} = {x} must be ≥ {minimum}")
        out.append(int(x))
    return (out[0], out[1], out[2])
