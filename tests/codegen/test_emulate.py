"""Generated CUDA run on the CPU (g++ and a shim, no GPU) against the float64 interpreter.

Forward and reverse fiber schedules both run every graph: a missing ``__syncthreads()`` shows up in at
least one of them. The broken-source tests prove the check can fail.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.bench.fused import FUSED
from mirage_lab.bench.harness import random_inputs, relative_error
from mirage_lab.bench.tolerance import worst_error
from mirage_lab.codegen import PLAIN, emulate
from mirage_lab.codegen.compile import CompileError
from mirage_lab.codegen.emulate import EmulationError, run_cuda_on_cpu
from tests.codegen.graphs import SEARCH_BEST, search_best

pytestmark = pytest.mark.skipif(not emulate.gxx_available(), reason="g++ not installed")
FP16_TOL = 2e-2  # fp16 storage of tiles and outputs, fp32 arithmetic
REFERENCE = ("single_gated_mlp", "single_lora", "single_mqa_bs1")
ATTENTION = ("gqa", "single_mqa_bs1")  # no max subtraction: small inputs keep exp(Q·K) in fp16 range


@functools.cache
def _case(name: str, reference_dir: Path | None) -> tuple[ml.KernelGraph, list[np.ndarray], list[np.ndarray]]:
    """Graph, fp16 inputs and the float64 interpreter's outputs, once per graph for both schedules."""
    graph = FUSED[name](1) if name in FUSED else ml.load_reference_checkpoint(reference_dir / f"{name}.json")[0]
    ins = [a.astype(np.float16) for a in random_inputs(graph, seed=5, scale=0.1 if name in ATTENTION else 1.0)]
    return graph, ins, ml.interpret(graph, [a.astype(np.float64) for a in ins])


def _errors(name: str, reference_dir: Path | None = None, **kw: object) -> list[float]:
    graph, ins, want = _case(name, reference_dir)
    got = run_cuda_on_cpu(graph, ins, **kw)  # type: ignore[arg-type]
    assert [g.dtype for g in got] == [np.float16] * len(want)
    # NaN (an unwritten output, or unwritten shared memory read) makes the error inf, which fails `< tol`
    return [relative_error(g.astype(np.float64), w) for g, w in zip(got, want, strict=True)]


@pytest.mark.parametrize("schedule", ["forward", "reverse"])
@pytest.mark.parametrize("name", [*sorted(FUSED), *REFERENCE])
def test_generated_cuda_matches_interpreter(name: str, schedule: str, request: pytest.FixtureRequest) -> None:
    reference_dir = request.getfixturevalue("reference_dir") if name in REFERENCE else None
    errors = _errors(name, reference_dir, schedule=schedule)
    assert all(e < FP16_TOL for e in errors), errors


@pytest.mark.parametrize("stem", SEARCH_BEST)
def test_search_discovered_graphs_run_as_cuda(stem: str) -> None:
    """The best μGraph each benchmark search found (data/search_best), not one we wrote, run as generated CUDA."""
    graph = search_best(stem)
    attention = stem.split("_bs")[0] in ("gqa", "mqa", "mha", "qknorm_gqa")
    ins = [a.astype(np.float16) for a in random_inputs(graph, seed=5, scale=0.1 if attention else 1.0)]
    want = ml.interpret(graph, [a.astype(np.float64) for a in ins])
    got = run_cuda_on_cpu(graph, ins)
    errors = [relative_error(g.astype(np.float64), w) for g, w in zip(got, want, strict=True)]
    assert all(e < FP16_TOL for e in errors), errors


def test_os_thread_schedule_matches_interpreter() -> None:
    assert worst_error(_errors("lora", schedule="threads")) < FP16_TOL


@pytest.mark.parametrize("name", ["rmsnorm", "gated_mlp"])
def test_the_pipeline_is_used_and_the_plain_loop_still_matches(name: str) -> None:
    """The F > 1 graphs copy their loop tiles asynchronously, iterations ahead, into rings; the plain loops (the
    ablation: synchronous copies, scalar matmuls) compute the same."""
    graph, _, _ = _case(name, None)
    plain = ml.generate_cuda(graph, PLAIN)
    default = ml.generate_cuda(graph)
    assert "s1_ring" in default and "mirage_cp_async<16>(" in default and "mirage_mma(c[j], fa, fb);" in default
    assert "_ring" not in plain and "mirage_cp_async<" not in plain.split('extern "C"')[1]
    assert "atomicAdd(&" not in plain and "mirage_mma(" not in plain.split('extern "C"')[1]
    assert worst_error(_errors(name, source=plain, options=PLAIN)) < FP16_TOL
    assert worst_error(_errors(name, schedule="threads")) < FP16_TOL  # the pipeline under OS threads too


# --------------------------------------------------------------------------- the check can fail


def _lora_source() -> tuple[ml.KernelGraph, str, list[np.ndarray]]:
    graph, ins, _ = _case("lora", None)
    return graph, ml.generate_cuda(graph), ins


def _broken(source: str, old: str, new: str) -> str:
    assert old in source, f"the generated source no longer contains {old!r}; update this test"
    return source.replace(old, new, 1)


def test_wrong_tile_offset_is_caught() -> None:
    _, src, _ = _lora_source()
    # W's loader reads the column tile of the neighbouring block
    bad = _broken(src, "const long long base = (long long)blockIdx.x * 64;",
                  "const long long base = (long long)(blockIdx.x ^ 1) * 64;")
    assert not worst_error(_errors("lora", source=bad)) < FP16_TOL


@pytest.mark.parametrize("schedule", ["forward", "reverse"])
def test_missing_barrier_is_caught(schedule: str) -> None:
    _, src, _ = _lora_source()
    bad = _broken(src, "__syncthreads();  // hoisted tiles are read by every thread", "")
    assert not worst_error(_errors("lora", source=bad, schedule=schedule)) < FP16_TOL


def _rmsnorm_ring() -> tuple[str, int]:
    """Fused RMSNorm bs1's source and its ring's depth (the number of copies of each loop tile)."""
    graph, _, _ = _case("rmsnorm", None)
    src = ml.generate_cuda(graph)
    depth = int(re.search(r"s1_ring \+ \(i % (\d+)\)", src).group(1))  # type: ignore[union-attr]
    assert depth >= 3, "W's 6 KB tiles need several iterations in flight"
    return src, depth


@pytest.mark.parametrize("schedule", ["forward", "reverse"])
def test_copying_the_wrong_iteration_is_caught(schedule: str) -> None:
    src, depth = _rmsnorm_ring()
    ahead = f"(long long)(i + {depth - 1}) * 786432"  # W's tile, stages − 1 iterations ahead
    bad = _broken(src, ahead, f"(long long)(i + {depth - 2}) * 786432")
    assert not worst_error(_errors("rmsnorm", source=bad, schedule=schedule)) < FP16_TOL


def test_waiting_for_too_few_copies_is_caught() -> None:
    """Waiting while one group too many is still in flight reads each tile before it lands (poison: NaN), and
    leaves the last group in flight at the end: the emulation stops at the latter."""
    src, depth = _rmsnorm_ring()
    bad = _broken(src, f"mirage_cp_async_wait<{depth - 2}>();", f"mirage_cp_async_wait<{depth - 1}>();")
    with pytest.raises(EmulationError, match=r"cp\.async copies still in flight"):
        _errors("rmsnorm", source=bad)


def test_refilling_the_slot_being_read_is_caught() -> None:
    """The copy ahead must go into the slot the last iteration read, not the one this iteration reads."""
    src, depth = _rmsnorm_ring()
    bad = _broken(src, f"(s1_ring + ((i + {depth - 1}) % {depth}) * ", f"(s1_ring + (i % {depth}) * ")
    assert not worst_error(_errors("rmsnorm", source=bad)) < FP16_TOL


def test_a_copy_never_waited_for_is_an_error() -> None:
    """Copies past the last iteration are never waited for: the emulation names them instead of finishing."""
    graph, ins, _ = _case("rmsnorm", None)
    src, depth = _rmsnorm_ring()
    bad = _broken(src, f"if (i + {depth - 1} < 32)", f"if (i + {depth - 1} < 33)")
    with pytest.raises(EmulationError, match=r"cp\.async copies still in flight"):
        run_cuda_on_cpu(graph, ins, source=bad)


def test_split_sums_are_used_and_a_lost_partial_is_caught() -> None:
    """Fused RMSNorm bs1 has 2 row sums for 128 threads, split over the idle threads, whose partial sums warp
    shuffles combine; on CUDA cores its 48 matmul outputs (6 strips of 8 columns) split their K sums too. Without
    the shuffles only the first lane's partial is added, and the check sees it."""
    src, _ = _rmsnorm_ring()
    assert "the row sum split over 64 threads" in src
    bad = _broken(src, "mirage_warp_sum<1, 32>(c);", "")
    assert not worst_error(_errors("rmsnorm", source=bad)) < FP16_TOL
    graph, _, _ = _case("rmsnorm", None)
    scalar = ml.generate_cuda(graph, tensor_cores=False)
    assert "float sum[8]" in scalar and "the K sum split over 16 threads" in scalar  # 128 // 6, to a power of two
    bad = _broken(scalar, "mirage_warp_sum<8, 16>(sum);", "")
    assert not worst_error(_errors("rmsnorm", source=bad, tensor_cores=False)) < FP16_TOL


def test_split_sums_are_deterministic() -> None:
    """A share of at most a warp is combined by shuffles and added by one lane; wider row sums add one partial per
    warp (2 here, and two adds onto 0 commute). So the fiber schedules, which order the threads oppositely,
    give bit-identical outputs."""
    graph, ins, _ = _case("rmsnorm", None)
    forward, reverse = (run_cuda_on_cpu(graph, ins, schedule=s) for s in ("forward", "reverse"))
    assert all(np.array_equal(f, r) for f, r in zip(forward, reverse, strict=True))


@pytest.mark.parametrize("schedule", ["forward", "reverse"])
def test_tensor_cores_are_used_and_a_wrong_fragment_layout_is_caught(schedule: str) -> None:
    """Lane l holds rows l/4 and l/4 + 8 of its tile; reading c[2], c[3] as the first row's is caught."""
    _, src, _ = _lora_source()
    assert src.count("mirage_mma(c[j], fa, fb);") == 3
    bad = _broken(src, "const int row = tm + lane / 4 + h * 8;", "const int row = tm + lane / 4 + (1 - h) * 8;")
    assert not worst_error(_errors("lora", source=bad, schedule=schedule)) < FP16_TOL


def test_register_sums_are_written_once_at_the_last_iteration() -> None:
    """RMSNorm's matmul keeps its sums in registers over the 32 iterations; writing them one iteration early
    loses the last tile's products."""
    src, _ = _rmsnorm_ring()
    assert "float held3[1][1][4] = {};" in src and "acc4[pair] = c[j][2 * h];" in src
    assert "acc4[idx] +=" not in src  # no shared-memory update per iteration
    bad = _broken(src, "if (i == 31) {", "if (i == 30) {")
    assert not worst_error(_errors("rmsnorm", source=bad)) < FP16_TOL


def test_paired_half_stores_keep_their_order() -> None:
    """A lane stores its two adjacent outputs of a row as one __half2; swapping them is caught."""
    _, src, _ = _lora_source()
    assert src.count("= __floats2half2_rn(v0, v1);") == 3
    bad = _broken(src, "= __floats2half2_rn(v0, v1);", "= __floats2half2_rn(v1, v0);")
    assert not worst_error(_errors("lora", source=bad)) < FP16_TOL


def test_small_m_runs_on_tensor_cores_and_its_padding_rows_are_dropped() -> None:
    """RMSNorm bs1's 2-row tile is padded to 16 rows in registers; the products of the padding rows must not be
    stored: here the third row's would land past the plan or in the row sums' accumulator, which W (scaled up)
    makes visible."""
    graph, (x, w), _ = _case("rmsnorm", None)
    ins = [x, (w.astype(np.float32) * 10).astype(np.float16)]
    want = ml.interpret(graph, [a.astype(np.float64) for a in ins])
    src, _ = _rmsnorm_ring()
    assert "mirage_load_a(fa, &s0[tm * 136 + kk], 136, 2 - tm);" in src
    good = run_cuda_on_cpu(graph, ins, source=src)
    assert relative_error(good[0].astype(np.float64), want[0]) < FP16_TOL
    try:  # the third row's sums land past the accumulators: past the plan, or on the row sums
        bad = run_cuda_on_cpu(graph, ins, source=_broken(src, "if (row < 2) {", "if (row < 3) {"))
    except EmulationError as e:
        assert "write past the planned shared memory" in str(e)
    else:
        assert not relative_error(bad[0].astype(np.float64), want[0]) < FP16_TOL


@pytest.mark.parametrize("flag", ["tensor_cores", "padding"])
def test_scalar_matmuls_and_dense_tiles_still_match(flag: str) -> None:
    """The ablations: scalar matmuls over the padded tiles, and wmma over dense ones, compute the same."""
    graph, _, _ = _case("gqa", None)
    assert ml.generate_cuda(graph, **{flag: False}) != ml.generate_cuda(graph)
    assert worst_error(_errors("gqa", **{flag: False})) < FP16_TOL


def test_a_wrong_pitch_is_caught() -> None:
    """LoRA's X tile is padded from 256 to 264 halves a row; a fragment load that strides 256 reads the wrong
    rows."""
    _, src, _ = _lora_source()
    bad = _broken(src, "mirage_load_a(fa, &s0[tm * 264 + kk], 264, 16);",
                  "mirage_load_a(fa, &s0[tm * 264 + kk], 256, 16);")
    assert not worst_error(_errors("lora", source=bad)) < FP16_TOL


def test_misaligned_ldmatrix_is_an_error() -> None:
    graph, src, ins = _lora_source()
    # A's fragment rows 4 halves (8 bytes) off the 16-byte alignment ldmatrix needs
    bad = _broken(src, "mirage_load_a(fa, &s0[tm * 264 + kk]", "mirage_load_a(fa, &s0[tm * 264 + kk + 4]")
    with pytest.raises(EmulationError, match="misaligned ldmatrix row"):
        run_cuda_on_cpu(graph, ins, source=bad)


def test_shared_memory_overrun_is_an_error() -> None:
    graph, src, ins = _lora_source()
    # s6, the last 2048 B of the 68784 B plan, moved up by 16 B
    bad = _broken(src, "(smem + 66736)", "(smem + 66752)")
    with pytest.raises(EmulationError, match=r"mirage_k4: write past the planned shared memory \(block"):
        run_cuda_on_cpu(graph, ins, source=bad)


def test_misaligned_vector_access_is_an_error() -> None:
    graph, src, ins = _lora_source()
    bad = _broken(src, "reinterpret_cast<uint4*>(&out0[base + ", "reinterpret_cast<uint4*>(&out0[base + 1 + ")
    with pytest.raises(EmulationError, match="misaligned 16-byte vector access"):
        run_cuda_on_cpu(graph, ins, source=bad)


def test_misaligned_async_copy_is_an_error() -> None:
    graph, src, ins = _lora_source()
    bad = _broken(src, "&in1[base + (idx / 64) * 4096 + idx % 64]", "&in1[base + 1 + (idx / 64) * 4096 + idx % 64]")
    with pytest.raises(EmulationError, match=r"misaligned cp\.async"):
        run_cuda_on_cpu(graph, ins, source=bad)


def test_compile_failure_names_the_kernel_and_shows_the_log() -> None:
    graph, src, ins = _lora_source()
    bad = _broken(src, "float c[2][4] = {};", "float c[2][4] = {undeclared_thing};")
    with pytest.raises(CompileError, match=r"(?s)g\+\+ failed .* kernel mirage_k4 .*undeclared_thing"):
        run_cuda_on_cpu(graph, ins, source=bad)


def test_missing_gxx_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    graph, src, ins = _lora_source()
    monkeypatch.setattr(emulate, "gxx_path", lambda: None)
    with pytest.raises(ml.MirageError, match="g\\+\\+ not found"):
        run_cuda_on_cpu(graph, ins, source=src + "// not cached\n")
