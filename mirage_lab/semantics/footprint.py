"""Host memory: how much running a graph needs at least, how much this machine has, and a clear
``ResourceError`` instead of numpy's allocation failure (``verify rmsnorm:1000000000`` once ended in an
``ArrayMemoryError`` traceback asking for 59.6 TiB).

The estimate is a lower bound, so it never refuses work that would fit: every program input and the
largest value the interpreter computes are alive together. It is checked before anything is allocated;
a ``MemoryError`` that still happens later (the bound is loose) is turned into the same kind of error.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from mirage_lab.bounds import size as _size
from mirage_lab.cache import private_dir
from mirage_lab.errors import CacheError, ResourceError
from mirage_lab.ir.graph import BlockGraph, KernelGraph
from mirage_lab.ir.ops import Op

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no turns
    fcntl = None  # type: ignore[assignment]


#: the lock file (in the private cache's ``locks``) that large allocations take turns on
LARGE_ALLOCATIONS = "large-allocations.lock"


def available_bytes() -> int | None:
    """Memory this process can still get: the smaller of the kernel's MemAvailable and the cgroup's room.
    None where neither can be read (then nothing is refused in advance)."""
    limits = [v for v in (_meminfo_available(), _cgroup_room()) if v is not None]
    return min(limits) if limits else None


def peak_elements(g: KernelGraph) -> int:
    """A lower bound on the elements alive at once when the interpreter runs ``g``: all inputs, plus the
    largest value it computes (a kernel-level tensor, or a block graph's value over every block and
    iteration, as the vectorised interpreter holds it)."""
    inputs = sum(math.prod(t.dims) for t in g.input_types)
    largest = 0
    for node in g.nodes:
        if node.op is Op.INPUT:
            continue
        largest = max(largest, *(math.prod(g.tensors[t].dims) for t in node.outputs))
        if node.body is not None:
            largest = max(largest, _block_peak(node.body))
    return inputs + largest


def _block_peak(bg: BlockGraph) -> int:
    blocks = math.prod(bg.grid)
    peak = 0
    for node in bg.nodes:
        if node.op in (Op.INPUT, Op.OUTPUT):  # loaders are views, savers write the kernel-level output
            continue
        for t in node.outputs:
            tile = bg.tensors[t]
            peak = max(peak, math.prod(tile.dims) * blocks * (1 if tile.post_loop else bg.forloop_range))
    return peak


def require_memory(g: KernelGraph, element_bytes: int, what: str, wait_s: float = 0.0) -> None:
    """Refuse, before allocating, work on ``g`` that cannot fit in this machine's memory.

    With ``wait_s``, work that fits the machine but not what is available *now* waits up to that long for
    memory to come free instead (search workers: the other worker's verification ends and frees its arrays;
    the estimate is a lower bound, so a verification that took no turn may still hold most of the memory)."""
    need = peak_elements(g) * element_bytes
    have = available_bytes()
    if have is None or need <= have:
        return
    total = total_bytes()
    deadline = time.monotonic() + wait_s
    while (total is None or need <= total) and time.monotonic() < deadline:
        time.sleep(0.25)
        have = available_bytes()
        if have is None or need <= have:
            return
    raise ResourceError(f"{what} needs at least {_size(need)} of memory (the inputs and the largest tensor, "
                        f"{element_bytes} bytes an element) but {_size(have)} is available"
                        f"{f' after waiting {wait_s:g} s' if wait_s and (total is None or need <= total) else ''}; "
                        "use smaller shapes (a smaller batch), or a machine with more memory")


def total_bytes() -> int | None:
    """This process's memory ceiling: the smaller of physical memory and the cgroup's limit (None if unknown)."""
    limits = [v for v in (_meminfo("MemTotal:"), _cgroup_limit()) if v is not None]
    return min(limits) if limits else None


@contextlib.contextmanager
def large_allocation_turn(need: int) -> Iterator[None]:
    """Work needing more than half the memory available now waits for its turn: one such at a time per user and
    machine (an exclusive ``flock`` on a file in the private cache), so that two search workers never both start
    a verification that fits this machine only alone. Smaller work, and work where memory or ``flock`` cannot be
    seen, runs at once. The kernel drops the lock when its holder dies."""
    have = available_bytes()
    if fcntl is None or have is None or 2 * need <= have:
        yield
        return
    try:
        fd = os.open(private_dir("locks") / LARGE_ALLOCATIONS, os.O_RDWR | os.O_CREAT, 0o600)
    except (CacheError, OSError):  # no private place for the lock: run unserialised rather than not at all
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (which unlocks)


@contextlib.contextmanager
def memory_guard(what: str) -> Iterator[None]:
    """A ``MemoryError`` inside becomes a ``ResourceError`` that says what ran out and what is available."""
    try:
        yield
    except MemoryError as e:
        have = available_bytes()
        room = f"; {_size(have)} is available" if have is not None else ""
        raise ResourceError(f"{what} ran out of memory ({e}{room}); use smaller shapes or a machine with more "
                            "memory") from None


@contextlib.contextmanager
def small_pages() -> Iterator[None]:
    """Within the block, numpy allocates large arrays without asking the kernel for transparent huge pages.

    With the kernel's default THP defrag policy ("madvise"), every fault in an advised region may compact
    memory first: on our 2-core VM, 1.2 GB of fresh arrays took 1.6–2.8 s with the advice and 0.47 s
    without, and a search's verifier allocates that much per process (RMSNorm+Linear: 4.6 s → 2.3 s).
    Searches and their tasks run inside it, in whichever process runs them.
    """
    switch = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "_set_madvise_hugepage", None)
    if switch is None or os.environ.get("NUMPY_MADVISE_HUGEPAGE"):  # an older numpy, or the user chose
        yield
        return
    before = switch(False)
    try:
        yield
    finally:
        switch(before)


def _meminfo(field: str) -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _meminfo_available() -> int | None:
    have = _meminfo("MemAvailable:")
    if have is not None:
        return have
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _cgroup_limit() -> int | None:
    """cgroup v2's memory.max, when a limit is set."""
    try:
        limit = (Path("/sys/fs/cgroup") / "memory.max").read_text().strip()
        return None if limit == "max" else int(limit)
    except (OSError, ValueError):
        return None


def _cgroup_room() -> int | None:
    """cgroup v2's memory.max minus memory.current, when a limit is set."""
    base = Path("/sys/fs/cgroup")
    try:
        limit = (base / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(0, int(limit) - int((base / "memory.current").read_text()))
    except (OSError, ValueError):
        return None
