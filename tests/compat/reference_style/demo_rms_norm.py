"""After the reference's demo/demo_rms_norm.py: RMSNorm then a linear layer in bfloat16, superoptimized with the "mlp"
preset. Sizes shrunk from 1×7168 · 7168×16384 to 2×256 · 256×512 (two rows search faster than one); the search is
narrowed with the reference's own keywords (imaps, franges) so that it finishes in seconds on a laptop CPU."""

# ruff: noqa: E741 (the reference's names: O, A, ...)

import numpy as np

import mirage_lab as mi

mi.set_gpu_device_id(0)
mirage_dtype = mi.bfloat16
for _ in range(2):  # the second search is answered from its run folder
    graph = mi.new_kernel_graph()
    X = graph.new_input(dims=(2, 256), dtype=mirage_dtype)
    W = graph.new_input(dims=(256, 512), dtype=mirage_dtype)
    D = graph.rms_norm(X, normalized_shape=(256,))
    O = graph.matmul(D, W)
    graph.mark_output(O)
    optimized_graph = graph.superoptimize(config="mlp", imaps=[(-1, -1, -1), (1, -1, -1)], franges=[4])

rng = np.random.default_rng(0)
input_tensors = [  # numpy has no bfloat16: bfloat16 inputs are given as float32
    rng.standard_normal((2, 256)).astype(np.float32),
    rng.standard_normal((256, 512)).astype(np.float32),
]

outputs = optimized_graph(inputs=input_tensors)
output = outputs[0]
for _ in range(2):
    optimized_graph(inputs=input_tensors)

(expected,) = mi.interpret(graph, input_tensors)
error = np.max(np.abs(output.astype(np.float64) - expected)) / np.max(np.abs(expected))
print("best muGraph:", optimized_graph, "relative error:", error)
assert output.shape == (2, 512) and error < 2e-2, error
