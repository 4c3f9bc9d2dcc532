"""After the reference's benchmark/lora.py: LoRA, X·W + (X·A)·B, superoptimized with the "lora" preset and the
benchmark's keywords (previous_checkpoint, backend, save_codes, warmup_iters, profile_iters). Sizes shrunk from
16×256 · 256×4096 (rank 16) to 1×128 · 128×128 (rank 16) — with more rows the narrowed search finds nothing within
seconds on a 2-core CPU; the search is narrowed with the reference's keywords."""

# ruff: noqa: E741 (the reference's names: O, A, ...)

import argparse

import numpy as np

import mirage_lab as mi

parser = argparse.ArgumentParser()
parser.add_argument("--bs", type=int, default=1)
parser.add_argument("--file", type=str, default="lora.json")
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
X = graph.new_input(dims=(1, 128), dtype=mi.float16)
W = graph.new_input(dims=(128, 128), dtype=mi.float16)
A = graph.new_input(dims=(128, 16), dtype=mi.float16)
B = graph.new_input(dims=(16, 128), dtype=mi.float16)
D = graph.matmul(X, A)
E = graph.matmul(D, B)
C = graph.matmul(X, W)
O = graph.add(C, E)
graph.mark_output(O)
optimized_graph = graph.superoptimize(config="lora", imaps=[(-1, -1, -1), (1, -1, -1)], fmaps=[-1, 0, 1], franges=[4],
                                      previous_checkpoint=filename, backend=backend, save_codes=save_codes,
                                      warmup_iters=warmup_iters, profile_iters=profile_iters)

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
print("Best muGraph:", optimized_graph, "relative error:", error)
assert outputs[0].dtype == np.float16 and error < 2e-2, error
