"""The puzzles' programs: whole-tensor kernel graphs at small shapes, so that a witness fits on a screen.

Every program takes fp16 inputs (the builders' default dtype), in the order its puzzle names them.
"""

from __future__ import annotations

from mirage_lab.ir.builder import KernelGraphBuilder, new_kernel_graph
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.tensor import DTensor

ROWS, COLS, OUT_COLS, RANK = 8, 64, 32, 8
HEADS, QUERIES, HEAD_DIM, SEQ = 2, 8, 16, 64


def copy_tile() -> KernelGraph:
    """``O = X``: the program marks its input as its output; a kernel must read every tile and write it back."""
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    g.mark_output(x)
    return g.freeze()


def add_bias() -> KernelGraph:
    """``O = X + B``: B (one row) is added to every row of X."""
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    b = g.new_input(dims=(1, COLS))
    g.mark_output(g.add(x, b))
    return g.freeze()


def row_sums() -> KernelGraph:
    """``O[i] = Σ_j X[i, j]``."""
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    g.mark_output(g.reduction(x, 1))
    return g.freeze()


def column_sums() -> KernelGraph:
    """``O[j] = Σ_i X[i, j]``."""
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    g.mark_output(g.reduction(x, 0))
    return g.freeze()


def rms_norm() -> KernelGraph:
    """``O = X / rms(X)`` per row."""
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    g.mark_output(g.rms_norm(x, normalized_shape=(COLS,)))
    return g.freeze()


def matmul() -> KernelGraph:
    """``O = X @ W``."""
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    w = g.new_input(dims=(COLS, OUT_COLS))
    g.mark_output(g.matmul(x, w))
    return g.freeze()


def rms_norm_linear() -> KernelGraph:
    """``O = rms_norm(X) @ W`` (the paper's RMSNorm benchmark, small)."""
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    w = g.new_input(dims=(COLS, OUT_COLS))
    g.mark_output(g.matmul(g.rms_norm(x, normalized_shape=(COLS,)), w))
    return g.freeze()


def gated_mlp() -> KernelGraph:
    """``O = silu(X @ W1) ⊙ (X @ W2)``."""
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    w1 = g.new_input(dims=(COLS, OUT_COLS))
    w2 = g.new_input(dims=(COLS, OUT_COLS))
    g.mark_output(g.mul(g.silu(g.matmul(x, w1)), g.matmul(x, w2)))
    return g.freeze()


def lora() -> KernelGraph:
    """``O = X @ W + (X @ A) @ B``."""
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    w = g.new_input(dims=(COLS, OUT_COLS))
    a = g.new_input(dims=(COLS, RANK))
    b = g.new_input(dims=(RANK, OUT_COLS))
    g.mark_output(g.add(g.matmul(x, w), g.matmul(g.matmul(x, a), b)))
    return g.freeze()


def softmax() -> KernelGraph:
    """``O = exp(X) / rowsum(exp(X))`` (no max subtraction, as in the paper's programs)."""
    g = new_kernel_graph()
    x = g.new_input(dims=(ROWS, COLS))
    e = g.exp(x)
    g.mark_output(g.div(e, g.reduction(e, 1)))
    return g.freeze()


def _attend(g: KernelGraphBuilder, q: DTensor, k: DTensor, v: DTensor) -> DTensor:
    e = g.exp(g.matmul(q, k))
    return g.matmul(g.div(e, g.reduction(e, 2)), v)


def attention() -> KernelGraph:
    """``O = softmax(Q @ K) @ V`` per head; K is given transposed (heads, head_dim, seq)."""
    g = new_kernel_graph()
    q = g.new_input(dims=(HEADS, QUERIES, HEAD_DIM))
    k = g.new_input(dims=(HEADS, HEAD_DIM, SEQ))
    v = g.new_input(dims=(HEADS, SEQ, HEAD_DIM))
    g.mark_output(_attend(g, q, k, v))
    return g.freeze()
