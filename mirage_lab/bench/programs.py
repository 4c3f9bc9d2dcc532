"""The benchmark programs of SPEC §9, unfused, at the paper's shapes.

``batch_size`` is the benchmarks' batch flag b ∈ {1, 8}; other values scale the same
dims. Programs without a batch flag in the paper (GatedMLP, LoRA, MoE) scale their
row count by ``batch_size``; ``batch_size=1`` is the paper shape. Input order is the
order of SPEC §9's shapes column (it defines v_0, v_1, …). All tensors are fp16.
"""

from __future__ import annotations

from collections.abc import Callable

from mirage_lab.arguments import checked
from mirage_lab.errors import ShapeError
from mirage_lab.ir.builder import KernelGraphBuilder, new_kernel_graph
from mirage_lab.ir.dtype import DType, float16
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.tensor import DTensor


def _check_batch(batch_size: int) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ShapeError(f"batch_size must be a positive integer (the paper uses 1 and 8), got {batch_size!r}")
    return batch_size


def _attention(g: KernelGraphBuilder, q: DTensor, k: DTensor, v: DTensor) -> DTensor:
    """``(E / rowsum(E)) @ V`` with ``E = exp(Q @ K)``: softmax without max subtraction (SPEC §9)."""
    e = g.exp(g.matmul(q, k))
    return g.matmul(g.div(e, g.reduction(e, 2)), v)


@checked
def rmsnorm(batch_size: int = 1, dtype: DType = float16) -> KernelGraph:
    """RMSNorm + Linear: ``O = rms_norm(X; 4096) @ W``; X(2b, 4096), W(4096, 6144)."""
    b = _check_batch(batch_size)
    g = new_kernel_graph()
    x = g.new_input(dims=(2 * b, 4096), dtype=dtype)
    w = g.new_input(dims=(4096, 6144), dtype=dtype)
    g.mark_output(g.matmul(g.rms_norm(x, normalized_shape=(4096,)), w))
    return g.freeze()


@checked
def gated_mlp(batch_size: int = 1, dtype: DType = float16) -> KernelGraph:
    """GatedMLP: ``O = silu(X @ W1) ⊙ (X @ W2)``; X(8b, 4096), W1, W2 (4096, 4096)."""
    b = _check_batch(batch_size)
    g = new_kernel_graph()
    x = g.new_input(dims=(8 * b, 4096), dtype=dtype)
    w1 = g.new_input(dims=(4096, 4096), dtype=dtype)
    w2 = g.new_input(dims=(4096, 4096), dtype=dtype)
    g.mark_output(g.mul(g.silu(g.matmul(x, w1)), g.matmul(x, w2)))
    return g.freeze()


@checked
def lora(batch_size: int = 1, dtype: DType = float16) -> KernelGraph:
    """LoRA: ``O = X @ W + (X @ A) @ B``; X(16b, 256), W(256, 4096), A(256, 16), B(16, 4096)."""
    b = _check_batch(batch_size)
    g = new_kernel_graph()
    x = g.new_input(dims=(16 * b, 256), dtype=dtype)
    w = g.new_input(dims=(256, 4096), dtype=dtype)
    a = g.new_input(dims=(256, 16), dtype=dtype)
    bb = g.new_input(dims=(16, 4096), dtype=dtype)
    g.mark_output(g.add(g.matmul(x, w), g.matmul(g.matmul(x, a), bb)))
    return g.freeze()


def _attention_program(heads: int, queries: int, batch_size: int, dtype: DType, qknorm: bool = False
                       ) -> KernelGraph:
    g = new_kernel_graph()
    q = g.new_input(dims=(heads, queries, 64), dtype=dtype)
    k = g.new_input(dims=(heads, 64, 4096), dtype=dtype)  # K is given transposed, (b, d, n)
    v = g.new_input(dims=(heads, 4096, 64), dtype=dtype)
    if qknorm:  # SPEC §9: V, not K, is normalised
        q, v = g.rms_norm(q, normalized_shape=(64,)), g.rms_norm(v, normalized_shape=(64,))
    g.mark_output(_attention(g, q, k, v))
    return g.freeze()


@checked
def gqa(batch_size: int = 1, dtype: DType = float16) -> KernelGraph:
    """GQA attention: Q(2b, 256, 64), K(2b, 64, 4096), V(2b, 4096, 64)."""
    return _attention_program(2 * _check_batch(batch_size), 256, batch_size, dtype)


@checked
def mha(batch_size: int = 1, dtype: DType = float16) -> KernelGraph:
    """MHA attention: Q(32b, 16, 64), K(32b, 64, 4096), V(32b, 4096, 64)."""
    return _attention_program(32 * _check_batch(batch_size), 16, batch_size, dtype)


@checked
def mqa(batch_size: int = 1, dtype: DType = float16) -> KernelGraph:
    """MQA attention: Q(b, 1024, 64), K(b, 64, 4096), V(b, 4096, 64)."""
    return _attention_program(_check_batch(batch_size), 1024, batch_size, dtype)


@checked
def qknorm_gqa(batch_size: int = 1, dtype: DType = float16) -> KernelGraph:
    """QKNorm + GQA: ``attn(rms_norm(Q; 64), K, rms_norm(V; 64))`` at the GQA shapes."""
    return _attention_program(2 * _check_batch(batch_size), 256, batch_size, dtype, qknorm=True)


@checked
def ntrans(batch_size: int = 1, dtype: DType = float16) -> KernelGraph:
    """nTrans (nGPT): ``O = rms_norm(X + α ⊙ (rms_norm(H) + X))``; H, X, α (8b, 4096)."""
    b = _check_batch(batch_size)
    g = new_kernel_graph()
    h = g.new_input(dims=(8 * b, 4096), dtype=dtype)
    x = g.new_input(dims=(8 * b, 4096), dtype=dtype)
    alpha = g.new_input(dims=(8 * b, 4096), dtype=dtype)
    inner = g.add(g.rms_norm(h, normalized_shape=(4096,)), x)
    g.mark_output(g.rms_norm(g.add(x, g.mul(alpha, inner)), normalized_shape=(4096,)))
    return g.freeze()


@checked
def moe(batch_size: int = 1, dtype: DType = float16) -> KernelGraph:
    """MoE (extra): ``O = exp(X @ A) @ B``; X(8, 8b, 4096), A, B (8, 4096, 4096)."""
    b = _check_batch(batch_size)
    g = new_kernel_graph()
    x = g.new_input(dims=(8, 8 * b, 4096), dtype=dtype)
    a = g.new_input(dims=(8, 4096, 4096), dtype=dtype)
    bb = g.new_input(dims=(8, 4096, 4096), dtype=dtype)
    g.mark_output(g.matmul(g.exp(g.matmul(x, a)), bb))
    return g.freeze()


#: name → program constructor, in SPEC §9 order.
PROGRAMS: dict[str, Callable[..., KernelGraph]] = {
    "rmsnorm": rmsnorm,
    "gated_mlp": gated_mlp,
    "lora": lora,
    "gqa": gqa,
    "mha": mha,
    "mqa": mqa,
    "qknorm_gqa": qknorm_gqa,
    "ntrans": ntrans,
    "moe": moe,
}
