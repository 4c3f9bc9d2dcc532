"""Shared-memory accounting (SPEC §3.6) and per-architecture capacities."""

from __future__ import annotations

from collections.abc import Iterable

from mirage_lab.errors import ResourceError
from mirage_lab.ir.ops import Op
from mirage_lab.ir.tensor import TensorType

KIB = 1024
#: The reference search's per-block-graph budget for the §3.6 heuristic sum.
SEARCH_SMEM_BUDGET = 96 * KIB
#: Usable shared memory per block by architecture, in bytes (SPEC §3.6).
SMEM_CAPACITY = {
    "sm_80": 163 * KIB,
    "sm_86": 99 * KIB,
    "sm_89": 99 * KIB,
    "sm_90": 223 * KIB,
    "sm_100": 227 * KIB,
}
#: The architecture builders check against unless told otherwise (the largest we target).
DEFAULT_ARCH = "sm_90"
MAX_BLOCKS = 4096
#: The limit files are loaded with: a saved graph is reproduced as written, and whether it fits
#: a device is decided when it is compiled for one (SPEC §3.6), not when it is read.
UNCHECKED = 2**62


def capacity(arch: str) -> int:
    try:
        return SMEM_CAPACITY[arch]
    except KeyError:
        raise ResourceError(
            f"unknown architecture {arch!r}; use one of {', '.join(SMEM_CAPACITY)}") from None


def counted_bytes(op: Op, outputs: Iterable[TensorType]) -> int:
    """Bytes the §3.6 heuristic charges for one op: its outputs, unless the op is free."""
    if not op.spec.smem_counted:
        return 0
    return sum(t.nbytes for t in outputs)


def heuristic_usage(ops: Iterable[tuple[Op, Iterable[TensorType]]]) -> int:
    """The §3.6 search-time sum over all block ops (no reuse, no planning)."""
    return sum(counted_bytes(op, outs) for op, outs in ops)
