"""After the reference's demo/demo_gated_mlp.py: silu(X·W1) ⊙ (X·W2), superoptimized with the "mlp" preset. Sizes
shrunk from 8×4096 · 4096×4096 to 8×256 · 256×256; the search is narrowed with the reference's keywords."""

# ruff: noqa: E741 (the reference's names: O, A, ...)

import numpy as np

import mirage_lab as mi

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(8, 256), dtype=mi.float16)
W1 = graph.new_input(dims=(256, 256), dtype=mi.float16)
W2 = graph.new_input(dims=(256, 256), dtype=mi.float16)
O1 = graph.matmul(X, W1)
O2 = graph.matmul(X, W2)
O1 = graph.silu(O1)
O = graph.mul(O1, O2)
graph.mark_output(O)
optimized_graph = graph.superoptimize(config="mlp", imaps=[(-1, -1, -1), (1, -1, -1)], fmaps=[-1, 0, 1],
                                      franges=[4])

rng = np.random.default_rng(0)
input_tensors = [
    rng.standard_normal((8, 256)).astype(np.float16),
    rng.standard_normal((256, 256)).astype(np.float16),
    rng.standard_normal((256, 256)).astype(np.float16),
]

for _ in range(2):
    outputs = optimized_graph(inputs=input_tensors)

(expected,) = mi.interpret(graph, input_tensors)
error = np.max(np.abs(outputs[0].astype(np.float64) - expected)) / np.max(np.abs(expected))
print("best muGraph:", optimized_graph, "relative error:", error)
assert outputs[0].dtype == np.float16 and error < 2e-2, error
