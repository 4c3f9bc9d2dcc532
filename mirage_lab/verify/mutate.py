"""Mutants of correct μGraphs: the negative test set of the verifier (issue 3).

``mutants(graph)`` edits a graph one change at a time and rebuilds it through the
builders (``rewrite.build``), so every mutant is a *valid* μGraph; edits the rules reject
are dropped silently. Every mutant also keeps the graph's input and output types, so a
verifier must tell it apart by values, never by shape. Order is deterministic: by kind
(``KINDS`` order), then by position (kernel level first, then block graphs in order, nodes
in order), then by the replacement value. Duplicates (the same rebuilt graph) are dropped.

Mutation kinds (``Mutant.kind``) and exactly what each edits:

``swap_inputs``
    (a) two program inputs of the same type exchanged everywhere they are read; (b) two
    same-type operands of one node exchanged: a customized op's inputs (the loaders then read
    each other's tensor), or a non-commutative op (sub, div, pow, concat). add / mul are
    skipped (commutative) and matmul belongs to ``transpose_input``.
``imap`` / ``omap``
    a loader's input map / a saver's output map, on one grid axis with more than one block:
    set to every other value (φ or a data dim), and exchanged with another such axis.
``fmap``
    a loader's forloop dim set to every other value (φ or a data dim), where F > 1 (with F = 1
    the fmap has no effect).
``forloop_range``
    a block graph's F set to F·2^k, k ∈ {−2, −1, 1, 2}, and to 1.
``accum_kind``
    an accumulator replaced by every other one-input kind (nored, sum, mean, rms, sum_todimx, max).
``sibling_op``
    an op replaced by a sibling (``SIBLINGS``): first the issue's pairs exp↔silu, add↔mul,
    div↔mul, then every other op of its family: unary (exp, square, sqrt, silu, sigmoid, gelu,
    relu, log) or binary elementwise (add, mul, div, sub, pow; sub exists only in block graphs).
``drop_op``
    a single-output compute op removed, its readers rewired to its operand i (each i tried).
``reduction_dim``
    an explicit reduction op (kernel ``reduction``; block ``reduction``, ``reduction_to_dimx``,
    ``reduction_max``) reducing every other dim 0 … min(rank, 3) − 1. Accumulators always
    reduce the last dim and are covered by ``accum_kind``; the reference checkpoints hold no
    explicit reduction op, so this kind applies to programs and hand-built graphs.
``transpose_input``
    the IR has no transpose op, so "read an input transposed" is realised in two ways:
    (a) a loader whose DTensor has two equal-sized dims i, j (square in them) and whose
    imap or fmap mentions i or j gets i and j exchanged in its imap and fmap. Where the
    tile is square in i, j too (else the builders reject the mutant downstream), the block and
    iteration that read the tile at tile coordinates (c_i, c_j) now read the one at (c_j, c_i):
    the tensor is read transposed at tile granularity (each tile's content keeps its order);
    (b) a matmul (kernel or block) with its operands exchanged, ``A@B → B@A``, where shapes
    allow (square operands) — since ``B@A = (AᵀBᵀ)ᵀ``.
``rewire_operand`` (beyond the issue's list: the "wrong tensor" bug)
    one operand of a node (a saver's, or a marked kernel output, included) replaced by another
    tensor of the same type and phase defined before it.

``really_different(reference, mutant)`` is the float64 filter: the callers keep only the
mutants it says differ (``different_mutants`` does so).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from mirage_lab.ir.graph import PHI, KernelGraph
from mirage_lab.ir.io import graph_to_dict
from mirage_lab.ir.ops import Kind, Level, Op, mutation_siblings
from mirage_lab.verify.compare import really_different
from mirage_lab.verify.rewrite import (
    GraphDict,
    Mutant,
    Proposal,
    RewriteStats,
    body_of,
    fmt_map,
    nodes_of,
    realise,
    rewrites,
    sites,
    where,
)

__all__ = ["KINDS", "SIBLINGS", "Mutant", "RewriteStats", "different_mutants", "mutants", "really_different",
           "rewrites"]

#: the op table's declared pairs first (the issue's exp↔silu, add↔mul, div↔mul), then every other op of the
#: same family (a unary or a binary elementwise op without attributes, in code order); the builder drops those
#: that do not exist at a level (sub is block-only)
SIBLINGS: dict[Op, tuple[Op, ...]] = {op: sib for op in Op if (sib := mutation_siblings(op))}
ACCUMS = ("accum_no_red", "accum_sum", "accum_mean", "accum_rms", "accum_sum_todimx", "accum_max")
COMMUTATIVE = ("add", "mul")
REDUCTIONS = ("reduction", "reduction_to_dimx", "reduction_max")


def _nodes(g: KernelGraph) -> Iterator[tuple[int | None, int, Any, Any]]:
    """(block index or None, node index, node, tensor table) over the kernel level and every block graph."""
    for b, bg in sites(g):
        owner = g if bg is None else bg
        for j, n in enumerate(owner.nodes):
            yield b, j, n, owner.tensors


def _edit(d0: GraphDict, b: int | None, j: int, **changes: Any) -> GraphDict:
    """A copy of ``d0`` with node (b, j) updated: ``attrs`` entries merged, other fields replaced."""
    d = copy.deepcopy(d0)
    nd = nodes_of(d, b)[j]
    nd.setdefault("attrs", {}).update(changes.pop("attrs", {}))
    nd.update(changes)
    return d


# --------------------------------------------------------------------------- generators


def _swap_inputs(g: KernelGraph, d0: GraphDict) -> Iterator[Proposal]:
    ins = g.inputs
    for p, q in itertools.combinations(range(len(ins)), 2):
        if g.tensors[ins[p]] == g.tensors[ins[q]]:
            swap = {ins[p]: ins[q], ins[q]: ins[p]}
            d = copy.deepcopy(d0)
            for nd in d["nodes"]:
                if nd["op"] != "input":
                    nd["inputs"] = [swap.get(i, i) for i in nd["inputs"]]
            d["outputs"] = [swap.get(i, i) for i in d["outputs"]]
            yield "swap_inputs", f"program inputs {p} ↔ {q} (d{ins[p]} ↔ d{ins[q]}) exchanged everywhere", d
    for b, j, n, tensors in _nodes(g):
        if n.op.value in COMMUTATIVE or n.op in (Op.MATMUL, Op.INPUT, Op.OUTPUT):
            continue
        for p, q in itertools.combinations(range(len(n.inputs)), 2):
            x, y = n.inputs[p], n.inputs[q]
            if x != y and tensors[x] == tensors[y]:
                new = list(n.inputs)
                new[p], new[q] = y, x
                yield ("swap_inputs", f"{where(b, j)}: {n.op.value} operands {p} ↔ {q} exchanged",
                       _edit(d0, b, j, inputs=new))


def _loaders(g: KernelGraph) -> Iterator[tuple[int, int, Any, Any]]:
    for b, bg in enumerate(g.block_graphs):
        for j, n in enumerate(bg.nodes):
            if n.op in (Op.INPUT, Op.OUTPUT):
                yield b, j, n, bg


def _map_edits(g: KernelGraph, d0: GraphDict, kind: str) -> Iterator[Proposal]:
    op, key = (Op.INPUT, "imap") if kind == "imap" else (Op.OUTPUT, "omap")
    for b, j, n, bg in _loaders(g):
        if n.op is not op:
            continue
        old = tuple(n.attr(key))
        rank = len(bg.tensors[n.outputs[0] if op is Op.INPUT else n.inputs[0]].dims)
        axes = [a for a in range(3) if bg.grid[a] > 1]
        news: list[tuple[int, ...]] = []
        for a in axes:
            for v in range(PHI, rank):
                if v != old[a]:
                    news.append(tuple(v if k == a else old[k] for k in range(3)))
        for a1, a2 in itertools.combinations(axes, 2):
            if old[a1] != old[a2]:
                swapped = list(old)
                swapped[a1], swapped[a2] = old[a2], old[a1]
                news.append(tuple(swapped))
        label = "load" if op is Op.INPUT else "save"
        for new in news:
            yield (kind, f"{where(b, j)} ({label}): {key} {fmt_map(old)} → {fmt_map(new)}",
                   _edit(d0, b, j, attrs={key: list(new)}))


def _imap(g: KernelGraph, d0: GraphDict) -> Iterator[Proposal]:
    return _map_edits(g, d0, "imap")


def _omap(g: KernelGraph, d0: GraphDict) -> Iterator[Proposal]:
    return _map_edits(g, d0, "omap")


def _fmap(g: KernelGraph, d0: GraphDict) -> Iterator[Proposal]:
    for b, j, n, bg in _loaders(g):
        if n.op is Op.INPUT and bg.forloop_range > 1:  # with F = 1 the fmap has no effect
            old = n.attr("fmap")
            for v in range(PHI, len(n.attr("dims"))):
                if v != old:
                    yield ("fmap", f"{where(b, j)} (load): fmap {_dim(old)} → {_dim(v)}",
                           _edit(d0, b, j, attrs={"fmap": v}))


def _dim(v: int) -> str:
    return "φ" if v == PHI else str(v)


def _forloop_range(g: KernelGraph, d0: GraphDict) -> Iterator[Proposal]:
    for b, bg in enumerate(g.block_graphs):
        F = bg.forloop_range
        for new in sorted({1, F // 4, F // 2, 2 * F, 4 * F} - {0, F}):
            d = copy.deepcopy(d0)
            body_of(d, b)["forloop_range"] = new
            yield "forloop_range", f"block {b}: forloop_range {F} → {new}", d


def _accum_kind(g: KernelGraph, d0: GraphDict) -> Iterator[Proposal]:
    for b, j, n, _t in _nodes(g):
        if n.op.value in ACCUMS:
            for new in ACCUMS:
                if new != n.op.value:
                    yield "accum_kind", f"{where(b, j)}: {n.op.value} → {new}", _edit(d0, b, j, op=new)


def _sibling_op(g: KernelGraph, d0: GraphDict) -> Iterator[Proposal]:
    for b, j, n, _t in _nodes(g):
        level = Level.KERNEL if b is None else Level.BLOCK
        for new in SIBLINGS.get(n.op, ()):
            if level in new.spec.codes:
                yield "sibling_op", f"{where(b, j)}: {n.op.value} → {new.value}", _edit(d0, b, j, op=new.value)


def _drop_op(g: KernelGraph, d0: GraphDict) -> Iterator[Proposal]:
    for b, j, n, _t in _nodes(g):
        if n.op in (Op.INPUT, Op.OUTPUT) or len(n.outputs) != 1:
            continue
        for p, src in enumerate(dict.fromkeys(n.inputs)):
            d = copy.deepcopy(d0)
            nodes = nodes_of(d, b)
            del nodes[j]
            out = n.outputs[0]
            for nd in nodes[j:]:
                nd["inputs"] = [src if i == out else i for i in nd["inputs"]]
            if b is None:
                d["outputs"] = [src if i == out else i for i in d["outputs"]]
            yield "drop_op", f"{where(b, j)}: {n.op.value} dropped, its readers use operand {p}", d


def _reduction_dim(g: KernelGraph, d0: GraphDict) -> Iterator[Proposal]:
    for b, j, n, tensors in _nodes(g):
        if n.op.value in REDUCTIONS and n.kind is Kind.REDUCTION:
            old = n.attr("dim")
            for v in range(min(len(tensors[n.inputs[0]].dims), 3)):
                if v != old:
                    yield ("reduction_dim", f"{where(b, j)}: {n.op.value} dim {old} → {v}",
                           _edit(d0, b, j, attrs={"dim": v}))


def _transpose_input(g: KernelGraph, d0: GraphDict) -> Iterator[Proposal]:
    for b, j, n, _bg in _loaders(g):
        if n.op is not Op.INPUT:
            continue
        dims, imap, fmap = n.attr("dims"), tuple(n.attr("imap")), n.attr("fmap")
        for i, k in itertools.combinations(range(len(dims)), 2):
            if dims[i] != dims[k] or not ({i, k} & {*imap, fmap}):
                continue
            sw = {i: k, k: i}
            new_imap, new_fmap = [sw.get(v, v) for v in imap], sw.get(fmap, fmap)
            yield ("transpose_input",
                   f"{where(b, j)} (load d{dims}): read transposed in dims {i}↔{k}: imap {fmt_map(imap)} → "
                   f"{fmt_map(new_imap)}, fmap {_dim(fmap)} → {_dim(new_fmap)}",
                   _edit(d0, b, j, attrs={"imap": new_imap, "fmap": new_fmap}))
    for site, j, n, _t in _nodes(g):
        if n.op is Op.MATMUL and n.inputs[0] != n.inputs[1]:
            yield ("transpose_input", f"{where(site, j)}: matmul(A, B) → matmul(B, A)",
                   _edit(d0, site, j, inputs=list(reversed(n.inputs))))


def _rewire_operand(g: KernelGraph, d0: GraphDict) -> Iterator[Proposal]:
    for b, j, n, tensors in _nodes(g):
        if n.op is Op.INPUT:
            continue
        for p, old in enumerate(n.inputs):
            for t in range(min(n.outputs, default=len(tensors))):
                if t != old and tensors[t] == tensors[old]:
                    new = [t if k == p else i for k, i in enumerate(n.inputs)]
                    label = "d" if b is None else "s"
                    yield ("rewire_operand", f"{where(b, j)}: {n.op.value} operand {p} {label}{old} → {label}{t}",
                           _edit(d0, b, j, inputs=new))
    for p, old in enumerate(g.outputs):
        for t in range(len(g.tensors)):
            if t != old and t not in g.outputs and g.tensors[t] == g.tensors[old]:
                d = copy.deepcopy(d0)
                d["outputs"][p] = t
                yield "rewire_operand", f"kernel output {p}: d{old} → d{t}", d


GENERATORS: dict[str, Callable[[KernelGraph, GraphDict], Iterator[Proposal]]] = {
    "swap_inputs": _swap_inputs, "imap": _imap, "omap": _omap, "fmap": _fmap, "forloop_range": _forloop_range,
    "accum_kind": _accum_kind, "sibling_op": _sibling_op, "drop_op": _drop_op, "reduction_dim": _reduction_dim,
    "transpose_input": _transpose_input, "rewire_operand": _rewire_operand,
}
KINDS: tuple[str, ...] = tuple(GENERATORS)


def mutants(graph: KernelGraph, *, kinds: str | Iterable[str] | None = None,
            limit: int | None = None) -> Iterator[Mutant]:
    """Valid single-edit mutants of ``graph`` (module docstring), deterministic order, no duplicates.

    ``kinds`` restricts to some of ``KINDS``; ``limit`` caps the number yielded. Mutants are not yet
    filtered by the float interpreter: use ``really_different`` or ``different_mutants``.
    """
    chosen = list(KINDS) if kinds is None else [kinds] if isinstance(kinds, str) else list(kinds)
    unknown = [k for k in chosen if k not in GENERATORS]
    if unknown:
        raise ValueError(f"unknown mutation kind(s) {unknown}; known: {', '.join(KINDS)}")
    d0 = graph_to_dict(graph)
    seen = {graph.canonical_hash()}
    count = 0
    for kind in chosen:
        for m, valid in realise(graph, GENERATORS[kind](graph, d0), seen):
            if not valid:
                continue
            yield m
            count += 1
            if limit is not None and count >= limit:
                return


def different_mutants(graph: KernelGraph, *, kinds: str | Iterable[str] | None = None, limit: int | None = None,
                      seed: int = 0) -> Iterator[Mutant]:
    """The mutants that ``really_different`` shows to differ from ``graph``; ``limit`` counts those."""
    count = 0
    for m in mutants(graph, kinds=kinds):
        if really_different(graph, m.graph, seed=seed):
            yield m
            count += 1
            if limit is not None and count >= limit:
                return
