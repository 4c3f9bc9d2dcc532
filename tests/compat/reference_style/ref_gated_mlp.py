"""After the reference's demo/reference_mugraphs/gated_mlp.py: the hand-built gated-MLP μGraph (both matmuls
accumulated in one custom kernel, silu and mul after the loop), its CUDA, a call and its drawing. Sizes shrunk from
16×4096 · 4096×4096 (grid 64, for-loop 32) to 4×256 · 256×256 (grid 8, for-loop 4)."""

# ruff: noqa: E741 (the reference's names: O, A, ...)

import numpy as np

import mirage_lab as mi

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(4, 256), dtype=mi.float16)
W1 = graph.new_input(dims=(256, 256), dtype=mi.float16)
W2 = graph.new_input(dims=(256, 256), dtype=mi.float16)
tb_graph = mi.new_threadblock_graph(grid_dim=(8, 1, 1), block_dim=(128, 1, 1), forloop_range=4, reduction_dimx=64)
tX = tb_graph.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)
tW1 = tb_graph.new_input(dtensor=W1, input_map=(1, -1, -1), forloop_dim=0)
tW2 = tb_graph.new_input(dtensor=W2, input_map=(1, -1, -1), forloop_dim=0)
tD1 = tb_graph.matmul(tX, tW1)
tD2 = tb_graph.matmul(tX, tW2)
tA1 = tb_graph.forloop_accum(tD1)
tA2 = tb_graph.forloop_accum(tD2)
tS = tb_graph.silu(tA1)
tO = tb_graph.mul(tS, tA2)
tb_graph.new_output(stensor=tO, output_map=(1, -1, -1))
O = graph.customized([X, W1, W2], tb_graph)
graph.mark_output(O[0])

rng = np.random.default_rng(0)
input_tensors = [
    rng.standard_normal((4, 256)).astype(np.float16),
    rng.standard_normal((256, 256)).astype(np.float16),
    rng.standard_normal((256, 256)).astype(np.float16),
]

input_strides = [tuple(s // t.itemsize for s in t.strides) for t in input_tensors]
p = mi.generate_cuda_program(graph.cygraph, target_cc=86, input_strides=input_strides)
print(p["code"][:400])
for _ in range(2):
    outputs = graph(inputs=input_tensors)
graph.visualize("gated_mlp")

program = mi.new_kernel_graph()
pX = program.new_input(dims=(4, 256), dtype=mi.float16)
pW1 = program.new_input(dims=(256, 256), dtype=mi.float16)
pW2 = program.new_input(dims=(256, 256), dtype=mi.float16)
program.mark_output(program.mul(program.silu(program.matmul(pX, pW1)), program.matmul(pX, pW2)))
(expected,) = mi.interpret(program, input_tensors)
error = np.max(np.abs(outputs[0].astype(np.float64) - expected)) / np.max(np.abs(expected))
print("relative error:", error)
assert error < 2e-2, error
