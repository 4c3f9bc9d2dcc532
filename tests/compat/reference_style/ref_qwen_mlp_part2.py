"""After the reference's demo/reference_mugraphs/qwen_mlp_part2.py: (silu(X) ⊙ Y)·W in bfloat16, superoptimized with
the "mlp" preset; the input strides are read back from the graph for the CUDA program. Sizes shrunk from 1×18944 ·
18944×3584 to 1×512 · 512×256; the search is narrowed with the reference's keywords."""

# ruff: noqa: E741 (the reference's names: O, A, ...)

import numpy as np

import mirage_lab as mi

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(1, 512), dtype=mi.bfloat16)
Y = graph.new_input(dims=(1, 512), dtype=mi.bfloat16)
W = graph.new_input(dims=(512, 256), dtype=mi.bfloat16)
D = graph.mul(graph.silu(X), Y)
O = graph.matmul(D, W)
graph.mark_output(O)
optimized_graph = graph.superoptimize(config="mlp", imaps=[(-1, -1, -1), (1, -1, -1)], franges=[4])

rng = np.random.default_rng(0)
input_tensors = [
    rng.standard_normal((1, 512)).astype(np.float32),
    rng.standard_normal((1, 512)).astype(np.float32),
    rng.standard_normal((512, 256)).astype(np.float32),
]

input_strides = []
dtensors = optimized_graph.cygraph.get_input_dtensors()
assert len(dtensors) == len(input_tensors), "Given number of inputs do not match the uGraph's inputs"
for i in range(len(dtensors)):
    dims, strides = optimized_graph.cygraph.get_input_dtensor_shape_and_stride(dtensors[i])
    input_strides.append(strides)

p = mi.generate_cuda_program(optimized_graph.cygraph, target_cc=86, input_strides=input_strides)
print(p["code"][:400])

outputs = optimized_graph(inputs=input_tensors)
(expected,) = mi.interpret(graph, input_tensors)
error = np.max(np.abs(outputs[0].astype(np.float64) - expected)) / np.max(np.abs(expected))
print("best muGraph:", optimized_graph, "relative error:", error)
assert error < 2e-2, error
