"""The float64 filter: does a graph compute something else than another, on random inputs?

Mutation testing (``verify.mutate``) keeps only mutants that really differ, and rewriting
(``verify.rewrite``) only variants that really agree; both ask this module.
"""

from __future__ import annotations

import numpy as np

from mirage_lab.bench.harness import relative_error
from mirage_lab.bench.tolerance import within, worst_error
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.ops import Op
from mirage_lab.semantics.interpret import interpret

_CACHE: dict[tuple[str, int, int], list[np.ndarray] | None] = {}
_CACHE_SIZE = 8


def _has_exp(g: KernelGraph) -> bool:
    ops = {n.op for n in g.every_node()}
    return bool(ops & {Op.EXP, Op.SILU, Op.SIGMOID, Op.GELU})


def _inputs(g: KernelGraph, seed: int, attempt: int) -> list[np.ndarray]:
    """Attempt 0: uniform in ±s; 1: positive, in [s/10, s]; 2: ±s/10. s = 0.2 with exp-like ops, else 1.

    0.2 mirrors ``harness.input_scale`` for attention: exp(Q·K) stays far from overflow.
    """
    s = 0.2 if _has_exp(g) else 1.0
    rng = np.random.default_rng([seed, attempt])
    lo, hi = ((-s, s), (s / 10, s), (-s / 10, s / 10))[attempt]
    return [rng.uniform(lo, hi, t.dims) for t in g.input_types]


def _run(g: KernelGraph, ins: list[np.ndarray]) -> list[np.ndarray]:
    with np.errstate(all="ignore"):
        return interpret(g, ins, dtype="float64")


def _reference_outputs(g: KernelGraph, seed: int, attempt: int, ins: list[np.ndarray]) -> list[np.ndarray] | None:
    key = (g.canonical_hash(), seed, attempt)
    if key not in _CACHE:
        if len(_CACHE) >= _CACHE_SIZE:
            del _CACHE[next(iter(_CACHE))]
        outs = _run(g, ins)
        _CACHE[key] = outs if all(np.isfinite(o).all() for o in outs) else None
    return _CACHE[key]


def really_different(reference: KernelGraph, mutant: KernelGraph, *, seed: int = 0,
                     rtol: float = 1e-6) -> bool | None:
    """Does ``mutant`` compute something else than ``reference``? float64, on random inputs.

    Tries signed inputs, then positive ones, then smaller ones (``_inputs``); the first attempt
    where the reference gives finite outputs decides: different iff some output's
    ``max|a − b| / max|b| > rtol`` or holds a NaN or inf (``harness.relative_error``), or the output
    types differ. Returns None when the inputs differ in type or no attempt gives the reference
    finite values (the comparison is meaningless).
    """
    if [(t.dims, t.dtype) for t in reference.input_types] != [(t.dims, t.dtype) for t in mutant.input_types]:
        return None
    if [(t.dims, t.dtype) for t in reference.output_types] != [(t.dims, t.dtype) for t in mutant.output_types]:
        return True
    for attempt in range(3):
        ins = _inputs(reference, seed, attempt)
        want = _reference_outputs(reference, seed, attempt, ins)
        if want is None:
            continue
        got = _run(mutant, ins)
        return not within(worst_error(relative_error(a, w) for a, w in zip(got, want, strict=True)), rtol)
    return None
