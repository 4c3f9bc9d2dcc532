"""After the reference's demo/demo_chameleon_attn.py (the same attention program as its GQA demo), superoptimized with
the "attention" preset. Sizes shrunk from 2×256×64 · 2×64×4096 to 2×16×64 · 2×64×512; the search is narrowed with
the reference's keywords."""

# ruff: noqa: E741 (the reference's names: O, A, ...)

import numpy as np

import mirage_lab as mi

graph = mi.new_kernel_graph()
Q = graph.new_input(dims=(2, 16, 64), dtype=mi.float16)
K = graph.new_input(dims=(2, 64, 512), dtype=mi.float16)
V = graph.new_input(dims=(2, 512, 64), dtype=mi.float16)
A = graph.matmul(Q, K)
E = graph.exp(A)
S = graph.reduction(E, 2)
D = graph.div(E, S)
O = graph.matmul(D, V)
graph.mark_output(O)
optimized_graph = graph.superoptimize(config="attention", imaps=[(0, -1, 1), (0, 2, -1), (0, 1, -1)],
                                      fmaps=[-1, 1, 2], franges=[4])

rng = np.random.default_rng(1)
input_tensors = [
    (0.2 * rng.standard_normal((2, 16, 64))).astype(np.float16),
    (0.2 * rng.standard_normal((2, 64, 512))).astype(np.float16),
    (0.2 * rng.standard_normal((2, 512, 64))).astype(np.float16),
]

for _ in range(2):
    outputs = optimized_graph(inputs=input_tensors)

(expected,) = mi.interpret(graph, input_tensors)
error = np.max(np.abs(outputs[0].astype(np.float64) - expected)) / np.max(np.abs(expected))
print("best muGraph:", optimized_graph, "relative error:", error)
assert error < 2e-2, error
