"""After the reference's demo/demo_lora.py: X·W + (X·A)·B, superoptimized with the "lora" preset. Sizes shrunk from
1×4096 · 4096×4096 (rank 16) to 1×128 · 128×128 (rank 16); the search is narrowed with the reference's keywords."""

# ruff: noqa: E741 (the reference's names: O, A, ...)

import numpy as np

import mirage_lab as mi

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(1, 128), dtype=mi.float16)
W = graph.new_input(dims=(128, 128), dtype=mi.float16)
A = graph.new_input(dims=(128, 16), dtype=mi.float16)
B = graph.new_input(dims=(16, 128), dtype=mi.float16)
D = graph.matmul(X, A)
E = graph.matmul(D, B)
C = graph.matmul(X, W)
O = graph.add(C, E)
graph.mark_output(O)
optimized_graph = graph.superoptimize(config="lora", imaps=[(-1, -1, -1), (1, -1, -1)], fmaps=[-1, 0, 1],
                                      franges=[4])

rng = np.random.default_rng(0)
input_tensors = [
    rng.standard_normal((1, 128)).astype(np.float16),
    rng.standard_normal((128, 128)).astype(np.float16),
    rng.standard_normal((128, 16)).astype(np.float16),
    rng.standard_normal((16, 128)).astype(np.float16),
]

for _ in range(2):
    outputs = optimized_graph(inputs=input_tensors)

(expected,) = mi.interpret(graph, input_tensors)
error = np.max(np.abs(outputs[0].astype(np.float64) - expected)) / np.max(np.abs(expected))
print(optimized_graph, "relative error:", error)
assert error < 2e-2, error
