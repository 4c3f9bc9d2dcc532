"""For-loop accumulators (SPEC §3.3), emitted from each accumulator op's ``AccumRule`` in the op table.

An accumulator's state lives in fp32 shared memory (``acc<k>``). Its rule says how one iteration's tile becomes
a term (``contrib``: CUDA code in ``CONTRIBUTIONS``), how terms combine (``combine``: the update in
``COMBINES``; "sum" states are zeroed before the loop, "max" and "rescale" ones seeded at i = 0), and how the
combined value is finalised after the loop (``cuda_finalize``, a template in the rule itself). A row sum
with few outputs is split over the idle threads (``codegen.split_sum``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from mirage_lab.codegen.expressions import cfloat
from mirage_lab.codegen.split_sum import add_line, combine_shares, split_block, split_sum
from mirage_lab.codegen.writer import KernelWriter
from mirage_lab.ir.op_rules import contrib_identity, contrib_row_sum, contrib_row_sumsq, contrib_todimx
from mirage_lab.ir.ops import Kind, Op


@dataclass(frozen=True)
class Contribution:
    """One iteration's term ``c`` of an accumulator in CUDA: ``per`` "element" (element ``idx`` of the tile),
    "row" (the sum of ``term`` over the elements ``e`` of row ``idx``) or "strided" (the strided sums of
    ``reduction_to_dimx``, X apart)."""

    per: str
    term: str = "e"


#: each contribution rule of the op table (``AccumRule.contrib``) in CUDA
CONTRIBUTIONS: dict[Callable[..., Any], Contribution] = {
    contrib_identity: Contribution("element"),
    contrib_row_sum: Contribution("row"),
    contrib_row_sumsq: Contribution("row", "e * e"),
    contrib_todimx: Contribution("strided"),
}
#: each combination rule (``AccumRule.combine``): the update of the state ``{a}`` by this iteration's ``c``
#: (``{scale}``: the rescale factor)
COMBINES: dict[str, str] = {
    "sum": "{a} += c;",
    "max": "{a} = i == 0 ? c : fmaxf({a}, c);",
    "rescale": "{a} = i == 0 ? c : {a} * {scale} + c;",
}


#: accumulator post-processing after the loop; ``count`` = F · (the input's last dim) (SPEC §3.3)
def _finalize(template: str) -> Callable[[str, int], str]:
    return lambda v, count: template.format(v=v, count=cfloat(count))


FINAL_EXPR: dict[Op, Callable[[str, int], str]] = {
    op: _finalize(t) for op in Op if op.spec.accum is not None and (t := op.spec.accum.cuda_finalize) is not None
}


def zero_accumulators(w: KernelWriter) -> None:
    """Before the loop: every "sum" state to 0 (the others are seeded by iteration 0)."""
    for k, node in enumerate(w.bg.nodes):
        if node.kind is Kind.ACCUM and node.op.spec.accum and node.op.spec.accum.combine == "sum":
            with w.for_each(w.bg.tensors[node.outputs[0]].numel):
                w.line(f"acc{k}[idx] = 0.f;  // each thread updates the elements it zeroes")


def emit_accumulate(w: KernelWriter, k: int) -> None:
    """One iteration's update of an accumulator's fp32 state (SPEC §3.3)."""
    node = w.bg.nodes[k]
    rule = node.op.spec.accum
    assert rule is not None, f"{node.op.value} declares no AccumRule"
    contribution = CONTRIBUTIONS[rule.contrib]
    x, out = node.inputs[0], node.outputs[0]
    n = w.dims(x)[-1]
    outputs = w.bg.tensors[out].numel
    if contribution.per == "row" and rule.combine == "sum" and (share := split_sum(w, outputs, n)) > 1:
        total = outputs * share
        with split_block(w, total, share, "idx"):
            e = w.ld_at(x, f"idx * {w.pitch(x)} + j")
            w.line("float c[1] = {};")
            with w.block(f"if (t < {total})") if total % w.threads else nullcontext():
                w.line(f"for (int j = part; j < {n}; j += {share}) {{ const float e = {e}; "
                       f"c[0] += {contribution.term}; }}")
            guard, how = combine_shares(w, share, "c", 1, total)
            with w.block(f"if ({guard})"):
                w.line(add_line(f"acc{k}[idx]", "c[0]", how, f"the row sum split over {share} threads"))
        return
    with w.for_each(outputs):
        if contribution.per == "element":
            w.line(f"const float c = {w.ld(x, 'idx')};")
        elif contribution.per == "strided":
            X = w.bg.reduction_dimx
            w.line(f"const int base = (idx / {X}) * {n} + idx % {X};")
            w.line("float c = 0.f;")
            w.line(f"for (int r = 0; r < {n // X}; ++r) c += {w.ld(x, f'base + r * {X}')};")
        else:  # a row sum (of squares for rms)
            e = w.ld_at(x, f"idx * {w.pitch(x)} + j")
            w.line("float c = 0.f;")
            w.line(f"for (int j = 0; j < {n}; ++j) {{ const float e = {e}; c += {contribution.term}; }}")
        scale = w.ld(node.inputs[1], _row(contribution, n)) if rule.combine == "rescale" else ""
        w.line(COMBINES[rule.combine].format(a=f"acc{k}[idx]", scale=scale))


def _row(contribution: Contribution, n: int) -> str:
    """The rescale factor's index: one per row of the input (the state is per element or per row)."""
    return f"idx / {n}" if contribution.per == "element" else "idx"


def finalize(w: KernelWriter, k: int) -> None:
    """After the loop: accumulator k's state, finalised (``FINAL_EXPR``), into its output tile."""
    node = w.bg.nodes[k]
    out = node.outputs[0]
    count = w.bg.forloop_range * w.dims(node.inputs[0])[-1]
    with w.for_each(w.bg.tensors[out].numel):
        v = FINAL_EXPR[node.op](f"acc{k}[idx]", count) if node.op in FINAL_EXPR else f"acc{k}[idx]"
        w.st(out, "idx", v)
