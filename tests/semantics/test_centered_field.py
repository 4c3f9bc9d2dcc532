"""The verifier's fast path (``CenteredFieldArith``) against the straightforward one (``FieldArith``).

Both number systems must give the same residues for every op and every graph: the fast path is only a
different representation (float64 residues centred on zero). Worst cases of the float64 bounds are
checked against Python integers.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.errors import UnsupportedOpError
from mirage_lab.semantics.centered_field import (
    CenteredFieldArith,
    bound,
    exact_terms,
    verification_arith,
)
from mirage_lab.semantics.field import DEFAULT_FIELD, LARGE_FIELD, REFERENCE_FIELD, FieldArith, FieldSpec, FieldValue
from tests.strategies import kernel_graphs

FIELDS = {"default": DEFAULT_FIELD, "reference": REFERENCE_FIELD}


def _pair(field: FieldSpec) -> tuple[FieldArith, CenteredFieldArith]:
    return FieldArith(field, "numpy"), CenteredFieldArith(field, "numpy")


def _same(got: FieldValue, want: FieldValue, what: str) -> None:
    assert got.p.dtype == want.p.dtype == np.int64 and got.q.dtype == want.q.dtype == np.int64, what
    np.testing.assert_array_equal(got.p, want.p, err_msg=f"{what}: p-component")
    np.testing.assert_array_equal(got.q, want.q, err_msg=f"{what}: q-component")


def _both(g: ml.KernelGraph, field: FieldSpec, seed: int) -> tuple[list[FieldValue], list[FieldValue]] | None:
    """The graph's outputs from both number systems on the same inputs; None if it has no field rule."""
    exact, fast = _pair(field)
    rng = np.random.default_rng(seed)
    ins = [exact.random(t.dims, rng) for t in g.input_types]
    try:
        want = ml.interpret(g, ins, ns=exact)
    except UnsupportedOpError:  # log: then the fast path must refuse it too
        with pytest.raises(UnsupportedOpError):
            ml.interpret(g, ins, ns=fast)
        return None
    return ml.interpret(g, ins, ns=fast), want


# --------------------------------------------------------------------------- whole graphs


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernel_graphs(), st.sampled_from(sorted(FIELDS)), st.integers(0, 2**16))
def test_random_graphs_give_identical_residues(g: ml.KernelGraph, field: str, seed: int) -> None:
    """The issue-18 property: on random small graphs (every op, map and accumulator) the fast path and the
    straightforward path give identical residues."""
    note(str(g))
    outs = _both(g, FIELDS[field], seed)
    if outs is not None:
        for i, (got, want) in enumerate(zip(*outs, strict=True)):
            _same(got, want, f"output {i}")


# (MoE's program, two 8×4096×4096 weights, would take half a minute here and adds no op)
GRAPHS = {**{f"program:{n}": functools.partial(f, 1) for n, f in programs.PROGRAMS.items() if n != "moe"},
          **{f"fused:{n}": functools.partial(f, 1) for n, f in fused.FUSED.items()}}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_benchmark_graphs_give_identical_residues(name: str) -> None:
    outs = _both(GRAPHS[name](), DEFAULT_FIELD, seed=3)
    assert outs is not None
    for i, (got, want) in enumerate(zip(*outs, strict=True)):
        _same(got, want, f"{name} output {i}")


# --------------------------------------------------------------------------- ops on edge residues


def _edges(m: int) -> np.ndarray:
    return np.array([0, 1, 2, 3, m // 2 - 1, m // 2, m // 2 + 1, m // 2 + 2, m - 3, m - 2, m - 1], dtype=np.int64)


def _edge_operands(field: FieldSpec) -> tuple[FieldValue, FieldValue]:
    """Every pair of edge residues, in both components (p and q edges paired up by position)."""
    ep, eq = _edges(field.p), _edges(field.q)
    n = len(ep)
    a = FieldValue(np.repeat(ep, n), np.repeat(eq, n))
    b = FieldValue(np.tile(ep, n), np.tile(eq, n))
    return a, b


UNARY = ["exp", "sqrt", "square", "silu", "sigmoid", "gelu", "relu"]
BINARY = ["add", "sub", "mul", "div", "maximum", "pow"]


@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("op", UNARY + BINARY)
def test_ops_on_edge_residues(field: str, op: str) -> None:
    exact, fast = _pair(FIELDS[field])
    a, b = _edge_operands(FIELDS[field])
    args = (a,) if op in UNARY else (a, b)
    want = getattr(exact, op)(*args)
    got = fast.to_host(getattr(fast, op)(*(fast.from_host(v) for v in args)))
    _same(got, want, op)


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_scalar_ops_reductions_and_clamp(field: str) -> None:
    exact, fast = _pair(FIELDS[field])
    a, _ = _edge_operands(FIELDS[field])
    a = FieldValue(a.p.reshape(11, 11), a.q.reshape(11, 11))
    fa = fast.from_host(a)
    cases = {
        "scale_int": lambda ns, v: ns.scale_int(v, -7), "div_int": lambda ns, v: ns.div_int(v, 12),
        "div_int 0": lambda ns, v: ns.div_int(v, FIELDS[field].p), "mul_scalar": lambda ns, v: ns.mul_scalar(v, -0.375),
        "sum": lambda ns, v: ns.sum(v, 1), "sum all": lambda ns, v: ns.sum(v, (0, 1)),
        "amax": lambda ns, v: ns.amax(v, 0), "sum_strided": lambda ns, v: ns.sum_strided(v, -1, 11),
        "rms": lambda ns, v: ns.rms(v, 1, 11), "clamp": lambda ns, v: ns.clamp(v, -1.0, 1.0),
    }
    for name, fn in cases.items():
        _same(fast.to_host(fn(fast, fa)), fn(exact, a), name)


# --------------------------------------------------------------------------- the float64 bounds


def test_the_documented_slice_length() -> None:
    """The default field sums 128 centred products per GEMM slice: a 64-wide tile needs no split."""
    assert exact_terms(DEFAULT_FIELD.p) == 128
    assert exact_terms(DEFAULT_FIELD.q) >= 128
    assert 128 * bound(DEFAULT_FIELD.p) ** 2 < 2**53 <= 129 * bound(DEFAULT_FIELD.p) ** 2


@pytest.mark.parametrize("k", [1, 64, 127, 128, 129, 300])
@pytest.mark.parametrize("sign", ["same", "mixed"])
def test_matmul_at_the_largest_centred_magnitudes(k: int, sign: str) -> None:
    """Operands at ±B, the most a centred residue may hold: every slice's sum is still exact."""
    fast = CenteredFieldArith(DEFAULT_FIELD, "numpy")
    for m in (DEFAULT_FIELD.p, DEFAULT_FIELD.q):
        big = float(bound(m))
        a = np.full((3, k), big)
        b = np.full((k, 2), big if sign == "same" else -big)
        got = fast._matmul_mod(a, b, m)
        want = (int(bound(m)) ** 2 * k * (1 if sign == "same" else -1)) % m
        assert np.all(np.abs(got) <= bound(m))
        assert {int(x) % m for x in got.ravel()} == {want}


def test_centering_near_half_integers_and_at_the_limit() -> None:
    """c − m·rint(c/m) is congruent to c and within ±B, also where c/m is (nearly) a half-integer."""
    fast = CenteredFieldArith(DEFAULT_FIELD, "numpy")
    for m in (DEFAULT_FIELD.p, DEFAULT_FIELD.q):
        top = (2**53 - 1) // m
        ks = [0, 1, 2, top // 3, top - 1, top]
        cs = [s * (k * m + r) for k in ks for r in (0, 1, m // 2, m // 2 + 1, m - 1) for s in (1, -1)]
        cs = [c for c in cs if abs(c) < 2**53]
        got = fast._center(np.array(cs, dtype=np.float64), m)
        assert all(int(g) % m == c % m for g, c in zip(got, cs, strict=True))
        assert np.all(np.abs(got) <= bound(m))


@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("shape", [(), (5,), (3, 7), (2, 3 * (1 << 15) + 5)], ids=str)  # blocks and a tail
def test_draws_are_the_int64_paths_draws(field: str, shape: tuple[int, ...]) -> None:
    """The fast path centres the same packed draws that FieldArith reduces: identical trials, every residue
    within ±B, and each component the packed integer's residue (Z_pq ≅ Z_p × Z_q)."""
    exact, fast = _pair(FIELDS[field])
    p, q = FIELDS[field].p, FIELDS[field].q
    got, want = fast.random(shape, np.random.default_rng(3)), exact.random(shape, np.random.default_rng(3))
    _same(fast.lower(got), want, f"{field} draws of shape {shape}")
    assert np.all(np.abs(got.p) <= bound(p)) and np.all(np.abs(got.q) <= bound(q))
    packed = np.random.default_rng(3).integers(0, p * q, size=shape, dtype=np.int64)
    np.testing.assert_array_equal(want.p, packed % p)
    np.testing.assert_array_equal(want.q, packed % q)
    if packed.size > 1000:  # both components vary independently of each other (not x mod p = x mod q)
        assert np.mean(want.p % q == want.q) < 3 / q


def test_zero_components_stay_free_and_read_only() -> None:
    """exp leaves a zero-strided 0 in the q-part; matmul and sums skip it and the host gets real zeros."""
    fast = CenteredFieldArith(DEFAULT_FIELD, "numpy")
    x = fast.random((4, 8), np.random.default_rng(0))
    e = fast.exp(x)
    assert not any(e.q.strides) and not e.q.flags.writeable
    out = fast.matmul(e, fast.random((8, 3), np.random.default_rng(1)))
    assert not any(out.q.strides) and out.q.shape == (4, 3)
    host = fast.to_host(fast.sum(e, 1))
    assert host.q.dtype == np.int64 and host.q.flags.writeable and not host.q.any()


def test_large_fields_take_the_int64_path() -> None:
    assert type(verification_arith(LARGE_FIELD, "numpy")) is FieldArith
    assert type(verification_arith(DEFAULT_FIELD, "numpy")) is CenteredFieldArith
    with pytest.raises(UnsupportedOpError, match="too large"):
        CenteredFieldArith(LARGE_FIELD, "numpy")


def test_the_verifier_uses_the_fast_path_with_the_same_verdicts() -> None:
    from mirage_lab.verify import Verifier

    prog, good = programs.lora(1), fused.lora(1)
    assert isinstance(Verifier(prog).ns, CenteredFieldArith)
    assert isinstance(Verifier(prog, field=LARGE_FIELD).ns, FieldArith)
    for field in (DEFAULT_FIELD, LARGE_FIELD):
        r = ml.verify(good, prog, field=field)
        assert r.equivalent and len(r.trials) == 3
