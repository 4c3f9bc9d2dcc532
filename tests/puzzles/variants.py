"""Learners' attempts for the acceptance tests: correct ones on other grids and loops, and wrong ones (a wrong
accumulator, a wrong map, an op on the wrong operand) that build but compute different values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mirage_lab as ml
from mirage_lab.puzzles.programs import COLS, HEAD_DIM, HEADS, OUT_COLS, QUERIES, RANK, ROWS, SEQ
from mirage_lab.puzzles.solutions import combine_chunks

PHI = -1

#: puzzle → keywords of its reference solution that give another grid and for-loop
OTHER_GRIDS: dict[str, dict[str, int]] = {
    "copy_tile": {"blocks": 4, "column_blocks": 2},
    "add_bias": {"blocks": 4, "column_blocks": 4},
    "row_sums": {"blocks": 4, "forloop": 8},
    "column_sums": {"blocks": 8, "forloop": 4},
    "rms_norm": {"blocks": 8},
    "matmul_loop": {"blocks": 4, "forloop": 2},
    "rms_norm_linear": {"blocks": 4, "forloop": 8},
    "gated_mlp": {"blocks": 4, "forloop": 2},
    "lora": {"blocks": 4, "forloop": 4},
    "softmax": {"blocks": 2},
    "attention_split": {"splits": 4, "forloop": 4},
    "attention_online": {"query_blocks": 4, "forloop": 2},
}


def _kernel(dims: list[tuple[int, ...]], grid: tuple[int, int, int], forloop: int,
            maps: list[tuple[tuple[int, int, int], int]], body: Callable[[Any, list[Any]], Any],
            omap: tuple[int, int, int] = (0, PHI, PHI)) -> ml.KernelGraph:
    """One custom kernel over fresh inputs: ``body(tb, tiles)`` gives the tile to save."""
    g = ml.new_kernel_graph()
    xs = [g.new_input(dims=d) for d in dims]
    tb = ml.new_threadblock_graph(grid_dim=grid, forloop_range=forloop)
    tiles = [tb.new_input(dtensor=x, input_map=m, forloop_dim=f) for x, (m, f) in zip(xs, maps, strict=True)]
    tb.new_output(stensor=body(tb, tiles), output_map=omap)
    (o,) = g.customized(xs, tb)
    g.mark_output(o)
    return g.freeze()


XW = [(ROWS, COLS), (COLS, OUT_COLS)]
STREAM_K = [((PHI, PHI, PHI), 1), ((1, PHI, PHI), 0)]
ATTN = [(HEADS, QUERIES, HEAD_DIM), (HEADS, HEAD_DIM, SEQ), (HEADS, SEQ, HEAD_DIM)]


def _attention_split_without_exp() -> ml.KernelGraph:
    """Kernel 1 multiplies Q·K (not exp(Q·K)) by V: an op on the wrong operand."""
    g = ml.new_kernel_graph()
    q, k, v = (g.new_input(dims=d) for d in ATTN)
    tb = ml.new_threadblock_graph(grid_dim=(HEADS, 2, 1), forloop_range=2)
    tq = tb.new_input(dtensor=q, input_map=(0, PHI, PHI), forloop_dim=PHI)
    tk = tb.new_input(dtensor=k, input_map=(0, 2, PHI), forloop_dim=2)
    tv = tb.new_input(dtensor=v, input_map=(0, 1, PHI), forloop_dim=1)
    s = tb.matmul(tq, tk)
    tb.new_output(stensor=tb.forloop_accum(tb.exp(s), "sum"), output_map=(0, 2, PHI))
    tb.new_output(stensor=tb.forloop_accum(tb.matmul(s, tv)), output_map=(0, 2, PHI))
    sums, parts = g.customized([q, k, v], tb)
    return combine_chunks(g, sums, parts)


def _attention_online_without_rescale() -> ml.KernelGraph:
    """The denominator is re-based when the running max grows, the numerator is not: a wrong accumulator."""
    def body(tb: Any, t: list[Any]) -> Any:
        s = tb.matmul(t[0], t[1])
        m, diff = tb.reduction_max(s, 2)
        e = tb.exp(tb.sub(s, m))
        den = tb.forloop_accum(e, "sum_rescale", rescale=tb.exp(diff))
        return tb.div(tb.forloop_accum(tb.matmul(e, t[2])), den)
    return _kernel(ATTN, (HEADS, 2, 1), 4, [((0, 1, PHI), PHI), ((0, PHI, PHI), 2), ((0, PHI, PHI), 1)], body,
                   (0, 1, PHI))


#: puzzle → a graph that builds, has the program's shapes, and computes something else
WRONG: dict[str, Callable[[], ml.KernelGraph]] = {
    # a for-loop without a loop dim adds the same tile twice
    "copy_tile": lambda: _kernel([(ROWS, COLS)], (2, 1, 1), 2, [((0, PHI, PHI), PHI)],
                                 lambda tb, t: tb.forloop_accum(t[0])),
    # X's rows and columns swapped between the grid axes, the saver's not
    "add_bias": lambda: _kernel([(ROWS, COLS), (1, COLS)], (2, 2, 1), 1,
                                [((1, 0, PHI), PHI), ((PHI, 1, PHI), PHI)],
                                lambda tb, t: tb.forloop_accum(tb.add(t[0], t[1])), (0, 1, PHI)),
    "row_sums": lambda: _kernel([(ROWS, COLS)], (2, 1, 1), 4, [((0, PHI, PHI), 1)],
                                lambda tb, t: tb.forloop_accum(t[0], "mean")),
    "column_sums": lambda: _kernel([(ROWS, COLS)], (4, 1, 1), 2, [((1, PHI, PHI), 0)],
                                   lambda tb, t: tb.forloop_accum(tb.reduction(t[0], 0), "max"), (1, PHI, PHI)),
    # columns split over the grid: each block normalises half a row
    "rms_norm": lambda: _kernel([(ROWS, COLS)], (2, 1, 1), 1, [((1, PHI, PHI), PHI)],
                                lambda tb, t: tb.forloop_accum(tb.rms_norm(t[0])), (1, PHI, PHI)),
    "matmul_loop": lambda: _kernel(XW, (2, 1, 1), 4, STREAM_K,
                                   lambda tb, t: tb.forloop_accum(tb.matmul(t[0], t[1]), "max"), (1, PHI, PHI)),
    "rms_norm_linear": lambda: _kernel(
        XW, (2, 1, 1), 4, STREAM_K,
        lambda tb, t: tb.div(tb.forloop_accum(tb.matmul(t[0], t[1])), tb.forloop_accum(t[0], "sum")), (1, PHI, PHI)),
    # silu on the wrong matmul
    "gated_mlp": lambda: _kernel(
        [*XW, (COLS, OUT_COLS)], (2, 1, 1), 4, [*STREAM_K, ((1, PHI, PHI), 0)],
        lambda tb, t: tb.mul(tb.forloop_accum(tb.matmul(t[0], t[1])), tb.silu(tb.forloop_accum(tb.matmul(t[0], t[2])))),
        (1, PHI, PHI)),
    "lora": lambda: _kernel(
        [*XW, (COLS, RANK), (RANK, OUT_COLS)], (2, 1, 1), 1,
        [((PHI, PHI, PHI), PHI), ((1, PHI, PHI), PHI), ((PHI, PHI, PHI), PHI), ((1, PHI, PHI), PHI)],
        lambda tb, t: tb.forloop_accum(tb.mul(tb.matmul(t[0], t[1]), tb.matmul(tb.matmul(t[0], t[2]), t[3]))),
        (1, PHI, PHI)),
    # the denominator sums X, not exp(X)
    "softmax": lambda: _kernel([(ROWS, COLS)], (2, 1, 1), 1, [((0, PHI, PHI), PHI)],
                               lambda tb, t: tb.forloop_accum(tb.div(tb.exp(t[0]), tb.reduction(t[0], 1)))),
    "attention_split": _attention_split_without_exp,
    "attention_online": _attention_online_without_rescale,
}
