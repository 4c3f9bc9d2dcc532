"""Search verification fields (p, q, ω) whose square-root rule respects small scalars.

The field's sqrt is v ↦ v^((m+1)/4) (m ∈ {p, q}, both ≡ 3 mod 4), which is multiplicative:
sqrt(c²·s) = c·(c|m)·sqrt(s), with (c|m) the Legendre symbol. When every small prime c in a set S is
a quadratic residue modulo both p and q, sqrt(c²·s) = c·sqrt(s) for every positive c built from S
(dyadic scalars such as 0.5 included when 2 ∈ S), so e.g. rms_norm(2·x) = rms_norm(x) holds in the field.

Constraints: p, q prime; q | p − 1 (p = 2kq + 1, k odd since p ≡ 3 mod 4); p ≡ q ≡ 3 (mod 4); ω of
order exactly q modulo p (the smallest such ω is reported); p < P_LIMIT, since residues kept centred in
float64 need 128·((p+3)/2)² < 2^53. For each prefix set {2}, {2,3}, ..., {2,...,13} the script reports the
largest p with p = 2kq + 1 for odd k ≤ --max-k (q the largest admissible one; a small q weakens the
q-component, whose values exp's ω^(x_q) reads, so k is capped) and the largest p with p = 2q + 1,
with the relative change of the error bound 1/p against the current default. Every winner is
re-checked with FieldSpec's own validation.

    python scripts/find_field.py [--limit P] [--baseline P] [--max-k K]
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import numpy as np

SMALL_PRIMES = (2, 3, 5, 7, 11, 13)
P_LIMIT = 16_777_213  # 128·((p+3)/2)² < 2^53  ⇔  p + 3 < 2^24
BASELINE = 16_774_679


def sieve(n: int) -> np.ndarray:
    """Boolean array: is_prime[i] for 0 ≤ i < n."""
    is_p = np.ones(n, dtype=bool)
    is_p[:2] = False
    for i in range(2, math.isqrt(n - 1) + 1):
        if is_p[i]:
            is_p[i * i::i] = False
    return is_p


def legendre(a: int, m: int) -> int:
    r = pow(a, (m - 1) // 2, m)
    return -1 if r == m - 1 else r


def residues(m: int) -> set[int]:
    """The small primes that are quadratic residues modulo the prime m."""
    return {c for c in SMALL_PRIMES if c % m and legendre(c, m) == 1}


def smallest_omega(p: int, q: int) -> int:
    """The smallest ω ≥ 2 of multiplicative order exactly q modulo p (q prime, so ω^q = 1 and ω ≠ 1)."""
    w = 2
    while pow(w, q, p) != 1:
        w += 1
    return w


@dataclass(frozen=True)
class Row:
    primes: tuple[int, ...]  # the prefix set asked for
    pairs_only: bool  # p = 2q + 1 only
    p: int | None = None  # None: no such field below the limit
    q: int = 0
    k: int = 0
    omega: int = 0
    bound_change: float = 0.0  # (1/p) / (1/baseline) − 1


def search(limit: int, baseline: int, max_k: int) -> list[Row]:
    is_p = sieve(limit)
    rows = []
    for n in range(1, len(SMALL_PRIMES) + 1):
        want = set(SMALL_PRIMES[:n])
        for pairs_only in (False, True):
            found = None
            for p in range(limit - 1, 2, -1):
                if p % 4 != 3 or not is_p[p] or not want <= residues(p):
                    continue
                half = (p - 1) // 2  # odd; q | half, and q = half / k for odd k (the smallest k first)
                for k in range(1, (1 if pairs_only else max_k) + 1, 2):
                    q = half // k
                    if half % k == 0 and q % 4 == 3 and is_p[q] and want <= residues(q):
                        found = (p, q, k)
                        break
                if found:
                    break
            if found is None:
                rows.append(Row(SMALL_PRIMES[:n], pairs_only))
                continue
            p, q, k = found
            rows.append(Row(SMALL_PRIMES[:n], pairs_only, p, q, k, smallest_omega(p, q), baseline / p - 1))
    return rows


def validate(rows: list[Row]) -> None:
    """FieldSpec raises UnsupportedOpError on an invalid field; the float64 limit and the roots are checked here."""
    from mirage_lab.semantics.field import FieldSpec

    for r in rows:
        if r.p is None:
            continue
        FieldSpec(r.p, r.q, r.omega)
        if r.k == 1:
            FieldSpec(r.p, r.q, 4)  # ω = 4 (a square ≠ 1) has order q for every p = 2q + 1
        assert r.p < P_LIMIT and 128 * ((r.p + 3) // 2) ** 2 < 2**53, r
        for m in (r.p, r.q):  # sqrt(c²) = c: the root v^((m+1)/4) keeps every c of the set
            assert all(pow(c * c, (m + 1) // 4, m) == c for c in r.primes), (r, m)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=P_LIMIT, help="p must be below this (default %(default)s)")
    ap.add_argument("--baseline", type=int, default=BASELINE, help="the p the bound is compared with")
    ap.add_argument("--max-k", type=int, default=15, help="largest odd k in p = 2kq + 1 (default %(default)s)")
    args = ap.parse_args()
    rows = search(args.limit, args.baseline, args.max_k)
    validate(rows)
    change = f"Δ(1/p) vs {args.baseline}"
    print(f"{'QR mod p and q':<20} {'form':<6} {'p':>10} {'q':>10} {'k':>3} {'ω':>3} {change:>20}  QR mod p / mod q")
    for r in rows:
        label = "{" + ",".join(map(str, r.primes)) + "}"
        form = "2q+1" if r.pairs_only else "2kq+1"
        if r.p is None:
            print(f"{label:<20} {form:<6} {'none':>10}")
            continue
        print(f"{label:<20} {form:<6} {r.p:>10} {r.q:>10} {r.k:>3} {r.omega:>3} {r.bound_change:>+20.4%}  "
              f"{sorted(residues(r.p))} / {sorted(residues(r.q))}")
    print("every field above passes FieldSpec's validation, the float64 limit and sqrt(c²) = c for its set")


if __name__ == "__main__":
    main()
