"""After the reference's demo/reference_mugraphs/lora.py, which builds the LoRA program, draws it and times the unfused
computation; here it is run through the drop-in and checked. Sizes shrunk from 1×4096 · 4096×4096 (rank 16) to 1×256
· 256×256 (rank 16)."""

# ruff: noqa: E741 (the reference's names: O, A, ...)

import numpy as np

import mirage_lab as mi


def optimize_lora():
    graph = mi.new_kernel_graph()
    X = graph.new_input(dims=(1, 256), dtype=mi.float16)
    W = graph.new_input(dims=(256, 256), dtype=mi.float16)
    A = graph.new_input(dims=(256, 16), dtype=mi.float16)
    B = graph.new_input(dims=(16, 256), dtype=mi.float16)
    D = graph.matmul(X, A)
    E = graph.matmul(D, B)
    C = graph.matmul(X, W)
    O = graph.add(C, E)
    graph.mark_output(O)

    rng = np.random.default_rng(0)
    input_tensors = [
        rng.standard_normal((1, 256)).astype(np.float16),
        rng.standard_normal((256, 256)).astype(np.float16),
        rng.standard_normal((256, 16)).astype(np.float16),
        rng.standard_normal((16, 256)).astype(np.float16),
    ]
    x, w, a, b = (t.astype(np.float64) for t in input_tensors)
    want = x @ w + (x @ a) @ b
    (got,) = graph(inputs=input_tensors)
    (interpreted,) = mi.interpret(graph, input_tensors)
    for out in (got, interpreted):
        error = np.max(np.abs(out.astype(np.float64) - want)) / np.max(np.abs(want))
        assert error < 2e-2, error
    graph.visualize("lora")
    return graph


graph = optimize_lora()
