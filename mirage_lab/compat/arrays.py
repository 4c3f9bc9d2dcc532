"""Arrays in and out of a callable graph: numpy, CuPy and torch, each given back as it came.

Outputs are rounded to the graph's dtype on the way out (the interpreter computes in float64).
torch tensors cross by DLPack (no copy where the device allows): detached first (a tensor that requires grad
cannot be exported), strided views as they are. bfloat16, which numpy and CuPy lack, crosses as float32 holding
bf16 values (rounded to nearest even, as the generated kernels round: codegen/storage.py), and a torch output is
a bfloat16 tensor of those values. torch needs no CUDA of its own: a CPU tensor reaches the GPU through
numpy and CuPy, and comes back to the CPU the same way, so a CPU-only torch works beside CuPy.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from mirage_lab.codegen.storage import from_bf16_bits, to_bf16_bits
from mirage_lab.errors import InputError
from mirage_lab.ir.dtype import DType
from mirage_lab.semantics.real_values import is_real_dtype

__all__ = ["NUMPY_DTYPES", "TORCH_DTYPES", "array_kind", "give_back", "to_cupy", "to_numpy"]

#: the numpy dtype of each graph dtype (bfloat16 is carried as float32)
NUMPY_DTYPES = {DType.FLOAT16: np.float16, DType.BFLOAT16: np.float32, DType.FLOAT32: np.float32,
                DType.FLOAT64: np.float64, DType.INT8: np.int8, DType.UINT16: np.uint16}
TORCH_DTYPES = {DType.FLOAT16: "float16", DType.BFLOAT16: "bfloat16", DType.FLOAT32: "float32",
                DType.FLOAT64: "float64", DType.INT8: "int8", DType.UINT16: "uint16"}

KINDS = "numpy arrays, CuPy arrays or torch tensors"


def _is_instance(a: Any, module: str, cls: str) -> bool:
    """``isinstance(a, module.cls)`` without importing ``module`` (if it is not imported, ``a`` cannot be one)."""
    mod = sys.modules.get(module)
    return mod is not None and isinstance(a, getattr(mod, cls))


def array_kind(a: Any) -> str:
    """"torch", "cupy" or "numpy" (subclasses too: nn.Parameter, np.memmap); anything else is an InputError naming
    what was given."""
    if _is_instance(a, "torch", "Tensor"):
        return "torch"
    if _is_instance(a, "cupy", "ndarray"):
        return "cupy"
    if isinstance(a, np.ndarray):
        return "numpy"
    raise InputError(f"inputs must be {KINDS}, got {type(a).__name__}; wrap lists or scalars with np.asarray")


def _check_values(dtype: Any, what: str) -> None:
    """Real numbers only: complex values would lose their imaginary part, objects are not numbers."""
    dt = np.dtype(dtype)
    if not is_real_dtype(dt):  # (stricter than the interpreter: no object arrays, even of numbers)
        raise InputError(f"{what} holds {dt} values; pass real numbers (float16, bfloat16, float32 or "
                         "float64, or integers)")


def _torch_plain(t: Any) -> Any:
    """``t`` as a dense tensor DLPack can export: detached, bfloat16 widened to float32."""
    import torch

    what = f"a torch tensor of {t.dtype} on {t.device}"
    if t.layout != torch.strided:
        raise InputError(f"{what} has layout {t.layout}; pass a dense tensor (t.to_dense())")
    if t.is_complex():
        raise InputError(f"{what} holds complex values; pass real numbers (e.g. t.real)")
    if t.device.type == "meta":
        raise InputError(f"{what} has no data (a meta tensor); pass a tensor with values")
    t = t.detach()
    return t.float() if t.dtype == torch.bfloat16 else t


def _torch_to_numpy(t: Any) -> np.ndarray:
    t = _torch_plain(t)
    return np.from_dlpack(t if t.device.type == "cpu" else t.cpu())


def to_numpy(a: Any) -> np.ndarray:
    kind = array_kind(a)
    if kind == "torch":
        return _torch_to_numpy(a)
    if kind == "cupy":
        import cupy

        out = cupy.asnumpy(a)
    else:
        out = np.asarray(a)
    _check_values(out.dtype, f"a {kind} array")
    return out


def to_cupy(a: Any) -> Any:
    import cupy

    kind = array_kind(a)
    if kind == "torch":
        t = _torch_plain(a)
        # a CUDA tensor by DLPack, no copy; any other through the host, so torch needs no CUDA of its own
        return cupy.from_dlpack(t) if t.device.type == "cuda" else cupy.asarray(_torch_to_numpy(t))
    _check_values(a.dtype, f"a {kind} array")
    return cupy.asarray(a)


def _rounded(xp: Any, a: Any, dtype: DType) -> Any:
    """``a`` rounded to ``dtype``, as an array of its NUMPY_DTYPES type (bf16: float32 holding bf16 values)."""
    if dtype is DType.BFLOAT16:
        return from_bf16_bits(xp, to_bf16_bits(xp, a))
    return a.astype(NUMPY_DTYPES[dtype], copy=False)


def give_back(outputs: Sequence[Any], dtypes: Sequence[DType], like: Any) -> list[Any]:
    """``outputs`` (numpy or CuPy) as arrays of the kind ``like`` is, rounded to each output's dtype (torch: a
    tensor of that dtype on ``like``'s device)."""
    kind = "numpy" if like is None else array_kind(like)
    if kind == "torch":
        import torch

        out = []
        for a, dt in zip(outputs, dtypes, strict=True):
            if like.device.type == "cuda" and not isinstance(a, np.ndarray):
                import cupy

                t = torch.from_dlpack(_rounded(cupy, a, dt))  # CuPy to a CUDA tensor, no copy
            else:  # through the host: a CPU tensor, or a CUDA one from the interpreter's numpy arrays
                t = torch.from_dlpack(np.ascontiguousarray(_rounded(np, to_numpy(a), dt)))
            out.append(t.to(device=like.device, dtype=getattr(torch, TORCH_DTYPES[dt])))
        return out
    if kind == "cupy":
        import cupy

        return [_rounded(cupy, cupy.asarray(a), dt) for a, dt in zip(outputs, dtypes, strict=True)]
    return [_rounded(np, to_numpy(a), dt) for a, dt in zip(outputs, dtypes, strict=True)]
