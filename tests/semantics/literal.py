"""A literal transcription of SPEC §3.4's execution model: a Python loop per block and per
iteration, slicing tiles by the index formulas. Slow and obviously right; the vectorised
interpreter is tested against it."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from mirage_lab.ir.graph import BlockGraph, KernelGraph, loader_dtensor, saver_dtensor
from mirage_lab.ir.ops import EvalArgs, Kind, Op
from mirage_lab.semantics.arith import FloatArith

NS = FloatArith("numpy")


def _region(c: list[int], t: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(ci * ti, (ci + 1) * ti) for ci, ti in zip(c, t, strict=True))


def run_block_graph_literal(bg: BlockGraph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    F = bg.forloop_range
    outs = [np.zeros(saver_dtensor(bg, n).dims) for n in bg.savers]
    for b in itertools.product(*(range(g) for g in bg.grid)):
        acc: dict[int, Any] = {}
        prev_max: dict[int, Any] = {}
        for i in range(F):
            val: dict[int, Any] = {}
            feed = iter(inputs)
            saver_no = 0
            for node in bg.nodes:
                if node.op is Op.INPUT:
                    d_tensor = next(feed)
                    imap, fmap = node.attr("imap"), node.attr("fmap")
                    t = bg.tensors[node.outputs[0]].dims
                    c = []
                    for d in range(len(loader_dtensor(node).dims)):
                        cd = next((b[a] for a in range(3) if imap[a] == d), 0)
                        if fmap == d:
                            cd = cd * F + i
                        c.append(cd)
                    val[node.outputs[0]] = d_tensor[_region(c, t)]
                    continue
                if node.op is Op.OUTPUT:
                    if i == F - 1:
                        omap = node.attr("omap")
                        t = bg.tensors[node.inputs[0]].dims
                        c = [next((b[a] for a in range(3) if omap[a] == d), 0) for d in range(len(t))]
                        outs[saver_no][_region(c, t)] = val[node.inputs[0]]
                    saver_no += 1
                    continue
                if any(bg.tensors[x].post_loop for x in node.inputs) and i < F - 1:
                    continue
                args = [val[x] for x in node.inputs]
                in_dims = tuple(bg.tensors[x].dims for x in node.inputs)
                ea = EvalArgs(node.attr_map, in_dims, bg.reduction_dimx)
                k = id(node)
                if node.kind is Kind.ACCUM:
                    rule = node.op.spec.accum
                    assert rule is not None
                    contrib = rule.contrib(NS, args[0], bg.reduction_dimx)
                    if i == 0:
                        acc[k] = contrib
                    elif rule.combine == "sum":
                        acc[k] = acc[k] + contrib
                    elif rule.combine == "max":
                        acc[k] = np.maximum(acc[k], contrib)
                    else:
                        acc[k] = acc[k] * args[1] + contrib
                    if i == F - 1:
                        res = acc[k]
                        if rule.finalize is not None:
                            res = rule.finalize(NS, res, F * in_dims[0][-1])
                        val[node.outputs[0]] = res
                elif node.op is Op.REDUCTION_MAX:
                    assert node.op.spec.evaluate is not None
                    m = node.op.spec.evaluate(NS, ea, *args)
                    old = prev_max.get(k, m)
                    new = np.maximum(old, m)
                    prev_max[k] = new
                    val[node.outputs[0]], val[node.outputs[1]] = new, old - new
                else:
                    assert node.op.spec.evaluate is not None
                    val[node.outputs[0]] = node.op.spec.evaluate(NS, ea, *args)
    return outs


def interpret_literal(g: KernelGraph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    env: dict[int, Any] = {}
    feed = iter(inputs)
    for node in g.nodes:
        if node.op is Op.INPUT:
            env[node.outputs[0]] = np.asarray(next(feed), dtype=np.float64)
        elif node.op is Op.CUSTOMIZED:
            assert node.body is not None
            res = run_block_graph_literal(node.body, [env[x] for x in node.inputs])
            env.update(zip(node.outputs, res, strict=True))
        else:
            assert node.op.spec.evaluate is not None
            ea = EvalArgs(node.attr_map, tuple(g.tensors[x].dims for x in node.inputs))
            env[node.outputs[0]] = node.op.spec.evaluate(NS, ea, *[env[x] for x in node.inputs])
    return [env[o] for o in g.outputs]
