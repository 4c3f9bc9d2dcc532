"""Explanations in the learner's terms: input and output shapes, the oracle's reason for the first tensor that is
no part of the program, or what agreeing expressions with differing values mean.

The oracle (``absexpr.Oracle``) cannot tell which index a sum runs over, so a graph whose every tensor is a
subexpression of the program can still be wrong; then the explanation says where to look (maps and
accumulators), and the witness shows the values. Tensors under a running max (online softmax) are not asked
about: the program has no max, and the abstraction drops the rescale factors that make such graphs right.
"""

from __future__ import annotations

import re

from mirage_lab.absexpr import Oracle, graph_expressions
from mirage_lab.ir.graph import KernelGraph, plural
from mirage_lab.ir.ops import Op

#: how an op's result is called in a sentence (the op's own name otherwise)
OP_WORDS = {
    Op.ACCUM_NO_RED: "accumulator (acc=None)", Op.ACCUM_SUM: "accumulator 'sum'", Op.ACCUM_MEAN: "accumulator 'mean'",
    Op.ACCUM_RMS: "accumulator 'rms'", Op.ACCUM_SUM_TODIMX: "accumulator 'sum_todimx'",
    Op.ACCUM_NO_RED_RESCALE: "accumulator 'nored_rescale'", Op.ACCUM_SUM_RESCALE: "accumulator 'sum_rescale'",
    Op.ACCUM_MAX: "accumulator 'max'", Op.CUSTOMIZED: "custom kernel output",
}


def named(text: str, names: tuple[str, ...]) -> str:
    """Abstract-expression text with the inputs' names: ``sum(16, v0)`` → ``sum(16, X)``."""
    return re.sub(r"\bv(\d+)\b", lambda m: names[int(m.group(1))] if int(m.group(1)) < len(names) else m.group(0),
                  text)


def input_problem(program: KernelGraph, graph: KernelGraph, names: tuple[str, ...]) -> str | None:
    want, got = program.input_types, graph.input_types
    if len(want) != len(got):
        return (f"the program takes {plural(len(want), 'input')} ({', '.join(names)}) but your graph declares "
                f"{len(got)}: declare them with g.new_input in the order {', '.join(names)}")
    for name, w, t in zip(names, want, got, strict=True):
        if w != t:
            return f"input {name} must be {w}, but your graph declares {t}"
    return None


def output_problem(program: KernelGraph, graph: KernelGraph) -> str | None:
    want, got = program.output_types, graph.output_types
    if len(want) != len(got):
        return (f"the program has {plural(len(want), 'output')} but your graph marks {len(got)}: "
                "call g.mark_output once per result")
    for k, (w, t) in enumerate(zip(want, got, strict=True)):
        if w.dims != t.dims:
            return f"output {k} should have shape {w.dims}, but yours has {t.dims}{_made(graph, graph.outputs[k])}"
        if w.dtype != t.dtype:
            return f"output {k} should be {w.dtype}, but yours is {t.dtype}"
    return None


def _made(graph: KernelGraph, tensor: int) -> str:
    """How a custom kernel's saver made an output's shape."""
    for node in graph.nodes:
        if node.body is not None and tensor in node.outputs:
            bg = node.body
            saver = bg.savers[node.outputs.index(tensor)]
            tile = bg.tensors[saver.inputs[0]].dims
            omap = saver.attr("omap")
            spread = [f"grid {'xyz'[a]} ({bg.grid[a]} blocks) along dim {d}" for a, d in enumerate(omap)
                      if d >= 0 and bg.grid[a] > 1]
            how = "; ".join(spread) if spread else "from a single block"
            return f": its saver writes a {tile} tile, placed by output_map {omap}: {how}"
    return ""


def _places(graph: KernelGraph) -> dict[int, int]:
    """Node index of each custom kernel → its number, counted from 1."""
    ks = [k for k, n in enumerate(graph.nodes) if n.body is not None]
    return {k: i + 1 for i, k in enumerate(ks)}


#: accumulators that add their input every iteration (mean and rms of F equal tiles are those of one tile)
ADDING = (Op.ACCUM_NO_RED, Op.ACCUM_SUM, Op.ACCUM_SUM_TODIMX)


def repeated_tile(graph: KernelGraph) -> str | None:
    """An adding accumulator fed only by tiles that do not change with the loop adds the same tile F times."""
    for number, bg in enumerate(graph.block_graphs, 1):
        if bg.forloop_range == 1:
            continue
        varies: dict[int, bool] = {}
        for n in bg.nodes:
            moving = n.attr("fmap", -1) >= 0 if n.op is Op.INPUT else any(varies[i] for i in n.inputs)
            varies.update(dict.fromkeys(n.outputs, moving))
            if n.op in ADDING and not varies[n.inputs[0]]:
                return (f"in custom kernel {number}, the {OP_WORDS[n.op]} that makes s{n.outputs[0]} adds a tile "
                        f"that is the same in every iteration (no loader it reads has a forloop_dim), so it adds it "
                        f"{bg.forloop_range} times: give a loader a forloop_dim, or use forloop_range=1")
    return None


def value_problem(program: KernelGraph, graph: KernelGraph, names: tuple[str, ...], oracle: Oracle) -> str:
    """Why the values differ: a tile added once per iteration, else as far as the abstract expressions tell."""
    repeated = repeated_tile(graph)
    if repeated is not None:
        return repeated
    exprs = graph_expressions(graph)
    kernels = _places(graph)
    rebased = False
    for place, op, e in exprs.produced():
        if any(t.head == "max" for t in e.subterms()):  # a running max: the program's terms have none
            rebased = True
            continue
        v = oracle.check(e)
        if v.ok is False:
            where = (f"tensor d{place.tensor}" if place.node is None
                     else f"tile s{place.tensor} of custom kernel {kernels[place.node]}")
            what = OP_WORDS.get(op, op.value)
            return (f"your {where} ({what}) computes {named(str(e), names)}, which is no part of the program "
                    f"{_targets(oracle, names)}: {named(v.reason, names)}")
    if rebased:
        return ("your graph re-bases with a running max (online softmax), which abstract expressions cannot follow "
                "(they ignore rescale factors), so only the values can judge it: see the witness, and check that "
                "every accumulator of a re-based value rescales (acc='nored_rescale' or 'sum_rescale' with "
                "rescale=exp(diff))")
    mismatched = [k for k, (e, t) in enumerate(zip(exprs.outputs, oracle.targets, strict=True))
                  if oracle.normal_form(e) is None or oracle.normal_form(e) != oracle.normal_form(t)]
    if not mismatched:
        return ("your graph applies the same operations, summing as many elements, as the program (their abstract "
                "expressions agree), so the values differ in which elements meet or by a constant factor: check the "
                "input_map and forloop_dim of each loader, the output_map of each saver, and the accumulators "
                "(acc=None adds every iteration, 'mean' divides)")
    k = mismatched[0]
    return (f"every tensor of your graph is part of the program, but output {k} computes "
            f"{named(str(exprs.outputs[k]), names)} where the program computes {named(str(oracle.targets[k]), names)}:"
            " a step is missing, or applied to a different operand")


def _targets(oracle: Oracle, names: tuple[str, ...]) -> str:
    return "(" + "; ".join(named(str(t), names) for t in oracle.targets) + ")"
