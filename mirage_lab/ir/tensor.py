"""Tensor types and the user-facing tensor handles returned by builders."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mirage_lab.ir.dtype import DType

if TYPE_CHECKING:
    from mirage_lab.ir.builder import BlockGraphBuilder, KernelGraphBuilder

Dims = tuple[int, ...]
MAX_RANK = 4


@dataclass(frozen=True)
class TensorType:
    """Dims and dtype of a tensor. ``post_loop`` is meaningful for block-level STensors only."""

    dims: Dims
    dtype: DType
    post_loop: bool = False

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def numel(self) -> int:
        return math.prod(self.dims)

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    def __str__(self) -> str:
        return f"{self.dtype.short}[{', '.join(map(str, self.dims))}]" + ("ᵖ" if self.post_loop else "")


def contiguous_strides(dims: Dims) -> Dims:
    """Row-major strides in elements."""
    strides, acc = [], 1
    for d in reversed(dims):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


class _Handle:
    """A reference to tensor ``id`` inside a builder; what users pass between builder calls."""

    __slots__ = ("builder", "id")
    prefix = "t"

    def __init__(self, builder: Any, tensor_id: int) -> None:
        self.builder = builder
        self.id = tensor_id

    @property
    def type(self) -> TensorType:
        return self.builder.tensor_type(self.id)

    @property
    def dims(self) -> Dims:
        return self.type.dims

    @property
    def dtype(self) -> DType:
        return self.type.dtype

    @property
    def num_dims(self) -> int:
        return len(self.dims)

    def dim(self, idx: int) -> int:
        return self.dims[idx]

    @property
    def guid(self) -> int:
        """The tensor's number in its graph (the reference's name)."""
        return self.id

    @property
    def name(self) -> str:
        return f"{self.prefix}{self.id}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}: {self.type})"


class DTensor(_Handle):
    """A device-memory tensor of a kernel graph under construction."""

    __slots__ = ()
    prefix = "d"
    builder: KernelGraphBuilder


class STensor(_Handle):
    """A shared-memory tile of a block graph under construction (per block, per iteration)."""

    __slots__ = ()
    prefix = "s"
    builder: BlockGraphBuilder

    @property
    def post_loop(self) -> bool:
        return self.type.post_loop
