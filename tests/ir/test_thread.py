"""Thread graphs: epilogue fusion by the rules of SPEC §4."""

from __future__ import annotations

import mirage_lab as ml
from mirage_lab.bench import fused
from mirage_lab.ir.ops import Op
from mirage_lab.ir.thread import blocking_rule, derive_thread_graphs


def test_rmsnorm_accumulator_fuses_into_matmul_in_registers() -> None:
    bg = fused.rmsnorm(8).block_graphs[0]
    (tg,) = derive_thread_graphs(bg)
    assert bg.nodes[tg.producer].op is Op.MATMUL
    assert [bg.nodes[j].op for j in tg.chain] == [Op.ACCUM_NO_RED]
    assert tg.in_registers  # 16×24 fp32 values over 128 threads ≤ 192 registers


def test_exp_with_two_consumers_ends_the_chain() -> None:
    bg = fused.gqa(1).block_graphs[0]
    chains = [[bg.nodes[j].op for j in tg.chain] for tg in derive_thread_graphs(bg)]
    assert [Op.EXP] in chains  # exp fuses into the matmul that feeds it
    assert all(Op.MATMUL not in c for c in chains)


def test_never_fuse_into_loader_or_accumulator() -> None:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 64), dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=(8, 1, 1), forloop_range=1)
    t = tb.new_input(dtensor=x, input_map=(0, -1, -1), forloop_dim=-1)
    tb.new_output(tb.sqrt(tb.forloop_accum(tb.exp(t))), output_map=(0, -1, -1))
    (o,) = g.customized([x], tb)
    g.mark_output(o)
    bg = g.freeze().block_graphs[0]
    groups = derive_thread_graphs(bg)
    producers = {bg.nodes[tg.producer].op for tg in groups}
    assert Op.INPUT not in producers and not any(bg.nodes[tg.producer].kind.value == "accum" for tg in groups)
    # exp (fed by a loader) becomes a producer itself and takes the accumulator
    assert [(bg.nodes[tg.producer].op, [bg.nodes[j].op for j in tg.chain]) for tg in groups] == [
        (Op.EXP, [Op.ACCUM_NO_RED])]
    assert blocking_rule(bg.nodes[0]) == "never into a loader"
