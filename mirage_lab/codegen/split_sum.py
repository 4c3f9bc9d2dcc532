"""Split sums: several threads per output of a sum with few outputs.

**Split sums** (``split_sums=True``, the default): a matmul feeding a sum accumulator, or a row-sum
accumulator, with fewer outputs than half the block's threads gives each output several threads (a power
of two); each sums a strided share of the terms, warp shuffles combine the shares (``mirage_warp_sum``),
and one lane adds the total into the fp32 accumulator, or one lane per warp ``atomicAdd``s when a share
spans several warps (GEMV-like tiles at batch 1 otherwise leave most threads idle behind one long serial
loop).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mirage_lab.codegen.writer import KernelWriter
from mirage_lab.optimize.tensor_cores import WARP

#: the shuffle butterfly that combines the shares, in every generated source
WARP_SUM = """\
#ifndef MIRAGE_LAB_WARP_SUM  // the CPU emulation brings its own: one exchange instead of one per step
#define MIRAGE_LAB_WARP_SUM
// v[j] summed over each aligned group of W lanes (W a power of two, at most 32); every lane of the warp calls it
template <int N, int W> __device__ __forceinline__ void mirage_warp_sum(float (&v)[N]) {
  #pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) {
    #pragma unroll
    for (int j = 0; j < N; ++j) v[j] += __shfl_xor_sync(0xffffffffu, v[j], o);
  }
}
#endif
"""


def split_sum(w: KernelWriter, outputs: int, length: int) -> int:
    """Threads per output of a sum over ``length`` terms: when the outputs leave at least half the block idle,
    the idle threads each take a strided share of the terms (``split_block``). A power of two when warp
    shuffles combine the shares (whole warps), so that a share's threads are an aligned group of lanes."""
    share = min(w.threads // outputs, length)
    if share < 2 or not w.split_sums:
        return 1
    return 1 << (share.bit_length() - 1) if w.threads % WARP == 0 else share


@contextmanager
def split_block(w: KernelWriter, total: int, share: int, name: str) -> Iterator[None]:
    """The body of a split sum over ``total`` = outputs × ``share`` ≤ threads: declares ``t``, ``<name>`` (the
    output) and ``part``. Every thread runs it (``t < total`` guards the work, not the block), so that all
    lanes meet the warp shuffles of ``combine_shares``."""
    assert total <= w.threads, (total, w.threads)  # split_sum gives each output at most threads // outputs
    with w.block(""):
        w.line("const int t = threadIdx.x;")
        w.line(f"const int {name} = t / {share}, part = t % {share};  // consecutive threads: consecutive terms")
        yield


def combine_shares(w: KernelWriter, share: int, values: str, count: int, total: int) -> tuple[str, str]:
    """Sum the ``share`` threads' partial ``values`` (an array of ``count``). With whole warps, a shuffle
    butterfly (``mirage_warp_sum``) within each share, or each warp of it, leaves the total in every lane:
    returns the first lane's guard and ``"+="`` (one writer per output) or ``"atomic"`` (a share wider than a
    warp: one add per warp). Without whole warps: every thread's guard and ``"atomic"``."""
    if w.threads % WARP:
        return f"t < {total}", "atomic"
    group = min(share, WARP)
    w.line(f"mirage_warp_sum<{count}, {group}>({values});  // the partial sums of {group} lanes, in registers")
    if share <= WARP:
        return f"part == 0 && t < {total}", "+="
    return f"threadIdx.x % {WARP} == 0 && t < {total}", "atomic"


def add_line(target: str, value: str, how: str, note: str) -> str:
    """``target += value``, or an ``atomicAdd`` when ``how`` (from ``combine_shares``) says so, with ``note``."""
    return f"atomicAdd(&{target}, {value});  // {note}" if how == "atomic" else f"{target} += {value};  // {note}"
