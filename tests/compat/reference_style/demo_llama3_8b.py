"""After the reference's demo/demo_llama3-8b.py: the two RMSNorm+Linear kernels of a Llama-3 layer (the QKV projection
and the gate/up projection), each superoptimized with the "mlp" preset and called from the layer's code. Sizes
shrunk (hidden 4096 → 256, 32/8 heads of 128 → 4/1 heads of 32, intermediate 14336 → 256, 8 tokens → 2, 4096 cached
tokens → 64); flashinfer's attention is written out in numpy."""

# ruff: noqa: E741 (the reference's names: O, A, ...)

import numpy as np

import mirage_lab as mi

hidden = 256
n_local_heads = 4
n_local_kv_heads = 1
head_dim = 32
intermediate_size = 256
num_tokens = 2
num_kv_tokens = 64


def get_rms_linear_kernel(num_tokens, output_dim):
    graph = mi.new_kernel_graph()
    X = graph.new_input(dims=(num_tokens, hidden), dtype=mi.float16)
    W = graph.new_input(dims=(hidden, output_dim), dtype=mi.float16)
    D = graph.rms_norm(X, normalized_shape=(hidden,))
    O = graph.matmul(D, W)
    graph.mark_output(O)
    return graph, graph.superoptimize(config="mlp", imaps=[(-1, -1, -1), (1, -1, -1)], franges=[4])


def attention(q, k, v):  # causal attention of the last num_tokens queries over the cache (flashinfer's role)
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(q.shape[-1])
    offset = k.shape[0] - q.shape[0]
    s = np.where(np.arange(k.shape[0])[None, :] <= np.arange(q.shape[0])[:, None] + offset, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("hqk,khd->qhd", p / p.sum(-1, keepdims=True), v)


def mirage_llama(X, Wqkv, Wo, W13, W2, Kcache, Vcache, kernels):
    func = kernels[0]
    outputs = func(inputs=[X, Wqkv])
    Xqkv = outputs[0].astype(np.float32)
    Xq = Xqkv[:, : (n_local_heads * head_dim)]
    output_shape = Xq.shape
    Xkv = Xqkv[:, (n_local_heads * head_dim):]
    Xk, Xv = np.split(Xkv, 2, axis=1)
    Xq = Xq.reshape(Xq.shape[0], n_local_heads, head_dim)
    Xk = Xk.reshape(Xk.shape[0], n_local_kv_heads, head_dim)
    Xv = Xv.reshape(Xv.shape[0], n_local_kv_heads, head_dim)
    output = attention(Xq, np.concatenate([Kcache, Xk]), np.concatenate([Vcache, Xv]))
    X = (output.reshape(output_shape) @ Wo).astype(np.float16)
    func = kernels[1]
    outputs = func(inputs=[X, W13])
    X13 = outputs[0]
    X1, _X3 = np.split(X13, 2, axis=-1)
    return X, X1 @ W2


rng = np.random.default_rng(0)
X = rng.standard_normal((num_tokens, hidden)).astype(np.float16)
Wqkv = 0.1 * rng.standard_normal((hidden, n_local_heads * head_dim + 2 * n_local_kv_heads * head_dim))
Wqkv = Wqkv.astype(np.float16)
Wo = (0.1 * rng.standard_normal((n_local_heads * head_dim, hidden))).astype(np.float16)
W13 = (0.1 * rng.standard_normal((hidden, intermediate_size * 2))).astype(np.float16)
W2 = rng.random((intermediate_size, hidden)).astype(np.float16)
Kcache = rng.random((num_kv_tokens, n_local_kv_heads, head_dim)).astype(np.float16)
Vcache = rng.random((num_kv_tokens, n_local_kv_heads, head_dim)).astype(np.float16)

g1, k1 = get_rms_linear_kernel(num_tokens, Wqkv.shape[-1])
g2, k2 = get_rms_linear_kernel(num_tokens, W13.shape[-1])
kernels = [k1, k2]

X_attn, output = mirage_llama(X, Wqkv, Wo, W13, W2, Kcache, Vcache, kernels)
print("layer output:", output.shape)

for graph, kernel, inputs in ((g1, k1, [X, Wqkv]), (g2, k2, [X_attn, W13])):
    (expected,) = mi.interpret(graph, inputs)
    (got,) = kernel(inputs=inputs)
    error = np.max(np.abs(got.astype(np.float64) - expected)) / np.max(np.abs(expected))
    print("best muGraph:", kernel, "relative error:", error)
    assert error < 2e-2, error
