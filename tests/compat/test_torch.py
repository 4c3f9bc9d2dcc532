"""torch tensors in and out of ``graph(inputs=[...])`` (by DLPack), and the reference's torch dtype helpers.

CI installs torch (the Makefile's test venv takes the CPU build, ``torch==2.13.0``), so a missing torch fails
this file instead of skipping it.
"""

from __future__ import annotations

import numpy as np
import pytest

try:
    import torch
except ImportError as e:  # not pytest.importorskip: these tests are part of CI
    raise ImportError("tests/compat/test_torch.py needs torch: `make .venv/.installed-stamp` installs the CPU build "
                      "(torch==2.13.0), or pip install -e '.[torch]'") from e

import mirage_lab as mi
from mirage_lab.bench.harness import relative_error
from mirage_lab.errors import InputError, MirageError
from mirage_lab.ir.dtype import DType
from mirage_lab.semantics.backend import cupy_available
from tests.compat.helpers import DTYPES, GPU_TOL, inputs, matmul_exp

TORCH = {DType.FLOAT16: torch.float16, DType.BFLOAT16: torch.bfloat16, DType.FLOAT32: torch.float32}
pytestmark = pytest.mark.filterwarnings("ignore::mirage_lab.CompatNotice")


def _tensors(dtype: DType) -> list[torch.Tensor]:
    return [torch.from_numpy(a).to(TORCH[dtype]) for a in inputs(dtype)]


def _want(graph: mi.KNGraph, tensors: list[torch.Tensor], dtype: DType) -> list[torch.Tensor]:
    """The interpreter on the same values, rounded by torch (float64 to the dtype, nearest even)."""
    outs = mi.interpret(graph, [t.detach().to(torch.float64).numpy() for t in tensors])
    return [torch.from_numpy(o).to(TORCH[dtype]) for o in outs]


@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_torch_cpu_in_torch_out_in_the_graphs_dtype(dtype: DType) -> None:
    graph, _, _ = matmul_exp(dtype)
    ins = _tensors(dtype)
    got = graph(inputs=ins)
    for g, w in zip(got, _want(graph, ins, dtype), strict=True):
        assert isinstance(g, torch.Tensor)
        assert g.dtype == TORCH[dtype] and g.device == torch.device("cpu")
        assert g.shape == w.shape and g.is_contiguous() and not g.requires_grad
        assert torch.equal(g, w)


@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_torch_and_numpy_give_the_same_values(dtype: DType) -> None:
    graph, _, _ = matmul_exp(dtype)
    from_numpy = graph(inputs=inputs(dtype))
    from_torch = graph(inputs=_tensors(dtype))
    for n, t in zip(from_numpy, from_torch, strict=True):
        np.testing.assert_array_equal(t.to(torch.float32).numpy(), n.astype(np.float32))


@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_non_contiguous_inputs(dtype: DType) -> None:
    graph, _, _ = matmul_exp(dtype)
    x, w = _tensors(dtype)
    want = graph(inputs=[x, w])
    views = {
        "transposed": [x, w.t().contiguous().t()],
        "stepped": [torch.repeat_interleave(x, 2, dim=1)[:, ::2], w],
        "offset": [torch.cat([x, x]).narrow(0, 4, 4), torch.cat([w, w], dim=1)[:, 6:]],
        "broadcast": [x[:1].expand(4, 8), w],
    }
    for name, ins in views.items():
        assert not all(t.is_contiguous() for t in ins), name
        expected = want if name != "broadcast" else graph(inputs=[t.contiguous() for t in ins])
        for g, e in zip(graph(inputs=ins), expected, strict=True):
            assert torch.equal(g, e), name


@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_tensors_that_require_grad(dtype: DType) -> None:
    graph, _, _ = matmul_exp(dtype)
    x, w = _tensors(dtype)
    want = graph(inputs=[x, w])
    x.requires_grad_(True)
    p = torch.nn.Parameter(w.clone())
    got = graph(inputs=[x, p])
    for g, e in zip(got, want, strict=True):
        assert torch.equal(g, e) and not g.requires_grad and g.grad_fn is None
    assert x.requires_grad and x.grad is None and p.grad is None, "the inputs are left as they were"


@pytest.mark.usefixtures("interpreter")
def test_outputs_pick_unmarked_tensors_with_torch() -> None:
    graph, M, E = matmul_exp(mi.bfloat16, mark=False)
    ins = _tensors(mi.bfloat16)
    o, m = graph(inputs=ins, outputs=[E, M])
    want_m, want_o = _want(matmul_exp(mi.bfloat16)[0], ins, mi.bfloat16)
    assert o.dtype == m.dtype == torch.bfloat16
    assert torch.equal(o, want_o) and torch.equal(m, want_m)


@pytest.mark.usefixtures("interpreter")
def test_outputs_come_back_in_the_graphs_dtype_whatever_came_in() -> None:
    graph, _, _ = matmul_exp(mi.float16)
    x, w = _tensors(mi.float16)
    got = graph(inputs=[x.to(torch.float32), w.to(torch.bfloat16)])
    assert [g.dtype for g in got] == [torch.float16, torch.float16]


@pytest.mark.usefixtures("interpreter")
def test_numpy_and_torch_mixed_are_rejected() -> None:
    graph, _, _ = matmul_exp(mi.float16)
    x, w = inputs(mi.float16)
    with pytest.raises(InputError, match="inputs mix numpy and torch arrays; pass one kind"):
        graph(inputs=[x, torch.from_numpy(w)])


@pytest.mark.usefixtures("interpreter")
def test_tensors_that_cannot_cross_are_rejected_clearly() -> None:
    graph, _, _ = matmul_exp(mi.float32)
    x, w = _tensors(mi.float32)
    with pytest.raises(InputError, match=r"input 1 must have shape \(8, 6\) .* got an array of shape \(6, 8\)"):
        graph(inputs=[x, w.t()])
    with pytest.raises(InputError, match=r"layout torch.sparse_coo; pass a dense tensor"):
        graph(inputs=[x.to_sparse(), w])
    with pytest.raises(InputError, match="holds complex values; pass real numbers"):
        graph(inputs=[x.to(torch.complex64), w])
    with pytest.raises(InputError, match="has no data"):
        graph(inputs=[x.to("meta"), w])


def test_a_torch_subclass_is_a_torch_tensor() -> None:
    from mirage_lab.compat.arrays import array_kind

    class Tagged(torch.Tensor):
        pass

    assert array_kind(torch.zeros(2).as_subclass(Tagged)) == "torch"
    assert array_kind(torch.nn.Parameter(torch.zeros(2))) == "torch"


@pytest.mark.parametrize(("dtype", "torch_dtype"), [(mi.float16, torch.float16), (mi.bfloat16, torch.bfloat16),
                                                    (mi.float32, torch.float32), (mi.float64, torch.float64)],
                         ids=str)
def test_dtype_conversions(dtype: DType, torch_dtype: torch.dtype) -> None:
    assert mi.convert_dtype_to_torch_type(dtype) is torch_dtype
    assert mi.convert_torch_type_to_dtype(torch_dtype) is dtype
    assert mi.convert_torch_type_to_dtype(mi.convert_dtype_to_torch_type(dtype)) is dtype


def test_dtype_conversions_of_what_has_no_counterpart() -> None:
    assert mi.convert_dtype_to_torch_type(mi.int8) is torch.int8
    with pytest.raises(MirageError, match=r"no mirage-lab dtype for torch\.complex64"):
        mi.convert_torch_type_to_dtype(torch.complex64)
    with pytest.raises(MirageError, match="int32 tensors are not supported"):
        mi.convert_dtype_to_torch_type(mi.int32)


# -- on a GPU: compiled kernels --------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not cupy_available(), reason="needs CuPy and a CUDA device")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_torch_on_the_device(dtype: DType) -> None:
    """CPU tensors (a CPU-only torch beside CuPy) come back on the CPU; CUDA ones, where torch has CUDA, on it."""
    graph, _, _ = matmul_exp(dtype)
    devices = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
    for device in devices:
        ins = [t.to(device) for t in _tensors(dtype)]
        for g, w in zip(graph(inputs=ins), mi.interpret(graph, inputs(dtype)), strict=True):
            assert g.dtype == TORCH[dtype] and g.device == ins[0].device
            assert relative_error(g.cpu().to(torch.float64).numpy(), w) < GPU_TOL[dtype]
