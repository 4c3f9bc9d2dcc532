"""After the reference's demo/reference_mugraphs/rms_norm.py: the hand-built RMSNorm+Linear μGraph (one custom kernel
accumulating the RMS of X beside X·W), its CUDA, and a call. Sizes shrunk from 16×4096 · 4096×4096 (grid 64, for-
loop 64) to 4×256 · 256×512 (grid 16, for-loop 4)."""

# ruff: noqa: E741 (the reference's names: O, A, ...)

import numpy as np

import mirage_lab as mi

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(4, 256), dtype=mi.float16)
W = graph.new_input(dims=(256, 512), dtype=mi.float16)
tb_graph = mi.new_threadblock_graph(grid_dim=(16, 1, 1), block_dim=(128, 1, 1), forloop_range=4, reduction_dimx=64)
tX = tb_graph.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)
tW = tb_graph.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=0)
tM = tb_graph.matmul(tX, tW)
tAccX = tb_graph.forloop_accum(tX, "rms")
tAccM = tb_graph.forloop_accum(tM)
tO = tb_graph.div(tAccM, tAccX)
tb_graph.new_output(stensor=tO, output_map=(1, -1, -1))
O = graph.customized([X, W], tb_graph)
graph.mark_output(O[0])

rng = np.random.default_rng(0)
input_tensors = [
    rng.standard_normal((4, 256)).astype(np.float16),
    rng.standard_normal((256, 512)).astype(np.float16),
]

input_strides = [tuple(s // t.itemsize for s in t.strides) for t in input_tensors]
p = mi.generate_cuda_program(graph.cygraph, target_cc=80, input_strides=input_strides)
print(p["code"][:400])
for _ in range(2):
    outputs = graph(inputs=input_tensors)

# the program the μGraph fuses, run by the interpreter
program = mi.new_kernel_graph()
pX = program.new_input(dims=(4, 256), dtype=mi.float16)
pW = program.new_input(dims=(256, 512), dtype=mi.float16)
program.mark_output(program.matmul(program.rms_norm(pX, normalized_shape=(256,)), pW))
(expected,) = mi.interpret(program, input_tensors)
error = np.max(np.abs(outputs[0].astype(np.float64) - expected)) / np.max(np.abs(expected))
print("relative error:", error)
assert outputs[0].shape == (4, 512) and error < 2e-2, error
