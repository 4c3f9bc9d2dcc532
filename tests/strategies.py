"""Hypothesis strategies for random *valid* μGraphs, built only through the public builder API.

``kernel_graphs()`` draws a small kernel graph (tensors of ≤ 512 elements, so interpreting it is
cheap) holding kernel ops of every kind and one or two customized ops, each with a random block
graph: random grids that divide the data dims, random imaps / fmaps / omaps, forloop ranges, unary,
binary, matmul, reduction, norm and concat ops at the block level, accumulators of every kind, and
one or two savers.

Every op goes through the builders; a random choice the rules reject raises ``ml.MirageError`` and is
simply skipped (builders change nothing when they raise). A draw that cannot be completed into a
valid graph is discarded with ``hypothesis.assume(False)``.

Usage::

    from tests.strategies import kernel_graphs, random_inputs

    @given(kernel_graphs())
    def test_something(g): ...
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

import mirage_lab as ml
from mirage_lab.ir.builder import BlockGraphBuilder, KernelGraphBuilder
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.ops import OPS, Kind
from mirage_lab.ir.tensor import DTensor, STensor

DTYPES = (ml.float16, ml.bfloat16, ml.float32)
SIZES = (2, 4, 8)
GRID_SIZES = (1, 1, 2, 4)
FORLOOP_RANGES = (1, 2, 4)
REDUCTION_DIMXS = (1, 2, 4)
#: every attribute-free unary op of the op table (so a new op is in the random graphs and every_op_graph at once)
UNARY = tuple(op.value for op, spec in OPS.items() if spec.kind is Kind.UNARY and not spec.attrs)
KERNEL_BINARY = ("add", "mul", "div", "pow")
BLOCK_BINARY = (*KERNEL_BINARY, "sub")
#: every accumulator name of ``tb.forloop_accum`` (None is NO_RED)
ACCUMULATORS: tuple[str | None, ...] = (None, "sum", "mean", "rms", "sum_todimx", "max", "nored_rescale",
                                        "sum_rescale")
PLAIN_ACCUMULATORS: tuple[str | None, ...] = (None, "sum", "mean", "rms", "sum_todimx", "max")

Draw = Callable[[st.SearchStrategy[Any]], Any]


def _pick(draw: Draw, items: Sequence[Any], prefer: Sequence[Any] = ()) -> Any:
    """One of ``items``, from ``prefer`` (e.g. not yet consumed tensors) two times in three."""
    pool = list(prefer) if prefer and draw(st.integers(0, 2)) else list(items)
    return draw(st.sampled_from(pool))


def _scalar(draw: Draw) -> float:
    return draw(st.floats(-4.0, 4.0, allow_nan=False, allow_infinity=False))


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


# --------------------------------------------------------------------------- block graphs


class _BlockState:
    """A block-graph builder plus which STensors are consumed (the closing rule needs the rest)."""

    def __init__(self, tb: BlockGraphBuilder) -> None:
        self.tb = tb
        self.tensors: list[STensor] = []
        self.used: set[int] = set()

    def add(self, outs: Any, inputs: Sequence[STensor]) -> list[STensor]:
        outs = outs if isinstance(outs, list) else [outs]
        self.used.update(t.id for t in inputs)
        self.tensors.extend(outs)
        return outs

    def unused(self) -> list[STensor]:
        return [t for t in self.tensors if t.id not in self.used]


def _imap(draw: Draw, dims: tuple[int, ...], grid: tuple[int, int, int]) -> tuple[int, int, int]:
    taken: set[int] = set()
    imap = []
    for g in grid:
        options = [-1] + [d for d in range(len(dims)) if g > 1 and d not in taken and dims[d] % g == 0]
        d = draw(st.sampled_from(options))
        if d >= 0:
            taken.add(d)
        imap.append(d)
    return (imap[0], imap[1], imap[2])


def _fmap(draw: Draw, dims: tuple[int, ...], imap: Sequence[int], grid: Sequence[int], F: int) -> int:
    options = [-1]
    for d, n in enumerate(dims):
        per_block = n // math.prod(g for g, m in zip(grid, imap, strict=True) if m == d)
        if F > 1 and per_block % F == 0:
            options.append(d)
    return int(draw(st.sampled_from(options)))


def _rescale_for(s: _BlockState, x: STensor) -> STensor:
    """A loop-phase STensor of shape ``x[:-1] + (1,)``: an existing one, or a row sum of ``x``."""
    want = (*x.dims[:-1], 1)
    for t in s.tensors:
        if t.dims == want and not t.post_loop:
            return t
    return s.add(s.tb.reduction(x, x.num_dims - 1), [x])[0]


def _block_op(draw: Draw, s: _BlockState) -> None:
    """Apply one random block op; a choice the rules reject raises ``MirageError`` (caught by the caller)."""
    tb, ts, fresh = s.tb, s.tensors, s.unused()
    kind = draw(st.sampled_from(("unary", "unary", "binary", "binary", "matmul", "matmul", "reduction",
                                 "rms_norm", "concat", "concat_then_matmul", "accum", "accum", "accum")))
    x = _pick(draw, ts, fresh)
    if kind == "unary":
        which = draw(st.sampled_from((*UNARY, "mul_scalar", "clamp")))
        if which == "mul_scalar":
            s.add(tb.mul_scalar(x, _scalar(draw)), [x])
        elif which == "clamp":
            lo, hi = sorted((_scalar(draw), _scalar(draw)))
            s.add(tb.clamp(x, lo, hi), [x])
        else:
            s.add(getattr(tb, which)(x), [x])
    elif kind in ("binary", "matmul", "concat"):
        y = _pick(draw, ts, fresh)
        if kind == "binary":
            s.add(getattr(tb, draw(st.sampled_from(BLOCK_BINARY)))(x, y), [x, y])
        elif kind == "matmul":
            s.add(tb.matmul(x, y), [x, y])
        else:
            s.add(tb.concat(x, y, draw(st.integers(0, x.num_dims - 1))), [x, y])
    elif kind == "concat_then_matmul":
        args = [x] + [_pick(draw, ts, fresh) for _ in range(3)]
        s.add(tb.concat_then_matmul(*args), args)
    elif kind == "reduction":
        which = draw(st.sampled_from(("reduction", "reduction_to_dimx", "reduction_max")))
        s.add(getattr(tb, which)(x, draw(st.integers(0, x.num_dims - 1))), [x])
    elif kind == "rms_norm":
        s.add(tb.rms_norm(x), [x])
    else:
        acc = draw(st.sampled_from(ACCUMULATORS))
        if acc in ("nored_rescale", "sum_rescale"):
            r = _rescale_for(s, x)
            s.add(tb.forloop_accum(x, acc, rescale=r), [x, r])
        else:
            s.add(tb.forloop_accum(x, acc), [x])


def _close(draw: Draw, s: _BlockState) -> list[STensor]:
    """Accumulate every dangling loop-phase tensor and merge post-loop ones down to ≤ 2 outputs."""
    for t in s.unused():
        if not t.post_loop:
            for acc in (draw(st.sampled_from(PLAIN_ACCUMULATORS)), None):
                try:
                    s.add(s.tb.forloop_accum(t, acc), [t])
                    break
                except ml.MirageError:
                    continue
    dangling = s.unused()
    while len(dangling) > 2:
        for a, b in ((a, b) for i, a in enumerate(dangling) for b in dangling[i + 1:]):
            try:
                s.add(s.tb.add(a, b), [a, b])
                break
            except ml.MirageError:
                continue
        else:
            assume(False)
        dangling = s.unused()
    assume(dangling)
    return dangling


def _omap(draw: Draw, rank: int, grid: tuple[int, int, int]) -> tuple[int, int, int]:
    split = [a for a in range(3) if grid[a] > 1]
    assume(len(split) <= rank)
    dims = draw(st.permutations(range(rank)))
    omap = [-1, -1, -1]
    for a, d in zip(split, dims, strict=False):
        omap[a] = d
    return (omap[0], omap[1], omap[2])


@st.composite
def block_graph_calls(draw: Draw, g: KernelGraphBuilder, candidates: Sequence[DTensor],
                      max_ops: int = 5) -> list[DTensor]:
    """Add one customized op over 1–3 of ``candidates`` to ``g``; returns its outputs."""
    inputs = [_pick(draw, candidates, candidates[-2:]) for _ in range(draw(st.integers(1, 3)))]
    grid = (draw(st.sampled_from(GRID_SIZES)), draw(st.sampled_from(GRID_SIZES[:3])),
            draw(st.sampled_from(GRID_SIZES[:3])))
    F = draw(st.sampled_from(FORLOOP_RANGES))
    block = draw(st.sampled_from(((128, 1, 1), (128, 1, 1), (128, 1, 1), (256, 1, 1))))
    tb = ml.new_threadblock_graph(grid_dim=grid, block_dim=block, forloop_range=F,
                                  reduction_dimx=draw(st.sampled_from(REDUCTION_DIMXS)))
    s = _BlockState(tb)
    for d in inputs:
        imap = _imap(draw, d.dims, grid)
        s.add(tb.new_input(dtensor=d, input_map=imap, forloop_dim=_fmap(draw, d.dims, imap, grid, F)), [])
    for _ in range(draw(st.integers(0, max_ops))):
        with contextlib.suppress(ml.MirageError):
            _block_op(draw, s)
    for t in _close(draw, s):
        tb.new_output(stensor=t, output_map=_omap(draw, t.num_dims, grid))
    return g.customized(inputs, tb)


# --------------------------------------------------------------------------- kernel graphs


def _kernel_op(draw: Draw, g: KernelGraphBuilder, ts: list[DTensor]) -> list[DTensor]:
    kind = draw(st.sampled_from(("unary", "mul_scalar", "clamp", "binary", "binary", "matmul", "matmul",
                                 "reduction", "rms_norm")))
    x = _pick(draw, ts, ts[-2:])
    if kind == "unary":
        return [getattr(g, draw(st.sampled_from(UNARY)))(x)]
    if kind == "mul_scalar":
        return [g.mul_scalar(x, _scalar(draw))]
    if kind == "clamp":
        lo, hi = sorted((_scalar(draw), _scalar(draw)))
        return [g.clamp(x, lo, hi)]
    if kind in ("binary", "matmul"):
        y = _pick(draw, ts, ts[-2:])
        op = draw(st.sampled_from(KERNEL_BINARY)) if kind == "binary" else "matmul"
        return [getattr(g, op)(x, y)]
    if kind == "reduction":
        dim = draw(st.integers(0, min(x.num_dims, 3) - 1))
        return [g.reduction(x, dim, draw(st.sampled_from(_divisors(x.dims[dim]))))]
    k = draw(st.integers(1, x.num_dims))
    return [g.rms_norm(x, normalized_shape=x.dims[-k:])]


def _input(draw: Draw, g: KernelGraphBuilder, rank: int, sizes: Sequence[int], dtype: ml.DType) -> DTensor:
    dims = tuple(draw(st.sampled_from(sizes)) for _ in range(rank))
    strides = None
    if draw(st.integers(0, 4)) == 0:  # sometimes column-major-ish strides, recorded but not contiguous
        strides, acc = [0] * rank, 1
        for d in range(rank):
            strides[d] = acc
            acc *= dims[d]
    return g.new_input(dims=dims, dtype=dtype, strides=strides)


@st.composite
def kernel_graphs(draw: Draw, max_kernel_ops: int = 3, max_customized: int = 2,
                  min_customized: int = 1) -> KernelGraph:
    """A random valid kernel graph with 1–3 inputs, kernel ops and 1–2 customized ops; 1–2 outputs."""
    g = ml.new_kernel_graph()
    rank = draw(st.sampled_from((2, 2, 3)))
    sizes = [draw(st.sampled_from(SIZES)) for _ in range(3)] + [1]
    dtype = draw(st.sampled_from(DTYPES))
    ts = [_input(draw, g, rank, sizes, dtype) for _ in range(draw(st.integers(1, 3)))]
    n_inputs = len(ts)
    n_custom = draw(st.integers(min_customized, max_customized))
    plan = ["kernel"] * draw(st.integers(0, max_kernel_ops)) + ["customized"] * n_custom
    plan = list(draw(st.permutations(plan)))
    customized = 0
    for step in plan:
        for _attempt in range(3):
            try:
                ts += draw(block_graph_calls(g, ts)) if step == "customized" else _kernel_op(draw, g, ts)
                customized += step == "customized"
                break
            except ml.MirageError:
                continue
    assume(customized >= min_customized)
    made = ts[n_inputs:]
    assume(made)
    g.mark_output(made[-1])
    if len(made) > 1 and draw(st.booleans()):
        g.mark_output(draw(st.sampled_from(made[:-1])))
    return g.freeze()


def random_inputs(g: KernelGraph, seed: int = 0) -> list[np.ndarray]:
    """Float64 inputs in [0.5, 1.5): positive, so log, sqrt and pow stay finite."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.5, 1.5, size=t.dims) for t in g.input_types]


# --------------------------------------------------------------------------- hand-built examples


def rmsnorm_linear_fused(rows: int = 16, hidden: int = 4096, out: int = 6144) -> KernelGraph:
    """The fused RMSNorm+Linear μGraph of SPEC §3.2: ``O = (Σ_F X W) / rms(X)`` in one customized op."""
    g = ml.new_kernel_graph()
    X = g.new_input(dims=(rows, hidden), dtype=ml.float16)
    W = g.new_input(dims=(hidden, out), dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=(256, 1, 1), forloop_range=4)
    x = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)
    w = tb.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=0)
    r = tb.forloop_accum(x, "rms")
    m = tb.matmul(x, w)
    a = tb.forloop_accum(m)
    o = tb.div(a, r)
    tb.new_output(stensor=o, output_map=(1, -1, -1))
    (result,) = g.customized([X, W], tb)
    g.mark_output(result)
    return g.freeze()


def every_op_graph() -> KernelGraph:
    """A small graph using every kernel op and every block op (all accumulators) at least once."""
    g = ml.new_kernel_graph()
    A = g.new_input(dims=(4, 8), dtype=ml.float32)
    B = g.new_input(dims=(8, 4), dtype=ml.float32, strides=(1, 8))
    k = g.matmul(A, B)  # [4,4]
    for name in UNARY:
        k = getattr(g, name)(k)
    k = g.clamp(g.mul_scalar(k, 0.5), -1.0, 2.5)
    for name in KERNEL_BINARY:
        k = getattr(g, name)(k, g.exp(k))
    grouped = g.reduction(k, 1, group_size=2)  # [4,2], strided pairs
    k = g.add(g.rms_norm(k, normalized_shape=(4, 4)), k)

    tb = ml.new_threadblock_graph(grid_dim=(2, 1, 1), forloop_range=2, reduction_dimx=2)
    a = tb.new_input(dtensor=A, input_map=(0, -1, -1), forloop_dim=1)  # [2,4]
    b = tb.new_input(dtensor=B, input_map=(-1, -1, -1), forloop_dim=0)  # [4,4]
    m = tb.matmul(a, b)  # [2,4]
    u = m
    for name in UNARY:
        u = getattr(tb, name)(u)
    u = tb.clamp(tb.mul_scalar(u, -0.25), -3.0, 3.0)
    for name in BLOCK_BINARY:
        u = getattr(tb, name)(u, m)
    r = tb.reduction(u, 1)  # [2,1]
    rx = tb.reduction_to_dimx(u, 1)  # [2,2]
    mx, diff = tb.reduction_max(u, 1)  # [2,1] each
    n = tb.rms_norm(u)
    c = tb.concat(u, n, 1)  # [2,8]
    ctm = tb.concat_then_matmul(a, a, b, b)  # [2,4]
    post = [
        tb.forloop_accum(ctm),
        tb.forloop_accum(c, "sum"),
        tb.forloop_accum(c, "mean"),
        tb.forloop_accum(c, "rms"),
        tb.forloop_accum(u, "nored_rescale", rescale=r),
        tb.forloop_accum(n, "sum_rescale", rescale=tb.add(mx, diff)),
    ]
    wide = post[0]
    for p in post[1:]:
        wide = tb.add(wide, p)  # [2,4]
    narrow = tb.add(tb.forloop_accum(c, "sum_todimx"), tb.forloop_accum(rx, "max"))  # [2,2]
    tb.new_output(stensor=wide, output_map=(0, -1, -1))
    tb.new_output(stensor=narrow, output_map=(0, -1, -1))
    o1, o2 = g.customized([A, B], tb)
    g.mark_output(g.add(o1, k))
    g.mark_output(g.mul(o2, grouped))
    g.mark_output(g.reduction(k, 0))
    return g.freeze()
