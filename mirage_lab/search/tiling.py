"""Index consistency of block tiles: which grid axes and the for-loop partition each dim of a tile.

Abstract expressions are blind to *where* a tile sits (SPEC §5, §6.4): ``matmul(Q, K)`` has the same
expression whether a block pairs Q's rows ``y`` with K's columns ``y`` (only the diagonal blocks of
QKᵀ) or with all of K. Most complete graphs that pass the expression pre-check in attention and then
fail verification are of this kind. This module tracks, per tile dim, the set of *partitioning axes*
— grid axes 0, 1, 2 and ``LOOP`` (3) — that select which slice of the data dim a block (or an
iteration) holds, and names two index errors ``[lab]``:

* **diagonal**: one axis partitions two different dims of the same tile (``Q[i_y]·K[j_y]``, or an
  elementwise op broadcasting ``a[i_y, 1]`` against ``b[1, j_y]``): the block holds only the diagonal
  blocks of a product whose other blocks no other block computes;
* **contraction**: a matmul whose operands' contracted dims are partitioned differently
  (``A[:, k_y] · B[k_f, :]``): it sums products of unrelated slices; summed over y and f it is
  ``(Σ A)(Σ B)``, the unsound ``ΣΣ(ab) = (Σa)(Σb)`` of SPEC §11.7, not a matmul.

A dim's part is a frozenset of axes when known, or ``None`` after an op that folds index ranges
(an accumulator over a loop-partitioned dim, a reduction, a concatenation): unknown parts never
reject, so the analysis can only miss errors, never invent them.

Kernel tensors carry a part too (``intermediate_parts``): per dim ``frozenset()`` when the dim is
*aligned* — its p-th slice holds the values of index p, as a program input's does — or ``None``.
Program inputs are aligned; a kernel op's outputs follow ``op_parts`` over aligned inputs; a saved
tile's dim is aligned when the omap places on it exactly the axes that partition it in the tile
(``saved_parts``): block b's slice b lands at slice b. A grid axis placed on a dim it does not
partition (split-KV's partial sums, concatenated along the head dim) makes the dim a compound of
(block, offset): unknown. A loader reading an aligned dim gets its parts as from a program input
(``loader_parts``); from an unknown one, None. Used by the search when
``index_checks`` is on (ours; the reference has no such filter): docs/decisions.md gives the evidence
that no saved or verified μGraph violates it.
"""

from __future__ import annotations

from collections.abc import Sequence

from mirage_lab.ir.graph import BlockGraph
from mirage_lab.ir.ops import Kind, Op

LOOP = 3
AXIS_NAMES = ("x", "y", "z", "the for-loop")
Part = frozenset[int] | None
Parts = tuple[Part, ...]


def loader_parts(rank: int, imap: Sequence[int], fmap: int, grid: Sequence[int], frange: int,
                 source: Parts | None = None) -> Parts:
    """The axes partitioning each dim of a loader's tile: grid axes whose imap names the dim (with more
    than one block), and the for-loop on the fmap dim (when it iterates). ``source``: the kernel tensor's
    alignment (``intermediate_parts``; None: aligned, as a program input); its unknown dims stay unknown."""
    parts: list[set[int]] = [set() for _ in range(rank)]
    for axis, d in enumerate(imap):
        if d >= 0 and grid[axis] > 1:
            parts[d].add(axis)
    if fmap >= 0 and frange > 1:
        parts[fmap].add(LOOP)
    if source is None:
        return tuple(frozenset(p) for p in parts)
    return tuple(None if s is None else frozenset(p) for p, s in zip(parts, source, strict=True))


def saved_parts(tile: Parts, omap: Sequence[int], grid: Sequence[int]) -> Parts:
    """The alignment of the kernel tensor a saver writes from ``tile`` with ``omap``: a dim is aligned
    (``frozenset()``) when the grid axes the omap places on it are exactly those partitioning it in the
    tile, else unknown (None)."""
    placed: list[set[int]] = [set() for _ in tile]
    for axis, d in enumerate(omap):
        if d >= 0 and grid[axis] > 1:
            placed[d].add(axis)
    return tuple(frozenset() if p is not None and p == frozenset(a) else None
                 for p, a in zip(tile, placed, strict=True))


def aligned(rank: int) -> Parts:
    """The alignment of a program input: every dim."""
    return (frozenset(),) * rank


def op_parts(op: Op, ins: Sequence[Parts], in_dims: Sequence[Sequence[int]],
             out_dims: Sequence[Sequence[int]]) -> tuple[Parts, ...] | str:
    """The parts of ``op``'s outputs, or why the op is an index error (a sentence)."""
    kind = op.spec.kind
    if not ins:
        return tuple(tuple(None for _ in dims) for dims in out_dims)
    if any(len(p) != len(d) for p, d in zip(ins, in_dims, strict=True)) or len({len(p) for p in ins}) > 1 \
            or any(len(d) != len(ins[0]) for d in out_dims):
        return tuple(tuple(None for _ in dims) for dims in out_dims)  # rank changes: nothing to say
    if kind is Kind.MATMUL and len(ins) == 2:
        a, b = ins
        ka, kb = a[-1], b[-2]
        if ka is not None and kb is not None and ka != kb:
            return (f"its contracted dims are partitioned differently ({_axes(ka)} vs {_axes(kb)}): it would "
                    "sum products of unrelated slices")
        out = (*(_union(x, y) for x, y in zip(a[:-2], b[:-2], strict=True)), a[-2], b[-1])
        return _checked([out])
    if kind in (Kind.UNARY, Kind.NORM) or (kind is Kind.BINARY and len(ins) == 2):
        merged = ins[0] if len(ins) == 1 else tuple(_union(x, y) for x, y in zip(ins[0], ins[1], strict=True))
        return _checked([merged])
    if kind is Kind.ACCUM:
        # summing over iterations folds a loop-partitioned dim; a dim that changes size is reduced
        return _checked([tuple(None if p is None or LOOP in p or d_in != d_out else p
                               for p, d_in, d_out in zip(ins[0], in_dims[0], dims, strict=True))
                         for dims in out_dims])
    if len(ins) == 1 and kind is Kind.REDUCTION:
        return _checked([tuple(p if d_in == d_out else None for p, d_in, d_out in zip(ins[0], in_dims[0], dims,
                                                                                      strict=True))
                         for dims in out_dims])
    return tuple(tuple(None for _ in dims) for dims in out_dims)  # concatenations and the rest: unknown


def graph_violations(bg: BlockGraph) -> list[str]:
    """Every index error of a built block graph (empty when it is consistent), as sentences."""
    parts: dict[int, Parts] = {}
    errors: list[str] = []
    for node in bg.nodes:
        if node.op is Op.INPUT:
            tile = bg.tensors[node.outputs[0]]
            parts[node.outputs[0]] = loader_parts(len(tile.dims), node.attr("imap"), int(node.attr("fmap")),
                                                  bg.grid, bg.forloop_range)
        elif node.kind is not Kind.IO:
            got = op_parts(node.op, [parts[i] for i in node.inputs], [bg.tensors[i].dims for i in node.inputs],
                           [bg.tensors[o].dims for o in node.outputs])
            if isinstance(got, str):
                errors.append(f"{node.op.value} {list(node.inputs)}: {got}")
                got = tuple(tuple(None for _ in bg.tensors[o].dims) for o in node.outputs)
            parts.update(zip(node.outputs, got, strict=True))
    return errors


def _union(x: Part, y: Part) -> Part:
    return None if x is None or y is None else x | y


def _axes(p: frozenset[int]) -> str:
    return "whole" if not p else " and ".join(AXIS_NAMES[a] for a in sorted(p))


def _checked(outs: list[Parts]) -> tuple[Parts, ...] | str:
    for parts in outs:
        seen: dict[int, int] = {}
        for d, p in enumerate(parts):
            for axis in p or ():
                if axis in seen:
                    return (f"{AXIS_NAMES[axis]} partitions both dim {seen[axis]} and dim {d} of its result: a "
                            "block would hold only the diagonal blocks of it")
                seen[axis] = d
    return tuple(outs)


__all__ = ["LOOP", "Part", "Parts", "aligned", "graph_violations", "loader_parts", "op_parts", "saved_parts"]
