"""The finite-field number system (SPEC §6): exact modular arithmetic, every rule against pure Python,
field validation, and the verifier's core property — equivalent μGraphs give identical fingerprints.

Expectations are computed with Python integers (``pow``, ``%``, numpy object arrays), never with the
code under test.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.semantics.field import (
    DEFAULT_FIELD,
    LARGE_FIELD,
    OP_RULES,
    REFERENCE_FIELD,
    FieldArith,
    FieldSpec,
    FieldValue,
    is_prime,
)

PHI = -1
FIELDS = {"default": DEFAULT_FIELD, "large": LARGE_FIELD, "reference": REFERENCE_FIELD}
FIELD_IDS = list(FIELDS)


@pytest.fixture(params=FIELD_IDS)
def ns(request: pytest.FixtureRequest) -> FieldArith:
    return FieldArith(FIELDS[request.param], "numpy")


def _moduli(ns: FieldArith) -> tuple[tuple[str, int], ...]:
    return (("p", ns.field.p), ("q", ns.field.q))


def _edge_and_random(m: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` residues mod m: the edge cases 0, 1, 2, m−2, m−1 first, then uniform ones."""
    edges = np.array([0, 1, 2, m - 2, m - 1], dtype=np.int64)
    return np.concatenate([edges, rng.integers(0, m, n - len(edges), dtype=np.int64)])


def _value(ns: FieldArith, rng: np.random.Generator, n: int = 64, shuffle: bool = False) -> FieldValue:
    p = _edge_and_random(ns.field.p, n, rng)
    q = _edge_and_random(ns.field.q, n, rng)
    if shuffle:  # pair edge cases of one operand with random values of the other
        p, q = rng.permutation(p), rng.permutation(q)
    return FieldValue(p, q)


def _comp(v: FieldValue, name: str) -> list[int]:
    return [int(x) for x in np.asarray(getattr(v, name)).ravel()]


def _inv(x: int, m: int, reference: bool) -> int:
    """Fermat's inverse; inv(0) is 0, or 1 under the reference's rules (SPEC §6.2)."""
    x %= m
    return pow(x, m - 2, m) if x else (1 if reference else 0)


def _assert_rule(got: FieldValue, want_p: list[int], want_q: list[int]) -> None:
    assert got.p.dtype == np.int64 and got.q.dtype == np.int64
    assert _comp(got, "p") == want_p
    assert _comp(got, "q") == want_q


# --------------------------------------------------------------------------- (a) modular matmul


def _exact_matmul(a: np.ndarray, b: np.ndarray, m: int) -> np.ndarray:
    """Python-integer matmul (object arrays broadcast like numpy), reduced mod m."""
    return (np.matmul(a.astype(object), b.astype(object)) % m).astype(np.int64)


def _chunk(m: int) -> int:
    """The reduction length per float64 GEMM in ``FieldArith._matmul_mod``: limb·b·chunk < 2^52."""
    bits = (m - 1).bit_length()
    limb = (bits + 1) // 2
    return max(1, 2 ** (52 - limb - bits))


def _max_limb(m: int) -> int:
    """The residue below m whose low limb is all ones and whose high limb is as large as possible."""
    limb = ((m - 1).bit_length() + 1) // 2
    v = ((m - 1) >> limb << limb) | ((1 << limb) - 1)
    return v if v < m else v - (1 << limb)


def _operand(kind: str, shape: tuple[int, ...], m: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "max":
        return np.full(shape, m - 1, dtype=np.int64)
    if kind == "max_limb":
        return np.full(shape, _max_limb(m), dtype=np.int64)
    return rng.integers(0, m, shape, dtype=np.int64)


def _check_matmul(ns: FieldArith, a: FieldValue, b: FieldValue) -> None:
    got = ns.matmul(a, b)
    for comp, m in _moduli(ns):
        want = _exact_matmul(getattr(a, comp), getattr(b, comp), m)
        np.testing.assert_array_equal(getattr(got, comp), want, err_msg=f"component {comp} (mod {m})")
    assert got.p.dtype == np.int64 and got.q.dtype == np.int64


def test_chunk_lengths_are_the_documented_ones() -> None:
    """LARGE_FIELD splits the reduction into GEMMs of 32, the default field into 2^16."""
    assert _chunk(LARGE_FIELD.p) == 32
    assert _chunk(DEFAULT_FIELD.p) == 2**16
    assert _chunk(REFERENCE_FIELD.p) > 2**30


@pytest.mark.parametrize("kind", ["random", "max", "max_limb"])
@pytest.mark.parametrize("k", [1, 7, 64])
def test_matmul_matches_python_integers(ns: FieldArith, kind: str, k: int) -> None:
    rng = np.random.default_rng(k)
    shapes = ((5, k), (k, 3))
    a = FieldValue(*(_operand(kind, shapes[0], m, rng) for _, m in _moduli(ns)))
    b = FieldValue(*(_operand("max" if kind == "max" else "random", shapes[1], m, rng) for _, m in _moduli(ns)))
    _check_matmul(ns, a, b)


@pytest.mark.parametrize("kind", ["random", "max", "max_limb"])
@pytest.mark.parametrize("offset", [-1, 0, 1, 33])
def test_matmul_across_the_chunk_boundary_large_field(kind: str, offset: int) -> None:
    """k just below, at and above a GEMM chunk (32 for p ≈ 2^31), and over two chunks."""
    ns = FieldArith(LARGE_FIELD, "numpy")
    k = _chunk(LARGE_FIELD.p) + offset
    rng = np.random.default_rng(100 + offset)
    a = FieldValue(*(_operand(kind, (4, k), m, rng) for _, m in _moduli(ns)))
    b = FieldValue(*(_operand("max" if kind != "random" else "random", (k, 6), m, rng) for _, m in _moduli(ns)))
    _check_matmul(ns, a, b)


@pytest.mark.parametrize("offset", [-1, 1])
def test_matmul_across_the_chunk_boundary_default_field(offset: int) -> None:
    """The default field's chunk is 2^16: worst-case operands over k = 2^16 ± 1 stay exact."""
    ns = FieldArith(DEFAULT_FIELD, "numpy")
    k = _chunk(DEFAULT_FIELD.p) + offset
    rng = np.random.default_rng(7)
    a = FieldValue(*(np.stack([_operand("max", (k,), m, rng), _operand("max_limb", (k,), m, rng)])
                     for _, m in _moduli(ns)))
    b = FieldValue(*(np.stack([_operand("max", (k,), m, rng), _operand("random", (k,), m, rng)], axis=1)
                     for _, m in _moduli(ns)))
    _check_matmul(ns, a, b)


BATCHED = {
    "same_batch": ((3, 4, 5), (3, 5, 2)),  # trivial plan: plain batched GEMM
    "a_only_batch": ((3, 4, 5), (1, 5, 2)),  # folded into A's rows
    "b_only_batch": ((1, 4, 5), (3, 5, 2)),  # folded into B's columns
    "both_directions": ((3, 1, 4, 5), (1, 2, 5, 6)),
    "block_layout": ((2, 1, 1, 3, 4, 33), (2, 4, 1, 1, 33, 2)),  # (gx, gy, gz, f, *tile); k over a chunk
    "shared_size_one": ((1, 3, 2, 4), (1, 1, 4, 3)),
    "rank_mismatch": ((4, 5), (3, 5, 2)),
}


@pytest.mark.parametrize("case", list(BATCHED))
def test_batched_and_broadcast_matmul(ns: FieldArith, case: str) -> None:
    sa, sb = BATCHED[case]
    rng = np.random.default_rng(len(case))
    a = FieldValue(*(_operand("random", sa, m, rng) for _, m in _moduli(ns)))
    b = FieldValue(*(_operand("random", sb, m, rng) for _, m in _moduli(ns)))
    _check_matmul(ns, a, b)


def test_batched_matmul_worst_case_large_field() -> None:
    ns = FieldArith(LARGE_FIELD, "numpy")
    rng = np.random.default_rng(1)
    a = FieldValue(*(_operand("max", (3, 1, 4, 65), m, rng) for _, m in _moduli(ns)))
    b = FieldValue(*(_operand("max", (1, 2, 65, 3), m, rng) for _, m in _moduli(ns)))
    _check_matmul(ns, a, b)


# --------------------------------------------------------------------------- (b) elementwise rules


def test_add_sub_mul(ns: FieldArith) -> None:
    rng = np.random.default_rng(0)
    a, b = _value(ns, rng), _value(ns, rng, shuffle=True)
    for name, fn in (("add", lambda x, y: x + y), ("sub", lambda x, y: x - y), ("mul", lambda x, y: x * y)):
        got = getattr(ns, name)(a, b)
        want = {c: [fn(x, y) % m for x, y in zip(_comp(a, c), _comp(b, c), strict=True)] for c, m in _moduli(ns)}
        _assert_rule(got, want["p"], want["q"])
    sq = ns.square(a)
    _assert_rule(sq, [x * x % ns.field.p for x in _comp(a, "p")], [x * x % ns.field.q for x in _comp(a, "q")])


def test_div_is_multiplication_by_the_fermat_inverse(ns: FieldArith) -> None:
    rng = np.random.default_rng(1)
    a, b = _value(ns, rng), _value(ns, rng, shuffle=True)
    ref = ns.field.reference_rules
    got = ns.div(a, b)
    want = {c: [x * _inv(y, m, ref) % m for x, y in zip(_comp(a, c), _comp(b, c), strict=True)]
            for c, m in _moduli(ns)}
    _assert_rule(got, want["p"], want["q"])
    for comp, m in _moduli(ns):  # (a / b)·b = a wherever b ≠ 0
        for z, x, y in zip(_comp(got, comp), _comp(a, comp), _comp(b, comp), strict=True):
            assert y == 0 or z * y % m == x


def test_division_by_zero_follows_the_rule_set() -> None:
    """x/0 = 0 with our rules (Fermat: 0^(m−2) = 0); x/0 = x with the reference's inv(0) := 1."""
    x = FieldValue(np.array([0, 5, 166]), np.array([0, 7, 82]))
    zero = FieldValue(np.zeros(3, dtype=np.int64), np.zeros(3, dtype=np.int64))
    ours = FieldArith(FieldSpec(167, 83, 3), "numpy").div(x, zero)
    theirs = FieldArith(REFERENCE_FIELD, "numpy").div(x, zero)
    assert _comp(ours, "p") == [0, 0, 0] and _comp(ours, "q") == [0, 0, 0]
    assert theirs.equals(x)
    big = FieldArith(DEFAULT_FIELD, "numpy")
    assert _comp(big.div(FieldValue(np.array([9]), np.array([9])), FieldValue(np.array([0]), np.array([0]))),
                 "p") == [0]


def test_exp_is_omega_to_the_q_component(ns: FieldArith) -> None:
    rng = np.random.default_rng(2)
    x = _value(ns, rng, n=200, shuffle=True)
    got = ns.exp(x)
    _assert_rule(got, [pow(ns.field.omega, e, ns.field.p) for e in _comp(x, "q")], [0] * 200)


def test_exp_is_a_homomorphism_from_addition_mod_q(ns: FieldArith) -> None:
    """ω has order q, so exp(a + b) = exp(a)·exp(b) on the p-component — the reason exp is testable."""
    rng = np.random.default_rng(3)
    a, b = _value(ns, rng, shuffle=True), _value(ns, rng, shuffle=True)
    assert ns.exp(ns.add(a, b)).p.tolist() == ns.mul(ns.exp(a), ns.exp(b)).p.tolist()


def test_sqrt_rule_and_true_roots_of_residues(ns: FieldArith) -> None:
    rng = np.random.default_rng(4)
    x = _value(ns, rng, n=100)
    got = ns.sqrt(x)
    want = {c: [pow(v, (m + 1) // 4, m) for v in _comp(x, c)] for c, m in _moduli(ns)}
    _assert_rule(got, want["p"], want["q"])
    residues = ns.square(x)  # quadratic residues: the rule returns a true root
    root = ns.sqrt(residues)
    assert ns.square(root).equals(residues)


def test_rms_rule(ns: FieldArith) -> None:
    """rms = sqrt(Σx² · inv(n)) per row, with n reduced mod p and mod q (inv(0) by the rule set)."""
    rng = np.random.default_rng(5)
    x = FieldValue(_edge_and_random(ns.field.p, 24, rng).reshape(3, 8),
                   _edge_and_random(ns.field.q, 24, rng).reshape(3, 8))
    ref = ns.field.reference_rules
    for count in (8, 4096, ns.field.q, ns.field.p, 2**40 + 3):
        got = ns.rms(x, -1, count)
        assert got.shape == (3, 1)
        for comp, m in _moduli(ns):
            rows = np.asarray(getattr(x, comp)).tolist()
            want = [pow(sum(v * v for v in row) * _inv(count, m, ref) % m, (m + 1) // 4, m) for row in rows]
            assert _comp(got, comp) == want, (comp, count)


def test_scale_int_and_div_int(ns: FieldArith) -> None:
    rng = np.random.default_rng(6)
    x = _value(ns, rng)
    ref = ns.field.reference_rules
    for n in (0, 1, 3, -5, 4096, ns.field.q, ns.field.p + 2, 2**40 + 1, -(2**45)):
        got = ns.scale_int(x, n)
        _assert_rule(got, [v * n % ns.field.p for v in _comp(x, "p")], [v * n % ns.field.q for v in _comp(x, "q")])
        got = ns.div_int(x, n)
        want = {c: [v * _inv(n, m, ref) % m for v in _comp(x, c)] for c, m in _moduli(ns)}
        _assert_rule(got, want["p"], want["q"])


def test_mul_scalar_is_exact_for_dyadic_floats(ns: FieldArith) -> None:
    """A finite float n/2^k is the field element n·inv(2^k): the real identities hold exactly."""
    rng = np.random.default_rng(7)
    x = _value(ns, rng)
    zero = ns.sub(x, x)
    half = ns.mul_scalar(x, 0.5)
    assert ns.add(half, half).equals(x)
    assert ns.mul_scalar(x, 3.0).equals(ns.add(ns.add(x, x), x))
    assert ns.scale_int(ns.mul_scalar(x, -0.125), -8).equals(x)
    assert ns.add(ns.mul_scalar(x, -0.125), ns.mul_scalar(x, 0.125)).equals(zero)
    assert ns.mul_scalar(x, 0.75).equals(ns.add(half, ns.mul_scalar(x, 0.25)))
    assert ns.mul_scalar(ns.mul_scalar(x, 0.5), 2.0).equals(x)
    assert ns.mul_scalar(x, 1.0).equals(x)
    assert ns.mul_scalar(x, 0.0).equals(zero)
    # the rule itself: c = n / 2^k ↦ x·n·inv(2^k) per component
    for c, (num, den) in ((0.5, (1, 2)), (3.0, (3, 1)), (-0.125, (-1, 8)), (0.1, (0.1).as_integer_ratio())):
        got = ns.mul_scalar(x, c)
        want = {k: [v * num * pow(den, -1, m) % m for v in _comp(x, k)] for k, m in _moduli(ns)}
        _assert_rule(got, want["p"], want["q"])


@pytest.mark.parametrize(("shape", "axis", "groups"), [((2, 12), -1, 3), ((12, 2), -2, 4), ((2, 3, 8), -1, 8),
                                                        ((2, 3, 8), -1, 1), ((6, 5), -2, 2)])
def test_sum_strided_grouping(ns: FieldArith, shape: tuple[int, ...], axis: int, groups: int) -> None:
    """out[j] = Σ_k x[j + k·groups] along ``axis`` (SPEC §2), mod each prime."""
    rng = np.random.default_rng(8)
    x = FieldValue(rng.integers(0, ns.field.p, shape, dtype=np.int64),
                   rng.integers(0, ns.field.q, shape, dtype=np.int64))
    x.p.ravel()[:3] = ns.field.p - 1
    got = ns.sum_strided(x, axis, groups)
    for comp, m in _moduli(ns):
        a = np.moveaxis(getattr(x, comp).astype(object), axis, -1)
        n = a.shape[-1]
        want = np.stack([sum(a[..., j + k * groups] for k in range(n // groups)) % m for j in range(groups)], -1)
        np.testing.assert_array_equal(getattr(got, comp), np.moveaxis(want, -1, axis).astype(np.int64))


def test_sum_of_worst_case_residues_large_field() -> None:
    ns = FieldArith(LARGE_FIELD, "numpy")
    n = 1 << 16
    x = FieldValue(np.full((2, n), LARGE_FIELD.p - 1, dtype=np.int64), np.full((2, n), LARGE_FIELD.q - 1,
                                                                               dtype=np.int64))
    got = ns.sum(x, -1)
    assert _comp(got, "p") == [n * (LARGE_FIELD.p - 1) % LARGE_FIELD.p] * 2
    assert _comp(got, "q") == [n * (LARGE_FIELD.q - 1) % LARGE_FIELD.q] * 2


def test_heuristic_rules(ns: FieldArith) -> None:
    """The documented fingerprints of the non-LAX ops (SPEC §6.2; our sigmoid-based silu/gelu by default)."""
    rng = np.random.default_rng(9)
    x, y = _value(ns, rng, shuffle=True), _value(ns, rng, shuffle=True)
    p, q, w = ns.field.p, ns.field.q, ns.field.omega
    xp_, xq = _comp(x, "p"), _comp(x, "q")
    zeros = [0] * len(xq)

    def sig(e: int) -> int:
        return e * _inv(e + 1, p, ns.field.reference_rules) % p

    _assert_rule(ns.sigmoid(x), [sig(pow(w, e, p)) for e in xq], zeros)
    if ns.field.reference_rules:
        _assert_rule(ns.silu(x), [a * pow(w, a, p) % p for a in xq], zeros)
        _assert_rule(ns.gelu(x), [a * pow(w, 2 * a % q, p) % p for a in xq], zeros)
    else:
        _assert_rule(ns.silu(x), [a * sig(pow(w, e, p)) % p for a, e in zip(xp_, xq, strict=True)], zeros)
        assert ns.silu(x).p.tolist() == ns.mul(x, ns.sigmoid(x)).p.tolist()
        _assert_rule(ns.gelu(x), [a * sig(pow(w, 2 * e % q, p)) % p for a, e in zip(xp_, xq, strict=True)], zeros)
    for comp, m in _moduli(ns):
        vals = _comp(x, comp)
        assert _comp(ns.relu(x), comp) == [max(v, m // 2) for v in vals]
        assert _comp(ns.clamp(x, -1.0, 1.0), comp) == [min(max(v, m // 3), 2 * m // 3) for v in vals]
        assert _comp(ns.pow(x, y), comp) == [pow(v, e, m) for v, e in zip(vals, _comp(y, "q"), strict=True)]
        assert _comp(ns.maximum(x, y), comp) == [max(a, b) for a, b in zip(vals, _comp(y, comp), strict=True)]
    with pytest.raises(ml.MirageError, match="log"):
        ns.log(x)
    assert {"add", "matmul", "exp", "sqrt", "silu", "log"} <= set(OP_RULES)


def test_embedding_random_draws_and_host_round_trip(ns: FieldArith) -> None:
    ints = np.array([[-3, -1, 0], [1, 2**40, ns.field.p + 5]])
    v = ns.from_host(ints)
    for comp, m in _moduli(ns):
        assert _comp(v, comp) == [int(i) % m for i in ints.ravel()]
    r1 = ns.random((4, 50), np.random.default_rng(11))
    r2 = ns.random((4, 50), np.random.default_rng(11))
    assert r1.equals(r2) and r1.shape == (4, 50)
    assert r1.p.min() >= 0 and r1.q.min() >= 0
    assert r1.p.max() < ns.field.p and r1.q.max() < ns.field.q
    assert ns.to_host(r1).equals(r1)
    assert ns.from_host(r1).equals(r1)


# --------------------------------------------------------------------------- (c) field validation


SAFE_PRIME_ABOVE_2_31 = 2_147_483_783  # = 2·1 073 741 891 + 1, both prime and ≡ 3 (mod 4)


@pytest.mark.parametrize(("p", "q", "omega", "problem"), [
    (15, 7, 4, "must be prime"),  # p composite
    (23, 9, 4, "must be prime"),  # q composite
    (23, 7, 4, "q must divide p − 1"),
    (23, 11, 5, "order exactly q"),  # 5 is a non-residue mod 23: order 22
    (23, 11, 1, "order exactly q"),
    (23, 11, 24, "order exactly q"),  # ≡ 1 (mod p)
    (23, 11, 0, "order exactly q"),
    (29, 7, 7, "3 (mod 4)"),  # p ≡ 1 (mod 4)
    (11, 5, 3, "3 (mod 4)"),  # q ≡ 1 (mod 4)
    (SAFE_PRIME_ABOVE_2_31, SAFE_PRIME_ABOVE_2_31 // 2, 4, "below 2^31"),
])
def test_field_spec_rejects_invalid_fields(p: int, q: int, omega: int, problem: str) -> None:
    with pytest.raises(ml.MirageError, match="invalid field") as err:
        FieldSpec(p, q, omega)
    assert problem in str(err.value)
    assert f"p={p}" in str(err.value)


def test_the_invalid_fields_of_the_table_are_otherwise_well_formed() -> None:
    """Each row above breaks one rule only (else the message test proves little)."""
    assert is_prime(SAFE_PRIME_ABOVE_2_31) and is_prime(SAFE_PRIME_ABOVE_2_31 // 2)
    assert pow(4, SAFE_PRIME_ABOVE_2_31 // 2, SAFE_PRIME_ABOVE_2_31) == 1
    assert pow(7, 7, 29) == 1 and pow(3, 5, 11) == 1
    FieldSpec(23, 11, 2)  # 2 = 5² is a residue ≠ 1 mod 23: order 11


def test_named_fields_are_valid() -> None:
    for f in (DEFAULT_FIELD, LARGE_FIELD, REFERENCE_FIELD):
        assert is_prime(f.p) and is_prime(f.q) and (f.p - 1) % f.q == 0
        assert pow(f.omega, f.q, f.p) == 1 and f.omega % f.p != 1
        assert f.p % 4 == 3 and f.q % 4 == 3 and f.p < 2**31
    assert (DEFAULT_FIELD.p, DEFAULT_FIELD.q, DEFAULT_FIELD.omega) == (16_774_463, 8_387_231, 4)
    assert DEFAULT_FIELD.p == 2 * DEFAULT_FIELD.q + 1
    assert 128 * ((DEFAULT_FIELD.p + 3) // 2) ** 2 < 2**53  # residues kept centred in float64 stay exact
    assert (REFERENCE_FIELD.p, REFERENCE_FIELD.q, REFERENCE_FIELD.omega) == (167, 83, 3)
    assert REFERENCE_FIELD.reference_rules and not DEFAULT_FIELD.reference_rules
    assert FieldSpec(1_048_343, 524_171, 4)  # SPEC §6.5's float64-BLAS-friendly field


def test_default_field_sqrt_respects_small_scalars() -> None:
    """2 and 3 are quadratic residues mod p and q, so sqrt(c²·s) = |c|·sqrt(s) for c built from
    them, dyadic and negative c included (the root is multiplicative and −1 a non-residue)."""
    ns = FieldArith(DEFAULT_FIELD)
    for m in (DEFAULT_FIELD.p, DEFAULT_FIELD.q):
        assert all(pow(c, (m - 1) // 2, m) == 1 for c in (2, 3)), m
    s = ns.random((64,), np.random.default_rng(0))
    for c in (2, 3, 4, 6, 12, 0.5, 0.25, 1.5, 2**11 * 3, -2, -0.5):
        scaled = ns.mul_scalar(s, c)
        lhs = ns.sqrt(ns.mul(scaled, scaled))
        rhs = ns.mul_scalar(ns.sqrt(ns.mul(s, s)), abs(c))
        assert lhs.equals(rhs), c


def test_is_prime_against_trial_division() -> None:
    def slow(n: int) -> bool:
        return n > 1 and all(n % d for d in range(2, int(n**0.5) + 1))

    assert [n for n in range(2000) if is_prime(n)] == [n for n in range(2000) if slow(n)]
    assert not is_prime(3_215_031_751)  # strong pseudoprime to bases 2, 3, 5, 7
    assert not is_prime(DEFAULT_FIELD.p * DEFAULT_FIELD.q)


# --------------------------------------------------------------------------- (d) programs vs fused graphs


def _field_inputs(g: ml.KernelGraph, ns: FieldArith, seed: int) -> list[FieldValue]:
    rng = np.random.default_rng(seed)
    return [ns.random(t.dims, rng) for t in g.input_types]


def _run(g: ml.KernelGraph, ins: list[FieldValue], ns: FieldArith) -> FieldValue:
    (out,) = ml.interpret(g, ins, ns=ns)
    assert isinstance(out, FieldValue)
    return out


@pytest.fixture(scope="module")
def program_outputs() -> dict[str, tuple[list[FieldValue], FieldValue]]:
    """Each program's random inputs and field output at batch 1 (default field), computed once."""
    ns = FieldArith(DEFAULT_FIELD, "numpy")
    out = {}
    for name in fused.FUSED:
        prog = programs.PROGRAMS[name](1)
        ins = _field_inputs(prog, ns, seed=sorted(fused.FUSED).index(name))
        out[name] = (ins, _run(prog, ins, ns))
    return out


@pytest.mark.parametrize("name", list(fused.FUSED))
def test_fused_graph_has_the_programs_fingerprint(name: str,
                                                  program_outputs: dict[str, tuple[list[FieldValue], FieldValue]]
                                                  ) -> None:
    """The verifier's core property: a hand-written fused μGraph equals its program over the field,
    exactly, in both components."""
    ns = FieldArith(DEFAULT_FIELD, "numpy")
    ins, want = program_outputs[name]
    got = _run(fused.FUSED[name](1), ins, ns)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.p, want.p)
    np.testing.assert_array_equal(got.q, want.q)
    assert want.p.any() and len(np.unique(want.p)) > want.p.size // 2  # not a degenerate fingerprint


@pytest.mark.parametrize(("name", "field"), [("lora", "large"), ("lora", "reference")])
def test_fused_graph_fingerprint_in_other_fields(name: str, field: str) -> None:
    """(rmsnorm in the reference field: ``test_tiling_invariance_in_the_reference_field``.)"""
    ns = FieldArith(FIELDS[field], "numpy")
    prog = programs.PROGRAMS[name](1)
    ins = _field_inputs(prog, ns, seed=5)
    assert _run(fused.FUSED[name](1), ins, ns).equals(_run(prog, ins, ns))


def test_swapped_same_shape_inputs_change_the_fingerprint(
        program_outputs: dict[str, tuple[list[FieldValue], FieldValue]]) -> None:
    """GatedMLP with W1 ↔ W2 is a different function; random field inputs see it (the reference's older
    identical fingerprints for same-shape inputs could not, SPEC §6.4)."""
    ns = FieldArith(DEFAULT_FIELD, "numpy")
    (x, w1, w2), want = program_outputs["gated_mlp"]
    got = _run(fused.gated_mlp(1), [x, w2, w1], ns)
    assert got.shape == want.shape
    assert (got.p != want.p).mean() > 0.99


def test_a_wrong_program_changes_the_fingerprint() -> None:
    """nTrans with H ↔ X swapped: three same-shape inputs, no fused graph needed."""
    ns = FieldArith(DEFAULT_FIELD, "numpy")
    prog = programs.ntrans(1)
    h, x, a = _field_inputs(prog, ns, seed=3)
    assert not _run(prog, [x, h, a], ns).equals(_run(prog, [h, x, a], ns))


# --------------------------------------------------------------------------- (e) tiling invariance


def _rmsnorm_tiled(grid: tuple[int, int, int], forloop: int) -> ml.KernelGraph:
    """bench/fused.rmsnorm with another grid / for-loop split; the grid axis in use tiles W's columns."""
    axis = next(i for i, n in enumerate(grid) if n > 1)
    imap = tuple(1 if i == axis else PHI for i in range(3))
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(2, 4096), dtype=ml.float16)
    w = g.new_input(dims=(4096, 6144), dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=grid, forloop_range=forloop)
    tx = tb.new_input(dtensor=x, input_map=(PHI, PHI, PHI), forloop_dim=1)
    tw = tb.new_input(dtensor=w, input_map=imap, forloop_dim=0)
    rms = tb.forloop_accum(tx, "rms")
    acc = tb.forloop_accum(tb.matmul(tx, tw))
    tb.new_output(stensor=tb.div(acc, rms), output_map=imap)
    (out,) = g.customized([x, w], tb)
    g.mark_output(out)
    return g.freeze()


def _gqa_tiled(gy: int, gz: int, forloop: int) -> ml.KernelGraph:
    """bench/fused.gqa at batch 1 with another (gy, gz, F) split of the KV and query dims."""
    return fused.gqa(1, split=(gy, gz, forloop))


@pytest.mark.parametrize(("grid", "forloop"), [((64, 1, 1), 16), ((1, 768, 1), 64), ((1, 1, 24), 128)])
def test_rmsnorm_fingerprint_does_not_depend_on_the_tiling(
        grid: tuple[int, int, int], forloop: int, program_outputs: dict[str, tuple[list[FieldValue], FieldValue]]
        ) -> None:
    ns = FieldArith(DEFAULT_FIELD, "numpy")
    ins, want = program_outputs["rmsnorm"]
    assert _run(fused.rmsnorm(1), ins, ns).equals(want)
    tiled = _rmsnorm_tiled(grid, forloop)
    assert tiled.compute_nodes[0].body is not None
    got = _run(tiled, ins, ns)
    np.testing.assert_array_equal(got.p, want.p)
    np.testing.assert_array_equal(got.q, want.q)


@pytest.mark.parametrize(("gy", "gz", "forloop"), [(4, 8, 2), (8, 2, 8)])
def test_gqa_fingerprint_does_not_depend_on_the_tiling(
        gy: int, gz: int, forloop: int, program_outputs: dict[str, tuple[list[FieldValue], FieldValue]]) -> None:
    ns = FieldArith(DEFAULT_FIELD, "numpy")
    ins, want = program_outputs["gqa"]
    assert _run(_gqa_tiled(gy, gz, forloop), ins, ns).equals(want)


def test_tiling_invariance_in_the_reference_field() -> None:
    """Over (167, 83) too, where rms and sums hit 0 often: every tiling yields the same integers."""
    ns = FieldArith(REFERENCE_FIELD, "numpy")
    ins = _field_inputs(programs.rmsnorm(1), ns, seed=9)
    results: list[Callable[[], FieldValue]] = [
        lambda: _run(programs.rmsnorm(1), ins, ns),
        lambda: _run(fused.rmsnorm(1), ins, ns),
        lambda: _run(_rmsnorm_tiled((128, 1, 1), 8), ins, ns),
    ]
    first, *rest = (r() for r in results)
    assert all(first.equals(r) for r in rest)
