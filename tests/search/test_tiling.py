"""Index consistency of block tiles (``search/tiling.py``): it rejects only graphs that are wrong, and no saved
or hand-written μGraph."""

from __future__ import annotations

from pathlib import Path

import mirage_lab as ml
from mirage_lab.bench import fused
from mirage_lab.ir.graph import PHI
from mirage_lab.ir.ops import Op
from mirage_lab.search.tiling import LOOP, graph_violations, loader_parts, op_parts, saved_parts
from tests.search.test_search import search

P = PHI
E = frozenset[int]()


def test_loader_parts() -> None:
    # GQA kernel 1, grid (2, 8, 16), F = 4: heads by x; Q rows by z; K columns by y and the loop
    assert loader_parts(3, (0, P, 1), P, (2, 8, 16), 4) == ({0}, {2}, E)
    assert loader_parts(3, (0, 2, P), 2, (2, 8, 16), 4) == ({0}, E, {1, LOOP})
    # axes with one block and F = 1 partition nothing
    assert loader_parts(3, (0, 2, P), 2, (1, 1, 16), 1) == (E, E, E)


def test_an_intermediate_is_aligned_where_its_blocks_land_on_their_own_slices() -> None:
    """GQA's split-KV kernel 1 (grid (2, 16, 4), omap (x→0, y→2, z→1)) saves E·V's partial sums (1, 64, 64): heads by
    x and query rows by z land where they came from (aligned), but y, which splits the KV sequence the tile has
    summed over, is placed on the head dim: a compound of (split, head dim), unknown."""
    partial = (frozenset({0}), frozenset({2}), E)
    assert saved_parts(partial, (0, 2, 1), (2, 16, 4)) == (E, E, None)
    # a dim whose part is unknown stays unknown; axes with one block place nothing
    assert saved_parts((frozenset({0}), None, E), (0, 2, 1), (2, 1, 1)) == (E, None, E)
    # a tile partitioned by y saved with y elsewhere: neither dim holds its own indices
    assert saved_parts((E, frozenset({1}), E), (P, 2, P), (1, 4, 1)) == (E, None, None)
    # the next kernel loads it: aligned dims tile as a program input's, unknown ones stay unknown
    assert loader_parts(3, (0, 1, P), 2, (2, 32, 1), 16, source=(E, E, None)) == ({0}, {1}, None)
    # so a diagonal over an intermediate's aligned dim is caught (rows of one by y against columns of the other
    # by y), and not over an unknown one
    b = loader_parts(3, (0, 2, P), P, (2, 32, 1), 1)
    for rows, caught in ((E, True), (None, False)):
        a = loader_parts(3, (0, 1, P), P, (2, 32, 1), 1, source=(E, rows, E))
        got = op_parts(Op.MUL, [a, b], [(1, 8, 1), (1, 1, 8)], [(1, 8, 8)])
        assert isinstance(got, str) is caught


def test_diagonal_and_contraction_errors() -> None:
    rows_y, cols_y = (E, frozenset({1}), E), (E, E, frozenset({1}))
    got = op_parts(Op.MATMUL, [rows_y, cols_y], [(1, 16, 64), (1, 64, 64)], [(1, 16, 64)])
    assert isinstance(got, str) and "diagonal" in got and "y partitions both dim 1 and dim 2" in got
    k_y, k_loop = (E, E, frozenset({1})), (E, frozenset({LOOP}), E)
    got = op_parts(Op.MATMUL, [k_y, k_loop], [(1, 16, 64), (1, 64, 64)], [(1, 16, 64)])
    assert isinstance(got, str) and "contracted dims are partitioned differently (y vs the for-loop)" in got
    # broadcasting a[i_y, 1] against b[1, j_y] is diagonal too
    got = op_parts(Op.MUL, [(frozenset({1}), E), (E, frozenset({1}))], [(16, 1), (1, 16)], [(16, 16)])
    assert isinstance(got, str) and "diagonal" in got
    # a consistent split-K product: both contracted dims iterated by the loop
    assert op_parts(Op.MATMUL, [(E, frozenset({LOOP})), (frozenset({LOOP}), frozenset({0}))],
                    [(16, 64), (64, 64)], [(16, 64)]) == ((E, frozenset({0})),)


def test_unknown_parts_never_reject() -> None:
    """Summing over the loop folds loop-partitioned dims, reductions fold the reduced dim: unknown (None)."""
    acc = op_parts(Op.ACCUM_NO_RED, [(frozenset({2}), frozenset({1, LOOP}))], [(64, 64)], [(64, 64)])
    assert acc == ((frozenset({2}), None),)
    summed = op_parts(Op.ACCUM_SUM, [(frozenset({2}), frozenset({1}))], [(64, 64)], [(64, 1)])
    assert summed == ((frozenset({2}), None),)
    # an unknown contracted dim matches anything, and an unknown dim holds no axis
    assert not isinstance(op_parts(Op.MATMUL, [(E, None), (frozenset({1}), frozenset({2}))], [(16, 64), (64, 64)],
                                   [(16, 64)]), str)
    assert op_parts(Op.CONCAT_THEN_MATMUL, [(E, E)] * 4, [(16, 8)] * 4, [(16, 64)]) == ((None, None),)


def test_every_saved_and_hand_written_graph_is_consistent(reference_dir: Path) -> None:
    count = 0
    graphs = [g for p in sorted(reference_dir.glob("*.json")) for g in ml.load_reference_checkpoint(p)]
    graphs += [make(b) for make in fused.FUSED.values() for b in (1, 8)]
    for g in graphs:
        for body in g.block_graphs:
            assert graph_violations(body) == [], body
            count += 1
    assert count >= 1105 + 8


def test_a_diagonal_graph_is_wrong() -> None:
    """What the filter removes is wrong: split-KV attention whose blocks pair query block y with KV block y."""
    g = ml.new_kernel_graph()
    q = g.new_input(dims=(1, 256, 64), dtype=ml.float16)
    k = g.new_input(dims=(1, 64, 1024), dtype=ml.float16)
    v = g.new_input(dims=(1, 1024, 64), dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=(1, 16, 1), forloop_range=1)
    tq = tb.new_input(dtensor=q, input_map=(P, 1, P), forloop_dim=P)
    tk = tb.new_input(dtensor=k, input_map=(P, 2, P), forloop_dim=P)
    tv = tb.new_input(dtensor=v, input_map=(P, 1, P), forloop_dim=P)
    e = tb.exp(tb.matmul(tq, tk))
    out = tb.div(tb.forloop_accum(tb.matmul(e, tv)), tb.forloop_accum(e, "sum"))
    tb.new_output(stensor=out, output_map=(P, 1, P))
    g.mark_output(g.customized([q, k, v], tb)[0])
    wrong = g.freeze()
    (body,) = wrong.block_graphs
    (error,) = graph_violations(body)
    assert error.startswith("matmul") and "diagonal" in error
    program = ml.new_kernel_graph()
    pq, pk, pv = (program.new_input(dims=t.dims, dtype=ml.float16) for t in wrong.input_types)
    s = program.exp(program.matmul(pq, pk))
    program.mark_output(program.div(program.matmul(s, pv), program.reduction(s, 2)))
    assert not ml.verify(wrong, program.freeze()).equivalent


def test_tracking_intermediates_keeps_a_two_kernel_spaces_verified_set() -> None:
    """``intermediate_parts`` only adds index rejections where a loader reads a kernel tensor's aligned dims: in a
    space of two customized kernels (and kernel ops) the same μGraphs are verified, in fewer states."""
    kw = dict(cost_bound=True, max_customized=2, max_block_ops=5)
    on, off = search(**kw), search(**kw, disabled_checks=("intermediate_parts",))
    assert [c.hash for c in on.candidates] == [c.hash for c in off.candidates] and on.candidates
    assert on.report.pruned["index"] > off.report.pruned["index"] and on.report.states < off.report.states
