"""CuPy and numpy give bit-identical finite-field fingerprints and identical verdicts (SPEC §6.5).

Field arithmetic is exact integer arithmetic, so the two backends must agree on every bit of both
components, whatever order the device sums in. Inputs are drawn on the host (``FieldArith.random``),
so both backends see the same numbers. Skipped without CuPy and a CUDA device.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.semantics.backend import cupy_available
from mirage_lab.semantics.centered_field import CenteredFieldArith
from mirage_lab.semantics.field import DEFAULT_FIELD, LARGE_FIELD, REFERENCE_FIELD, FieldArith, FieldSpec, FieldValue
from tests.verify.test_verify import _two_outputs

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not cupy_available(), reason="needs CuPy and a CUDA device")]

FIELDS = {"default": DEFAULT_FIELD, "large": LARGE_FIELD, "reference": REFERENCE_FIELD}
GRAPHS: dict[str, Callable[[], ml.KernelGraph]] = {
    **{f"program:{n}": functools.partial(f, 1) for n, f in programs.PROGRAMS.items()},
    **{f"fused:{n}": functools.partial(f, 1) for n, f in fused.FUSED.items()},
}


def _arith(field: FieldSpec, centred: bool = False) -> tuple[FieldArith, FieldArith]:
    """numpy's straightforward arithmetic, and the device's (the verifier's centred fast path if asked)."""
    return FieldArith(field, "numpy"), (CenteredFieldArith if centred else FieldArith)(field, "cupy")


def _assert_identical(got: FieldValue, want: FieldValue, what: str) -> None:
    assert isinstance(got.p, np.ndarray) and isinstance(want.p, np.ndarray), what
    assert got.shape == want.shape, what
    assert got.p.dtype == want.p.dtype == np.int64 and got.q.dtype == want.q.dtype == np.int64, what
    np.testing.assert_array_equal(got.p, want.p, err_msg=f"{what}: p-component")
    np.testing.assert_array_equal(got.q, want.q, err_msg=f"{what}: q-component")


def _fingerprints(g: ml.KernelGraph, field: FieldSpec, seed: int, centred: bool = False
                  ) -> tuple[list[FieldValue], list[FieldValue]]:
    """The graph's outputs on numpy and on CuPy, from one set of host-drawn inputs."""
    host, dev = _arith(field, centred)
    rng = np.random.default_rng(seed)
    ins = [host.random(t.dims, rng) for t in g.input_types]
    want = ml.interpret(g, ins, ns=host)
    got = ml.interpret(g, ins, ns=dev)  # to_host=True: back on the host as numpy FieldValues
    return got, want


@pytest.mark.parametrize("graph", list(GRAPHS))
def test_fingerprints_are_bit_identical_default_field(graph: str) -> None:
    g = GRAPHS[graph]()
    got, want = _fingerprints(g, DEFAULT_FIELD, seed=0)
    assert len(got) == len(want) == len(g.outputs)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        _assert_identical(a, b, f"{graph} output {i}")


@pytest.mark.parametrize("field", ["large", "reference"])
@pytest.mark.parametrize("graph", [f"fused:{n}" for n in fused.FUSED] + ["program:qknorm_gqa", "program:ntrans"])
def test_fingerprints_are_bit_identical_other_fields(graph: str, field: str) -> None:
    """LARGE_FIELD takes the limb/chunk path hardest (32-long GEMMs); the reference field its inv(0) rule."""
    got, want = _fingerprints(GRAPHS[graph](), FIELDS[field], seed=1)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        _assert_identical(a, b, f"{graph} output {i} over {field}")


@pytest.mark.parametrize("centred", [False, True], ids=["int64", "centred"])
def test_random_draws_are_the_same_on_both_backends(centred: bool) -> None:
    host, dev = _arith(DEFAULT_FIELD, centred)
    a = host.random((3, 70), np.random.default_rng(5))
    b = dev.to_host(dev.random((3, 70), np.random.default_rng(5)))
    _assert_identical(b, a, "random draw")


@pytest.mark.parametrize("graph", list(GRAPHS))
@pytest.mark.parametrize("field", ["default", "reference"])
def test_centred_fast_path_on_cupy_is_bit_identical(graph: str, field: str) -> None:
    """The verifier's fast path (float64 residues centred on zero) on the device against FieldArith on the
    host: the same residues for every benchmark graph."""
    got, want = _fingerprints(GRAPHS[graph](), FIELDS[field], seed=4, centred=True)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        _assert_identical(a, b, f"{graph} output {i} over {field}, centred on the device")


@pytest.mark.parametrize("centred", [False, True], ids=["int64", "centred"])
@pytest.mark.parametrize("field", list(FIELDS))
def test_every_rule_is_bit_identical(field: str, centred: bool) -> None:
    """Each number-system method on the same host values, both backends (and both representations)."""
    if centred and not CenteredFieldArith.supports(FIELDS[field]):
        pytest.skip(f"{field} is too large for centred float64 residues")
    host, dev = _arith(FIELDS[field], centred)
    rng = np.random.default_rng(2)
    x, y = host.random((4, 64), rng), host.random((4, 64), rng)
    w = host.random((3, 1, 64, 40), rng)
    z = host.random((1, 2, 40, 5), rng)
    ops: dict[str, Callable[[FieldArith, Any, Any], Any]] = {
        "add": lambda ns, a, b: ns.add(a, b), "sub": lambda ns, a, b: ns.sub(a, b),
        "mul": lambda ns, a, b: ns.mul(a, b), "div": lambda ns, a, b: ns.div(a, b),
        "pow": lambda ns, a, b: ns.pow(a, b), "maximum": lambda ns, a, b: ns.maximum(a, b),
        "exp": lambda ns, a, b: ns.exp(a), "sqrt": lambda ns, a, b: ns.sqrt(a),
        "sigmoid": lambda ns, a, b: ns.sigmoid(a), "silu": lambda ns, a, b: ns.silu(a),
        "gelu": lambda ns, a, b: ns.gelu(a), "relu": lambda ns, a, b: ns.relu(a),
        "clamp": lambda ns, a, b: ns.clamp(a, -1.0, 1.0), "mul_scalar": lambda ns, a, b: ns.mul_scalar(a, -0.375),
        "scale_int": lambda ns, a, b: ns.scale_int(a, -7), "div_int": lambda ns, a, b: ns.div_int(a, 4096),
        "sum": lambda ns, a, b: ns.sum(a, -1), "amax": lambda ns, a, b: ns.amax(a, 0),
        "sum_strided": lambda ns, a, b: ns.sum_strided(a, -1, 8), "rms": lambda ns, a, b: ns.rms(a, -1, 64),
        "concat": lambda ns, a, b: ns.concat([a, b], -1),
    }
    for name, fn in ops.items():
        _assert_identical(dev.to_host(fn(dev, dev.from_host(x), dev.from_host(y))), fn(host, x, y), name)
    mm = dev.to_host(dev.matmul(dev.from_host(w), dev.from_host(z)))  # the fold path: size-1 batch axes
    _assert_identical(mm, host.matmul(w, z), "matmul")


# --------------------------------------------------------------------------- ml.verify on both backends

verify: Any = getattr(ml, "verify", None)
needs_verify = pytest.mark.skipif(verify is None, reason="ml.verify is not available yet")


def _gated_mlp_swapped() -> ml.KernelGraph:
    """The GatedMLP program with W1 and W2 exchanged: silu(X·W2) ⊙ (X·W1), a different function."""
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 4096), dtype=ml.float16)
    w1 = g.new_input(dims=(4096, 4096), dtype=ml.float16)
    w2 = g.new_input(dims=(4096, 4096), dtype=ml.float16)
    g.mark_output(g.mul(g.silu(g.matmul(x, w2)), g.matmul(x, w1)))
    return g.freeze()


def _fused_case(name: str) -> tuple[ml.KernelGraph, ml.KernelGraph]:
    return fused.FUSED[name](1), programs.PROGRAMS[name](1)


VERIFY_CASES: dict[str, Callable[[], tuple[ml.KernelGraph, ml.KernelGraph]]] = {
    **{f"fused:{n}": functools.partial(_fused_case, n) for n in fused.FUSED},
    "gated_mlp_swapped": lambda: (_gated_mlp_swapped(), programs.gated_mlp(1)),
    "output_permutation": lambda: (_two_outputs(True), _two_outputs(False)),
}


def _evidence(r: Any) -> dict[str, Any]:
    return {
        "equivalent": r.equivalent,
        "permutation": r.permutation,
        "trials": [(t.seed, t.matched, t.fingerprints, t.permutations, str(t.witness)) for t in r.trials],
        "error_bound": r.error_bound,
        "degree": r.degree,
    }


@needs_verify
@pytest.mark.parametrize("case", list(VERIFY_CASES))
def test_verify_gives_the_same_verdict_and_evidence_on_cupy(case: str) -> None:
    cand, ref = VERIFY_CASES[case]()
    on_host = verify(cand, ref, backend="numpy", float_check=False)
    on_device = verify(cand, ref, backend="cupy", float_check=False)
    assert _evidence(on_device) == _evidence(on_host)
    assert on_host.equivalent == (case != "gated_mlp_swapped")
    if case == "output_permutation":
        assert on_host.permutation == (1, 0)


@needs_verify
@pytest.mark.parametrize("case", ["fused:gated_mlp", "gated_mlp_swapped"])
def test_verify_with_the_float_check_agrees_on_cupy(case: str) -> None:
    """Heuristic silu makes the float64 cross-check mandatory; its verdict must not depend on the backend."""
    cand, ref = VERIFY_CASES[case]()
    on_host, on_device = verify(cand, ref, backend="numpy"), verify(cand, ref, backend="cupy")
    assert on_device.equivalent == on_host.equivalent
    assert on_device.permutation == on_host.permutation
    assert [t.fingerprints for t in on_device.trials] == [t.fingerprints for t in on_host.trials]
    assert on_device.float_check.passed == on_host.float_check.passed


@needs_verify
@pytest.mark.parametrize("parity", ["older", "current"])
def test_parity_mode_fingerprints_agree_on_cupy(parity: str) -> None:
    cand, ref = VERIFY_CASES["fused:lora"]()
    try:
        on_host = verify(cand, ref, backend="numpy", parity=parity)
    except TypeError:
        pytest.skip("this ml.verify has no parity mode")
    on_device = verify(cand, ref, backend="cupy", parity=parity)
    assert _evidence(on_device) == _evidence(on_host)
