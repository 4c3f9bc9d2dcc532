"""Search-wide consequences of the targets, decided once before the walk.

An op whose abstract expression always contains a function the targets never apply (``silu``
when the program has no SiLU, ``rms`` for attention) is rejected by the oracle wherever it is
tried: no axiom creates or removes a function symbol, and ``e ⊑ E`` needs every function
atom of ``e`` inside ``E``. The enumerator drops such ops up front instead of asking the
oracle about each of their applications (in attention searches, about a third of all tuples).

When the kernel cap makes a customized op the last kernel op, what it must save follows from the targets too
(the ``goal`` check: ``final_kernel`` when it opens, ``may_finish`` when its block graph closes).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from mirage_lab.absexpr.of_graph import op_expression
from mirage_lab.absexpr.terms import REDUCE, UNARY, Term, var
from mirage_lab.errors import MirageError
from mirage_lab.ir.ops import Op
from mirage_lab.search import candidates as cands
from mirage_lab.search.folds import folded_only
from mirage_lab.search.state import Block, OpInfo

if TYPE_CHECKING:
    from mirage_lab.search.walk import Walk

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


def foreign_function_of(info: OpInfo, heads: frozenset[str], reduction_dimx: int) -> str | None:
    """The function every application of ``info`` applies that no target applies (then it is never tried)."""
    return foreign_function(info.op, info.attrs, info.arity, heads, reduction_dimx)


def final_kernel(w: Walk, b: Block, memo: dict[Any, Any] | None = None) -> None:
    """(``goal``) The op the kernel cap makes last: what it must save, or why it never can (``b.unreachable``).
    ``memo`` (one kernel state's, ``KernelLevel._customized``) keeps what depends on the inputs alone: that state
    opens the same inputs under hundreds of grids and maps."""
    got = None if memo is None else memo.get(b.inputs)
    if got is None:
        got = _final_inputs(w, b.inputs)
        if memo is not None:
            memo[b.inputs] = got
    b.need, b.left, early, late = got
    if early is not None:
        b.unreachable = early
        return
    saves = w.grid_saves.get(b.grid)  # (the same few grids open thousands of times in an attention task)
    if saves is None:
        saves = w.grid_saves[b.grid] = any(_saves_an_output(w, omap, b.grid) for omap in cands.omap_candidates(
            [d for d, _ in w.out_types], b.grid, w.cfg))
    if not saves:
        b.unreachable = f"no omap of grid {b.grid} saves a tensor with the dims of a program output"
        return
    if late is not None:
        b.unreachable = late


def _final_inputs(w: Walk, inputs: tuple[int, ...]) -> tuple[int, tuple[Any, ...], str | None, str | None]:
    """(``final_kernel``) What the last kernel op must save given what it loads: how many outputs, the earlier
    tensors it leaves unused, and why it never can — before its grid is looked at, and after."""
    left = [i for i, t in enumerate(w.kt) if t.uses == 0 and not t.source and i not in inputs]
    need, keys = len(w.out_types) - len(left), tuple(w.nf_key(w.kt[i].expr) for i in left)
    if need < 1:
        return need, keys, (f"the last kernel op the cap allows leaves {len(left)} earlier tensor(s) unused; the "
                            f"program has {len(w.out_types)} output(s)"), None
    # what it saves is a function of what it loads: every input the missing outputs read must be loaded
    missing = list(w.target_vars)
    if "precheck" in w.on:
        for key in keys:
            hit = next((m for m in missing if m[0] == key), None)
            if hit is None:
                return need, keys, "a tensor it leaves unused is not one of the program's outputs", None
            missing.remove(hit)
    have = frozenset().union(*(w.kt[i].expr.inputs() for i in inputs))
    lacking = sorted(frozenset().union(*(v for _, v in missing)) - have)
    if lacking:
        return need, keys, None, (f"the last kernel op the cap allows loads nothing that reads input(s) "
                                  f"{', '.join(f'v{i}' for i in lacking)}, which the program's outputs read")
    folded = folded_only(w, [w.kt[i] for i in inputs])
    why = None if folded is None else f"the last kernel op the cap allows cannot compute the program: {folded}"
    return need, keys, None, why


def _saves_an_output(w: Walk, omap: tuple[int, int, int], grid: tuple[int, int, int]) -> bool:
    """Some program output's dims split evenly along ``omap`` (the tile a block would save)."""
    return any(all(g == 1 or d[a] % g == 0 for a, g in zip(omap, grid, strict=True) if a >= 0)
               for d, _ in w.out_types)


def may_finish(w: Walk, node: str, b: Block, dangling: list[int]) -> bool:
    """(``goal``) In the last kernel op, a block graph saves exactly what the program still needs."""
    if b.need is None:
        return True
    if len(dangling) != b.need:
        return False
    if "precheck" not in w.on:
        return True
    got = sorted([*b.left, *(w.nf_key(b.tensors[i].expr) for i in dangling)])
    if got == w.targets:
        return True
    w.prune(node, "goal", reason="the last kernel op the cap allows would save expressions that are not the "
            "program's outputs")
    return False
