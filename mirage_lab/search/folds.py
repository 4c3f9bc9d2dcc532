"""Which input moves each search tensor cannot see (the ``folded_inputs`` check).

A *move* ``(i, d, s)`` adds 1 to program input i at the origin and takes 1 away at position s of dim d (every
other coordinate 0). A tensor is *blind* to a move when its values do not change under it, for every value of
the inputs. The walk keeps, per tensor, the moves it is blind to (``T.blind``); a tensor that does not read input
i (``T.deps``) is blind to all of i's moves without listing them.

Where blindness comes from: a loader that splits dim d of a program input by the for-loop (F > 1) gives block g,
at iteration f, the tile at index ``((g·F + f)·t + w)`` of d (SPEC §3.4; t = the tile's size on d). A for-loop
accumulator that *sums* those tiles as they are (``AccumRule.linear``) holds Σ_f of them, so it cannot tell index
``f·t + w`` from ``(f + 1)·t + w``: it is blind to the move ``(i, d, t)``. Where it goes: any op of tensors that
are all blind to a move is blind to it (a function of unchanged values is unchanged), so it passes through every
later op, save and load. Nothing else is claimed, so every claim is a fact about the functions computed.

What it cuts (``final_kernel``): the last kernel op the cap allows computes the program's outputs from what it
loads alone. If all it loads is blind to one move while the program's outputs change under that move (the
verifier's float64 inputs, ``Verifier.moved_by``), no block graph it could hold computes the program, and its
subtree is cut. Split-KV attention searches open the combine kernel below first kernels that fold V's rows
(``accum_no_red(V)``) tens of thousands of times; this is the sound reason none of them can finish.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mirage_lab.search.state import Move, OpInfo, T

if TYPE_CHECKING:
    from mirage_lab.search.walk import Walk

NO_MOVES: frozenset[Move] = frozenset()


def loader_move(src: T, imap: tuple[int, ...], fmap: int, grid: tuple[int, int, int], frange: int) -> Move | None:
    """The move an accumulator summing this loader's tiles is blind to: the loader reads a program input and the
    for-loop splits one of its dims; None otherwise."""
    if not src.source or fmap < 0 or frange < 2:
        return None
    (i,) = src.deps
    split = math.prod(g for a, g in enumerate(grid) if imap[a] == fmap and g > 1) * frange
    return i, fmap, src.dims[fmap] // split


def joined(ins: list[T]) -> frozenset[Move]:
    """The moves all of ``ins`` are blind to, so that an op of them is too."""
    if all(not t.blind for t in ins):
        return NO_MOVES  # (most tensors: nothing is folded)
    out = set()
    for m in frozenset().union(*(t.blind for t in ins)):
        if all(m in t.blind or m[0] not in t.deps for t in ins):
            out.add(m)
    return frozenset(out)


def op_blind(info: OpInfo, ins: list[T]) -> frozenset[Move]:
    """The moves an op's outputs are blind to: its operands' (``joined``) and, for an accumulator that sums a
    loader's tiles as they are, the move its loop folds."""
    got = joined(ins)
    rule = info.op.spec.accum
    if rule is not None and rule.combine == "sum" and rule.linear and ins[0].fold is not None:
        got = got | {ins[0].fold}
    return got


def op_tags(info: OpInfo, ins: list[T]) -> tuple[frozenset[int], frozenset[Move]]:
    """An op's outputs' ``deps`` and ``blind`` (at either level: a kernel op is no accumulator)."""
    return frozenset().union(*(t.deps for t in ins)), op_blind(info, ins)


def folded_only(w: Walk, ins: list[T]) -> str | None:
    """(``final_kernel``) Why the last kernel op cannot compute the program: everything it loads (``ins``, kernel
    tensors) is blind to a move that changes the program's outputs; None when nothing says so."""
    if "folded_inputs" not in w.on or w.verifier is None:
        return None
    for move in sorted(joined(ins)):
        i = move[0]
        if not any(i in t.deps for t in ins):
            continue  # (the lacking-input check reports an input nothing reads)
        if w.verifier.moved_by(*move):
            return (f"everything it loads sums input v{i} over the for-loop as it is (dim {move[1]}, positions "
                    f"0 and {move[2]} fall in one sum), while the program's outputs tell them apart")
    return None
