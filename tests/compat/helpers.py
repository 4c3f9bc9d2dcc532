"""Small graphs built as Mirage scripts build them, and their inputs, for the tests of calling a graph."""

from __future__ import annotations

import numpy as np

import mirage_lab as mi
from mirage_lab.compat import KNGraph
from mirage_lab.ir.dtype import DType
from mirage_lab.ir.tensor import DTensor

DTYPES = [mi.float16, mi.bfloat16, mi.float32]
#: relative error of compiled kernels (fp32 arithmetic, outputs stored in the dtype) against the interpreter
GPU_TOL = {DType.FLOAT16: 2e-2, DType.BFLOAT16: 3e-2, DType.FLOAT32: 1e-4}


def rmsnorm_linear(x: tuple[int, int] = (8, 256), w: tuple[int, int] = (256, 512)) -> KNGraph:
    """RMSNorm followed by a Linear, the program of the reference's demo_rms_norm, small."""
    graph = mi.new_kernel_graph()
    X = graph.new_input(dims=x, dtype=mi.float16)
    W = graph.new_input(dims=w, dtype=mi.float16)
    graph.mark_output(graph.matmul(graph.rms_norm(X, normalized_shape=(x[1],)), W))
    return graph


def matmul_exp(dtype: DType, mark: bool = True) -> tuple[KNGraph, DTensor, DTensor]:
    """E = exp(X @ W) over X (4, 8) and W (8, 6); returns the graph, X @ W and E (both marked when ``mark``)."""
    graph = mi.new_kernel_graph()
    X = graph.new_input(dims=(4, 8), dtype=dtype)
    W = graph.new_input(dims=(8, 6), dtype=dtype)
    M = graph.matmul(X, W)
    E = graph.exp(M)
    if mark:
        graph.mark_output(M)
        graph.mark_output(E)
    return graph, M, E


def rounded(values: np.ndarray, dtype: DType) -> np.ndarray:
    """The interpreter's float64 ``values`` rounded (nearest, ties to even) to ``dtype``, as NUMPY_DTYPES holds
    them; bf16 computed here on its own: 8 significant bits, held as float32."""
    if dtype is DType.BFLOAT16:
        mantissa, exponent = np.frexp(values)
        return np.ldexp(np.round(mantissa * 256) / 256, exponent).astype(np.float32)
    return values.astype(np.float16 if dtype is DType.FLOAT16 else np.float32)


def inputs(dtype: DType, seed: int = 0) -> list[np.ndarray]:
    """X and W for ``matmul_exp``: small values, exact in ``dtype`` (bf16 ones held as float32)."""
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-0.5, 0.5, shape) for shape in ((4, 8), (8, 6))]
    if dtype is DType.BFLOAT16:  # keep the top 16 bits of each float32: bf16 values
        return [(a.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32) for a in arrays]
    return [a.astype(np.float16 if dtype is DType.FLOAT16 else np.float32) for a in arrays]
