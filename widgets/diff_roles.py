"""Which kernels of two μGraphs play the same role, and which op computes what inside a fusion.

A kernel's *role* is what it contributes to the graphs' outputs, told by abstract expressions
(``mirage_lab.absexpr``). A kernel-level tensor is a *meeting point* when the other graph has it
too: graph output i meets output i (by position, so a wrong candidate still lines up), and an
intermediate tensor meets one of the other side whose expression has the same normal form. Kernels
joined by tensors that do not meet (an intermediate one side materialises and the other keeps
inside a kernel) form one group with the kernels of the other side that produce the same meeting
points: the program's ``rms_norm`` and ``matmul`` form one group with the customized kernel that
fuses them. A group whose two sides run the same ops in the same order pairs them one to one.

Inside any other group each *unit* (a library kernel, or a block op of a customized kernel) of the
side with fewer kernels is assigned to the first unit, in program order, of the other side whose
output contains its output (``e ⊑ E`` modulo the axioms): the block ``accum_rms`` computes part of
the program's ``rms_norm``, the block ``matmul``, its accumulator and the final ``div`` compute the
program's ``matmul`` (the ``div`` its whole value).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from networkx.utils import UnionFind

from mirage_lab.absexpr import GraphExpressions, Oracle, Term, graph_expressions
from mirage_lab.errors import MirageError
from mirage_lab.ir import KernelGraph

__all__ = ["KernelGroup", "Role", "Unit", "kernel_groups", "roles"]


@dataclass(frozen=True)
class KernelGroup:
    """Kernels (indices into ``compute_nodes``) of each side that compute the same meeting points."""

    left: tuple[int, ...]
    right: tuple[int, ...]

    @property
    def one_to_one(self) -> bool:
        return len(self.left) == len(self.right) == 1


@dataclass(frozen=True)
class Unit:
    """One op that computes something: a library kernel (``k1 matmul``) or a block op (``k0 s3 matmul``)."""

    name: str
    op: str
    expr: Term


@dataclass(frozen=True)
class Role:
    """A unit of the less fused side and the units of the other side that compute (part of) its value."""

    unit: Unit | None  # None: the other side's units contribute to nothing this side computes
    parts: tuple[Unit, ...]
    whole: frozenset[str]  # names of the parts whose value equals the unit's


def _expressions(g: KernelGraph) -> GraphExpressions | None:
    try:
        return graph_expressions(g)
    except MirageError:  # an op without an abstract rule: the caller aligns by op names instead
        return None


def _normal_forms(normal: Oracle, ex: GraphExpressions, tensors: Iterable[int]) -> dict[int, Any]:
    """Each tensor's normal form (interned: equal forms are one object), None past the limits."""
    return {t: normal.normal_form(ex.kernel[t]) for t in tensors}


def _produced(g: KernelGraph) -> list[int]:
    return [t for n in g.compute_nodes for t in n.outputs if t not in g.outputs]


def kernel_groups(left: KernelGraph, right: KernelGraph) -> list[KernelGroup] | None:
    """The groups of kernels that meet (module docstring), in left order; None without expressions."""
    lex, rex = _expressions(left), _expressions(right)
    if lex is None or rex is None:
        return None
    normal = Oracle(lex.outputs)  # for its normaliser: normal forms of the two sides' tensors, compared
    forms = [_normal_forms(normal, lex, _produced(left)), _normal_forms(normal, rex, _produced(right))]
    shared = {f for f in forms[0].values() if f is not None} & {f for f in forms[1].values() if f is not None}
    sets = UnionFind()
    for side, g in enumerate((left, right)):
        producer = {t: k for k, n in enumerate(g.compute_nodes) for t in n.outputs}
        for k, node in enumerate(g.compute_nodes):
            sets[side, k]  # (every kernel is a set, joined or not)
            for t in node.outputs:
                if t in g.outputs:
                    sets.union((side, k), ("out", g.outputs.index(t)))
                elif forms[side][t] in shared:
                    sets.union((side, k), ("form", forms[side][t]))
            for t in node.inputs:  # an intermediate the other side never has joins its producer and consumer
                if t in producer and forms[side].get(t) not in shared and t not in g.outputs:
                    sets.union((side, k), (side, producer[t]))
    return _collect(sets, len(left.compute_nodes), len(right.compute_nodes))


def _collect(sets: UnionFind, n_left: int, n_right: int) -> list[KernelGroup]:
    members: dict[Any, tuple[list[int], list[int]]] = {}
    for side, n in ((0, n_left), (1, n_right)):
        for k in range(n):
            members.setdefault(sets[side, k], ([], []))[side].append(k)
    groups = [KernelGroup(tuple(a), tuple(b)) for a, b in members.values()]
    return sorted(groups, key=lambda g: (g.left[0] if g.left else n_left, g.right[0] if g.right else n_right))


def units(g: KernelGraph, kernels: Sequence[int]) -> list[Unit]:
    """The units of ``kernels`` in program order; each library kernel is one, a customized kernel its block ops."""
    ex = graph_expressions(g)
    index = {id(n): i for i, n in enumerate(g.nodes)}
    out = []
    for k in kernels:
        node = g.compute_nodes[k]
        if node.body is None:
            attrs = ", ".join(f"{a}={v}" for a, v in node.attrs)
            name = f"k{k} {node.op.value}" + (f"[{attrs}]" if attrs else "")
            out.append(Unit(name, node.op.value, ex.kernel[node.outputs[0]]))
            continue
        block = ex.blocks[index[id(node)]]
        out += [Unit(f"k{k} s{n.outputs[0]} {n.op.value}", n.op.value, block[n.outputs[0]])
                for n in node.body.compute_nodes]
    return out


def roles(targets: Sequence[Unit], others: Sequence[Unit]) -> list[Role]:
    """Each of ``others`` assigned to the first target whose value contains its value (module docstring)."""
    if not targets:
        return [Role(None, tuple(others), frozenset())]
    oracle = Oracle(tuple(u.expr for u in targets))
    parts: list[list[Unit]] = [[] for _ in targets]
    whole: list[set[str]] = [set() for _ in targets]
    stray = []
    for u in others:
        verdict = oracle.check(u.expr)
        if verdict.ok and verdict.target is not None:
            parts[verdict.target].append(u)
            if oracle.normal_form(u.expr) is oracle.normal_form(targets[verdict.target].expr):
                whole[verdict.target].add(u.name)
        else:
            stray.append(u)
    out = [Role(t, tuple(p), frozenset(w)) for t, p, w in zip(targets, parts, whole, strict=True)]
    return out + ([Role(None, tuple(stray), frozenset())] if stray else [])
