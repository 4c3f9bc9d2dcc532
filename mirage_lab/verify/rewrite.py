"""Editing μGraphs through their dict form, and semantics-preserving rewrites.

This module holds the machinery that ``mutate.py`` shares: a graph is turned into its
dict form (``ir.io.graph_to_dict``: tensor ids are the graph's own creation-order ids),
edited, and rebuilt by replaying every op through the builders (``build``), so an edit
can only ever yield a graph that satisfies every rule; an edit the rules reject raises
``MirageError`` and is discarded.

``rewrites(graph)`` yields variants that compute the same function, for testing that a
verifier *accepts* what it should:

* ``commute``: ``add`` / ``mul`` with swapped operands (kernel and block level);
* ``reassociate``: ``(a∘b)∘c ↔ a∘(b∘c)`` for add, mul and matmul, the mul/div forms
  ``(a·b)/c = a·(b/c)``, ``(a/b)·c = (a·c)/b``, ``c·(a/b) = (c·a)/b``, ``(a/b)/c = a/(b·c)``, and
  the row-scaling forms ``(a/b)@c = (a@c)/b``, ``(a·b)@c = (a@c)·b`` (equal only when b holds one
  value per row; the float check discards the others); only where the inner op's result has no
  other consumer;
* ``distribute``: ``a·(b+c) → a·b + a·c`` and ``(a+b)/c → a/c + b/c``;
* ``accum_split``: ``acc(a + b) → acc(a) + acc(b)`` for the linear accumulators
  (NO_RED, RED_LD_SUM, RED_LD_MEAN, REDTOX_LD_SUM);
* ``retile``: a customized op with another grid size on one mapped axis (÷4, ÷2, ×2, ×4),
  another forloop range (F·2^k, k ∈ {−3 … 3}, dividing every fmap dim; only when some loader
  walks a dim, fmap ≠ φ — otherwise a larger F just repeats the same tiles, which scales
  accumulated sums), or one grid doubling combined with F doubled or halved.

Every candidate is rebuilt through the builders, must keep the graph's input and output
types, and (with ``check=True``) must agree with the original under the float64
interpreter (``mutate.really_different`` is False); the others are counted as discarded in
``RewriteStats``. A retiling that changes an intermediate DTensor's shape is simply invalid.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from mirage_lab.errors import MirageError, UnsupportedOpError
from mirage_lab.ir.builder import KernelGraphBuilder
from mirage_lab.ir.graph import PHI, BlockGraph, KernelGraph
from mirage_lab.ir.io import _replay_for, block_graph_from_dict, graph_to_dict
from mirage_lab.ir.ops import Level, Op
from mirage_lab.verify.compare import really_different

GraphDict = dict[str, Any]
#: an edit proposal: (kind, description, edited dict)
Proposal = tuple[str, str, GraphDict]
AXES = "xyz"


@dataclass(frozen=True)
class Mutant:
    """A variant of a graph: what kind of edit, exactly what changed, and the rebuilt graph."""

    kind: str
    description: str
    graph: KernelGraph = field(repr=False)

    def __repr__(self) -> str:
        return f"<Mutant {self.kind}: {self.description}>"


# --------------------------------------------------------------------------- dict form


def build(d: GraphDict) -> KernelGraph:
    """Rebuild a graph from its (edited) dict form through the builders; raises ``MirageError``.

    Unlike ``ir.io.graph_from_dict`` the recorded tensor table is only read for kernel
    inputs, so edits may add, drop or reshape intermediate tensors.
    """
    b = KernelGraphBuilder()
    env: dict[int, Any] = {}
    for nd in d["nodes"]:
        op = Op(nd["op"])
        ins = [env[i] for i in nd["inputs"]]
        attrs = nd.get("attrs", {})
        if op is Op.INPUT:
            t = d["tensors"][nd["outputs"][0]]
            outs = [b.new_input(t["dims"], attrs.get("strides"), t["dtype"])]
        elif op is Op.CUSTOMIZED:
            body = {k: v for k, v in nd["body"].items() if k != "tensors"}
            outs = b.customized(ins, block_graph_from_dict(body))
        elif Level.KERNEL not in op.spec.codes:
            raise UnsupportedOpError(f"{op.value} does not exist at the kernel level")
        else:
            outs = _replay_for(op, kernel=True)(b, ins, attrs)
        env.update(zip(nd["outputs"], outs, strict=True))
    for o in d["outputs"]:
        b.mark_output(env[o])
    return b.freeze()


def sites(g: KernelGraph) -> list[tuple[int | None, BlockGraph | None]]:
    """The kernel level (None, None), then every block graph as (block index, BlockGraph)."""
    return [(None, None), *enumerate(g.block_graphs)]


def body_index(d: GraphDict, b: int) -> int:
    """The kernel node index of the ``b``-th customized op."""
    return [k for k, nd in enumerate(d["nodes"]) if nd["op"] == Op.CUSTOMIZED.value][b]


def nodes_of(d: GraphDict, b: int | None) -> list[dict[str, Any]]:
    """The node list of the kernel level (``b is None``) or of block graph ``b``."""
    nodes: list[dict[str, Any]] = d["nodes"] if b is None else d["nodes"][body_index(d, b)]["body"]["nodes"]
    return nodes


def body_of(d: GraphDict, b: int) -> dict[str, Any]:
    body: dict[str, Any] = d["nodes"][body_index(d, b)]["body"]
    return body


def where(b: int | None, j: int) -> str:
    return f"kernel node {j}" if b is None else f"block {b} node {j}"


def fmt_map(m: Any) -> str:
    return "(" + ", ".join(f"{AXES[a]}→{'φ' if v == PHI else v}" for a, v in enumerate(m)) + ")"


def consumers(d: GraphDict, b: int | None, tid: int) -> int:
    """How many times tensor ``tid`` is read at that level (kernel outputs count)."""
    n = sum(nd["inputs"].count(tid) for nd in nodes_of(d, b))
    return n + (d["outputs"].count(tid) if b is None else 0)


def producer(nodes: list[dict[str, Any]], tid: int) -> int | None:
    return next((k for k, nd in enumerate(nodes) if tid in nd["outputs"]), None)


def fresh_id(d: GraphDict, b: int | None) -> int:
    ids = [i for nd in nodes_of(d, b) for i in nd["inputs"] + nd["outputs"]]
    return max(ids, default=-1) + 1


def same_io(g: KernelGraph, m: KernelGraph) -> bool:
    """Equal input and output types (dims, dtype), in order."""
    def key(ts: Any) -> list[Any]:
        return [(t.dims, t.dtype) for t in ts]
    return key(g.input_types) == key(m.input_types) and key(g.output_types) == key(m.output_types)


def realise(g: KernelGraph, proposals: Iterator[Proposal], seen: set[str]) -> Iterator[tuple[Mutant, bool]]:
    """Build each proposal; yield (mutant, valid). Invalid, type-changing and duplicate ones are skipped
    (duplicates silently; the others are yielded once with ``valid=False`` so callers can count them)."""
    for kind, desc, d in proposals:
        try:
            m = build(d)
        except MirageError:
            yield Mutant(kind, desc, g), False
            continue
        if not same_io(g, m):
            yield Mutant(kind, desc, g), False
            continue
        h = m.canonical_hash()
        if h in seen:
            continue
        seen.add(h)
        yield Mutant(kind, desc, m), True


# --------------------------------------------------------------------------- rewrites

#: (outer op, inner op, inner position) → (new inner op, its args, new outer op, its args);
#: a, b = the inner op's operands, c = the outer op's other operand, m = the new inner result
ASSOC: dict[tuple[str, str, int], tuple[str, tuple[str, str], str, tuple[str, str]]] = {
    ("add", "add", 0): ("add", ("b", "c"), "add", ("a", "m")),
    ("add", "add", 1): ("add", ("c", "a"), "add", ("m", "b")),
    ("mul", "mul", 0): ("mul", ("b", "c"), "mul", ("a", "m")),
    ("mul", "mul", 1): ("mul", ("c", "a"), "mul", ("m", "b")),
    ("div", "mul", 0): ("div", ("b", "c"), "mul", ("a", "m")),
    ("mul", "div", 0): ("mul", ("a", "c"), "div", ("m", "b")),
    ("mul", "div", 1): ("mul", ("c", "a"), "div", ("m", "b")),
    ("div", "div", 0): ("mul", ("b", "c"), "div", ("a", "m")),
    ("matmul", "matmul", 0): ("matmul", ("b", "c"), "matmul", ("a", "m")),
    ("matmul", "matmul", 1): ("matmul", ("c", "a"), "matmul", ("m", "b")),
    ("matmul", "div", 0): ("matmul", ("a", "c"), "div", ("m", "b")),
    ("matmul", "mul", 0): ("matmul", ("a", "c"), "mul", ("m", "b")),
}
#: (outer op, inner op, inner position) → the op applied to each summand
DISTRIBUTE: dict[tuple[str, str, int], str] = {
    ("mul", "add", 0): "mul", ("mul", "add", 1): "mul", ("div", "add", 0): "div",
}
LINEAR_ACCUMS = ("accum_no_red", "accum_sum", "accum_mean", "accum_sum_todimx")
GRID_FACTORS = (0.25, 0.5, 2.0, 4.0)
F_FACTORS = (0.125, 0.25, 0.5, 2.0, 4.0, 8.0)


def _pairs(g: KernelGraph) -> Iterator[tuple[int | None, int, int, dict[str, Any], dict[str, Any], GraphDict]]:
    """Every (outer node, inner node) where the inner result feeds only the outer op: (b, j, pos, …)."""
    d0 = graph_to_dict(g)
    for b, _ in sites(g):
        nodes = nodes_of(d0, b)
        for j, nd in enumerate(nodes):
            for pos, tid in enumerate(nd["inputs"][:2] if len(nd["inputs"]) == 2 else []):
                k = producer(nodes, tid)
                if k is not None and len(nodes[k]["outputs"]) == 1 and consumers(d0, b, tid) == 1:
                    yield b, j, pos, nd, nodes[k], d0


def _commute(g: KernelGraph) -> Iterator[Proposal]:
    d0 = graph_to_dict(g)
    for b, _ in sites(g):
        for j, nd in enumerate(nodes_of(d0, b)):
            if nd["op"] in ("add", "mul") and nd["inputs"][0] != nd["inputs"][1]:
                d = copy.deepcopy(d0)
                nodes_of(d, b)[j]["inputs"].reverse()
                yield "commute", f"{where(b, j)}: {nd['op']}(x, y) → {nd['op']}(y, x)", d


def _reassociate(g: KernelGraph) -> Iterator[Proposal]:
    for b, j, pos, outer, inner, d0 in _pairs(g):
        rule = ASSOC.get((outer["op"], inner["op"], pos))
        if rule is None:
            continue
        new_in, in_args, new_out, out_args = rule
        m = inner["outputs"][0]
        env = {"a": inner["inputs"][0], "b": inner["inputs"][1], "c": outer["inputs"][1 - pos], "m": m}
        d = copy.deepcopy(d0)
        nodes = nodes_of(d, b)
        k = producer(nodes, m)
        assert k is not None
        del nodes[k]
        j2 = j - 1  # the outer node moved up by one
        nodes.insert(j2, {"op": new_in, "inputs": [env[x] for x in in_args], "outputs": [m]})
        nodes[j2 + 1].update(op=new_out, inputs=[env[x] for x in out_args])
        before = (f"{outer['op']}({inner['op']}(a, b), c)" if pos == 0 else f"{outer['op']}(c, {inner['op']}(a, b))")
        after = f"{new_out}(" + ", ".join(f"{new_in}({', '.join(in_args)})" if x == "m" else x
                                          for x in out_args) + ")"
        yield "reassociate", f"{where(b, j)}: {before} → {after}", d


def _distribute(g: KernelGraph) -> Iterator[Proposal]:
    for b, j, pos, outer, inner, d0 in _pairs(g):
        op = DISTRIBUTE.get((outer["op"], inner["op"], pos))
        if op is None:
            continue
        c, (x, y), m = outer["inputs"][1 - pos], inner["inputs"], inner["outputs"][0]
        d = copy.deepcopy(d0)
        nodes = nodes_of(d, b)
        k = producer(nodes, m)
        assert k is not None
        m2 = fresh_id(d, b)
        del nodes[k]
        j2 = j - 1
        ax, ay = ([c, x], [c, y]) if pos == 1 else ([x, c], [y, c])
        nodes[j2:j2] = [{"op": op, "inputs": ax, "outputs": [m]}, {"op": op, "inputs": ay, "outputs": [m2]}]
        nodes[j2 + 2].update(op="add", inputs=[m, m2])
        form = "c·(a+b) → c·a + c·b" if pos == 1 else ("(a+b)·c → a·c + b·c" if op == "mul" else "(a+b)/c → a/c + b/c")
        yield "distribute", f"{where(b, j)}: {form}", d


def _accum_split(g: KernelGraph) -> Iterator[Proposal]:
    d0 = graph_to_dict(g)
    for b in range(len(g.block_graphs)):
        nodes0 = nodes_of(d0, b)
        for j, nd in enumerate(nodes0):
            if nd["op"] not in LINEAR_ACCUMS:
                continue
            t = nd["inputs"][0]
            k = producer(nodes0, t)
            if k is None or nodes0[k]["op"] != "add" or consumers(d0, b, t) != 1:
                continue
            d = copy.deepcopy(d0)
            nodes = nodes_of(d, b)
            x, y = nodes[k]["inputs"]
            m2, out = fresh_id(d, b), nd["outputs"][0]
            del nodes[j]
            del nodes[k]
            at = j - 1
            nodes[at:at] = [{"op": nd["op"], "inputs": [x], "outputs": [m2]},
                            {"op": nd["op"], "inputs": [y], "outputs": [m2 + 1]},
                            {"op": "add", "inputs": [m2, m2 + 1], "outputs": [out]}]
            yield "accum_split", f"{where(b, j)}: {nd['op']}(a + b) → {nd['op']}(a) + {nd['op']}(b)", d


def _retile(g: KernelGraph) -> Iterator[Proposal]:
    d0 = graph_to_dict(g)
    for b, bg in enumerate(g.block_graphs):
        grids = [(a, int(bg.grid[a] * f)) for a in range(3) if bg.grid[a] > 1 for f in GRID_FACTORS
                 if bg.grid[a] * f >= 1 and float(bg.grid[a] * f).is_integer()]
        walks = any(n.attr("fmap") != PHI for n in bg.loaders)  # else F only repeats the same tiles
        forloops = sorted({int(bg.forloop_range * f) for f in F_FACTORS
                           if walks and bg.forloop_range * f >= 1 and float(bg.forloop_range * f).is_integer()})
        options: list[tuple[tuple[int, int] | None, int | None]] = [(gr, None) for gr in grids]
        options += [(None, fl) for fl in forloops]
        options += [(gr, fl) for gr, fl in itertools.product(grids, forloops)
                    if gr[1] == bg.grid[gr[0]] * 2 and fl in (bg.forloop_range * 2, bg.forloop_range // 2)]
        for gr, fl in options:
            d = copy.deepcopy(d0)
            body = body_of(d, b)
            parts = []
            if gr is not None:
                body["grid"][gr[0]] = gr[1]
                parts.append(f"grid {tuple(bg.grid)} → {tuple(body['grid'])}")
            if fl is not None:
                body["forloop_range"] = fl
                parts.append(f"forloop_range {bg.forloop_range} → {fl}")
            yield "retile", f"block {b}: " + ", ".join(parts), d


REWRITES: dict[str, Callable[[KernelGraph], Iterator[Proposal]]] = {
    "commute": _commute, "reassociate": _reassociate, "distribute": _distribute,
    "accum_split": _accum_split, "retile": _retile,
}


@dataclass
class RewriteStats:
    """What ``rewrites`` tried: kept (float-equal), invalid (rules or types), discarded (float-different)."""

    kept: int = 0
    invalid: int = 0
    discarded: list[str] = field(default_factory=list)
    inconclusive: list[str] = field(default_factory=list)


def rewrites(graph: KernelGraph, *, kinds: Any = None, check: bool = True, seed: int = 0,
             stats: RewriteStats | None = None, limit: int | None = None) -> Iterator[Mutant]:
    """Semantics-preserving variants of ``graph`` (see the module docstring), in a deterministic order.

    With ``check`` each is compared with ``graph`` by the float64 interpreter and kept only if equal;
    ``stats`` (if given) counts the kept, the invalid, and lists the discarded ones.
    """
    stats = stats if stats is not None else RewriteStats()
    seen = {graph.canonical_hash()}
    chosen = list(REWRITES) if kinds is None else [kinds] if isinstance(kinds, str) else list(kinds)
    for name in chosen:
        for m, valid in realise(graph, REWRITES[name](graph), seen):
            if not valid:
                stats.invalid += 1
                continue
            verdict = really_different(graph, m.graph, seed=seed) if check else False
            if verdict is None:
                stats.inconclusive.append(m.description)
                continue
            if verdict:
                stats.discarded.append(m.description)
                continue
            stats.kept += 1
            yield m
            if limit is not None and stats.kept >= limit:
                return
