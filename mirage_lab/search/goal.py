"""Search-wide consequences of the targets, decided once before the walk.

An op whose abstract expression always contains a function the targets never apply (``silu``
when the program has no SiLU, ``rms`` for attention) is rejected by the oracle wherever it is
tried: no axiom creates or removes a function symbol, and ``e ⊑ E`` needs every function
atom of ``e`` inside ``E``. The enumerator drops such ops up front instead of asking the
oracle about each of their applications (in attention searches, about a third of all tuples).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mirage_lab.absexpr.of_graph import op_expression
from mirage_lab.absexpr.terms import REDUCE, UNARY, Term, var
from mirage_lab.errors import MirageError
from mirage_lab.ir.ops import Op

#: heads the normal form keeps as opaque atoms (the algebra add/mul/div/sum dissolves)
FUNCTION_HEADS = UNARY | REDUCE - {"sum"} | {"pow"}


def function_heads(terms: Iterable[Term]) -> frozenset[str]:
    return frozenset(s.head for t in terms for s in t.subterms() if s.head in FUNCTION_HEADS)


def foreign_function(op: Op, attrs: dict[str, Any], arity: int, target_heads: frozenset[str],
                     reduction_dimx: int) -> str | None:
    """A function that every application of ``op`` introduces and no target applies, or None.

    The op is applied to fresh inputs of a generic shape; an op whose rule cannot be applied
    that way is kept (None), so this only ever removes what the oracle would reject anyway.
    """
    fresh = [var(1000 + i) for i in range(arity)]
    try:
        exprs = op_expression(op, attrs, fresh, [(64, 64)] * arity, forloop_range=4,
                              reduction_dimx=reduction_dimx)
    except (MirageError, ValueError, IndexError, KeyError):  # shape-dependent rules: keep the op
        return None
    foreign = sorted(function_heads(exprs) - target_heads)  # one rejected output rejects the op
    return foreign[0] if foreign else None
