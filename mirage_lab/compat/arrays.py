"""Arrays in and out of a callable graph: numpy, CuPy and torch, each given back as it came.

torch tensors cross by DLPack (no copy where the device allows); bfloat16, which numpy lacks, crosses as
float32 and is rounded back to bfloat16 on the way out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mirage_lab.errors import InputError
from mirage_lab.ir.dtype import DType

__all__ = ["NUMPY_DTYPES", "array_kind", "give_back", "to_cupy", "to_numpy"]

#: the numpy dtype of each graph dtype (bfloat16 is carried as float32)
NUMPY_DTYPES = {DType.FLOAT16: np.float16, DType.BFLOAT16: np.float32, DType.FLOAT32: np.float32,
                DType.FLOAT64: np.float64, DType.INT8: np.int8, DType.UINT16: np.uint16}
TORCH_DTYPES = {DType.FLOAT16: "float16", DType.BFLOAT16: "bfloat16", DType.FLOAT32: "float32",
                DType.FLOAT64: "float64", DType.INT8: "int8", DType.UINT16: "uint16"}


def array_kind(a: Any) -> str:
    """"torch", "cupy" or "numpy"; anything else is an InputError naming what was given."""
    module = type(a).__module__.split(".")[0]
    if module == "torch":
        return "torch"
    if module == "cupy":
        return "cupy"
    if isinstance(a, np.ndarray):
        return "numpy"
    raise InputError(f"inputs must be numpy arrays, CuPy arrays or torch tensors, got {type(a).__name__}")


def _torch_plain(t: Any) -> Any:
    t = t.detach()
    import torch

    return t.float() if t.dtype == torch.bfloat16 else t


def to_numpy(a: Any) -> np.ndarray:
    kind = array_kind(a)
    if kind == "torch":
        t = _torch_plain(a)
        return np.from_dlpack(t if t.device.type == "cpu" else t.cpu())
    if kind == "cupy":
        import cupy

        return cupy.asnumpy(a)
    return np.asarray(a)


def to_cupy(a: Any) -> Any:
    import cupy

    kind = array_kind(a)
    if kind == "torch":
        t = _torch_plain(a)
        return cupy.from_dlpack(t if t.device.type == "cuda" else t.cuda())
    return cupy.asarray(a)


def give_back(outputs: Sequence[Any], dtypes: Sequence[DType], like: Any) -> list[Any]:
    """``outputs`` (numpy or CuPy) as arrays of the kind ``like`` is, in each output's dtype."""
    kind = "numpy" if like is None else array_kind(like)
    if kind == "torch":
        import torch

        out = []
        for a, dt in zip(outputs, dtypes, strict=True):
            t = torch.from_dlpack(np.ascontiguousarray(a) if isinstance(a, np.ndarray) else a)
            out.append(t.to(device=like.device, dtype=getattr(torch, TORCH_DTYPES[dt])))
        return out
    if kind == "cupy":
        import cupy

        return [cupy.asarray(a).astype(NUMPY_DTYPES[dt], copy=False) for a, dt in zip(outputs, dtypes, strict=True)]
    return [to_numpy(a).astype(NUMPY_DTYPES[dt], copy=False) for a, dt in zip(outputs, dtypes, strict=True)]
