"""How the tensors of generated code are held in numpy (CPU emulation) and CuPy (GPU) arrays, per dtype.

fp16 and fp32 are held as themselves. Neither numpy nor CuPy has a bfloat16, so a bf16 tensor is held as its
16 bits (uint16) and handed back as float32 holding the bf16 values. bf16 is the top half of an fp32: narrowing
rounds to nearest, ties to even, on the 16 dropped bits, as CUDA's ``__float2bfloat16`` does, and a NaN stays a
NaN (its quiet bit is set, so rounding cannot carry it into an infinity); widening is exact. The emulator's C++
shim does the same per element (``emulate.SHIM``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mirage_lab.errors import UnsupportedOpError
from mirage_lab.ir.dtype import DType


def to_bf16_bits(xp: Any, a: Any) -> Any:
    """``a`` rounded to bf16 (nearest, ties to even), as uint16 bit patterns of the same shape."""
    u = xp.array(a, dtype=xp.float32, order="C").view(xp.uint32)  # a C-ordered copy, 0-d kept
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    rounded = (u + (0x7FFF + ((u >> 16) & 1))) >> 16  # uint32: only NaN bit patterns could wrap, and they are kept
    return xp.where(nan, (u >> 16) | 0x40, rounded).astype(xp.uint16)


def from_bf16_bits(xp: Any, bits: Any) -> Any:
    """bf16 bit patterns widened (exactly) to float32."""
    return (xp.asarray(bits, dtype=xp.uint16).astype(xp.uint32) << 16).view(xp.float32)


@dataclass(frozen=True)
class Storage:
    """One dtype's arrays: ``array`` holds the tensor, ``value`` is what callers pass and get back."""

    dtype: DType
    array: str  # the array dtype holding the tensor ("uint16" for bf16's bits)
    value: str  # the dtype of the values callers see ("float32" for bf16)
    nan: Any  # what an element nobody wrote holds (all ones for bf16: a NaN, as 0xFF-filled memory is)

    def encode(self, xp: Any, a: Any) -> Any:
        """A caller's values as the held array (bf16: rounded to its bits)."""
        return to_bf16_bits(xp, a) if self.dtype is DType.BFLOAT16 else xp.asarray(a, dtype=self.array)

    def decode(self, xp: Any, a: Any) -> Any:
        """The held array as values (bf16: widened to float32); other dtypes as they are."""
        return from_bf16_bits(xp, a) if self.dtype is DType.BFLOAT16 else a


STORAGE = {
    DType.FLOAT16: Storage(DType.FLOAT16, "float16", "float16", float("nan")),
    DType.FLOAT32: Storage(DType.FLOAT32, "float32", "float32", float("nan")),
    DType.BFLOAT16: Storage(DType.BFLOAT16, "uint16", "float32", 0xFFFF),
}


def storage(dtype: DType) -> Storage:
    if dtype not in STORAGE:
        raise UnsupportedOpError(f"generated code stores fp16, bf16 and fp32 tensors only, not {dtype}; "
                                 "declare the graph's tensors in one of those")
    return STORAGE[dtype]
