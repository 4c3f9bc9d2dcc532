"""Number systems: the arithmetic the one interpreter runs on.

The interpreter and the op table's evaluation rules only ever call the methods of
``NumberSystem``. ``FloatArith`` evaluates over the reals (float64 by default);
the finite-field verifier supplies another implementation of the same protocol,
whose values may be tuples of component arrays — which is why shape-only
operations go through ``structural``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, Protocol

import numpy as np

from mirage_lab.errors import InputError
from mirage_lab.semantics.backend import array_module, to_numpy
from mirage_lab.semantics.fold import fold_plan

Axes = int | tuple[int, ...]
FLOAT_DTYPES = ("float64", "float32", "float16")


class NumberSystem(Protocol):
    """What the interpreter needs from a number system. Reductions keep dims."""

    name: str
    xp: ModuleType
    element_bytes: int  # memory per tensor element (both residues for a field)

    def from_host(self, a: Any) -> Any: ...
    def to_host(self, v: Any) -> Any: ...
    def structural(self, fn: Callable[..., Any], *vs: Any) -> Any: ...
    def shape(self, v: Any) -> tuple[int, ...]: ...
    def add(self, a: Any, b: Any) -> Any: ...
    def sub(self, a: Any, b: Any) -> Any: ...
    def mul(self, a: Any, b: Any) -> Any: ...
    def div(self, a: Any, b: Any) -> Any: ...
    def pow(self, a: Any, b: Any) -> Any: ...
    def maximum(self, a: Any, b: Any) -> Any: ...
    def matmul(self, a: Any, b: Any) -> Any: ...
    def exp(self, x: Any) -> Any: ...
    def square(self, x: Any) -> Any: ...
    def sqrt(self, x: Any) -> Any: ...
    def silu(self, x: Any) -> Any: ...
    def sigmoid(self, x: Any) -> Any: ...
    def gelu(self, x: Any) -> Any: ...
    def tanh(self, x: Any) -> Any: ...
    def erf(self, x: Any) -> Any: ...
    def relu(self, x: Any) -> Any: ...
    def log(self, x: Any) -> Any: ...
    def mul_scalar(self, x: Any, c: float) -> Any: ...
    def clamp(self, x: Any, lo: float, hi: float) -> Any: ...
    def sum(self, x: Any, axis: Axes) -> Any: ...
    def amax(self, x: Any, axis: Axes) -> Any: ...
    def sum_strided(self, x: Any, axis: int, groups: int) -> Any: ...
    def rms(self, x: Any, axes: Axes, count: int) -> Any: ...
    def scale_int(self, x: Any, n: int) -> Any: ...
    def div_int(self, x: Any, n: int) -> Any: ...
    def concat(self, vs: Sequence[Any], axis: int) -> Any: ...


def strided_groups(shape: tuple[int, ...], axis: int, groups: int) -> tuple[tuple[int, ...], int]:
    """Reshape for ``out[j] = Σ_k x[j + k·groups]`` along ``axis`` (negative): split n into (n/groups, groups)
    and sum the first factor. Returns the new shape and the (negative) axis to sum."""
    n = shape[axis]
    pos = len(shape) + axis
    return (*shape[:pos], n // groups, groups, *shape[pos + 1:]), axis - 1


def concat_shapes(shapes: Sequence[tuple[int, ...]], axis: int) -> list[tuple[int, ...]]:
    """Shapes to broadcast concat operands to: batch axes may be size 1 in some operands."""
    full = [max(s[i] for s in shapes) for i in range(len(shapes[0]))]
    pos = len(full) + axis
    return [tuple(s[i] if i == pos else full[i] for i in range(len(full))) for s in shapes]


class FloatArith:
    """Real arithmetic in a floating dtype (float64 by default) on numpy or CuPy."""

    def __init__(self, backend: str | None = None, dtype: str = "float64") -> None:
        self.xp = array_module(backend)
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
        if name not in FLOAT_DTYPES:
            raise InputError(f"dtype must be one of {', '.join(FLOAT_DTYPES)} (the interpreter's float arithmetic), "
                             f"got {dtype!r}")
        self.dtype = self.xp.dtype(name)
        self.element_bytes = self.dtype.itemsize
        self.name = f"float:{self.dtype.name}:{self.xp.__name__}"

    def __repr__(self) -> str:
        return f"FloatArith(backend={self.xp.__name__!r}, dtype={self.dtype.name!r})"

    def from_host(self, a: Any) -> Any:
        return self.xp.asarray(a, dtype=self.dtype)

    def to_host(self, v: Any) -> np.ndarray:
        return to_numpy(v)

    def structural(self, fn: Callable[..., Any], *vs: Any) -> Any:
        return fn(*vs)

    def shape(self, v: Any) -> tuple[int, ...]:
        return tuple(v.shape)

    def add(self, a: Any, b: Any) -> Any:
        return a + b

    def sub(self, a: Any, b: Any) -> Any:
        return a - b

    def mul(self, a: Any, b: Any) -> Any:
        return a * b

    def div(self, a: Any, b: Any) -> Any:
        return a / b

    def pow(self, a: Any, b: Any) -> Any:
        return self.xp.power(a, b)

    def maximum(self, a: Any, b: Any) -> Any:
        return self.xp.maximum(a, b)

    def matmul(self, a: Any, b: Any) -> Any:
        if a.ndim != b.ndim or a.ndim <= 2:
            return self.xp.matmul(a, b)
        plan = fold_plan(tuple(a.shape), tuple(b.shape))
        if plan.trivial:
            return self.xp.matmul(a, b)
        return plan.unfold(self.xp.matmul(plan.fold_a(a), plan.fold_b(b)))

    def exp(self, x: Any) -> Any:
        return self.xp.exp(x)

    def square(self, x: Any) -> Any:
        return x * x

    def sqrt(self, x: Any) -> Any:
        return self.xp.sqrt(x)

    def sigmoid(self, x: Any) -> Any:
        return 0.5 * (1.0 + self.xp.tanh(0.5 * x))  # overflow-free logistic

    def silu(self, x: Any) -> Any:
        return x * self.sigmoid(x)

    def gelu(self, x: Any) -> Any:
        """Exact GELU, ``x·Φ(x)`` with the error function (PyTorch's default)."""
        return 0.5 * x * (1.0 + self.erf(x / math.sqrt(2.0)))

    def tanh(self, x: Any) -> Any:
        return self.xp.tanh(x)

    def erf(self, x: Any) -> Any:
        """The error function (numpy has none: ``math.erf`` per element; CuPy's own on a GPU)."""
        if self.xp is np:
            return np.frompyfunc(math.erf, 1, 1)(x).astype(self.dtype)
        from cupyx.scipy.special import erf

        return erf(x)

    def relu(self, x: Any) -> Any:
        return self.xp.maximum(x, 0)

    def log(self, x: Any) -> Any:
        return self.xp.log(x)

    def mul_scalar(self, x: Any, c: float) -> Any:
        return x * c

    def clamp(self, x: Any, lo: float, hi: float) -> Any:
        return self.xp.clip(x, lo, hi)

    def sum(self, x: Any, axis: Axes) -> Any:
        return x.sum(axis=axis, keepdims=True)

    def amax(self, x: Any, axis: Axes) -> Any:
        return x.max(axis=axis, keepdims=True)

    def sum_strided(self, x: Any, axis: int, groups: int) -> Any:
        if groups == 1:
            return self.sum(x, axis)
        shape, sum_axis = strided_groups(tuple(x.shape), axis, groups)
        return x.reshape(shape).sum(axis=sum_axis)

    def rms(self, x: Any, axes: Axes, count: int) -> Any:
        return self.sqrt(self.div_int(self.sum(x * x, axes), count))

    def scale_int(self, x: Any, n: int) -> Any:
        return x * n

    def div_int(self, x: Any, n: int) -> Any:
        return x / n

    def concat(self, vs: Sequence[Any], axis: int) -> Any:
        shapes = concat_shapes([tuple(v.shape) for v in vs], axis)
        return self.xp.concatenate([self.xp.broadcast_to(v, s) for v, s in zip(vs, shapes, strict=True)], axis=axis)
