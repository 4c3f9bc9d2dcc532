"""Reference solutions, for teachers: one fused graph per puzzle, built with the learner's builders.

``ml.puzzles.solution(name)`` gives the default; each builder takes its grid and for-loop as keywords, so tests
(and teachers) can show that another grid or loop is just as correct. Notebooks never import this module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mirage_lab.ir.builder import BlockGraphBuilder, KernelGraphBuilder, new_kernel_graph, new_threadblock_graph
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.tensor import DTensor
from mirage_lab.puzzles.catalog import get
from mirage_lab.puzzles.programs import COLS, HEAD_DIM, HEADS, OUT_COLS, QUERIES, RANK, ROWS, SEQ

PHI = -1


def _finish(g: KernelGraphBuilder, inputs: list[DTensor], tb: BlockGraphBuilder) -> KernelGraph:
    """The custom kernel ``tb`` over ``inputs`` is the graph's one output."""
    (o,) = g.customized(inputs, tb)
    g.mark_output(o)
    return g.freeze()


def copy_tile(blocks: int = 2, column_blocks: int = 1) -> KernelGraph:
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    tb = new_threadblock_graph(grid_dim=(blocks, column_blocks, 1), forloop_range=1)
    tx = tb.new_input(dtensor=x, input_map=(0, 1, PHI), forloop_dim=PHI)
    tb.new_output(stensor=tb.forloop_accum(tx), output_map=(0, 1, PHI))
    return _finish(g, [x], tb)


def add_bias(blocks: int = 2, column_blocks: int = 2) -> KernelGraph:
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    b = g.new_input(dims=(1, COLS))
    tb = new_threadblock_graph(grid_dim=(blocks, column_blocks, 1), forloop_range=1)
    tx = tb.new_input(dtensor=x, input_map=(0, 1, PHI), forloop_dim=PHI)
    tbias = tb.new_input(dtensor=b, input_map=(PHI, 1, PHI), forloop_dim=PHI)  # every row block: the same B
    tb.new_output(stensor=tb.forloop_accum(tb.add(tx, tbias)), output_map=(0, 1, PHI))
    return _finish(g, [x, b], tb)


def row_sums(blocks: int = 2, forloop: int = 4) -> KernelGraph:
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    tb = new_threadblock_graph(grid_dim=(blocks, 1, 1), forloop_range=forloop)
    tx = tb.new_input(dtensor=x, input_map=(0, PHI, PHI), forloop_dim=1)
    tb.new_output(stensor=tb.forloop_accum(tx, "sum"), output_map=(0, PHI, PHI))
    return _finish(g, [x], tb)


def column_sums(blocks: int = 4, forloop: int = 2) -> KernelGraph:
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    tb = new_threadblock_graph(grid_dim=(blocks, 1, 1), forloop_range=forloop)
    tx = tb.new_input(dtensor=x, input_map=(1, PHI, PHI), forloop_dim=0)
    tb.new_output(stensor=tb.forloop_accum(tb.reduction(tx, 0)), output_map=(1, PHI, PHI))
    return _finish(g, [x], tb)


def rms_norm(blocks: int = 4) -> KernelGraph:
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    tb = new_threadblock_graph(grid_dim=(blocks, 1, 1), forloop_range=1)
    tx = tb.new_input(dtensor=x, input_map=(0, PHI, PHI), forloop_dim=PHI)
    tb.new_output(stensor=tb.forloop_accum(tb.rms_norm(tx)), output_map=(0, PHI, PHI))
    return _finish(g, [x], tb)


def matmul(blocks: int = 2, forloop: int = 4) -> KernelGraph:
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    w = g.new_input(dims=(COLS, OUT_COLS))
    tb = new_threadblock_graph(grid_dim=(blocks, 1, 1), forloop_range=forloop)
    tx = tb.new_input(dtensor=x, input_map=(PHI, PHI, PHI), forloop_dim=1)
    tw = tb.new_input(dtensor=w, input_map=(1, PHI, PHI), forloop_dim=0)
    tb.new_output(stensor=tb.forloop_accum(tb.matmul(tx, tw)), output_map=(1, PHI, PHI))
    return _finish(g, [x, w], tb)


def rms_norm_linear(blocks: int = 2, forloop: int = 4) -> KernelGraph:
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    w = g.new_input(dims=(COLS, OUT_COLS))
    tb = new_threadblock_graph(grid_dim=(blocks, 1, 1), forloop_range=forloop)
    tx = tb.new_input(dtensor=x, input_map=(PHI, PHI, PHI), forloop_dim=1)
    tw = tb.new_input(dtensor=w, input_map=(1, PHI, PHI), forloop_dim=0)
    rms = tb.forloop_accum(tx, "rms")
    acc = tb.forloop_accum(tb.matmul(tx, tw))
    tb.new_output(stensor=tb.div(acc, rms), output_map=(1, PHI, PHI))
    return _finish(g, [x, w], tb)


def gated_mlp(blocks: int = 2, forloop: int = 4) -> KernelGraph:
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    w1 = g.new_input(dims=(COLS, OUT_COLS))
    w2 = g.new_input(dims=(COLS, OUT_COLS))
    tb = new_threadblock_graph(grid_dim=(blocks, 1, 1), forloop_range=forloop)
    tx = tb.new_input(dtensor=x, input_map=(PHI, PHI, PHI), forloop_dim=1)
    t1 = tb.new_input(dtensor=w1, input_map=(1, PHI, PHI), forloop_dim=0)
    t2 = tb.new_input(dtensor=w2, input_map=(1, PHI, PHI), forloop_dim=0)
    a1 = tb.forloop_accum(tb.matmul(tx, t1))
    a2 = tb.forloop_accum(tb.matmul(tx, t2))
    tb.new_output(stensor=tb.mul(tb.silu(a1), a2), output_map=(1, PHI, PHI))
    return _finish(g, [x, w1, w2], tb)


def lora(blocks: int = 2, forloop: int = 2) -> KernelGraph:
    """``Σ_i X_i·W_i + (X_i·A_i)·B``: the low-rank product is linear in each K-chunk, so it loops too."""
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    w = g.new_input(dims=(COLS, OUT_COLS))
    a = g.new_input(dims=(COLS, RANK))
    b = g.new_input(dims=(RANK, OUT_COLS))
    tb = new_threadblock_graph(grid_dim=(blocks, 1, 1), forloop_range=forloop)
    tx = tb.new_input(dtensor=x, input_map=(PHI, PHI, PHI), forloop_dim=1)
    tw = tb.new_input(dtensor=w, input_map=(1, PHI, PHI), forloop_dim=0)
    ta = tb.new_input(dtensor=a, input_map=(PHI, PHI, PHI), forloop_dim=0)
    tbb = tb.new_input(dtensor=b, input_map=(1, PHI, PHI), forloop_dim=PHI)
    both = tb.add(tb.matmul(tx, tw), tb.matmul(tb.matmul(tx, ta), tbb))
    tb.new_output(stensor=tb.forloop_accum(both), output_map=(1, PHI, PHI))
    return _finish(g, [x, w, a, b], tb)


def softmax(blocks: int = 4) -> KernelGraph:
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    tb = new_threadblock_graph(grid_dim=(blocks, 1, 1), forloop_range=1)
    tx = tb.new_input(dtensor=x, input_map=(0, PHI, PHI), forloop_dim=PHI)
    e = tb.exp(tx)
    tb.new_output(stensor=tb.forloop_accum(tb.div(e, tb.reduction(e, 1))), output_map=(0, PHI, PHI))
    return _finish(g, [x], tb)


def attention_split(splits: int = 2, forloop: int = 2) -> KernelGraph:
    """Kernel 1: per (head, sequence chunk), exp(Q·K) and its product with V; kernel 2 sums the chunks."""
    g = new_kernel_graph()
    q = g.new_input(dims=(HEADS, QUERIES, HEAD_DIM))
    k = g.new_input(dims=(HEADS, HEAD_DIM, SEQ))
    v = g.new_input(dims=(HEADS, SEQ, HEAD_DIM))
    tb = new_threadblock_graph(grid_dim=(HEADS, splits, 1), forloop_range=forloop)
    tq = tb.new_input(dtensor=q, input_map=(0, PHI, PHI), forloop_dim=PHI)
    tk = tb.new_input(dtensor=k, input_map=(0, 2, PHI), forloop_dim=2)
    tv = tb.new_input(dtensor=v, input_map=(0, 1, PHI), forloop_dim=1)
    e = tb.exp(tb.matmul(tq, tk))
    tb.new_output(stensor=tb.forloop_accum(e, "sum"), output_map=(0, 2, PHI))  # one row sum per chunk
    tb.new_output(stensor=tb.forloop_accum(tb.matmul(e, tv)), output_map=(0, 2, PHI))  # chunks side by side
    sums, parts = g.customized([q, k, v], tb)
    return combine_chunks(g, sums, parts)


def combine_chunks(g: KernelGraphBuilder, sums: DTensor, parts: DTensor) -> KernelGraph:
    """Kernel 2 of attention_split: add the chunks' row sums, and their products with V strided by the head dim
    (reduction_dimx), then divide."""
    tb = new_threadblock_graph(grid_dim=(HEADS, 1, 1), forloop_range=1, reduction_dimx=HEAD_DIM)
    ts = tb.new_input(dtensor=sums, input_map=(0, PHI, PHI), forloop_dim=PHI)
    tp = tb.new_input(dtensor=parts, input_map=(0, PHI, PHI), forloop_dim=PHI)
    out = tb.div(tb.forloop_accum(tp, "sum_todimx"), tb.forloop_accum(ts, "sum"))
    tb.new_output(stensor=out, output_map=(0, PHI, PHI))
    return _finish(g, [sums, parts], tb)


def attention_online(query_blocks: int = 2, forloop: int = 4) -> KernelGraph:
    """One pass over the sequence: a running row max re-bases both accumulators (online softmax)."""
    g = new_kernel_graph()
    q = g.new_input(dims=(HEADS, QUERIES, HEAD_DIM))
    k = g.new_input(dims=(HEADS, HEAD_DIM, SEQ))
    v = g.new_input(dims=(HEADS, SEQ, HEAD_DIM))
    tb = new_threadblock_graph(grid_dim=(HEADS, query_blocks, 1), forloop_range=forloop)
    tq = tb.new_input(dtensor=q, input_map=(0, 1, PHI), forloop_dim=PHI)
    tk = tb.new_input(dtensor=k, input_map=(0, PHI, PHI), forloop_dim=2)
    tv = tb.new_input(dtensor=v, input_map=(0, PHI, PHI), forloop_dim=1)
    s = tb.matmul(tq, tk)
    m, diff = tb.reduction_max(s, 2)  # the running row max and how far it moved this iteration
    e, rescale = tb.exp(tb.sub(s, m)), tb.exp(diff)
    den = tb.forloop_accum(e, "sum_rescale", rescale=rescale)
    num = tb.forloop_accum(tb.matmul(e, tv), "nored_rescale", rescale=rescale)
    tb.new_output(stensor=tb.div(num, den), output_map=(0, 1, PHI))
    return _finish(g, [q, k, v], tb)


#: puzzle name → its reference solution's builder
SOLUTIONS: dict[str, Callable[..., KernelGraph]] = {
    "copy_tile": copy_tile,
    "add_bias": add_bias,
    "row_sums": row_sums,
    "column_sums": column_sums,
    "rms_norm": rms_norm,
    "matmul_loop": matmul,
    "rms_norm_linear": rms_norm_linear,
    "gated_mlp": gated_mlp,
    "lora": lora,
    "softmax": softmax,
    "attention_split": attention_split,
    "attention_online": attention_online,
}


def solution(name: str, **kw: Any) -> KernelGraph:
    """The reference solution of puzzle ``name`` (keywords: its grid and for-loop, see each builder)."""
    get(name)  # a readable error for an unknown name
    return SOLUTIONS[name](**kw)
