"""fp32 and bf16 beside fp16 (issue 20, item 5): the interpreter, the verifier, generated CUDA (nvcc sm_80 and
sm_90), the CPU emulator with its software bf16, and the GPU.

The emulator holds a bf16 tensor as its bits and rounds to nearest even (``codegen.storage``, and the same in its
C++ shim); the tests check the rounding bit for bit against an exact reference, and the fused RMSNorm+Linear in
each dtype against the float64 interpreter within the dtype's tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.bench.harness import random_inputs, relative_error
from mirage_lab.codegen import emulate
from mirage_lab.codegen.compile import nvcc_available, nvcc_ptx
from mirage_lab.codegen.storage import from_bf16_bits, storage, to_bf16_bits
from mirage_lab.semantics.backend import cupy_available

#: relative error (max |got − want| / max |want|) allowed against float64: storage rounding of inputs, tiles and
#: outputs with fp32 arithmetic. bf16 keeps 8 significant bits (unit roundoff 2^-8), fp16 11, fp32 24.
TOLERANCE = {ml.float32: 1e-5, ml.bfloat16: 2e-2}
DTYPES = sorted(TOLERANCE, key=str)
needs_gxx = pytest.mark.skipif(not emulate.gxx_available(), reason="g++ not installed")


def _nearest_bf16(x: float) -> int:
    """The bf16 bits nearest to the float32 ``x`` (ties to the even pattern), found by exact float64 search."""
    bits = int(np.float32(x).view(np.uint32)) >> 16
    below, above = bits, bits + 1  # truncation and the next pattern away from zero: ``x`` lies between them
    lo, hi = (float(from_bf16_bits(np, np.uint16(b))) for b in (below, above))
    d_lo, d_hi = abs(x - lo), abs(hi - x)
    if d_lo != d_hi:
        return below if d_lo < d_hi else above
    return below if below % 2 == 0 else above


@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
@settings(max_examples=500, deadline=None)
def test_bf16_rounding_is_to_nearest_even(x: float) -> None:
    bits = int(to_bf16_bits(np, np.float32(x)))
    if abs(x) >= float(from_bf16_bits(np, np.uint16(0x7F7F))) and bits & 0x7FFF == 0x7F80:
        return  # rounded past the largest bf16: an infinity, as __float2bfloat16 gives
    assert bits == _nearest_bf16(x), (x, hex(bits))


def test_bf16_rounding_at_ties_specials_and_overflow() -> None:
    one_and = [1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8), 2.0 ** -133, np.finfo(np.float32).max]
    got = [hex(int(b)) for b in to_bf16_bits(np, np.array(one_and, dtype=np.float32))]
    # ties go to the even pattern (1.0 = 0x3f80, 1 + 2^-6 = 0x3f82); 2^-133 is the least subnormal; max → inf
    assert got == ["0x3f80", "0x3f82", "0xbf80", "0x1", "0x7f80"]
    special = to_bf16_bits(np, np.array([np.inf, -np.inf, np.nan, -np.nan], dtype=np.float32))
    assert [hex(int(b)) for b in special[:2]] == ["0x7f80", "0xff80"]
    assert np.isnan(from_bf16_bits(np, special[2:])).all()  # NaN stays NaN, never rounds into an infinity
    assert np.array_equal(from_bf16_bits(np, to_bf16_bits(np, [0.5, -3.0, 0.0])), [0.5, -3.0, 0.0])


@needs_gxx
def test_the_emulators_bf16_rounds_as_numpy_does() -> None:
    """A bf16 product computed by a generated kernel: the product of two bf16 values is exact in fp32, so the
    stored result is the shim's rounding alone, which must equal numpy's bit for bit."""
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(64, 64), dtype=ml.bfloat16)
    y = g.new_input(dims=(64, 64), dtype=ml.bfloat16)
    g.mark_output(g.mul(x, y))
    rng = np.random.default_rng(3)
    a, b = (from_bf16_bits(np, to_bf16_bits(np, rng.normal(size=(64, 64)) * 10.0 ** rng.integers(-20, 20, (64, 64))))
            for _ in range(2))
    (got,) = emulate.run_cuda_on_cpu(g, [a, b])
    assert got.dtype == np.float32
    assert np.array_equal(to_bf16_bits(np, got), to_bf16_bits(np, a * b))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_interpreter_and_verifier_take_every_dtype(dtype: ml.DType) -> None:
    program, candidate = programs.rmsnorm(1, dtype=dtype), fused.rmsnorm(1, dtype=dtype)
    assert {t.dtype for t in candidate.tensors} == {dtype}
    result = ml.verify(candidate, program)
    assert result.equivalent, result
    ins = random_inputs(program, seed=2)
    assert relative_error(ml.interpret(candidate, ins)[0], ml.interpret(program, ins)[0]) < 1e-12


@pytest.mark.skipif(not nvcc_available(), reason="nvcc not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_generated_cuda_compiles_for_every_dtype(dtype: ml.DType, arch: str) -> None:
    source = ml.generate_cuda(fused.rmsnorm(1, dtype=dtype))
    assert ("__nv_bfloat16" in source) == (dtype is ml.bfloat16)
    nvcc_ptx(source, arch)


def _inputs(graph: ml.KernelGraph, dtype: ml.DType) -> list[np.ndarray]:
    """Random inputs already representable in ``dtype``, so the reference sees what the kernels read."""
    held = storage(dtype)
    return [held.decode(np, held.encode(np, a)).astype(np.float64) for a in random_inputs(graph, seed=5)]


@needs_gxx
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_fused_rmsnorm_linear_runs_in_the_emulator(dtype: ml.DType) -> None:
    """The acceptance check: the fused RMSNorm+Linear in bf16 (and fp32) against the interpreter."""
    graph = fused.rmsnorm(1, dtype=dtype)
    ins = _inputs(graph, dtype)
    (want,) = ml.interpret(graph, ins)
    (got,) = emulate.run_cuda_on_cpu(graph, ins)
    assert got.dtype == np.float32
    assert relative_error(got.astype(np.float64), want) < TOLERANCE[dtype]


@needs_gxx
def test_the_bf16_check_can_fail() -> None:
    """A kernel that stores its output 6 % too large fails the comparison above (it cannot pass vacuously)."""
    graph = fused.rmsnorm(1, dtype=ml.bfloat16)
    ins = _inputs(graph, ml.bfloat16)
    (want,) = ml.interpret(graph, ins)
    source = ml.generate_cuda(graph).replace("__float2bfloat16(", "mirage_wrong_bf16(")
    source = source.replace('extern "C"', "static inline __nv_bfloat16 mirage_wrong_bf16(float f) { return "
                            "__float2bfloat16(f * 1.0625f); }\nextern \"C\"", 1)
    (got,) = emulate.run_cuda_on_cpu(graph, ins, source=source)
    assert not relative_error(got.astype(np.float64), want) < TOLERANCE[ml.bfloat16]


@pytest.mark.gpu
@pytest.mark.skipif(not cupy_available(), reason="needs CuPy and a CUDA device")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_fused_rmsnorm_linear_runs_on_the_gpu(dtype: ml.DType) -> None:
    import cupy

    graph = fused.rmsnorm(1, dtype=dtype)
    ins = _inputs(graph, dtype)
    (want,) = ml.interpret(graph, ins)
    (got,) = ml.compile(graph)(*[cupy.asarray(a) for a in ins])
    assert got.dtype == cupy.float32
    assert relative_error(cupy.asnumpy(got).astype(np.float64), want) < TOLERANCE[dtype]
