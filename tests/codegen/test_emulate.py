"""Generated CUDA run on the CPU (g++ and a shim, no GPU) against the float64 interpreter.

Forward and reverse fiber schedules both run every graph: a missing ``__syncthreads()`` shows up in at
least one of them. The broken-source tests prove the check can fail.
"""

from __future__ import annotations

import functools
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
def test_prefetch_is_used_and_the_plain_loop_still_matches(name: str) -> None:
    """The F > 1 graphs prefetch their loop tiles by default; the plain loops (the ablation) compute the same."""
    graph, _, _ = _case(name, None)
    plain = ml.generate_cuda(graph, PLAIN)
    assert " pf0[" in ml.generate_cuda(graph) and " pf0[" not in plain and "atomicAdd(&" not in plain
    assert "wmma" not in plain and "__syncwarp" not in plain
    assert worst_error(_errors(name, source=plain, options=PLAIN)) < FP16_TOL
    assert worst_error(_errors(name, schedule="threads")) < FP16_TOL  # prefetch under OS threads too


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


@pytest.mark.parametrize("schedule", ["forward", "reverse"])
def test_prefetching_the_wrong_iteration_is_caught(schedule: str) -> None:
    graph, _, _ = _case("rmsnorm", None)
    src = ml.generate_cuda(graph)
    bad = _broken(src, "(long long)(i + 1) * 786432", "(long long)i * 786432")  # W's tile of this iteration again
    assert not worst_error(_errors("rmsnorm", source=bad, schedule=schedule)) < FP16_TOL


def test_split_sums_are_used_and_a_lost_partial_is_caught() -> None:
    """Fused RMSNorm bs1 has 48 matmul outputs (6 strips of 8 columns, one per thread) and 2 row sums for 128
    threads: both sums are split over the idle threads, whose partial sums warp shuffles combine. Without the
    shuffles only the first lane's partial is added, and the check sees it."""
    graph, _, _ = _case("rmsnorm", None)
    src = ml.generate_cuda(graph)
    assert "float sum[8]" in src and "the K sum split over 16 threads" in src  # 128 // 6, to a power of two
    assert "the row sum split over 64 threads" in src
    bad = _broken(src, "mirage_warp_sum<8, 16>(sum);", "")
    assert not worst_error(_errors("rmsnorm", source=bad)) < FP16_TOL


def test_split_sums_are_deterministic() -> None:
    """A share of at most a warp is combined by shuffles and added by one lane; wider row sums add one partial per
    warp (2 here, and two adds onto 0 commute). So the fiber schedules, which order the threads oppositely,
    give bit-identical outputs."""
    graph, ins, _ = _case("rmsnorm", None)
    forward, reverse = (run_cuda_on_cpu(graph, ins, schedule=s) for s in ("forward", "reverse"))
    assert all(np.array_equal(f, r) for f, r in zip(forward, reverse, strict=True))


@pytest.mark.parametrize("schedule", ["forward", "reverse"])
def test_tensor_cores_are_used_and_a_missing_syncwarp_is_caught(schedule: str) -> None:
    """A lane reads the staging tile that all the warp's lanes stored; without the __syncwarp the emulation,
    whose lanes each store only their own share of it, reads unwritten (NaN) shared memory."""
    _, src, _ = _lora_source()
    assert src.count("wmma::mma_sync(c, a, b, c);") == 3
    bad = _broken(src, "__syncwarp();  // the lanes read what all of them stored", "")
    assert not worst_error(_errors("lora", source=bad, schedule=schedule)) < FP16_TOL


def test_overwriting_the_stage_too_soon_is_caught() -> None:
    """LoRA at batch 8 has 32 output tiles for 4 warps: a warp's next tile must wait until its lanes have read
    the last one from the stage."""
    graph = FUSED["lora"](8)
    ins = [a.astype(np.float16) for a in random_inputs(graph, seed=5)]
    want = ml.interpret(graph, [a.astype(np.float64) for a in ins])
    src = ml.generate_cuda(graph)
    good = run_cuda_on_cpu(graph, ins, source=src)
    assert relative_error(good[0].astype(np.float64), want[0]) < FP16_TOL
    bad = _broken(src, "__syncwarp();  // read before the next tile overwrites the stage", "")
    assert not relative_error(run_cuda_on_cpu(graph, ins, source=bad)[0].astype(np.float64), want[0]) < FP16_TOL


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
    bad = _broken(src, "load_matrix_sync(a, &s0[tm * 264 + kk], 264);", "load_matrix_sync(a, &s0[tm * 264 + kk], 256);")
    assert not worst_error(_errors("lora", source=bad)) < FP16_TOL


def test_misaligned_wmma_load_is_an_error() -> None:
    graph, src, ins = _lora_source()
    # A's fragment pointer 8 halves (16 bytes) off the 32-byte alignment wmma needs
    bad = _broken(src, "load_matrix_sync(a, &s0[tm * 264 + kk]", "load_matrix_sync(a, &s0[tm * 264 + kk + 8]")
    with pytest.raises(EmulationError, match="misaligned wmma load"):
        run_cuda_on_cpu(graph, ins, source=bad)


def test_shared_memory_overrun_is_an_error() -> None:
    graph, src, ins = _lora_source()
    # s5, the last 752 B of the 74992 B plan, moved up by 32 B (it is a wmma operand: 32-byte aligned)
    bad = _broken(src, "(smem + 74240)", "(smem + 74272)")
    with pytest.raises(EmulationError, match=r"mirage_k4: write past the planned shared memory \(block"):
        run_cuda_on_cpu(graph, ins, source=bad)


def test_misaligned_vector_access_is_an_error() -> None:
    graph, src, ins = _lora_source()
    bad = _broken(src, "reinterpret_cast<const uint4*>(&in1[base + ", "reinterpret_cast<const uint4*>(&in1[base + 1 + ")
    with pytest.raises(EmulationError, match="misaligned 16-byte vector access"):
        run_cuda_on_cpu(graph, ins, source=bad)


def test_compile_failure_names_the_kernel_and_shows_the_log() -> None:
    graph, src, ins = _lora_source()
    bad = _broken(src, "wmma::fill_fragment(c, 0.f);", "wmma::fill_fragment(c, undeclared_thing);")
    with pytest.raises(CompileError, match=r"(?s)g\+\+ failed .* kernel mirage_k4 .*undeclared_thing"):
        run_cuda_on_cpu(graph, ins, source=bad)


def test_missing_gxx_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    graph, src, ins = _lora_source()
    monkeypatch.setattr(emulate, "gxx_path", lambda: None)
    with pytest.raises(ml.MirageError, match="g\\+\\+ not found"):
        run_cuda_on_cpu(graph, ins, source=src + "// not cached\n")
