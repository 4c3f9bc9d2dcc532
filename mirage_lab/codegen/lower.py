"""Kernel-level ops lowered to one-op custom kernels, so that every op of a μGraph has generated CUDA.

``lower_kernel_ops(graph)`` replaces each predefined kernel op (matmul, element-wise, reduction, rms_norm) by a
customized op whose block graph computes exactly that op; nodes and tensors keep their numbers, so node k's
kernel is still ``mirage_k<k>``. The generator then treats every op alike: tensor cores, tile layouts, the
CPU emulation and the interpreter's check all apply, and an unfused program has a CUDA baseline of its own.

Each op has a row in ``LOWER`` (an op without one is an ``UnsupportedOpError`` naming it; ``UNLOWERED``
says why). The block graphs:

* **element-wise** (unary, binary with size-1 broadcasting): a grid over the output's dims, outermost first,
  until a tile holds at most ``TILE`` elements; a broadcast operand's size-1 dims are replicated (imap −1);
  load, op, ``forloop_accum`` (F = 1), save.
* **reduction** over dim d with group size s: a grid over the other dims (at most ``ROWS`` outputs a block),
  the for-loop over d in chunks of a multiple of s; a last-dim plain sum is a row-sum accumulator (split over
  idle threads), anything else a block ``reduction`` (s = 1) or ``reduction_to_dimx`` (X = s: the same strided
  grouping) into a ``NO_RED`` accumulator.
* **rms_norm**: a grid over the leading dims; each tile holds whole normalised rows (at least one): ``x / rms``
  with an ``rms`` accumulator (its row sums split over idle threads) over one dim, a block ``rms_norm`` over
  several.
* **matmul**: batch dims fully on grid axes z (and y), output tiles of at most ``MM_TILE`` × ``MM_TILE`` on x
  (columns) and y (rows), shrunk towards ``MIN_BLOCKS`` blocks but not below 16 where the dims allow; the for-loop
  walks K in chunks of at most ``MM_K``, into a ``NO_RED`` accumulator.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from mirage_lab.errors import ResourceError, UnsupportedOpError
from mirage_lab.ir.builder import BlockGraphBuilder, new_threadblock_graph
from mirage_lab.ir.graph import PHI, BlockGraph, KernelGraph, Node
from mirage_lab.ir.ops import Kind, Level, Op, ops_at
from mirage_lab.ir.smem import MAX_BLOCKS
from mirage_lab.ir.tensor import Dims, STensor, TensorType

#: most elements in a tile of an element-wise, reduction or rms_norm kernel (4 KiB of fp16)
TILE = 2048
#: most outputs a reduction block computes
ROWS = 32
#: matmul output tiles: at most this many rows and columns, and K per iteration
MM_TILE = 64
MM_K = 64
#: the blocks a matmul grid aims for (about one per SM); tiles shrink towards it, not below ``MM_MIN`` a side
MIN_BLOCKS = 128
MM_MIN = 16
#: the shared memory (§3.6 sum) a lowered kernel may take: sm_80's, the smallest target
ARCH = "sm_80"
#: a tile may grow this many times past ``TILE`` when the grid would otherwise pass MAX_BLOCKS
GROWTH = 64
AXES = "xyz"

Lowering = Callable[[Node, Sequence[TensorType], TensorType], BlockGraph]


def lower_kernel_ops(graph: KernelGraph) -> KernelGraph:
    """``graph`` with every predefined kernel op replaced by a customized op that computes it (same numbering)."""
    nodes = list(graph.nodes)
    changed = False
    for k, node in enumerate(graph.nodes):
        if node.op in (Op.INPUT, Op.CUSTOMIZED):
            continue
        body = lower_op(node, [graph.tensors[t] for t in node.inputs], graph.tensors[node.outputs[0]], k)
        nodes[k] = Node(Op.CUSTOMIZED, node.inputs, node.outputs, (), body)
        changed = True
    return KernelGraph(graph.tensors, tuple(nodes), graph.outputs) if changed else graph


def lower_op(node: Node, ins: Sequence[TensorType], out: TensorType, k: int = 0) -> BlockGraph:
    """The one-op block graph of kernel op ``node`` (node ``k`` of its graph, for messages)."""
    label = f"kernel op {node.op.value} (node {k}: {', '.join(map(str, ins))} → {out})"
    if node.op not in LOWER:
        why = UNLOWERED.get(node.op, "no lowering is written for it")
        raise UnsupportedOpError(f"{label} has no CUDA kernel: {why}. Write it as a customized op "
                                 "(g.customized), or run it as a library call (library_calls=True)")
    try:
        return LOWER[node.op](node, ins, out)
    except ResourceError as e:
        raise ResourceError(f"{label} does not fit one generated kernel: {e}. Split the op into smaller ones, "
                            "or run it as a library call (library_calls=True)") from None


# --------------------------------------------------------------------------- tilings


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted({*small, *(n // d for d in small)})


def _largest_divisor(n: int, cap: int) -> int:
    return max(d for d in _divisors(n) if d <= cap) if cap >= 1 else 1


def _split(dims: Dims, limit: int, order: Sequence[int]) -> dict[int, int] | None:
    """Parts per dim (≤ 3 dims, outermost of ``order`` first) that leave a tile of at most ``limit`` elements, each
    part count the smallest divisor that does it; None when three dims are not enough."""
    tile, parts = list(dims), dict[int, int]()
    for d in order:
        size = math.prod(tile)
        if size <= limit:
            break
        if len(parts) == 3 or tile[d] == 1:
            continue
        need = -(-size // limit)
        p = next((q for q in _divisors(tile[d]) if q >= need), tile[d])
        parts[d] = p
        tile[d] //= p
    return parts if math.prod(tile) <= limit else None


def _fitting_split(dims: Dims, limit: int, order: Sequence[int], what: str) -> dict[int, int]:
    """``_split`` with the smallest limit from ``limit`` up that keeps the grid within MAX_BLOCKS blocks."""
    cap = limit
    while cap <= limit * GROWTH:
        parts = _split(dims, cap, order)
        if parts is not None and math.prod(parts.values()) <= MAX_BLOCKS:
            return parts
        cap *= 2
    raise ResourceError(f"no grid of at most {MAX_BLOCKS} blocks over dims {list(order)} of {dims} gives {what} "
                        f"tiles of at most {limit * GROWTH} elements")


def _grid(parts: dict[int, int]) -> tuple[tuple[int, int, int], dict[int, int]]:
    """The grid of ``parts`` (the innermost split dim on x, then y, z) and each axis's dim."""
    dims = sorted(parts, reverse=True)
    grid = [1, 1, 1]
    axis_dim = {}
    for a, d in enumerate(dims):
        grid[a] = parts[d]
        axis_dim[a] = d
    return (grid[0], grid[1], grid[2]), axis_dim


def _map(axis_dim: dict[int, int], dims: Dims | None = None, like: Dims | None = None) -> tuple[int, int, int]:
    """An imap / omap: each grid axis's dim; −1 on axes without one, and (for a loader of ``dims`` broadcast to
    ``like``) on dims the tensor broadcasts (size 1 where the output is larger)."""
    out = [PHI, PHI, PHI]
    for a, d in axis_dim.items():
        if dims is None or like is None or dims[d] == like[d]:
            out[a] = d
    return (out[0], out[1], out[2])


def _builder(grid: tuple[int, int, int], forloop_range: int = 1, reduction_dimx: int = 64) -> BlockGraphBuilder:
    return new_threadblock_graph(grid_dim=grid, forloop_range=forloop_range, reduction_dimx=reduction_dimx,
                                 arch=ARCH)


# --------------------------------------------------------------------------- per kind


def _same_op(tb: BlockGraphBuilder, node: Node, args: list[STensor]) -> STensor:
    """Node's op at block level on ``args``, with its attributes."""
    if node.op is Op.MUL_SCALAR:
        return tb.mul_scalar(args[0], node.attr("scalar"))
    if node.op is Op.CLAMP:
        return tb.clamp(args[0], node.attr("min"), node.attr("max"))
    method: Callable[..., STensor] = getattr(tb, node.op.value)
    return method(*args)


def lower_elementwise(node: Node, ins: Sequence[TensorType], out: TensorType) -> BlockGraph:
    parts = _fitting_split(out.dims, TILE, range(out.rank), "element-wise")
    grid, axis_dim = _grid(parts)
    tb = _builder(grid)
    loads = [tb.new_input(t, input_map=_map(axis_dim, t.dims, out.dims), forloop_dim=PHI) for t in ins]
    tb.new_output(tb.forloop_accum(_same_op(tb, node, loads)), output_map=_map(axis_dim))
    return tb.freeze()


def lower_reduction(node: Node, ins: Sequence[TensorType], out: TensorType) -> BlockGraph:
    (x,) = ins
    d, group = int(node.attr("dim")), int(node.attr("group_size", 1))
    others = [i for i in range(x.rank) if i != d]
    parts = _fitting_split(out.dims, ROWS * group, others, "reduction output")
    grid, axis_dim = _grid(parts)
    rows = out.numel // math.prod(parts.values()) // group  # output tile elements per group entry
    chunk = max(c for c in _divisors(x.dims[d]) if c % group == 0 and (rows * c <= TILE or c == group))
    tb = _builder(grid, forloop_range=x.dims[d] // chunk, reduction_dimx=group)
    tx = tb.new_input(x, input_map=_map(axis_dim), forloop_dim=d)
    if d == x.rank - 1 and group == 1:
        acc = tb.forloop_accum(tx, "sum")  # a row sum: split over the idle threads
    else:
        acc = tb.forloop_accum(tb.reduction(tx, d) if group == 1 else tb.reduction_to_dimx(tx, d))
    tb.new_output(acc, output_map=_map(axis_dim))
    return tb.freeze()


def lower_rms_norm(node: Node, ins: Sequence[TensorType], out: TensorType) -> BlockGraph:
    (x,) = ins
    norm = tuple(node.attr("normalized_shape", x.dims[-1:]))
    lead = x.rank - len(norm)
    parts = _fitting_split(x.dims, max(TILE, math.prod(norm)), range(lead), "rms_norm")
    grid, axis_dim = _grid(parts)
    tb = _builder(grid)
    tx = tb.new_input(x, input_map=_map(axis_dim), forloop_dim=PHI)
    if len(norm) == 1:  # x / rms(x) with the row's sum of squares split over the idle threads (F = 1: F·n = n)
        y = tb.div(tb.forloop_accum(tx), tb.forloop_accum(tx, "rms"))
    else:  # a block rms_norm over the trailing dims (the builder's method normalises the last dim only)
        y = tb.forloop_accum(tb._one(Op.RMS_NORM, tx, normalized_shape=norm))
    tb.new_output(y, output_map=_map(axis_dim))
    return tb.freeze()


def _matmul_tiles(m: int, n: int, batch_blocks: int, split_m: bool) -> tuple[int, int]:
    """(rows, columns) of a matmul output tile: divisors of M and N of at most MM_TILE (all of M when it cannot be
    split), with at least MIN_BLOCKS blocks where that keeps both sides ≥ MM_MIN, and within MAX_BLOCKS."""

    def sides(size: int, split: bool) -> list[int]:
        if not split:
            return [size]
        ok = [t for t in _divisors(size) if min(size, MM_MIN) <= t <= MM_TILE]
        return ok or [_largest_divisor(size, MM_TILE)]

    cands = [(tm, tn) for tm in sides(m, split_m) for tn in sides(n, True)
             if batch_blocks * (m // tm) * (n // tn) <= MAX_BLOCKS]
    if not cands:
        raise ResourceError(f"its {batch_blocks} batch blocks times the {m}×{n} output's tiles of at most "
                            f"{MM_TILE}×{MM_TILE} pass the limit of {MAX_BLOCKS} blocks")

    def score(c: tuple[int, int]) -> tuple[int, int, int]:
        blocks = batch_blocks * (m // c[0]) * (n // c[1])
        return min(blocks, MIN_BLOCKS), c[0] * c[1], c[1]

    return max(cands, key=score)


def lower_matmul(node: Node, ins: Sequence[TensorType], out: TensorType) -> BlockGraph:
    a, b = ins
    r = a.rank
    m, k, n = a.dims[-2], a.dims[-1], b.dims[-1]
    batch = a.dims[:-2]
    if len(batch) > 2:
        raise UnsupportedOpError(f"a matmul with {len(batch)} batch dims needs more than 3 grid axes")
    batch_blocks = math.prod(batch)
    tm, tn = _matmul_tiles(m, n, batch_blocks, split_m=len(batch) < 2)
    # x: columns; y: rows (or the second batch dim); z: the first batch dim
    axis_dim = {0: r - 1, 1: r - 2 if len(batch) < 2 else 1}
    grid = [n // tn, m // tm if len(batch) < 2 else batch[1], 1]
    if batch:
        axis_dim[2], grid[2] = 0, batch[0]
    tb = _builder((grid[0], grid[1], grid[2]), forloop_range=k // _largest_divisor(k, MM_K))
    ta = tb.new_input(a, input_map=_map({ax: d for ax, d in axis_dim.items() if ax != 0}), forloop_dim=r - 1)
    tw = tb.new_input(b, input_map=_map({ax: d for ax, d in axis_dim.items() if ax != 1 or d != r - 2}),
                      forloop_dim=r - 2)
    tb.new_output(tb.forloop_accum(tb.matmul(ta, tw)), output_map=_map(axis_dim))
    return tb.freeze()


#: kernel op → its lowering; every kernel-level op other than input and customized is here or in UNLOWERED
LOWER: dict[Op, Lowering] = {
    Op.MATMUL: lower_matmul,
    Op.REDUCTION: lower_reduction,
    Op.RMS_NORM: lower_rms_norm,
    **{op: lower_elementwise for op in ops_at(Level.KERNEL) if op.spec.kind in (Kind.UNARY, Kind.BINARY)},
}
#: kernel-level ops without a lowering, with the reason
UNLOWERED: dict[Op, str] = {}
