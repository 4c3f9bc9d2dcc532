"""After the reference's demo/reference_mugraphs/qwen_mlp.py: Qwen's RMSNorm ⊙ gain then Linear in bfloat16, with a
column-major weight, superoptimized with the "mlp" preset; the input strides are read back from the graph for the
CUDA program. Sizes shrunk from 1×3584 · 3584×37888 to 1×256 · 256×512; the search is narrowed with the reference's
keywords. (The reference's script asks get_input_dtensor_layout, which its current API no longer has; this uses
get_input_dtensor_shape_and_stride, as its qwen_mlp_part2.py does.)"""

# ruff: noqa: E741 (the reference's names: O, A, ...)

import numpy as np

import mirage_lab as mi

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(1, 256), dtype=mi.bfloat16)
G = graph.new_input(dims=(1, 256), dtype=mi.bfloat16)
W = graph.new_input(dims=(256, 512), strides=(1, 256), dtype=mi.bfloat16)
D = graph.rms_norm(X, normalized_shape=(256,))
D = graph.mul(D, G)
O = graph.matmul(D, W)
graph.mark_output(O)
optimized_graph = graph.superoptimize(config="mlp", imaps=[(-1, -1, -1), (1, -1, -1)], franges=[4])

rng = np.random.default_rng(0)
input_tensors = [  # numpy has no bfloat16: bfloat16 inputs are given as float32
    rng.standard_normal((1, 256)).astype(np.float32),
    rng.standard_normal((1, 256)).astype(np.float32),
    np.asfortranarray(rng.standard_normal((256, 512)).astype(np.float32)),  # strides (1, 256) in elements
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
assert outputs[0].shape == (1, 512) and error < 2e-2, error

# the column-major weight keeps its declared strides in the superoptimized graph (the reference's compile step
# asserts them against the tensors it is given)
assert input_strides[2] == tuple(s // 4 for s in input_tensors[2].strides) == (1, 256), input_strides
