"""After the reference's demo/reference_mugraphs/qwen_prenorm.py: RMSNorm ⊙ gain then Linear in bfloat16 with a column-
major weight, superoptimized with the "mlp" preset. Sizes shrunk from 1×2048 · 2048×2560 to 1×256 · 256×320; the
search is narrowed with the reference's keywords."""

# ruff: noqa: E741 (the reference's names: O, A, ...)

import numpy as np

import mirage_lab as mi

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(1, 256), dtype=mi.bfloat16)
G = graph.new_input(dims=(1, 256), dtype=mi.bfloat16)
W = graph.new_input(dims=(256, 320), strides=(1, 256), dtype=mi.bfloat16)
D = graph.rms_norm(X, normalized_shape=(256,))
D = graph.mul(D, G)
O = graph.matmul(D, W)
graph.mark_output(O)
opt_kernel = graph.superoptimize(config="mlp", imaps=[(-1, -1, -1), (1, -1, -1)], franges=[4])

rng = np.random.default_rng(0)
input_tensors = [
    rng.standard_normal((1, 256)).astype(np.float32),
    rng.standard_normal((1, 256)).astype(np.float32),
    np.asfortranarray(rng.standard_normal((256, 320)).astype(np.float32)),
]
outputs = opt_kernel(inputs=input_tensors)

x, g, w = (t.astype(np.float64) for t in input_tensors)
torch_like = (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True)) * g) @ w
(expected,) = mi.interpret(graph, input_tensors)
for want in (expected, torch_like):
    error = np.max(np.abs(outputs[0].astype(np.float64) - want)) / np.max(np.abs(want))
    print("best muGraph:", opt_kernel, "relative error:", error)
    assert error < 2e-2, error
