"""After the reference's benchmark/multi_query_attention.py: multi-query attention softmax(Q·K)·V, superoptimized with
the "attention" preset and the benchmark's keywords (previous_checkpoint, backend, save_codes, warmup_iters,
profile_iters). Sizes shrunk from bs×1024×64 · bs×64×4096 to bs×64×64 · bs×64×512; the search is narrowed with the
reference's keywords."""

# ruff: noqa: E741 (the reference's names: O, A, ...)

import argparse

import numpy as np

import mirage_lab as mi

parser = argparse.ArgumentParser()
parser.add_argument("--bs", type=int, default=1)
parser.add_argument("--file", type=str, default="multi_query_attention.json")
parser.add_argument("--backend", type=str, default="cuda")
parser.add_argument("--warmup", type=int, default=16)
parser.add_argument("--profile", type=int, default=1000)
parser.add_argument("--save_codes", type=bool, default=False)

args = parser.parse_args()
batch_size = args.bs
filename = args.file
backend = args.backend
warmup_iters = args.warmup
profile_iters = args.profile
save_codes = args.save_codes

graph = mi.new_kernel_graph()
Q = graph.new_input(dims=(batch_size, 64, 64), dtype=mi.float16)
K = graph.new_input(dims=(batch_size, 64, 512), dtype=mi.float16)
V = graph.new_input(dims=(batch_size, 512, 64), dtype=mi.float16)
A = graph.matmul(Q, K)
E = graph.exp(A)
S = graph.reduction(E, 2)
D = graph.div(E, S)
O = graph.matmul(D, V)
graph.mark_output(O)
optimized_graph = graph.superoptimize(config="attention", imaps=[(0, -1, 1), (0, 2, -1), (0, 1, -1)], fmaps=[-1, 1, 2],
                                      franges=[4], previous_checkpoint=filename, backend=backend, save_codes=save_codes,
                                      warmup_iters=warmup_iters, profile_iters=profile_iters)

rng = np.random.default_rng(0)
input_tensors = [
    (0.2 * rng.standard_normal((batch_size, 64, 64))).astype(np.float16),
    (0.2 * rng.standard_normal((batch_size, 64, 512))).astype(np.float16),
    (0.2 * rng.standard_normal((batch_size, 512, 64))).astype(np.float16),
]

for _ in range(2):
    outputs = optimized_graph(inputs=input_tensors)

(expected,) = mi.interpret(graph, input_tensors)
error = np.max(np.abs(outputs[0].astype(np.float64) - expected)) / np.max(np.abs(expected))
print("Best muGraph:", optimized_graph, "relative error:", error)
assert outputs[0].dtype == np.float16 and error < 2e-2, error
