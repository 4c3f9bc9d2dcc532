"""The finite-field number system of probabilistic verification (SPEC §6).

A value is a pair ``(a_p, a_q) ∈ Z_p × Z_q`` kept as two int64 arrays. ``q | p − 1``
and ``ω`` has order q in Z_p*, so ``exp(x)`` can be evaluated as ``ω^(x mod q)``: the
q-component tracks values used as exponents. The same interpreter that runs floats
runs this arithmetic (``FieldArith`` implements ``NumberSystem``).

Overflow safety: every stored residue is below 2^31, so an elementwise product stays
below 2^62. Matmuls run as float64 BLAS GEMMs, which are *exact* here: one operand is
split into two limbs and the reduction dimension into chunks short enough that every
partial sum is an integer below 2^53. Exact integer results do not depend on summation
order, so numpy and CuPy agree bit for bit.

Each op's standing (SPEC §6.2) is declared in the op table (``OpSpec.field``) and listed here as ``OP_RULES``;
ops that are not exact carry no correctness claim and make a verification's error bound heuristic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from types import ModuleType
from typing import Any

import numpy as np

from mirage_lab.errors import InputError, UnsupportedOpError
from mirage_lab.ir.ops import OPS, Kind
from mirage_lab.semantics.arith import Axes, concat_shapes, strided_groups
from mirage_lab.semantics.backend import array_module, to_numpy
from mirage_lab.semantics.fold import fold_plan

EXACT_BITS = 53  # float64 represents every integer below 2^53


def is_prime(n: int) -> bool:
    """Deterministic Miller–Rabin for n < 3.3·10^24."""
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
    if n in small:
        return True
    if any(n % s == 0 for s in small):
        return False
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


@dataclass(frozen=True)
class FieldSpec:
    """The primes, the generator and the rule set of one verification field."""

    #: p = 2q + 1, and 2 and 3 are quadratic residues modulo both p and q, so the root v^((m+1)/4) is
    #: multiplicative without sign flips: sqrt(c²·s) = |c|·sqrt(s) for c = ±2^a·3^b (dyadic scalars
    #: included). The largest such p with 128·((p+3)/2)² < 2^53 (scripts/find_field.py; docs/decisions.md).
    p: int = 16_774_463
    q: int = 8_387_231
    omega: int = 4
    #: reproduce the reference's rules (inv(0) = 1, its silu/gelu fingerprints): parity mode only
    reference_rules: bool = False

    def __post_init__(self) -> None:
        p, q, w = self.p, self.q, self.omega
        problems = []
        if not (is_prime(p) and is_prime(q)):
            problems.append("p and q must be prime")
        elif (p - 1) % q:
            problems.append("q must divide p − 1")
        elif pow(w, q, p) != 1 or w % p in (0, 1):
            problems.append(f"ω = {w} must have order exactly q = {q} modulo p = {p}")
        if p % 4 != 3 or q % 4 != 3:
            problems.append("p ≡ q ≡ 3 (mod 4) is needed for the square-root rule")
        if p >= 2**31:
            problems.append("p must be below 2^31 so that int64 products cannot overflow")
        if problems:
            raise UnsupportedOpError(f"invalid field (p={p}, q={q}, ω={w}): {'; '.join(problems)}")

    def __str__(self) -> str:
        return f"Z_{self.p} × Z_{self.q} (ω={self.omega}{', reference rules' if self.reference_rules else ''})"


DEFAULT_FIELD = FieldSpec()
LARGE_FIELD = FieldSpec(2_147_481_143, 1_073_740_571, 4)
REFERENCE_FIELD = FieldSpec(167, 83, 3, reference_rules=True)

#: op name → standing of its field rule: "exact" (a ring/field identity), "conjecture" (exp's ω^x,
#: sound only under a number-theoretic conjecture), "heuristic" (a deterministic fingerprint, no claim)
#: each computing op's standing in the field (SPEC §6.2), from the op table's ``field`` (its reason there says why
#: an op is not exact)
OP_RULES: dict[str, str] = {op.value: spec.field.standing for op, spec in OPS.items()
                            if spec.field is not None and spec.kind not in (Kind.IO, Kind.CUSTOMIZED)}


@dataclass(frozen=True, eq=False)
class FieldValue:
    """A tensor over Z_p × Z_q: two int64 arrays of the same shape."""

    p: Any
    q: Any

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.p.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def equals(self, other: FieldValue) -> bool:
        return self.shape == other.shape and bool((self.p == other.p).all()) and bool((self.q == other.q).all())

    def __repr__(self) -> str:
        return f"FieldValue(shape={self.shape})"


def draw_packed(field: FieldSpec, shape: Sequence[int], rng: np.random.Generator) -> np.ndarray:
    """One uniform integer x in [0, p·q) per element, on the host. By the Chinese remainder theorem
    (x mod p, x mod q) is then uniform on Z_p × Z_q: the same distribution as two independent draws, at half
    the draws (every number system derives its residues from these, so all of them see the same trials)."""
    return rng.integers(0, field.p * field.q, size=tuple(shape), dtype=np.int64)


class FieldArith:
    """Arithmetic over Z_p × Z_q on numpy or CuPy (implements ``NumberSystem``)."""

    def __init__(self, field: FieldSpec = DEFAULT_FIELD, backend: str | None = None) -> None:
        self.field = field
        self.xp: ModuleType = array_module(backend)
        self.name = f"field:{field.p}:{field.q}:{self.xp.__name__}"
        self.element_bytes = 16  # an int64 residue mod p and one mod q
        self._tables: tuple[Any, Any] | None = None

    def __repr__(self) -> str:
        return f"FieldArith({self.field}, backend={self.xp.__name__!r})"

    # -- values ---------------------------------------------------------------------
    def _map(self, fn: Callable[..., Any], *vs: FieldValue) -> FieldValue:
        """Apply ``fn(*components, m)`` to the p- and the q-components."""
        return FieldValue(fn(*(v.p for v in vs), self.field.p), fn(*(v.q for v in vs), self.field.q))

    def from_host(self, a: Any) -> FieldValue:
        if isinstance(a, FieldValue):
            return FieldValue(self.xp.asarray(a.p, dtype=np.int64), self.xp.asarray(a.q, dtype=np.int64))
        arr = self.xp.asarray(a)
        if arr.dtype.kind == "f" and not bool((arr == self.xp.floor(arr)).all()):
            raise InputError("finite-field inputs must be integers (or FieldValue pairs); got non-integral "
                             "floats. Use FieldArith.random(...) or round the values first")
        ints = arr.astype(np.int64)  # an integer tensor embeds as (x mod p, x mod q)
        return self._map(lambda x, m: x % m, FieldValue(ints, ints))

    def to_host(self, v: FieldValue) -> FieldValue:
        return FieldValue(to_numpy(v.p), to_numpy(v.q))

    def random(self, shape: Sequence[int], rng: np.random.Generator) -> FieldValue:
        """Uniform on Z_p × Z_q, drawn on the host so every backend sees the same numbers."""
        return self.from_host(draw_packed(self.field, shape, rng))  # (x mod p, x mod q)

    def restrict(self, v: FieldValue, live: frozenset[str]) -> FieldValue:
        """``v`` for a graph that reads only its ``live`` components (semantics/liveness.py). The int64
        path keeps every component: its zeros would be real arrays, and it is not the fast path."""
        return v

    def structural(self, fn: Callable[..., Any], *vs: FieldValue) -> FieldValue:
        return FieldValue(fn(*(v.p for v in vs)), fn(*(v.q for v in vs)))

    def shape(self, v: FieldValue) -> tuple[int, ...]:
        return v.shape

    # -- ring operations ----------------------------------------------------------------
    def add(self, a: FieldValue, b: FieldValue) -> FieldValue:
        return self._map(lambda x, y, m: (x + y) % m, a, b)

    def sub(self, a: FieldValue, b: FieldValue) -> FieldValue:
        return self._map(lambda x, y, m: (x - y) % m, a, b)

    def mul(self, a: FieldValue, b: FieldValue) -> FieldValue:
        return self._map(lambda x, y, m: x * y % m, a, b)

    def square(self, x: FieldValue) -> FieldValue:
        return self.mul(x, x)

    def _powmod(self, base: Any, exp: Any, m: int) -> Any:
        """Elementwise ``base^exp mod m`` by square-and-multiply over a fixed number of bits."""
        xp = self.xp
        base, exp = xp.broadcast_arrays(base % m, exp)
        result = xp.ones(base.shape, dtype=np.int64)
        bits = max(int(m).bit_length(), 1) + 1
        e = exp.copy()
        for _ in range(bits):
            result = xp.where(e & 1, result * base % m, result)
            base = base * base % m
            e = e >> 1
        return result

    def inverse(self, x: Any, m: int) -> Any:
        """Elementwise inverse of canonical residues mod m (one component)."""
        inv = self._powmod(x, self.xp.full(x.shape, m - 2, dtype=np.int64), m)  # Fermat: 0 ↦ 0
        if self.field.reference_rules:
            inv = self.xp.where(x % m == 0, 1, inv)  # the reference's inv(0) := 1, so x/0 = x
        return inv

    def div(self, a: FieldValue, b: FieldValue) -> FieldValue:
        return self._map(lambda x, y, m: x * self.inverse(y, m) % m, a, b)

    def scale_int(self, x: FieldValue, n: int) -> FieldValue:
        return self._map(lambda v, m: v * (n % m) % m, x)

    def div_int(self, x: FieldValue, n: int) -> FieldValue:
        return self._map(lambda v, m: v * self.int_inverse(n, m) % m, x)

    def int_inverse(self, n: int, m: int) -> int:
        """The inverse of the integer n mod m, under the same rule for 0 as ``inverse``."""
        r = n % m
        return pow(r, -1, m) if r else (1 if self.field.reference_rules else 0)

    def mul_scalar(self, x: FieldValue, c: float) -> FieldValue:
        """Exact: a finite float is a dyadic rational n / 2^k, which the field holds as n·(2^k)^(-1)."""
        frac = Fraction(c)
        return self.div_int(self.scale_int(x, frac.numerator), frac.denominator)

    # -- matmul -----------------------------------------------------------------------------
    def _matmul_mod(self, a: Any, b: Any, m: int) -> Any:
        """Exact ``a @ b mod m`` with float64 GEMMs: ``a`` splits into two limbs of ⌈bits(m)/2⌉ bits, and the
        reduction dim into chunks whose partial sums stay below 2^52; residues are taken in float64."""
        xp = self.xp
        bits = int(m - 1).bit_length()
        limb = (bits + 1) // 2
        chunk = max(1, 2 ** (EXACT_BITS - 1 - limb - bits))
        lo = (a & ((1 << limb) - 1)).astype(np.float64)
        hi = (a >> limb).astype(np.float64)
        bf = b.astype(np.float64)
        acc_lo = acc_hi = None
        for s in range(0, a.shape[-1], chunk):
            part_lo = xp.matmul(lo[..., s:s + chunk], bf[..., s:s + chunk, :])
            part_hi = self._reduce(xp.matmul(hi[..., s:s + chunk], bf[..., s:s + chunk, :]), m)
            # one chunk: the raw low part (< 2^52) plus hi·2^L (< 2^(bits+L+1)) still stays below 2^53
            acc_lo = part_lo if acc_lo is None else self._reduce(self._reduce(acc_lo, m) + part_lo, m)
            acc_hi = part_hi if acc_hi is None else self._reduce(acc_hi + part_hi, m)
        assert acc_lo is not None and acc_hi is not None
        acc_hi *= float(1 << limb)
        acc_hi += acc_lo
        return self._fmod(acc_hi, m).astype(np.int64)

    def _reduce(self, c: Any, m: int) -> Any:
        """A lazy residue of float64 integers |c| < 2^53: congruent to c mod m, within (−m, 2m), in place."""
        xp = self.xp
        quot = c * (1.0 / m)
        xp.floor(quot, out=quot)
        quot *= m
        c -= quot  # exact: every product and difference is an integer below 2^53
        return c

    def _fmod(self, c: Any, m: int) -> Any:
        """``c mod m`` in [0, m) for float64 integers |c| < 2^53, in place (np.fmod is several times slower)."""
        r = self._reduce(c, m)
        r[r < 0] += m  # the reciprocal's rounding leaves r within (−m, 2m): fix the rare stragglers
        r[r >= m] -= m
        return r

    def matmul(self, a: FieldValue, b: FieldValue) -> FieldValue:
        if a.ndim == b.ndim and a.ndim > 2:
            plan = fold_plan(a.shape, b.shape)
            if not plan.trivial:
                folded = self._map(self._matmul_mod, self.structural(plan.fold_a, a), self.structural(plan.fold_b, b))
                return self.structural(plan.unfold, folded)
        return self._map(self._matmul_mod, a, b)

    # -- reductions ----------------------------------------------------------------------------
    def sum(self, x: FieldValue, axis: Axes) -> FieldValue:
        return self._map(lambda v, m: v.sum(axis=axis, keepdims=True) % m, x)

    def sum_strided(self, x: FieldValue, axis: int, groups: int) -> FieldValue:
        if groups == 1:
            return self.sum(x, axis)
        shape, sum_axis = strided_groups(x.shape, axis, groups)
        return self._map(lambda v, m: v.reshape(shape).sum(axis=sum_axis) % m, x)

    def concat(self, vs: Sequence[FieldValue], axis: int) -> FieldValue:
        shapes = concat_shapes([v.shape for v in vs], axis)
        xp = self.xp
        return FieldValue(xp.concatenate([xp.broadcast_to(v.p, s) for v, s in zip(vs, shapes, strict=True)], axis),
                          xp.concatenate([xp.broadcast_to(v.q, s) for v, s in zip(vs, shapes, strict=True)], axis))

    # -- transcendental and non-LAX ops ------------------------------------------------------------
    def _omega_pow(self, e: Any) -> Any:
        """ω^e mod p for exponents e ∈ [0, q), by two table look-ups: ω^e = ω^(e_lo) · ω^(e_hi·2^L)."""
        low, high = self._omega_tables()
        shift = int(low.shape[0]).bit_length() - 1
        return low[e & (low.shape[0] - 1)] * high[e >> shift] % self.field.p

    def _omega_tables(self) -> tuple[Any, Any]:
        if self._tables is None:
            p, w = self.field.p, self.field.omega
            shift = (int(self.field.q - 1).bit_length() + 1) // 2
            low = [1] * (1 << shift)
            for k in range(1, len(low)):
                low[k] = low[k - 1] * w % p
            step, high = pow(w, 1 << shift, p), [1] * ((self.field.q >> shift) + 1)
            for k in range(1, len(high)):
                high[k] = high[k - 1] * step % p
            self._tables = (self.xp.asarray(low, dtype=np.int64), self.xp.asarray(high, dtype=np.int64))
        return self._tables

    def exp(self, x: FieldValue) -> FieldValue:
        """(ω^(x_q) mod p, 0): the q-component is lost, so nested exp is meaningless (SPEC §6.2)."""
        return FieldValue(self._omega_pow(x.q), self.xp.zeros_like(x.q))

    def sqrt(self, x: FieldValue) -> FieldValue:
        """x^((m+1)/4): a true root for quadratic residues, deterministic otherwise (heuristic)."""
        return self._map(lambda v, m: self._powmod(v, self.xp.full(v.shape, (m + 1) // 4, dtype=np.int64), m), x)

    def rms(self, x: FieldValue, axes: Axes, count: int) -> FieldValue:
        return self.sqrt(self.div_int(self.sum(self.square(x), axes), count))

    def pow(self, a: FieldValue, b: FieldValue) -> FieldValue:
        """Heuristic: a^(b_q), the exponent read through its q-component like exp's."""
        return self._map(lambda v, m: self._powmod(v, b.q, m), a)

    def sigmoid(self, x: FieldValue) -> FieldValue:
        """Heuristic σ(x) = e^x / (1 + e^x) with e^x = ω^(x_q); q-component 0 as for exp."""
        e = self._omega_pow(x.q)
        p = self.field.p
        return FieldValue(e * self.inverse((e + 1) % p, p) % p, self.xp.zeros_like(x.q))

    def silu(self, x: FieldValue) -> FieldValue:
        """Heuristic x·σ(x), consistent with ``mul(x, sigmoid(x))``; parity mode: the reference's x·e^x."""
        if self.field.reference_rules:
            return FieldValue(x.q * self._omega_pow(x.q) % self.field.p, self.xp.zeros_like(x.q))
        return FieldValue(x.p * self.sigmoid(x).p % self.field.p, self.xp.zeros_like(x.q))

    def gelu(self, x: FieldValue) -> FieldValue:
        """Heuristic x·σ(2x) (the reference: x_q·ω^(2·x_q))."""
        two_x = (2 * x.q) % self.field.q
        if self.field.reference_rules:
            return FieldValue(x.q * self._omega_pow(two_x) % self.field.p, self.xp.zeros_like(x.q))
        return FieldValue(x.p * self.sigmoid(FieldValue(x.p, two_x)).p % self.field.p, self.xp.zeros_like(x.q))

    def _odd_logistic(self, x: FieldValue, slope: int) -> FieldValue:
        """(e − 1)/(e + 1) with e = ω^(slope·x_q): 2σ(slope·x) − 1 on exp's fingerprint (e + 1 is never 0: ω
        has odd order q, so no power of it is −1); the q-component is 0, as for exp."""
        e = self._omega_pow((slope * x.q) % self.field.q)
        p = self.field.p
        return FieldValue((e - 1) % p * self.inverse((e + 1) % p, p) % p, self.xp.zeros_like(x.q))

    def tanh(self, x: FieldValue) -> FieldValue:
        """Heuristic tanh(x) = 2σ(2x) − 1."""
        return self._odd_logistic(x, 2)

    def erf(self, x: FieldValue) -> FieldValue:
        """Heuristic: the fingerprint 2σ(3x) − 1 (erf has no field identity; the float64 check decides)."""
        return self._odd_logistic(x, 3)

    def relu(self, x: FieldValue) -> FieldValue:
        """Heuristic: per component max(x, ⌊m/2⌋) (SPEC §6.2)."""
        return self._map(lambda v, m: self.xp.maximum(v, m // 2), x)

    def clamp(self, x: FieldValue, lo: float, hi: float) -> FieldValue:
        """Heuristic: per component clamp to [⌊m/3⌋, ⌊2m/3⌋]; the real bounds are ignored (SPEC §6.2)."""
        return self._map(lambda v, m: self.xp.clip(v, m // 3, 2 * m // 3), x)

    def maximum(self, a: FieldValue, b: FieldValue) -> FieldValue:
        """Heuristic: the larger representative (fields have no order)."""
        return self._map(lambda x, y, m: self.xp.maximum(x, y), a, b)

    def amax(self, x: FieldValue, axis: Axes) -> FieldValue:
        return self._map(lambda v, m: v.max(axis=axis, keepdims=True), x)

    def log(self, x: FieldValue) -> FieldValue:
        raise UnsupportedOpError("log has no finite-field rule (it would need a discrete logarithm); "
                                 "check graphs with log by the float cross-check (ml.verify(..., trials=0))")
