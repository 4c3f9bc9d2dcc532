"""Schedules, shared-memory plans, the kernel-graph plan and the EMIT table, all checked on CPU."""

from __future__ import annotations

import itertools
import re

import pytest

import mirage_lab as ml
from mirage_lab.bench.fused import FUSED
from mirage_lab.codegen.cuda import (
    EMIT,
    FINAL_EXPR,
    PADDING_LIMIT,
    PLAIN,
    UNSUPPORTED,
    CodegenOptions,
    KernelLaunch,
    LibraryCall,
    plan_cuda,
    plan_kernel,
    prepare,
)
from mirage_lab.errors import ArgumentError, UnsupportedOpError
from mirage_lab.ir.graph import BlockGraph, KernelGraph
from mirage_lab.ir.ops import OPS, Level, Op, ops_at
from mirage_lab.ir.smem import SMEM_CAPACITY
from mirage_lab.optimize.layout import CHUNK
from mirage_lab.optimize.memory import ALIGN, plan_shared_memory
from mirage_lab.optimize.schedule import schedule_block_graph
from mirage_lab.optimize.tensor_cores import mma_matmuls
from tests.codegen.graphs import snapshot_graphs

PHI = -1


def _graphs() -> list[tuple[str, KernelGraph]]:
    return [(name, make()) for name, make in snapshot_graphs(None).items()]


def _block_graphs() -> list[tuple[str, BlockGraph]]:
    """Every kernel's block graph, the lowered kernels of the unfused programs included."""
    return [(f"{name}/{i}", bg) for name, g in _graphs() for i, bg in enumerate(prepare(g).block_graphs)]


def test_every_block_op_is_emitted_or_listed_unsupported() -> None:
    missing = [op for op in ops_at(Level.BLOCK) if op not in EMIT and op not in UNSUPPORTED]
    assert not missing, f"block ops without CUDA emission: {missing}"
    finalising = [op for op, spec in OPS.items() if spec.accum and spec.accum.finalize]
    assert all(op in FINAL_EXPR for op in finalising)


def test_unsupported_op_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from mirage_lab.codegen import cuda

    monkeypatch.delitem(cuda.EMIT, Op.SILU)
    monkeypatch.setitem(cuda.UNSUPPORTED, Op.SILU, "for this test")
    with pytest.raises(UnsupportedOpError, match=r"block op silu .* not supported.*for this test"):
        ml.generate_cuda(FUSED["gated_mlp"](1))


def test_gated_mlp_schedule() -> None:
    bg = FUSED["gated_mlp"](1).block_graphs[0]
    s = schedule_block_graph(bg)
    assert not s.prologue  # every loader has a for-loop dim
    assert [st.nodes for st in s.loop] == [(0, 1, 2), (3, 5)]  # loaders, then both matmuls (NO_RED fused)
    assert s.chain(3) == (4,) and s.chain(5) == (6,)
    # epilogue: finalise both accumulators | silu | mul | save
    assert [st.nodes for st in s.epilogue] == [(4, 6), (7,), (8,), (9,)]
    assert s.barriers == 2 + 3  # between and after the loop stages, between the epilogue stages


def test_lora_hoists_every_loader() -> None:
    s = schedule_block_graph(FUSED["lora"](1).block_graphs[0])
    assert [st.nodes for st in s.prologue] == [(0, 1, 2, 3)]
    assert [st.depth for st in s.loop] == [1, 2, 3]


def test_rms_norm_adds_an_internal_barrier() -> None:
    tb = ml.new_threadblock_graph(grid_dim=(4, 1, 1), forloop_range=1)
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 64), dtype=ml.float16)
    tx = tb.new_input(dtensor=x, input_map=(0, PHI, PHI), forloop_dim=PHI)
    tb.new_output(stensor=tb.forloop_accum(tb.rms_norm(tx)), output_map=(0, PHI, PHI))
    g.mark_output(g.customized([x], tb)[0])
    s = schedule_block_graph(g.freeze().block_graphs[0])
    # after the prologue, inside rms_norm, at the loop's end, between finalising and saving
    assert s.barriers == 4
    assert ml.generate_cuda(g.freeze()).count("__syncthreads()") == 4


@pytest.mark.parametrize(("name", "bg"), _block_graphs(), ids=lambda v: v if isinstance(v, str) else "")
def test_smem_plan_is_aligned_disjoint_and_below_naive(name: str, bg: BlockGraph) -> None:
    kp = plan_kernel(bg, CodegenOptions())
    plan = kp.smem
    assert all(off % ALIGN == 0 for off in plan.offsets.values())  # ldmatrix rows, cp.async, 128-bit vectors
    for a, b in itertools.combinations(plan.buffers, 2):
        if a.overlaps(b):  # live at the same time: byte ranges must not meet
            lo_a, lo_b = plan.offsets[a.key], plan.offsets[b.key]
            assert lo_a + a.nbytes <= lo_b or lo_b + b.nbytes <= lo_a, (a, b)
    assert max(plan.offsets[b.key] + b.nbytes for b in plan.buffers) <= plan.peak <= plan.naive
    assert plan.peak <= SMEM_CAPACITY["sm_90"]  # lora bs8 (174 KiB) exceeds sm_80's 163 KiB


def test_loop_tensor_lifetimes_cover_the_loop() -> None:
    bg = FUSED["gqa"](1).block_graphs[0]
    s = schedule_block_graph(bg)
    plan = plan_shared_memory(bg, s)
    life = {b.key: (b.first, b.last) for b in plan.buffers}
    _, last = s.loop_span
    assert life["s0"] == (0, last)  # hoisted Q tile: read by every iteration
    assert life["acc5"][0] == 0 and life["acc5"][1] > last  # zeroed before, read after the loop


@pytest.mark.parametrize(("name", "g"), _graphs(), ids=lambda v: v if isinstance(v, str) else "")
def test_launches_match_the_block_graphs(name: str, g: KernelGraph) -> None:
    program = plan_cuda(g)
    source = ml.generate_cuda(g)
    assert len(program.steps) == len(g.compute_nodes)
    lowered = prepare(g)  # the unfused programs' ops, each a custom kernel
    for step in program.steps:
        node = lowered.nodes[step.node]
        assert isinstance(step, KernelLaunch) and node.body is not None
        bg = node.body
        assert step.grid == bg.grid and step.threads == 128
        assert step.args == node.inputs + node.outputs
        assert step.smem_bytes == plan_kernel(bg, CodegenOptions()).smem.peak
        kernel = source.split(f" {step.name}(")[1].split("\n}\n")[0]
        assert kernel.count("__syncthreads()") == step.barriers
        assert len(re.findall(r"\b(in|out)\d+\b", kernel.split(")")[0])) == len(step.args)
        assert f"i < {bg.forloop_range};" in kernel


def test_library_calls_keep_the_predefined_ops() -> None:
    """With library_calls=True a predefined kernel op is a CuPy call (the timing baseline), not a kernel."""
    g = FUSED["gqa"](1)
    program = plan_cuda(g, library_calls=True)
    assert program == plan_cuda(g)  # nothing to keep: every op of the fused graph is a custom kernel
    unfused = ml.bench.programs.PROGRAMS["gated_mlp"](1)
    steps = plan_cuda(unfused, library_calls=True).steps
    assert all(isinstance(s, LibraryCall) for s in steps)
    assert "cupy.matmul(d0, d1)" in str(plan_cuda(unfused, library_calls=True))


def test_program_repr_is_readable() -> None:
    text = str(plan_cuda(FUSED["gqa"](1)))
    assert "mirage_k3<<<(2,8,16), 128," in text and text.endswith("return d5")


def test_library_ops_are_listed() -> None:
    program = plan_cuda(ml.bench.programs.PROGRAMS["gated_mlp"](1), library_calls=True)
    assert [s.op for s in program.steps if isinstance(s, LibraryCall)] == [Op.MATMUL, Op.SILU, Op.MATMUL, Op.MUL]
    assert not program.launches


def test_tensor_core_matmuls() -> None:
    """Every fp16 matmul whose columns are whole 8-column tiles and K whole 16s runs on mma.sync, small M
    included (padded to 16 rows); a warp task shares its A fragment over up to 4 column tiles while every warp
    still has a task."""
    lora = FUSED["lora"](8).block_graphs[0]
    tilings = mma_matmuls(lora)
    assert {k: (t.rows, t.cols, t.n_tiles, t.tasks) for k, t in tilings.items()} == {
        4: (128, 64, 4, 16), 5: (128, 16, 2, 8), 6: (128, 64, 4, 16)}
    gated = mma_matmuls(FUSED["gated_mlp"](1).block_graphs[0])
    assert {(t.rows, t.cols, t.n_tiles, t.padded_rows) for t in gated.values()} == {(8, 32, 1, True)}
    (rms,) = mma_matmuls(FUSED["rmsnorm"](1).block_graphs[0]).values()  # (2, 128)·(128, 24)
    assert (rms.rows, rms.tasks, rms.padded_rows) == (2, 3, True)
    src = ml.generate_cuda(FUSED["lora"](8))
    assert src.count("mirage_mma(c[j], fa, fb);") == 3
    assert "mirage_mma(" not in ml.generate_cuda(FUSED["lora"](8), tensor_cores=False).split('extern "C"')[1]


def test_padding_gives_row_walked_tiles_an_odd_number_of_chunks() -> None:
    """Tiles read across rows (tensor-core operands, row sums) get one 16-byte chunk per row where their rows would
    otherwise meet the same banks; tiles read element by element, and single rows, stay dense."""
    bg = FUSED["gqa"](1).block_graphs[0]
    layouts = plan_kernel(bg, CodegenOptions()).layouts
    padded = {t: (lay.cols, lay.pitch) for t, lay in layouts.items() if lay.padded}
    assert padded == {0: (64, 72), 1: (128, 136), 2: (64, 72), 4: (128, 136)}  # Q, K, V and exp(Q·K)
    assert all(lay.pitch * lay.itemsize // CHUNK % 2 == 1 for lay in layouts.values() if lay.padded)
    assert not any(lay.padded for lay in plan_kernel(bg, CodegenOptions(padding=False)).layouts.values())
    # the search's GatedMLP: X (both matmuls' A) and W1, W2 (1024 × 16: 32-byte rows, which ldmatrix reads 8 at a
    # time) are padded on tensor cores; on CUDA cores W1 and W2 are read a 16-byte strip per row: dense
    from tests.codegen.graphs import search_best
    bg = search_best("gated_mlp_bs1").block_graphs[0]
    gated = plan_kernel(bg, CodegenOptions()).layouts
    assert [gated[t].padded for t in (0, 1, 2)] == [True, True, True]
    scalar = plan_kernel(bg, CodegenOptions(tensor_cores=False)).layouts
    assert [scalar[t].padded for t in (0, 1, 2)] == [True, False, False]


def test_padding_is_dropped_where_it_would_not_fit() -> None:
    """LoRA at batch 8 already needs 174 KiB dense, over sm_80's 163 KiB: padding would only make it worse."""
    bg = FUSED["lora"](8).block_graphs[0]
    kp = plan_kernel(bg, CodegenOptions())
    assert kp.smem.peak > PADDING_LIMIT and not any(lay.padded for lay in kp.layouts.values())
    assert plan_kernel(bg, PLAIN).smem.peak <= kp.smem.peak


def test_padded_source_addresses_rows_by_pitch() -> None:
    src = ml.generate_cuda(FUSED["gqa"](1))
    assert "mirage_load_a(fa, &s0[tm * 72 + kk], 72, 16);" in src  # the fragment rows step by the padded pitch
    assert "mirage_load_b(fb, &s1[kk * 136 + tn + j * 8], 136);" in src
    assert "idx / 64 * 72 + idx % 64" in src  # an element-wise access maps the flat index through the layout
    assert "* 72" not in ml.generate_cuda(FUSED["gqa"](1), padding=False)


def test_codegen_options_are_checked() -> None:
    """An unknown keyword, a flag that is not a bool, options of the wrong type, or both ways at once: an
    ArgumentError (a TypeError and a MirageError) naming the valid options and the closest one."""
    g = FUSED["gqa"](1)
    with pytest.raises(ArgumentError, match=r"unknown codegen option\(s\) 'prefetsh' \(did you mean 'prefetch'\?\); "
                                            r"the options are prefetch, split_sums, tensor_cores, padding"):
        ml.generate_cuda(g, prefetsh=False)
    with pytest.raises(TypeError, match=r"'library_call' \(did you mean 'library_calls'\?\)"):
        plan_cuda(g, library_call=True)
    with pytest.raises(ml.MirageError, match=r"'xyz'; the options are"):  # nothing close: no suggestion
        ml.generate_cuda(g, xyz=True)
    with pytest.raises(ArgumentError, match="not both"):
        ml.generate_cuda(g, PLAIN, prefetch=False)
    with pytest.raises(ArgumentError, match=r"take True or False, got prefetch='no'"):
        ml.generate_cuda(g, prefetch="no")
    with pytest.raises(ArgumentError, match=r"options must be a CodegenOptions .* got dict"):
        ml.generate_cuda(g, {"prefetch": False})  # type: ignore[arg-type]
