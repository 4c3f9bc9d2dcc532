"""Calling a graph as Mirage scripts do, ``graph(inputs=[...])``, with numpy arrays (and CuPy ones on a GPU):
the same kind comes back, in the graph's dtype (bf16 as float32), equal to ``mi.interpret``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mirage_lab as mi
from mirage_lab.bench.harness import relative_error
from mirage_lab.compat.arrays import NUMPY_DTYPES
from mirage_lab.errors import GraphError, InputError
from mirage_lab.ir.dtype import DType
from mirage_lab.semantics.backend import cupy_available
from tests.compat.helpers import DTYPES, GPU_TOL, inputs, matmul_exp, rounded

needs_gpu = [pytest.mark.gpu, pytest.mark.skipif(not cupy_available(), reason="needs CuPy and a CUDA device")]
quiet = pytest.mark.filterwarnings("ignore::mirage_lab.CompatNotice")


@quiet
@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_numpy_in_numpy_out_in_the_graphs_dtype(dtype: DType) -> None:
    graph, _, _ = matmul_exp(dtype)
    ins = inputs(dtype)
    got = graph(inputs=ins)
    want = mi.interpret(graph, ins)
    assert len(got) == 2
    for g, w in zip(got, want, strict=True):
        assert isinstance(g, np.ndarray)
        assert g.dtype == NUMPY_DTYPES[dtype]
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, rounded(w, dtype))


@quiet
@pytest.mark.usefixtures("interpreter")
def test_bf16_crosses_numpy_as_float32_holding_bf16_values() -> None:
    graph, _, _ = matmul_exp(mi.bfloat16)
    for out in graph(inputs=inputs(mi.bfloat16)):
        assert out.dtype == np.float32
        assert not (out.view(np.uint32) & 0xFFFF).any(), "the low 16 bits of a bf16 value are zero"


@quiet
@pytest.mark.usefixtures("interpreter")
def test_numpy_inputs_of_another_dtype_and_layout_are_accepted() -> None:
    graph, _, _ = matmul_exp(mi.float32)
    x, w = inputs(mi.float32)
    want = graph(inputs=[x, w])
    w_fortran = np.asfortranarray(w.astype(np.float64))  # float64, column-major
    x_view = np.repeat(x, 2, axis=1)[:, ::2]  # a strided view
    for g, e in zip(graph(inputs=[x_view, w_fortran]), want, strict=True):
        np.testing.assert_array_equal(g, e)


@quiet
@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_outputs_pick_tensors_of_a_graph_with_no_mark_output(dtype: DType) -> None:
    """The reference's ``graph(inputs=..., outputs=[t0, t1])`` on a hand-built graph that marks nothing."""
    graph, M, E = matmul_exp(dtype, mark=False)
    marked, _, _ = matmul_exp(dtype)
    ins = inputs(dtype)
    want = mi.interpret(marked, ins)  # [M, E]
    got = graph(inputs=ins, outputs=[E, M])
    assert [g.dtype for g in got] == [NUMPY_DTYPES[dtype]] * 2
    np.testing.assert_array_equal(got[0], rounded(want[1], dtype))
    np.testing.assert_array_equal(got[1], rounded(want[0], dtype))
    (only,) = graph(inputs=ins, outputs=E)  # one tensor, not in a list
    np.testing.assert_array_equal(only, got[0])
    assert graph.get_num_outputs() == 0, "outputs= does not mark the graph's outputs"


@quiet
@pytest.mark.usefixtures("interpreter")
def test_outputs_pick_among_marked_ones() -> None:
    graph, M, _ = matmul_exp(mi.float16)
    ins = inputs(mi.float16)
    (m,) = graph(inputs=ins, outputs=[M])
    np.testing.assert_array_equal(m, graph(inputs=ins)[0])


@quiet
@pytest.mark.usefixtures("interpreter")
def test_a_graph_with_no_outputs_at_all_says_so() -> None:
    graph, _, _ = matmul_exp(mi.float16, mark=False)
    with pytest.raises(GraphError, match="mark_output"):
        graph(inputs=inputs(mi.float16))
    with pytest.raises(GraphError, match=r"outputs=\[\] names no tensor"):
        graph(inputs=inputs(mi.float16), outputs=[])


@quiet
@pytest.mark.usefixtures("interpreter")
def test_wrong_shapes_and_counts_are_rejected_clearly() -> None:
    graph, _, _ = matmul_exp(mi.float16)
    x, w = inputs(mi.float16)
    with pytest.raises(InputError, match=r"input 1 must have shape \(8, 6\) .* got an array of shape \(6, 8\)"):
        graph(inputs=[x, w.T])
    with pytest.raises(InputError, match=r"input 0 must have shape \(4, 8\) .* got an array of shape \(\)"):
        graph(inputs=[np.ones((), np.float16), w])
    with pytest.raises(InputError, match=r"the graph has 2 inputs .* but 1 arrays were given"):
        graph(inputs=[x])
    with pytest.raises(InputError, match=r"the graph has 2 inputs .* but 3 arrays were given"):
        graph(inputs=[x, w, w])


@quiet
@pytest.mark.usefixtures("interpreter")
def test_what_is_not_a_list_of_arrays_is_rejected_clearly() -> None:
    graph, _, _ = matmul_exp(mi.float16)
    x, w = inputs(mi.float16)
    with pytest.raises(InputError, match=r"pass the input arrays: graph\(inputs=\[x, \.\.\.\]\)"):
        graph()
    with pytest.raises(InputError, match="inputs must be a list of arrays, got ndarray"):
        graph(inputs=x)
    with pytest.raises(InputError, match="inputs must be numpy arrays, CuPy arrays or torch tensors, got list"):
        graph(inputs=[x.tolist(), w])
    with pytest.raises(InputError, match="got float"):
        graph(inputs=[x, 1.0])
    with pytest.raises(InputError, match=r"graph\(\.\.\.\) takes inputs=, outputs= and .*stream.*, not input$"):
        graph(inputs=[x, w], input=[x, w])


@quiet
@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("bad", [np.complex64, object], ids=["complex", "object"])
def test_values_that_are_not_real_numbers_are_rejected(bad: type) -> None:
    graph, _, _ = matmul_exp(mi.float32)
    x, w = inputs(mi.float32)
    with pytest.raises(InputError, match=r"holds (complex64|object) values; pass real numbers"):
        graph(inputs=[x.astype(bad), w])


@pytest.mark.usefixtures("interpreter", "fresh_notices")
def test_the_interpreter_notice_is_said_once() -> None:
    graph, _, _ = matmul_exp(mi.float16)
    ins = inputs(mi.float16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph(inputs=ins)
        graph(inputs=ins)
        matmul_exp(mi.float32)[0](inputs=inputs(mi.float32))  # another graph: still not said again
    said = [w for w in caught if issubclass(w.category, mi.CompatNotice)]
    assert len(said) == 1, [str(w.message) for w in said]
    assert "no CUDA device" in str(said[0].message) and "interpreter" in str(said[0].message)
    assert said[0].filename == __file__, "the notice points at the caller's line, not into mirage_lab"


# -- on a GPU: compiled kernels, CuPy in and out --------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.filterwarnings("ignore::mirage_lab.CompatNotice")
def test_cupy_in_cupy_out_on_the_device(dtype: DType) -> None:
    import cupy

    graph, _, _ = matmul_exp(dtype)
    ins = inputs(dtype)
    got = graph(inputs=[cupy.asarray(a) for a in ins])
    want = mi.interpret(graph, ins)
    for g, w in zip(got, want, strict=True):
        assert isinstance(g, cupy.ndarray)
        assert g.dtype == NUMPY_DTYPES[dtype]
        assert relative_error(cupy.asnumpy(g).astype(np.float64), w) < GPU_TOL[dtype]


@pytest.mark.filterwarnings("ignore::mirage_lab.CompatNotice")
def test_numpy_in_numpy_out_on_the_device() -> None:
    graph, _, _ = matmul_exp(mi.float16)
    ins = inputs(mi.float16)
    got = graph(inputs=ins)
    want = mi.interpret(graph, ins)
    for g, w in zip(got, want, strict=True):
        assert isinstance(g, np.ndarray) and g.dtype == np.float16
        assert relative_error(g.astype(np.float64), w) < GPU_TOL[DType.FLOAT16]


def test_numpy_and_cupy_mixed_are_rejected() -> None:
    import cupy

    graph, _, _ = matmul_exp(mi.float16)
    x, w = inputs(mi.float16)
    with pytest.raises(InputError, match="inputs mix cupy and numpy arrays; pass one kind"):
        graph(inputs=[x, cupy.asarray(w)])


for _test in (test_cupy_in_cupy_out_on_the_device, test_numpy_in_numpy_out_on_the_device,
              test_numpy_and_cupy_mixed_are_rejected):
    for _mark in needs_gpu:
        _mark(_test)
