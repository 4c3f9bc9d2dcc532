"""After the reference's demo/reference_mugraphs/chameleon-7b.py: the three hand-built μGraphs of a Chameleon-7B layer
(RMSNorm+Linear for QKV, RMSNorm+Linear for gate/up, attention with RMSNorm of Q), each called with the outputs it
returns unmarked. Sizes shrunk (hidden 4096 → 256, 32 heads of 128 → 2 heads of 64, intermediate 11008 → 256, 4096
cached tokens → 256; 4 tokens as in the reference) with the grids shrunk to match."""

# ruff: noqa: E741 (the reference's names: O, A, ...)

import numpy as np

import mirage_lab as mi

hidden = 256
n_local_heads = 2
n_local_kv_heads = 2
head_dim = 64
intermediate_size = 256
num_tokens = 4
num_kv_tokens = 256


def get_rms_linear():
    graph = mi.new_kernel_graph()
    X = graph.new_input(dims=(num_tokens, hidden), dtype=mi.float16)
    W = graph.new_input(dims=(hidden, n_local_heads * head_dim + 2 * n_local_kv_heads * head_dim), dtype=mi.float16)
    tb_graph = mi.new_threadblock_graph(grid_dim=(12, 1, 1), block_dim=(128, 1, 1), forloop_range=4,
                                        reduction_dimx=64)
    tX = tb_graph.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)
    tW = tb_graph.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=0)
    tM = tb_graph.matmul(tX, tW)
    tAccX = tb_graph.forloop_accum(tX, "rms")
    tAccM = tb_graph.forloop_accum(tM)
    tO = tb_graph.div(tAccM, tAccX)
    tb_graph.new_output(stensor=tO, output_map=(1, -1, -1))
    O = graph.customized([X, W], tb_graph)
    return graph, O


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
    return graph, O


def get_chameleon_attention():
    graph = mi.new_kernel_graph()
    Q = graph.new_input(dims=(n_local_kv_heads, num_tokens, head_dim), dtype=mi.float16)
    K = graph.new_input(dims=(n_local_kv_heads, head_dim, num_kv_tokens), dtype=mi.float16)
    V = graph.new_input(dims=(n_local_kv_heads, num_kv_tokens, head_dim), dtype=mi.float16)
    tbgraph1 = mi.new_threadblock_graph(grid_dim=(n_local_kv_heads, 16, 1), block_dim=(128, 1, 1), forloop_range=4,
                                        reduction_dimx=head_dim)
    bQ = tbgraph1.new_input(dtensor=Q, input_map=(0, -1, 1), forloop_dim=-1)
    bK = tbgraph1.new_input(dtensor=K, input_map=(0, 2, -1), forloop_dim=2)
    bV = tbgraph1.new_input(dtensor=V, input_map=(0, 1, -1), forloop_dim=1)
    bQ = tbgraph1.rms_norm(bQ)
    bA = tbgraph1.matmul(bQ, bK)
    bE = tbgraph1.exp(bA)
    bS = tbgraph1.matmul(bE, bV)
    bO1 = tbgraph1.forloop_accum(bS)
    bO2 = tbgraph1.forloop_accum(bE, "sum")
    tbgraph1.new_output(stensor=bO1, output_map=(0, 2, 1))
    tbgraph1.new_output(stensor=bO2, output_map=(0, 2, 1))
    O = graph.customized([Q, K, V], tbgraph1)

    tbgraph2 = mi.new_threadblock_graph(grid_dim=(n_local_kv_heads, 2, 1), block_dim=(128, 1, 1), forloop_range=1,
                                        reduction_dimx=head_dim)
    bA = tbgraph2.new_input(dtensor=O[0], input_map=(0, 1, -1), forloop_dim=-1)
    bB = tbgraph2.new_input(dtensor=O[1], input_map=(0, 1, -1), forloop_dim=-1)
    bA = tbgraph2.forloop_accum(bA, "sum_todimx")
    bB = tbgraph2.forloop_accum(bB, "sum")
    bO = tbgraph2.div(bA, bB)
    tbgraph2.new_output(stensor=bO, output_map=(0, 1, -1))
    O = graph.customized(O, tbgraph2)
    return graph, O


def mirage_chameleon(X, Wqkv, Wo, W13, W2, Kcache, Vcache, kernels):
    func, outputs = kernels[0]
    outputs = func(inputs=[X, Wqkv], outputs=outputs)
    Xqkv = outputs[0]
    Xq = Xqkv[:, : (n_local_heads * head_dim)]
    output_shape = Xq.shape
    Xq = np.ascontiguousarray(Xq.reshape(num_tokens, n_local_kv_heads, head_dim).transpose(1, 0, 2))
    func, outputs = kernels[2]
    outputs = func(inputs=[Xq, Kcache, Vcache], outputs=outputs)
    attn = outputs[0]
    output = (attn.transpose(1, 0, 2).reshape(output_shape).astype(np.float32) @ Wo).astype(np.float16)
    func, outputs = kernels[1]
    outputs = func(inputs=[output, W13], outputs=outputs)
    X13 = outputs[0]
    X1, _X3 = np.split(X13, 2, axis=-1)
    return [X, Wqkv], [Xq, Kcache, Vcache], [output, W13], X1.astype(np.float32) @ W2


rng = np.random.default_rng(0)
X = rng.standard_normal((num_tokens, hidden)).astype(np.float16)
Wqkv = (0.1 * rng.standard_normal((hidden, n_local_heads * head_dim + 2 * n_local_kv_heads * head_dim)))
Wqkv = Wqkv.astype(np.float16)
Wo = (0.1 * rng.standard_normal((n_local_heads * head_dim, hidden))).astype(np.float16)
W13 = (0.1 * rng.standard_normal((hidden, intermediate_size * 2))).astype(np.float16)
W2 = rng.random((intermediate_size, hidden)).astype(np.float16)
Kcache = (0.05 * rng.standard_normal((n_local_kv_heads, head_dim, num_kv_tokens))).astype(np.float16)
Vcache = rng.random((n_local_kv_heads, num_kv_tokens, head_dim)).astype(np.float16)

k1 = get_rms_linear()
k2 = get_rms_linear2()
k3 = get_chameleon_attention()
kernels = [k1, k2, k3]
*kernel_inputs, output = mirage_chameleon(X, Wqkv, Wo, W13, W2, Kcache, Vcache, kernels)
print("layer output:", output.shape)


def rms_linear_program(out_dim):
    program = mi.new_kernel_graph()
    pX = program.new_input(dims=(num_tokens, hidden), dtype=mi.float16)
    pW = program.new_input(dims=(hidden, out_dim), dtype=mi.float16)
    program.mark_output(program.matmul(program.rms_norm(pX, normalized_shape=(hidden,)), pW))
    return program


attention = mi.new_kernel_graph()
pQ = attention.new_input(dims=(n_local_kv_heads, num_tokens, head_dim), dtype=mi.float16)
pK = attention.new_input(dims=(n_local_kv_heads, head_dim, num_kv_tokens), dtype=mi.float16)
pV = attention.new_input(dims=(n_local_kv_heads, num_kv_tokens, head_dim), dtype=mi.float16)
pE = attention.exp(attention.matmul(attention.rms_norm(pQ, normalized_shape=(head_dim,)), pK))
attention.mark_output(attention.matmul(attention.div(pE, attention.reduction(pE, 2)), pV))

programs = [rms_linear_program(Wqkv.shape[1]), attention, rms_linear_program(W13.shape[1])]
for (func, outs), program, inputs in zip([k1, k3, k2], programs, kernel_inputs, strict=True):
    (got,) = func(inputs=inputs, outputs=outs)
    (expected,) = mi.interpret(program, inputs)
    error = np.max(np.abs(got.astype(np.float64) - expected)) / np.max(np.abs(expected))
    print("relative error:", error)
    assert error < 2e-2, error
