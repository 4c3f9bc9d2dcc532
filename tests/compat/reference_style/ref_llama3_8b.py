"""After the reference's demo/reference_mugraphs/llama3-8b.py: the two hand-built RMSNorm+Linear μGraphs of a
Llama-3-8B layer (QKV projection; gate/up projection), marked and called from the layer's code. Sizes shrunk (hidden
4096 → 256, 32/8 heads of 128 → 4/1 heads of 32, intermediate 14336 → 256; one token as in the reference) with the
grids shrunk to match (192 → 6 and 448 → 16 blocks of 32 columns)."""

# ruff: noqa: E741 (the reference's names: O, A, ...)

import numpy as np

import mirage_lab as mi

hidden = 256
n_local_heads = 4
n_local_kv_heads = 1
head_dim = 32
intermediate_size = 256
num_tokens = 1


def get_rms_linear():
    graph = mi.new_kernel_graph()
    X = graph.new_input(dims=(num_tokens, hidden), dtype=mi.float16)
    W = graph.new_input(dims=(hidden, n_local_heads * head_dim + 2 * n_local_kv_heads * head_dim), dtype=mi.float16)
    tb_graph = mi.new_threadblock_graph(grid_dim=(6, 1, 1), block_dim=(128, 1, 1), forloop_range=4, reduction_dimx=64)
    tX = tb_graph.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)
    tW = tb_graph.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=0)
    tM = tb_graph.matmul(tX, tW)
    tAccX = tb_graph.forloop_accum(tX, "rms")
    tAccM = tb_graph.forloop_accum(tM)
    tO = tb_graph.div(tAccM, tAccX)
    tb_graph.new_output(stensor=tO, output_map=(1, -1, -1))
    O = graph.customized([X, W], tb_graph)
    graph.mark_output(O[0])
    return graph


def get_rms_linear2():
    graph = mi.new_kernel_graph()
    X = graph.new_input(dims=(num_tokens, hidden), dtype=mi.float16)
    W = graph.new_input(dims=(hidden, intermediate_size * 2), dtype=mi.float16)
    tb_graph = mi.new_threadblock_graph(grid_dim=(16, 1, 1), block_dim=(128, 1, 1), forloop_range=4,
                                        reduction_dimx=64)
    tX = tb_graph.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)
    tW = tb_graph.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=0)
    tM = tb_graph.matmul(tX, tW)
    tAccX = tb_graph.forloop_accum(tX, "rms")
    tAccM = tb_graph.forloop_accum(tM)
    tO = tb_graph.div(tAccM, tAccX)
    tb_graph.new_output(stensor=tO, output_map=(1, -1, -1))
    O = graph.customized([X, W], tb_graph)
    graph.mark_output(O[0])
    return graph


def mirage_llama(X, Wqkv, Wo, W13, W2, kernels):
    func = kernels[0]
    outputs = func(inputs=[X, Wqkv])
    Xqkv = outputs[0].astype(np.float32)
    Xq = Xqkv[:, : (n_local_heads * head_dim)]
    Xkv = Xqkv[:, (n_local_heads * head_dim):]
    _Xk, Xv = np.split(Xkv, 2, axis=1)
    # one token attending to itself only (the reference calls flashinfer with a cache): each head returns V
    output = np.repeat(Xv.reshape(num_tokens, n_local_kv_heads, head_dim), n_local_heads // n_local_kv_heads, axis=1)
    X = (output.reshape(Xq.shape) @ Wo).astype(np.float16)
    func = kernels[1]
    outputs = func(inputs=[X, W13])
    X13 = outputs[0]
    X1, _X3 = np.split(X13, 2, axis=-1)
    return X, X1.astype(np.float32) @ W2


rng = np.random.default_rng(0)
X = rng.standard_normal((num_tokens, hidden)).astype(np.float16)
Wqkv = rng.standard_normal((hidden, n_local_heads * head_dim + 2 * n_local_kv_heads * head_dim)).astype(np.float16)
Wo = (0.1 * rng.standard_normal((n_local_heads * head_dim, hidden))).astype(np.float16)
W13 = rng.standard_normal((hidden, intermediate_size * 2)).astype(np.float16)
W2 = rng.random((intermediate_size, hidden)).astype(np.float16)

k1 = get_rms_linear()
k2 = get_rms_linear2()
kernels = [k1, k2]
X_attn, output = mirage_llama(X, Wqkv, Wo, W13, W2, kernels)
print("layer output:", output.shape)


def rms_linear_program(out_dim):
    program = mi.new_kernel_graph()
    pX = program.new_input(dims=(num_tokens, hidden), dtype=mi.float16)
    pW = program.new_input(dims=(hidden, out_dim), dtype=mi.float16)
    program.mark_output(program.matmul(program.rms_norm(pX, normalized_shape=(hidden,)), pW))
    return program


for kernel, inputs in ((k1, [X, Wqkv]), (k2, [X_attn, W13])):
    (got,) = kernel(inputs=inputs)
    (expected,) = mi.interpret(rms_linear_program(inputs[1].shape[1]), inputs)
    error = np.max(np.abs(got.astype(np.float64) - expected)) / np.max(np.abs(expected))
    print("relative error:", error)
    assert error < 2e-2, error
