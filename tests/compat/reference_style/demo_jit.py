"""After the reference's demo/demo_jit.py: a kernel graph with no custom kernel, run as it is built, with the outputs
picked at the call (none is marked). Same sizes as the reference (12×251)."""

import numpy as np

import mirage_lab as mi

graph = mi.new_kernel_graph()
input0 = graph.new_input(dims=(12, 251), dtype=mi.float16)
input1 = graph.new_input(dims=(12, 251), dtype=mi.float16)
mid0 = graph.add(input0, input1)
output0 = graph.add(input0, mid0)
output1 = graph.exp(mid0)

rng = np.random.default_rng(0)
input_tensors = [
    rng.standard_normal((12, 251)).astype(np.float16),
    rng.standard_normal((12, 251)).astype(np.float16),
]

outputs = graph(inputs=input_tensors, outputs=[output0, output1])

# ========= Correctness check =========
mid0_correct = input_tensors[0] + input_tensors[1]
output0_correct = input_tensors[0] + mid0_correct
output1_correct = np.exp(mid0_correct)

print("mirage output[0]:", outputs[0], sep="\n")
print("correct output[0]:", output0_correct, sep="\n")
print("Correctness of output[0]:", np.allclose(outputs[0], output0_correct, atol=1e-2, rtol=1e-2))
print("Correctness of output[1]:", np.allclose(outputs[1], output1_correct, atol=1e-2, rtol=1e-2))
assert np.allclose(outputs[0], output0_correct, atol=1e-2, rtol=1e-2)
assert np.allclose(outputs[1], output1_correct, atol=1e-2, rtol=2e-2)

graph.mark_output(output0)  # marked only now, for the interpreter's reference outputs
graph.mark_output(output1)
for got, want in zip(outputs, mi.interpret(graph, input_tensors), strict=True):
    assert got.dtype == np.float16
    assert np.max(np.abs(got.astype(np.float64) - want)) / np.max(np.abs(want)) < 2e-2
