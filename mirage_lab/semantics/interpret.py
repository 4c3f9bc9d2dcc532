"""The one interpreter: runs kernel and block graphs over any number system (SPEC §3.4).

A block graph runs for all blocks and all loop iterations at once. Every block-level
value has the layout ``(gx, gy, gz, f, *tile)``: three grid axes and one iteration
axis in front of the tile dims. Any of those four axes may have size 1, meaning the
value is the same for every block along that axis (a replicated loader) or for every
iteration (iteration-invariant, or post-loop); broadcasting expands them only when
needed. Loaders are views of the input (no copies); savers scatter the blocks'
tiles back by the omap. Index semantics are exactly those of SPEC §3.4.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from mirage_lab.arguments import checked, did_you_mean
from mirage_lab.errors import InputError, UnsupportedOpError
from mirage_lab.ir.builder import as_graph
from mirage_lab.ir.graph import BlockGraph, KernelGraph, Node, loader_dtensor
from mirage_lab.ir.ops import EvalArgs, Kind, Op
from mirage_lab.ir.thread import derive_thread_graphs
from mirage_lab.semantics.arith import FloatArith, NumberSystem
from mirage_lab.semantics.field import FieldArith, FieldValue
from mirage_lab.semantics.footprint import memory_guard, require_memory
from mirage_lab.semantics.kernel_memo import MemoScope
from mirage_lab.semantics.real_values import check_real

F_AXIS = 3  # index of the iteration axis in block-level values
LEAD = 4  # grid x, y, z and the iteration axis


@checked
def interpret(graph: Any, inputs: Sequence[Any], *, backend: str | None = None, dtype: str = "float64",
              ns: NumberSystem | None = None, to_host: bool = True) -> list[Any]:
    """Run ``graph`` on ``inputs`` (one array per program input, in order); return its outputs.

    Float arithmetic in ``dtype`` on ``backend`` ("numpy", "cupy", default automatic) unless a
    number system ``ns`` is given. Outputs come back as numpy arrays unless ``to_host=False``.
    """
    g = as_graph(graph)
    ns = number_system(ns, backend, dtype)
    check_inputs(g, inputs)
    if ns.xp is np:
        require_memory(g, ns.element_bytes, "interpreting this graph")
    with memory_guard("interpreting this graph"):
        outs = run_kernel_graph(g, [ns.from_host(a) for a in inputs], ns)
        return [ns.to_host(v) for v in outs] if to_host else outs


#: the number systems ``interpret(ns=...)`` also takes by name: name → how to make it for a backend and dtype
NAMED_SYSTEMS: dict[str, Callable[[str | None, str], NumberSystem]] = {
    "float": lambda backend, dtype: FloatArith(backend, dtype),
    "field": lambda backend, dtype: FieldArith(backend=backend),
}


def number_system(ns: Any, backend: str | None = None, dtype: str = "float64") -> NumberSystem:
    """``ns`` as a number system: None (floats in ``dtype``), a name of ``NAMED_SYSTEMS``, or an instance (of
    ``FloatArith``, ``FieldArith``, … anything with the interpreter's methods)."""
    if ns is None:
        return FloatArith(backend, dtype)
    if isinstance(ns, str):
        make = NAMED_SYSTEMS.get(ns.strip().lower())
        if make is None:
            raise InputError(f"ns={ns!r} names no number system{did_you_mean(ns, list(NAMED_SYSTEMS))}; use "
                             f"{' or '.join(map(repr, NAMED_SYSTEMS))}, or pass one (FloatArith(...), FieldArith(...))")
        return make(backend, dtype)
    if isinstance(ns, type):
        raise InputError(f"ns={ns.__name__} is a class; pass an instance: ns={ns.__name__}()")
    missing = [m for m in ("xp", "from_host", "to_host", "add", "matmul") if not hasattr(ns, m)]
    if missing:
        raise InputError(f"ns must be a number system (FloatArith(...), FieldArith(...)) or one of "
                         f"{', '.join(map(repr, NAMED_SYSTEMS))}, got {type(ns).__name__} (it has no "
                         f"{', '.join(missing)})")
    return cast(NumberSystem, ns)


def check_inputs(g: KernelGraph, inputs: Sequence[Any]) -> None:
    types = g.input_types
    if isinstance(inputs, str | bytes) or not isinstance(inputs, Sequence):
        raise InputError("inputs must be a list of arrays, one per graph input, got "
                         f"{type(inputs).__name__}; write ml.interpret(g, [x, ...])")
    if len(inputs) != len(types):
        raise InputError(f"the graph has {len(types)} inputs ({', '.join(map(str, types))}) but "
                         f"{len(inputs)} arrays were given; pass one array per g.new_input, in order")
    for i, (a, t) in enumerate(zip(inputs, types, strict=True)):
        try:
            shape = tuple(a.shape) if hasattr(a, "shape") else np.shape(a)
        except ValueError as e:
            raise InputError(f"input {i} is not a rectangular array ({e}); pass an array of shape "
                             f"{t.dims}") from None
        if shape != t.dims:
            raise InputError(f"input {i} must have shape {t.dims} ({t}), got an array of shape {shape}")
        if not isinstance(a, FieldValue):
            check_real(a, f"input {i} ({t})")


def _last_uses(nodes: Sequence[Node], keep: Sequence[int]) -> dict[int, int]:
    last = {t: len(nodes) for t in keep}
    for k, n in enumerate(nodes):
        for t in n.inputs:
            last[t] = max(last.get(t, k), k)
    return last


def run_kernel_graph(g: KernelGraph, inputs: Sequence[Any], ns: NumberSystem, memo: MemoScope | None = None
                     ) -> list[Any]:
    """Evaluate ``g`` on number-system values; returns the marked outputs' values.

    With ``memo`` (a ``KernelMemo`` scoped to these inputs) a node computed as an earlier graph computed one on the
    same inputs takes that graph's outputs instead of running again, and the nodes it runs are kept for the next."""
    env: dict[int, Any] = {}
    names: dict[int, Any] = {}  # with a memo: how each tensor was computed from the inputs
    feed = iter(enumerate(inputs))
    last = _last_uses(g.nodes, g.outputs)
    for k, node in enumerate(g.nodes):
        if node.op is Op.INPUT:
            position, env[node.outputs[0]] = next(feed)
            if memo is not None:
                names[node.outputs[0]] = memo.input_key(position)
            continue
        key = None if memo is None else memo.node_key(node, [names[i] for i in node.inputs])
        outs = None if memo is None else memo.memo.get(key)
        if outs is None:
            outs = _run_node(g, node, [env[i] for i in node.inputs], ns)
            if memo is not None:
                memo.memo.put(key, outs)
        env.update(zip(node.outputs, outs, strict=True))
        if memo is not None:
            names.update((t, (key, j)) for j, t in enumerate(node.outputs))
        for i in set(node.inputs):
            if last.get(i) == k:
                del env[i]  # free intermediates as soon as their last consumer ran
    return [env[o] for o in g.outputs]


def _run_node(g: KernelGraph, node: Node, args: list[Any], ns: NumberSystem) -> list[Any]:
    if node.op is Op.CUSTOMIZED:
        assert node.body is not None
        return run_block_graph(node.body, args, ns)
    return _evaluate(ns, node, [g.tensors[i].dims for i in node.inputs], args, 64)


def _evaluate(ns: NumberSystem, node: Node, in_dims: list[tuple[int, ...]], args: list[Any],
              dimx: int) -> list[Any]:
    spec = node.op.spec
    if spec.evaluate is None:
        raise UnsupportedOpError(f"{node.op.value} has no evaluation rule at this level")
    out = spec.evaluate(ns, EvalArgs(node.attr_map, tuple(in_dims), dimx), *args)
    return list(out) if spec.n_outputs > 1 else [out]


# --------------------------------------------------------------------------- block level


def run_block_graph(bg: BlockGraph, inputs: Sequence[Any], ns: NumberSystem) -> list[Any]:
    """Run every block and iteration of ``bg`` at once; returns one DTensor value per saver.

    Thread graphs (SPEC §4 epilogues) run as part of their producer: the chain is applied
    to the producer's result right away, as a thread would in registers.
    """
    env: dict[int, Any] = {}
    feed = iter(inputs)
    results = []
    epilogues = {tg.producer: tg.chain for tg in derive_thread_graphs(bg)}
    done: set[int] = set()
    for k, node in enumerate(bg.nodes):
        if k in done:
            continue
        if node.op is Op.INPUT:
            env[node.outputs[0]] = ns.structural(lambda a, n=node: load_tiles(a, n, bg), next(feed))
        elif node.op is Op.OUTPUT:
            results.append(ns.structural(lambda v, n=node: save_tiles(v, n, bg), env[node.inputs[0]]))
        else:
            _step(ns, node, bg, env)
        for j in epilogues.get(k, ()):
            _step(ns, bg.nodes[j], bg, env)
            done.add(j)
    return results


def _step(ns: NumberSystem, node: Node, bg: BlockGraph, env: dict[int, Any]) -> None:
    """Evaluate one compute node of a block graph into ``env``."""
    args = [env[i] for i in node.inputs]
    in_dims = [bg.tensors[i].dims for i in node.inputs]
    if node.kind is Kind.ACCUM:
        outs = [accumulate(ns, node, in_dims[0], args, bg)]
    elif node.op is Op.REDUCTION_MAX:
        outs = running_max(ns, node, in_dims, args, bg)
    else:
        outs = _evaluate(ns, node, in_dims, args, bg.reduction_dimx)
    env.update(zip(node.outputs, outs, strict=True))


def load_tiles(a: Any, node: Node, bg: BlockGraph) -> Any:
    """A view of DTensor ``a`` as ``(gx, gy, gz, f, *tile)``: index ((b·F + i)·t + w) per SPEC §3.4."""
    imap, fmap = node.attr("imap"), node.attr("fmap")
    dims = loader_dtensor(node).dims
    split: list[int] = []
    labels: list[tuple[str, int]] = []  # ("g", axis) | ("f", 0) | ("t", dim)
    for d, n in enumerate(dims):
        for axis in range(3):
            if imap[axis] == d and bg.grid[axis] > 1:
                split.append(bg.grid[axis])
                labels.append(("g", axis))
                n //= bg.grid[axis]
        if fmap == d:
            split.append(bg.forloop_range)
            labels.append(("f", 0))
            n //= bg.forloop_range
        split.append(n)
        labels.append(("t", d))
    v = a.reshape(split)
    order = [("g", 0), ("g", 1), ("g", 2), ("f", 0)] + [("t", d) for d in range(len(dims))]
    present = [lab for lab in order if lab in labels]
    v = v.transpose([labels.index(lab) for lab in present])
    for pos, lab in enumerate(order):
        if lab not in labels:
            v = v.reshape((*v.shape[:pos], 1, *v.shape[pos:]))
    return v


def save_tiles(v: Any, node: Node, bg: BlockGraph) -> Any:
    """Scatter per-block tiles ``(gx, gy, gz, 1, *tile)`` into the saver's DTensor by the omap."""
    omap = node.attr("omap")
    xp = _module_of(v)
    tile = v.shape[LEAD:]
    v = xp.broadcast_to(v, (*bg.grid, 1, *tile))[:, :, :, 0]
    order: list[int] = []
    out_dims: list[int] = []
    for d, t in enumerate(tile):
        size = t
        for axis in range(3):
            if omap[axis] == d and bg.grid[axis] > 1:
                order.append(axis)
                size *= bg.grid[axis]
        order.append(3 + d)
        out_dims.append(size)
    if v.size > 1 and not any(v.strides):  # one value everywhere (the fast field path's free zeros): stay a view
        return xp.broadcast_to(v[(0,) * v.ndim], out_dims)
    squeeze = [axis for axis in range(3) if axis not in order]
    v = v.transpose(order + squeeze)
    return xp.ascontiguousarray(v).reshape(out_dims)


def _module_of(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return np
    import cupy

    return cupy


def _iteration(ns: NumberSystem, v: Any, i: int) -> Any:
    """Iteration ``i`` of a loop-phase value (itself if iteration-invariant)."""
    if ns.shape(v)[F_AXIS] == 1:
        return v
    return ns.structural(lambda a: a[:, :, :, i:i + 1], v)


def accumulate(ns: NumberSystem, node: Node, in_dims: tuple[int, ...], args: list[Any], bg: BlockGraph) -> Any:
    """A for-loop accumulator (SPEC §3.3): reset at i = 0, combine, finalise at i = F − 1."""
    rule = node.op.spec.accum
    assert rule is not None
    F = bg.forloop_range
    contrib = rule.contrib(ns, args[0], bg.reduction_dimx)
    varying = ns.shape(contrib)[F_AXIS] > 1
    if rule.combine == "sum":
        acc = ns.sum(contrib, F_AXIS) if varying else ns.scale_int(contrib, F)
    elif rule.combine == "max":
        acc = ns.amax(contrib, F_AXIS) if varying else contrib
    else:  # "rescale": acc ← acc·s_i + x_i, in order
        acc = _iteration(ns, contrib, 0)
        for i in range(1, F):
            acc = ns.add(ns.mul(acc, _iteration(ns, args[1], i)), _iteration(ns, contrib, i))
    if rule.finalize is not None:
        acc = rule.finalize(ns, acc, F * in_dims[-1])
    return acc


def running_max(ns: NumberSystem, node: Node, in_dims: list[tuple[int, ...]], args: list[Any],
                bg: BlockGraph) -> list[Any]:
    """[lab decision, SPEC §3.3 uncertain] reduction_max: the running max M_i of the per-iteration max over
    ``dim``, and diff_i = M_{i−1} − M_i (0 at i = 0): the rescale exponent of online softmax."""
    spec = node.op.spec
    assert spec.evaluate is not None
    m = spec.evaluate(ns, EvalArgs(node.attr_map, tuple(in_dims), bg.reduction_dimx), args[0])
    if bg.tensors[node.inputs[0]].post_loop:  # runs once, after the loop: no earlier maximum
        return [m, ns.sub(m, m)]
    steps = [_iteration(ns, m, i) for i in range(bg.forloop_range)]
    running, diffs = [steps[0]], [ns.sub(steps[0], steps[0])]
    for s in steps[1:]:
        new = ns.maximum(running[-1], s)
        diffs.append(ns.sub(running[-1], new))
        running.append(new)
    return [ns.concat(running, F_AXIS - len(ns.shape(m))), ns.concat(diffs, F_AXIS - len(ns.shape(m)))]
