"""The reference's KNGraph/TBGraph surface (issue 21, items 1, 2 and 4): builders in its argument order, its
queries, a search result that is the best graph and callable, visualize, to_json/from_json, and the parts out
of scope raising errors that name the alternative."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import mirage_lab as mi
from mirage_lab.compat import CompatNotice, UnsupportedFeatureError
from mirage_lab.errors import FormatError, InputError, MirageError
from mirage_lab.semantics.backend import cupy_available
from tests.compat.helpers import rmsnorm_linear

X, W = (8, 256), (256, 512)




def hand_fused() -> mi.KNGraph:
    """RMSNorm+Linear as one custom kernel, written as the reference's demos write it."""
    graph = mi.new_kernel_graph()
    x = graph.new_input(dims=X, dtype=mi.float16)
    w = graph.new_input(dims=W, dtype=mi.float16)
    tb = mi.new_threadblock_graph((8, 1, 1), (128, 1, 1), 4, 64)
    tx = tb.new_input(x, (-1, -1, -1), 1)
    tw = tb.new_input(w, (1, -1, -1), 0)
    tm = tb.forloop_accum(tb.matmul(tx, tw))
    tr = tb.forloop_accum(tx, "rms")
    tb.new_output(tb.div(tm, tr), (1, -1, -1))
    (o,) = graph.customized([x, w], tb)
    graph.mark_output(o)
    return graph


def inputs(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(X).astype(np.float16), (rng.standard_normal(W) / 16).astype(np.float16)]


@contextlib.contextmanager
def cwd(path: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> tuple[mi.KNGraph, Path]:
    """One drop-in search, verbose, saving its codes and a checkpoint (in a folder of its own)."""
    here = tmp_path_factory.mktemp("search")
    with cwd(here), warnings.catch_warnings():
        warnings.simplefilter("ignore", CompatNotice)
        best = rmsnorm_linear().superoptimize(config="mlp", verbose=True, save_codes=True,
                                              previous_checkpoint="found.json", time_limit_s=300)
    return best, here


# --------------------------------------------------------------------------- building
def test_builders_take_the_reference_argument_order() -> None:
    graph = mi.new_kernel_graph()
    x = graph.new_input((4, 8), (8, 1), mi.float32)  # dims, strides, dtype
    assert (x.dims, x.dtype, x.num_dims, x.dim(1), x.guid) == ((4, 8), mi.float32, 2, 8, 0)
    graph.mark_output(graph.exp(x), (8, 1))  # row-major output strides are accepted
    tb = mi.new_threadblock_graph((2, 1, 1), (128, 1, 1), 4, 64)
    assert tb.grid_dim == tb.cygraph.grid_dim == {"x": 2, "y": 1, "z": 1} and tb.grid == (2, 1, 1)
    s = tb.new_input(x, (0, -1, -1), 1, False)  # dtensor, input_map, forloop_dim, store_in_dmem
    assert s.dims == (2, 2)


def test_rescale_and_max_accumulators_are_the_reference_spellings() -> None:
    def build(spelling: str) -> mi.BlockGraph:
        graph = mi.new_kernel_graph()
        x = graph.new_input(dims=(64, 64), dtype=mi.float16)
        tb = mi.new_threadblock_graph((1, 1, 1), (128, 1, 1), 4, 64)
        s = tb.new_input(x, (-1, -1, -1), 1)
        r = tb.reduction(s, 1)
        if spelling == "reference":
            m = tb.forloop_accum_max(r)
            a = tb.forloop_accum_rescale(r, r, "sum")
        else:
            m = tb.forloop_accum(r, "max")
            a = tb.forloop_accum(r, "sum_rescale", rescale=r)
        tb.new_output(tb.add(m, a), (-1, -1, -1))
        return tb.freeze()

    assert build("reference") == build("ours")


def test_the_reference_queries() -> None:
    graph = rmsnorm_linear()
    ins = graph.get_input_dtensors()
    assert [t.dims for t in ins] == [X, W] and graph.get_num_inputs() == 2 and graph.get_num_outputs() == 1
    assert graph.get_input_dtensor_shape_and_stride(ins[1]) == (W, (W[1], 1))
    assert graph.get_owner_independent_hash() == rmsnorm_linear().get_owner_independent_hash()
    assert graph.get_owner_independent_hash() != hand_fused().get_owner_independent_hash()
    assert graph.cygraph is graph and graph.valid_kernels()


# --------------------------------------------------------------------------- searching and calling
def test_superoptimize_returns_the_best_graph_callable(searched: tuple[mi.KNGraph, Path]) -> None:
    best, _ = searched
    assert isinstance(best, mi.KNGraph) and best.result is not None
    assert best.freeze() == best.result.candidates[0].graph
    assert len(best.freeze().block_graphs) >= 1  # a fused μGraph, found by the search
    got = best(inputs=inputs())
    want = mi.interpret(rmsnorm_linear(), inputs())
    assert got[0].dtype == np.float16 and got[0].shape == want[0].shape
    np.testing.assert_allclose(got[0].astype(np.float64), want[0], rtol=2e-2, atol=2e-2)


def test_save_codes_and_checkpoint(searched: tuple[mi.KNGraph, Path]) -> None:
    best, here = searched
    codes = list((here / "generated_codes").glob("mugraph_*.cu"))
    assert len(codes) == 1 and "__global__" in codes[0].read_text()
    saved = mi.load_reference_checkpoint(here / "found.json", era="current")
    assert best.result is not None and saved == [c.graph for c in best.result.candidates]


def test_hand_built_graphs_are_callable_and_outputs_pick_tensors() -> None:
    graph = hand_fused()
    np.testing.assert_allclose(graph(inputs=inputs())[0].astype(np.float64),
                               mi.interpret(rmsnorm_linear(), inputs())[0], rtol=2e-2, atol=2e-2)
    g = mi.new_kernel_graph()  # the reference's demo_jit: no mark_output, outputs= names the results
    a = g.new_input(dims=(12, 16), dtype=mi.float16)
    b = g.new_input(dims=(12, 16), dtype=mi.float16)
    mid = g.add(a, b)
    o0, o1 = g.add(a, mid), g.exp(mid)
    x, y = (np.full((12, 16), v, np.float16) for v in (0.25, 0.5))
    r0, r1 = g(inputs=[x, y], outputs=[o0, o1])
    assert np.allclose(r0, 1.0) and np.allclose(r1, np.exp(0.75), rtol=1e-3)
    with pytest.raises(InputError, match="inputs="):
        g(outputs=[o0])
    with pytest.raises(InputError, match="not tensors"):
        g(inputs=[x, y], outputs=[o0], tensors=1)


@pytest.mark.gpu
@pytest.mark.skipif(not cupy_available(), reason="needs CuPy and a CUDA device")
def test_on_a_gpu_the_search_times_its_results_and_the_kernels_run(tmp_path: Path) -> None:
    import cupy

    with cwd(tmp_path):
        best = rmsnorm_linear().superoptimize(config="mlp", warmup_iters=2, profile_iters=10, verbose=True)
    assert best.result is not None and best.freeze() in [c.graph for c in best.result.candidates]
    got = best(inputs=[cupy.asarray(a) for a in inputs()])
    assert isinstance(got[0], cupy.ndarray) and got[0].dtype == cupy.float16
    np.testing.assert_allclose(cupy.asnumpy(got[0]).astype(np.float64), mi.interpret(rmsnorm_linear(), inputs())[0],
                               rtol=2e-2, atol=2e-2)


# --------------------------------------------------------------------------- drawing and files
@pytest.mark.skipif(shutil.which("dot") is None, reason="needs graphviz (make system-deps installs it)")
def test_visualize_writes_dot_and_png_with_every_level(tmp_path: Path) -> None:
    png = hand_fused().visualize(str(tmp_path / "fused"))
    assert png == tmp_path / "fused.png" and png.read_bytes()[:4] == b"\x89PNG"
    dot = (tmp_path / "fused.dot").read_text()
    assert "subgraph cluster_k2" in dot and 'id="k2b0"' in dot and "lhead=cluster_k2" in dot


def test_json_in_the_reference_format_round_trips(tmp_path: Path) -> None:
    graph = hand_fused()
    graph.to_json(str(tmp_path / "g.json"))
    doc = json.loads((tmp_path / "g.json").read_text())
    assert isinstance(doc, list) and doc[0]["op_type"] == "kn_input_op"  # one graph: its operator list
    again = mi.new_kernel_graph()
    again.from_json(str(tmp_path / "g.json"))
    assert again.freeze() == graph.freeze()


def test_from_json_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    many = tmp_path / "two.json"
    many.write_text(json.dumps([json.loads(_text(hand_fused(), tmp_path))] * 2))
    with pytest.raises(InputError, match=r"2 graphs.*load_reference_checkpoint"):
        mi.new_kernel_graph().from_json(str(many))
    bad = tmp_path / "bad.json"
    bad.write_text('[{"op_type": "kn_frobnicate_op"}]')
    with pytest.raises(FormatError):
        mi.new_kernel_graph().from_json(str(bad))


def _text(graph: mi.KNGraph, folder: Path) -> str:
    graph.to_json(str(folder / "one.json"))
    return (folder / "one.json").read_text()


def test_generate_cuda_program_gives_the_reference_dict() -> None:
    graph = hand_fused()
    p = mi.generate_cuda_program(graph.cygraph, target_cc=90, input_strides=[(256, 1), (512, 1)])
    assert "__global__" in p["code"] and p["max_smem_size"] > 0
    assert p["output_directives"] == [{"alloc_size": 8 * 512, "shape": [8, 512], "strides": [512, 1]}]
    with pytest.raises(InputError, match="declare them in new_input"):
        mi.generate_cuda_program(graph, target_cc=90, input_strides=[(1, 8), (512, 1)])
    with pytest.warns(CompatNotice, match="warp specialisation"):
        mi.generate_cuda_program(graph, target_cc=90, num_warp_groups=3, pipeline_stages=4)


# --------------------------------------------------------------------------- out of scope
def test_out_of_scope_parts_name_the_alternative() -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"PersistentKernel.*superoptimize"):
        mi.PersistentKernel(world_size=1)
    with pytest.raises(UnsupportedFeatureError, match=r"graph_dataset.find.*run folder"):
        mi.graph_dataset.find(None)
    graph = rmsnorm_linear()
    with pytest.raises(UnsupportedFeatureError, match="attach_nvshmem_tensor"):
        graph.attach_nvshmem_tensor(graph.get_input_dtensors()[0], "x")
    with pytest.raises(MirageError, match="int32 tensors are not supported"):
        graph.new_input(dims=(4, 4), dtype=mi.int32)


def test_device_settings_without_a_device() -> None:
    if cupy_available():
        pytest.skip("a CUDA device is present")
    with pytest.warns(CompatNotice, match="no CUDA device"):
        mi.set_gpu_device_id(0)
    with pytest.raises(InputError, match="device number"):
        mi.set_gpu_device_id(-1)
    assert mi.get_shared_memory_capacity(90) > mi.get_shared_memory_capacity(80) > 0


def test_compile_checks_inputs_and_returns_the_program() -> None:
    graph = hand_fused()
    with pytest.warns(CompatNotice, match="synchronously"):
        program = graph.compile(async_=True, inputs=inputs(), target_cc=80)
    assert "__global__" in program["code"] and program["target_cc"] == 80
    with pytest.raises(InputError, match="must have shape"):
        graph.compile(inputs=inputs()[::-1])


def test_more_of_the_reference_surface(tmp_path: Path, fresh_notices: None) -> None:
    graph = hand_fused()
    wrapped = mi.KNGraph(graph.freeze())  # the reference wraps its C++ graph the same way
    assert wrapped.freeze() == graph.freeze() and wrapped.get_error_message() == "No error"
    mi.cy_to_json(graph.cygraph, str(tmp_path / "g.json"))
    assert mi.cy_from_json(str(tmp_path / "g.json")).freeze() == graph.freeze()
    assert mi.dtype("fp16") is mi.float16 and mi.bfloat16.is_bf16() and not mi.float16.is_fp32()
    assert isinstance(graph.get_input_dtensors()[0], mi.DTensor)
    with pytest.warns(CompatNotice, match="compiled for the device they run on"):
        out = graph.cuda_call(inputs=inputs(), target_cc=90, file_id=3)
    np.testing.assert_allclose(out[0].astype(np.float64), mi.interpret(rmsnorm_linear(), inputs())[0],
                               rtol=2e-2, atol=2e-2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CompatNotice)
        (tri,) = graph.triton_call(inputs=inputs())
    assert cupy_available() or "Triton's CPU interpreter" in " ".join(str(w.message) for w in caught)
    np.testing.assert_allclose(tri.astype(np.float64), out[0].astype(np.float64), rtol=2e-2, atol=2e-2)
    assert tri.dtype == np.float16
    program = mi.generate_triton_program(graph.cygraph, target_cc=90)
    assert "def run(*inputs)" in program["code"] and program["output_shapes"] == [[8, 512]]
    graph.generate_triton_program(str(tmp_path / "k.py"))
    assert (tmp_path / "k.py").read_text() == program["code"]
