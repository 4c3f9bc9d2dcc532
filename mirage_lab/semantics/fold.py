"""Batched-matmul folding: turn many small broadcast matmuls into a few large GEMMs.

Block-level values carry grid and iteration axes in front (``interpret.py``). When
one operand is replicated along a batch axis (size 1) and the other is not, that axis
can be moved into the other operand's row (m) or column (n) dimension, so BLAS sees one
large GEMM instead of thousands of tiny ones. The result is the same product; only the
loop structure changes. The plan is shape-only, so any number system can apply it to
each of its component arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FoldPlan:
    shared: tuple[int, ...]  # batch axes both operands keep
    a_only: tuple[int, ...]  # batch axes only A varies along: folded into m
    b_only: tuple[int, ...]  # batch axes only B varies along: folded into n
    a_shape: tuple[int, ...]
    b_shape: tuple[int, ...]

    @property
    def trivial(self) -> bool:
        return not self.a_only and not self.b_only

    def fold_a(self, a: Any) -> Any:
        nb = len(self.a_shape) - 2
        a = a.transpose([*self.shared, *self.a_only, *self.b_only, nb, nb + 1])  # b_only axes have size 1
        lead = [self.a_shape[i] for i in self.shared]
        rows = math.prod(self.a_shape[i] for i in self.a_only) * self.a_shape[-2]
        return a.reshape(*lead, rows, self.a_shape[-1])

    def fold_b(self, b: Any) -> Any:
        nb = len(self.b_shape) - 2
        b = b.transpose([*self.shared, *self.a_only, nb, *self.b_only, nb + 1])  # a_only axes have size 1
        lead = [self.b_shape[i] for i in self.shared]
        cols = math.prod(self.b_shape[i] for i in self.b_only) * self.b_shape[-1]
        return b.reshape(*lead, self.b_shape[-2], cols)

    def unfold(self, c: Any) -> Any:
        """(*shared, A·m, B·n) back to the broadcast batch layout (*batch, m, n)."""
        m, n = self.a_shape[-2], self.b_shape[-1]
        ns = len(self.shared)
        c = c.reshape(*c.shape[:ns], *(self.a_shape[i] for i in self.a_only), m,
                      *(self.b_shape[i] for i in self.b_only), n)
        # axis positions in c of each original batch axis
        where = {ax: k for k, ax in enumerate(self.shared)}
        where.update({ax: ns + k for k, ax in enumerate(self.a_only)})
        base_b = ns + len(self.a_only) + 1
        where.update({ax: base_b + k for k, ax in enumerate(self.b_only)})
        m_pos, n_pos = ns + len(self.a_only), base_b + len(self.b_only)
        nb = len(self.a_shape) - 2
        return c.transpose([where[ax] for ax in range(nb)] + [m_pos, n_pos])


def fold_plan(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> FoldPlan:
    nb = len(a_shape) - 2
    a_only = tuple(i for i in range(nb) if a_shape[i] > 1 and b_shape[i] == 1)
    b_only = tuple(i for i in range(nb) if b_shape[i] > 1 and a_shape[i] == 1)
    shared = tuple(i for i in range(nb) if i not in a_only and i not in b_only)
    return FoldPlan(shared, a_only, b_only, tuple(a_shape), tuple(b_shape))
