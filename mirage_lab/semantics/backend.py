"""Array-module choice: CuPy when a device is usable, else numpy; ``MIRAGE_BACKEND`` overrides."""

from __future__ import annotations

import functools
import os
import re
from types import ModuleType
from typing import Any

import numpy as np

from mirage_lab.errors import UnsupportedOpError


@functools.cache
def cupy_available() -> bool:
    try:
        import cupy
    except ImportError:
        return False
    try:
        return bool(cupy.is_available())
    except Exception:  # a broken driver install must not break CPU users
        return False


def array_module(name: str | None = None) -> ModuleType:
    """``"numpy"``, ``"cupy"``, or ``None`` for the default (env ``MIRAGE_BACKEND``, then auto)."""
    choice = (name or os.environ.get("MIRAGE_BACKEND") or "auto").lower()
    if choice == "numpy":
        return np
    if choice in ("cupy", "auto"):
        if cupy_available():
            import cupy

            return cupy
        if choice == "cupy":
            raise UnsupportedOpError("backend 'cupy' was requested but CuPy or a CUDA device is not available; "
                                     "install mirage-lab[gpu] on a GPU machine or use backend='numpy'")
        return np
    raise UnsupportedOpError(f"unknown backend {name!r}; use 'numpy', 'cupy' or leave it unset")


def to_numpy(a: object) -> np.ndarray:
    """Bring an array back to the host."""
    get = getattr(a, "get", None)
    return np.asarray(get() if callable(get) else a)


def gpu_name(cupy: Any) -> str:
    """The current CUDA device's name as a file label (``NVIDIA_H200``): what data/timings names its tables by."""
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")
