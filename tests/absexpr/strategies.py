"""Hypothesis strategies for random abstract expressions."""

from __future__ import annotations

from hypothesis import strategies as st

from mirage_lab.absexpr.terms import Term, add, div, mul, pow_, reduce, unary, var

DEGREES = (2, 3, 4, 8, 16, 64)


def terms(max_leaves: int = 8, n_inputs: int = 4) -> st.SearchStrategy[Term]:
    """Random terms over v0..v{n_inputs-1} with every head of the language."""
    leaves = st.integers(0, n_inputs - 1).map(var)

    def extend(inner: st.SearchStrategy[Term]) -> st.SearchStrategy[Term]:
        binary = st.tuples(st.sampled_from([add, mul, div, pow_]), inner, inner).map(lambda t: t[0](t[1], t[2]))
        unaries = st.tuples(st.sampled_from(["exp", "sqrt", "silu", "square", "relu"]), inner).map(
            lambda t: unary(t[0], t[1]))
        reductions = st.tuples(st.sampled_from(["sum", "sum", "rms", "max"]), st.sampled_from(DEGREES), inner).map(
            lambda t: reduce(t[0], t[1], t[2]))
        return binary | unaries | reductions

    return st.recursive(leaves, extend, max_leaves=max_leaves)
