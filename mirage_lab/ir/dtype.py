"""Data types. The dtype only matters for byte accounting and output comparison (SPEC §1)."""

from __future__ import annotations

import enum

from mirage_lab.errors import UnsupportedOpError


class DType(enum.Enum):
    """A tensor element type; ``value`` is the name used in JSON and listings."""

    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    INT8 = "int8"
    UINT16 = "uint16"

    @property
    def itemsize(self) -> int:
        return _ITEMSIZE[self]

    def __repr__(self) -> str:
        # the four float types are exported as ml.float16 etc.; the rest only as enum members
        return f"ml.{self.value}" if self.name.startswith(("FLOAT", "BFLOAT")) else f"ml.DType.{self.name}"

    __str__ = __repr__

    @classmethod
    def _missing_(cls, value: object) -> DType:
        """``DType("fp16")``: the reference's ``mi.dtype("fp16")`` and every name ``parse`` reads."""
        return cls.parse(value)

    # the reference's dtype predicates (``mi.float16.is_fp16()``)
    def is_fp16(self) -> bool:
        return self is DType.FLOAT16

    def is_bf16(self) -> bool:
        return self is DType.BFLOAT16

    def is_fp32(self) -> bool:
        return self is DType.FLOAT32

    def is_fp64(self) -> bool:
        return self is DType.FLOAT64

    def is_int8(self) -> bool:
        return self is DType.INT8

    def is_uint16(self) -> bool:
        return self is DType.UINT16

    @property
    def short(self) -> str:
        """Compact name for listings (f16, bf16, f32, …)."""
        return _SHORT[self]

    @classmethod
    def parse(cls, value: object) -> DType:
        """Accept a DType, its name (``"float16"``, ``"fp16"``, ``"f16"``), or a numpy dtype name."""
        if isinstance(value, DType):
            return value
        name = getattr(value, "name", value)
        if isinstance(name, str):
            key = name.lower()
            for dt in cls:
                if key in (dt.value, dt.short, _ALIASES.get(key)):
                    return dt
            if key in _ALIASES:
                return cls(_ALIASES[key])
            if key in REFERENCE_ONLY:
                raise UnsupportedOpError(
                    f"{key} tensors are not supported: mirage-lab's interpreter, search and code generator work "
                    "in float16, bfloat16, float32 and float64; declare the input with one of those (e.g. "
                    "dtype=ml.float16)")
        raise UnsupportedOpError(
            f"unknown dtype {value!r}; use one of {', '.join(repr(d) for d in cls)} (e.g. ml.float16)"
        )


_ITEMSIZE = {
    DType.FLOAT16: 2,
    DType.BFLOAT16: 2,
    DType.FLOAT32: 4,
    DType.FLOAT64: 8,
    DType.INT8: 1,
    DType.UINT16: 2,
}
_SHORT = {
    DType.FLOAT16: "f16",
    DType.BFLOAT16: "bf16",
    DType.FLOAT32: "f32",
    DType.FLOAT64: "f64",
    DType.INT8: "i8",
    DType.UINT16: "u16",
}
_ALIASES = {"fp16": "float16", "half": "float16", "bf16": "bfloat16", "fp32": "float32",
            "float": "float32", "fp64": "float64", "double": "float64"}

#: dtypes the reference Mirage names (``mi.int32``, ``mi.float8``, …) that mirage-lab does not compute in
REFERENCE_ONLY = ("int16", "int32", "int64", "uint8", "uint32", "uint64", "fp8", "float8", "fp8_e4m3",
                  "float8_e4m3")

float16 = DType.FLOAT16
bfloat16 = DType.BFLOAT16
float32 = DType.FLOAT32
float64 = DType.FLOAT64
