"""The verifier's fast path: Z_p × Z_q with residues kept centred in float64 (SPEC §6).

``FieldArith`` keeps canonical residues in [0, m) as int64: every product pays an integer division, and
every matmul splits an operand into two limbs and copies both operands to float64 for the GEMM. When
m < 2^24 a residue fits a float64 with room to spare, so ``CenteredFieldArith`` stores float64 residues
centred on zero, ``|r| ≤ B = (m + 3)/2``, everywhere:

* an elementwise product is at most B² < 2^47: exact in float64, reduced by ``r − m·rint(r/m)``;
* a matmul is one float64 GEMM per component: ⌊(2^53 − 1)/B²⌋ = 128 centred products (default field)
  sum exactly, so a 64-long tile reduction needs no split at all, and a longer one goes in 128-long slices;
* there is no dtype round trip in the hot path, and a component known to be 0 (what ``exp`` leaves in the
  q-part) is a zero-strided view that matmuls and sums skip.

Ops whose rules read canonical representatives (sqrt, pow, the heuristic max/relu/clamp/sigmoid, Fermat
inverses) run ``FieldArith``'s own rules on the canonical int64 form and come back centred. Inputs are
drawn, and outputs returned, exactly as ``FieldArith`` does, so both paths give identical residues
(tests/semantics/test_centered_field.py checks this on random graphs).

Why the reduction is exact: for an integer |c| < 2^53, ``c·fl(1/m)`` is within 2^-23 of c/m, so
``n = rint(c·fl(1/m))`` is c/m rounded to a nearest integer, or the other one when c/m is within 2^-23
of a half; either way ``c − m·n`` (exact: integers below 2^53) lies within m/2 + 2 of zero.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mirage_lab.errors import UnsupportedOpError
from mirage_lab.semantics.arith import Axes, strided_groups
from mirage_lab.semantics.field import DEFAULT_FIELD, EXACT_BITS, FieldArith, FieldSpec, FieldValue, draw_packed

#: elements per in-cache block when numpy reduces a large array (an L2-sized float64 slice)
BLOCK = 1 << 15
#: a tile reduction of this length must fit one GEMM for the fast path to be worth having
MIN_TERMS = 64
#: the ω^x tables split x into a low part of this many bits and the rest
TABLE_BITS = 12


def bound(m: int) -> int:
    """The largest |r| a centred residue mod m may have (see the module docstring)."""
    return (m + 3) // 2


def exact_terms(m: int) -> int:
    """How many products of centred residues mod m a float64 sum holds exactly."""
    return ((1 << EXACT_BITS) - 1) // bound(m) ** 2


class CenteredFieldArith(FieldArith):
    """Arithmetic over Z_p × Z_q with float64 residues centred on zero (implements ``NumberSystem``)."""

    def __init__(self, field: FieldSpec = DEFAULT_FIELD, backend: str | None = None) -> None:
        if not self.supports(field):
            raise UnsupportedOpError(f"centred float64 residues need p < 2^24 (a {MIN_TERMS}-long reduction in "
                                     f"one exact GEMM); {field} is too large: use FieldArith")
        super().__init__(field, backend)
        self.name = f"centred-field:{field.p}:{field.q}:{self.xp.__name__}"
        self.exact = FieldArith(field, backend)  # the canonical rules, for ops that read representatives
        self._ftables: tuple[Any, Any, int] | None = None

    @staticmethod
    def supports(field: FieldSpec) -> bool:
        return exact_terms(field.p) >= MIN_TERMS and exact_terms(field.q) >= MIN_TERMS

    def __repr__(self) -> str:
        return f"CenteredFieldArith({self.field}, backend={self.xp.__name__!r})"

    # -- the centred form ------------------------------------------------------------------------
    def _center(self, c: Any, m: int) -> Any:
        """In place on a fresh float64 array of integers |c| < 2^53: ``c − m·rint(c/m)``, within ±B."""
        flat = c.reshape(-1) if c.flags.c_contiguous else None
        if self.xp is not np or flat is None or flat.size <= BLOCK:
            self._center_block(c, m, None)
            return c
        buf = np.empty(BLOCK)  # a block at a time, so the four passes run in cache
        for s in range(0, flat.size, BLOCK):
            part = flat[s:s + BLOCK]
            self._center_block(part, m, buf[:part.size])
        return c

    def _center_block(self, c: Any, m: int, buf: Any) -> None:
        t = self.xp.multiply(c, 1.0 / m, out=buf)
        self.xp.rint(t, out=t)
        t *= m
        c -= t

    def _lift(self, ints: Any, m: int) -> Any:
        """Canonical int64 residues → centred float64, a cache-sized block at a time (one pass over memory)."""
        if self._is_zero(ints):
            return self._zeros(ints.shape)
        if self.xp is not np or not ints.flags.c_contiguous or ints.size <= BLOCK:
            return self._center(ints.astype(np.float64), m)
        out = np.empty(ints.shape)
        src, dst, buf = ints.reshape(-1), out.reshape(-1), np.empty(BLOCK)
        for s in range(0, src.size, BLOCK):
            part = dst[s:s + BLOCK]
            np.copyto(part, src[s:s + BLOCK], casting="unsafe")
            self._center_block(part, m, buf[:part.size])
        return out

    def _lower(self, v: Any, m: int) -> Any:
        """Centred float64 → canonical int64 residues in [0, m)."""
        r = v.astype(np.int64)
        r += (r >> 63) & m  # the sign bit, as a mask: add m to the negative ones
        return r

    def lift(self, v: FieldValue) -> FieldValue:
        return FieldValue(self._lift(v.p, self.field.p), self._lift(v.q, self.field.q))

    def lower(self, v: FieldValue) -> FieldValue:
        return FieldValue(self._lower(v.p, self.field.p), self._lower(v.q, self.field.q))

    def restrict(self, v: FieldValue, live: frozenset[str]) -> FieldValue:
        """``v`` with each component outside ``live`` a free zero view: the matmuls and products that only
        a dead component feeds are then skipped (semantics/liveness.py says which are dead)."""
        return FieldValue(v.p if "p" in live else self._zeros(v.shape), v.q if "q" in live else self._zeros(v.shape))

    def _zeros(self, shape: tuple[int, ...]) -> Any:
        """A read-only zero component that costs no memory: every element is the same 0."""
        return self.xp.broadcast_to(self.xp.zeros(1), shape)

    @staticmethod
    def _is_zero(a: Any) -> bool:
        """Is ``a`` a zero-strided 0, as ``_zeros`` makes? (A zero-strided array holds one value, so when that
        value is 0 the whole array is.)"""
        return a.ndim > 0 and a.size > 1 and not any(a.strides) and not bool(a[(0,) * a.ndim])

    def _via_exact(self, rule: Callable[..., FieldValue], *vs: FieldValue) -> FieldValue:
        """Apply a ``FieldArith`` rule to the canonical form of the operands."""
        return self.lift(rule(*(self.lower(v) for v in vs)))

    # -- values ------------------------------------------------------------------------------------
    def from_host(self, a: Any) -> FieldValue:
        return self.lift(self.exact.from_host(a))

    def to_host(self, v: FieldValue) -> FieldValue:
        return self.exact.to_host(self.lower(v))

    def random(self, shape: Any, rng: np.random.Generator) -> FieldValue:
        """The same draws as ``FieldArith.random`` (hence the same trials), each packed x in [0, pq) centred
        mod p into a new array and mod q in the draw's own memory: one pass, and no int64 temporaries."""
        packed = draw_packed(self.field, shape, rng)
        p, q = self.field.p, self.field.q
        if self.xp is not np:
            xf = self.xp.asarray(packed).astype(np.float64)  # exact: pq < 2^53
            return FieldValue(self._center(xf.copy(), p), self._center(xf, q))
        out_p, out_q = np.empty(packed.shape), packed.view(np.float64)
        src, dst_p, dst_q = packed.reshape(-1), out_p.reshape(-1), out_q.reshape(-1)
        xf, buf = np.empty(min(BLOCK, src.size)), np.empty(min(BLOCK, src.size))
        for s in range(0, src.size, BLOCK):
            n = min(BLOCK, src.size - s)
            np.copyto(xf[:n], src[s:s + n], casting="unsafe")  # (a cached copy first: safe in place)
            np.copyto(dst_p[s:s + n], xf[:n])
            self._center_block(dst_p[s:s + n], p, buf[:n])
            np.copyto(dst_q[s:s + n], xf[:n])
            self._center_block(dst_q[s:s + n], q, buf[:n])
        return FieldValue(out_p, out_q)

    # -- ring operations ----------------------------------------------------------------------------
    def add(self, a: FieldValue, b: FieldValue) -> FieldValue:
        return self._map(self._add_mod, a, b)

    def _add_mod(self, x: Any, y: Any, m: int) -> Any:
        if self._is_zero(x) and x.shape == y.shape:  # (ops never write to their operands: sharing is safe)
            return y
        if self._is_zero(y) and x.shape == y.shape:
            return x
        return self._center(x + y, m)

    def sub(self, a: FieldValue, b: FieldValue) -> FieldValue:
        return self._map(lambda x, y, m: self._center(x - y, m), a, b)

    def mul(self, a: FieldValue, b: FieldValue) -> FieldValue:
        return self._map(self._mul_mod, a, b)

    def _mul_mod(self, x: Any, y: Any, m: int) -> Any:
        if self._is_zero(x) or self._is_zero(y):
            return self._zeros(np.broadcast_shapes(x.shape, y.shape))
        return self._center(x * y, m)

    def square(self, x: FieldValue) -> FieldValue:
        return self.mul(x, x)

    def scale_int(self, x: FieldValue, n: int) -> FieldValue:
        return self._map(lambda v, m: self._scale(v, n % m, m), x)

    def div_int(self, x: FieldValue, n: int) -> FieldValue:
        return self._map(lambda v, m: self._scale(v, self.exact.int_inverse(n, m), m), x)

    def _scale(self, v: Any, k: int, m: int) -> Any:
        """v·k mod m for a canonical integer k, taken centred so that the product stays below 2^53."""
        if self._is_zero(v) or k == 1:  # (an F = 1 accumulator scales whole input tiles by 1: no copy)
            return v
        return self._center(v * float(k - m if 2 * k > m else k), m)

    def div(self, a: FieldValue, b: FieldValue) -> FieldValue:
        inv = FieldValue(*(self._lift(self.exact.inverse(self._lower(c, m), m), m)
                           for c, m in ((b.p, self.field.p), (b.q, self.field.q))))
        return self.mul(a, inv)

    # -- matmul and reductions ---------------------------------------------------------------------------
    def _matmul_mod(self, a: Any, b: Any, m: int) -> Any:
        """Exact ``a @ b mod m``: one GEMM per ``exact_terms(m)``-long slice of the reduction dim."""
        xp = self.xp
        if self._is_zero(a) or self._is_zero(b):
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
            return self._zeros((*batch, a.shape[-2], b.shape[-1]))
        step, k = exact_terms(m), a.shape[-1]
        if k <= step:
            return self._center(xp.matmul(a, b), m)
        acc = None
        for s in range(0, k, step):  # each slice's sum is exact; centred partial sums add up far below 2^53
            part = self._center(xp.matmul(a[..., s:s + step], b[..., s:s + step, :]), m)
            acc = part if acc is None else xp.add(acc, part, out=acc)
        return self._center(acc, m)

    def sum(self, x: FieldValue, axis: Axes) -> FieldValue:
        return self._map(lambda v, m: self._sum(v, m, lambda a: a.sum(axis=axis, keepdims=True)), x)

    def sum_strided(self, x: FieldValue, axis: int, groups: int) -> FieldValue:
        if groups == 1:
            return self.sum(x, axis)
        shape, sum_axis = strided_groups(x.shape, axis, groups)
        return self._map(lambda v, m: self._sum(v, m, lambda a: a.reshape(shape).sum(axis=sum_axis)), x)

    def _sum(self, v: Any, m: int, reduce: Callable[[Any], Any]) -> Any:
        """A sum of n centred residues is exact while n·B < 2^53: n < 2^29 for the default field."""
        if v.size * bound(m) >= 1 << EXACT_BITS:
            raise UnsupportedOpError(f"a sum of {v.size} residues mod {m} could exceed 2^53 in float64; "
                                     "verify this graph with FieldArith (ml.interpret(..., ns=FieldArith(...)))")
        out = reduce(v)
        if self._is_zero(v):
            return self._zeros(out.shape)
        return self._center(out, m)

    # -- exp by centred tables ----------------------------------------------------------------------------
    def exp(self, x: FieldValue) -> FieldValue:
        """ω^(x_q) mod p by two look-ups in small tables: ω^(x + s) = ω^lo · ω^(hi·2^L) for x + s =
        hi·2^L + lo, where the shift s, a multiple of 2^L, makes every index non-negative."""
        if self.xp is np and x.q.size > BLOCK:
            return FieldValue(self._omega_pow_blocked(x.q), self._zeros(x.shape))
        low, high, shift = self._omega_ftables()
        e = (x.q + float(shift)).astype(np.int64)
        lo = e & ((1 << TABLE_BITS) - 1)
        e >>= TABLE_BITS
        out = self.xp.take(low, lo)
        out *= self.xp.take(high, e)
        return FieldValue(self._center(out, self.field.p), self._zeros(x.shape))

    def _omega_pow_blocked(self, xq: Any) -> Any:
        """``exp``'s p-part on numpy, a cache-sized block at a time: one pass over memory instead of nine."""
        low, high, shift = self._omega_ftables()
        src, perm = _in_memory_order(xq)
        dst = np.empty(src.size)
        out = dst.reshape(xq.shape if perm is None else xq.transpose(perm).shape)
        e, lo, hi_part, buf = (np.empty(BLOCK, dtype=np.int64), np.empty(BLOCK, dtype=np.int64),
                               np.empty(BLOCK), np.empty(BLOCK))
        for s in range(0, src.size, BLOCK):
            o = dst[s:s + BLOCK]
            n = o.size
            np.add(src[s:s + n], float(shift), out=e[:n], casting="unsafe")  # exact: integers far below 2^53
            np.bitwise_and(e[:n], (1 << TABLE_BITS) - 1, out=lo[:n])
            np.right_shift(e[:n], TABLE_BITS, out=e[:n])
            np.take(low, lo[:n], out=o, mode="wrap")  # (in range; numpy's "wrap" mode is its fastest)
            np.take(high, e[:n], out=hi_part[:n], mode="wrap")
            o *= hi_part[:n]
            self._center_block(o, self.field.p, buf[:n])
        return out if perm is None else out.transpose(np.argsort(perm))

    def _omega_ftables(self) -> tuple[Any, Any, int]:
        """Centred ω^lo for lo < 2^L and ω^((h − r)·2^L) for h ≤ 2r, with the shift s = r·2^L ≥ B_q."""
        if self._ftables is None:
            p, q, w = self.field.p, self.field.q, self.field.omega
            reach = -(-bound(q) >> TABLE_BITS)
            lows = [pow(w, k, p) for k in range(1 << TABLE_BITS)]
            highs = [pow(w, (h - reach) * (1 << TABLE_BITS) % q, p) for h in range(2 * reach + 1)]

            def centred(vals: list[int]) -> Any:
                return self.xp.asarray([v - p if 2 * v > p else v for v in vals], dtype=np.float64)

            self._ftables = (centred(lows), centred(highs), reach << TABLE_BITS)
        return self._ftables

    # -- rules that read canonical representatives -----------------------------------------------------
    def sqrt(self, x: FieldValue) -> FieldValue:
        return self._via_exact(self.exact.sqrt, x)

    def pow(self, a: FieldValue, b: FieldValue) -> FieldValue:
        return self._via_exact(self.exact.pow, a, b)

    def maximum(self, a: FieldValue, b: FieldValue) -> FieldValue:
        return self._via_exact(self.exact.maximum, a, b)

    def amax(self, x: FieldValue, axis: Axes) -> FieldValue:
        return self._via_exact(lambda v: self.exact.amax(v, axis), x)

    def relu(self, x: FieldValue) -> FieldValue:
        return self._via_exact(self.exact.relu, x)

    def clamp(self, x: FieldValue, lo: float, hi: float) -> FieldValue:
        return self._via_exact(lambda v: self.exact.clamp(v, lo, hi), x)

    def sigmoid(self, x: FieldValue) -> FieldValue:
        return self._p_only(self.exact.sigmoid, x)

    def silu(self, x: FieldValue) -> FieldValue:
        return self._p_only(self.exact.silu, x)

    def gelu(self, x: FieldValue) -> FieldValue:
        return self._p_only(self.exact.gelu, x)

    def tanh(self, x: FieldValue) -> FieldValue:
        return self._p_only(self.exact.tanh, x)

    def erf(self, x: FieldValue) -> FieldValue:
        return self._p_only(self.exact.erf, x)

    def _p_only(self, rule: Callable[[FieldValue], FieldValue], x: FieldValue) -> FieldValue:
        """A rule that, like exp's, leaves 0 in the q-component."""
        out = rule(self.lower(x))
        return FieldValue(self._lift(out.p, self.field.p), self._zeros(x.shape))


def _in_memory_order(a: Any) -> tuple[Any, list[int] | None]:
    """``a`` flattened in the order its elements lie in memory, and the axis order that lays it out so
    (None: already C order). An elementwise pass then streams through memory with no copy, even over a
    transposed view such as an unfolded matmul result; only a view with gaps is copied."""
    if a.flags.c_contiguous:
        return a.reshape(-1), None
    perm = sorted(range(a.ndim), key=lambda i: -abs(a.strides[i]))
    t = a.transpose(perm)
    return (t.reshape(-1), perm) if t.flags.c_contiguous else (a.reshape(-1), None)


def verification_arith(field: FieldSpec = DEFAULT_FIELD, backend: str | None = None) -> FieldArith:
    """The fastest number system for ``field``: centred float64 residues when they fit, else int64."""
    if CenteredFieldArith.supports(field):
        return CenteredFieldArith(field, backend)
    return FieldArith(field, backend)
