"""The moves a search tensor cannot see (``search/folds.py``, the ``folded_inputs`` check): each claim holds of the
function the interpreter computes, and the cut it makes keeps a two-kernel attention space's verified set."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.absexpr.terms import var
from mirage_lab.ir.dtype import float16
from mirage_lab.ir.graph import PHI
from mirage_lab.ir.ops import Level, Op
from mirage_lab.search import folds, superoptimize
from mirage_lab.search.config import preset
from mirage_lab.search.state import OpInfo, T
from mirage_lab.verify.verifier import Verifier

P = PHI
V_DIMS = (1, 64, 8)
GRID, F = (1, 2, 1), 4  # y splits V's rows in two, the loop each half in four: tiles of 8 rows


def _moved(x: np.ndarray, move: tuple[int, int, int]) -> np.ndarray:
    _, dim, step = move
    y = x.copy()
    at = [0] * x.ndim
    y[tuple(at)] += 1
    at[dim] = step
    y[tuple(at)] -= 1
    return y


def _kernel(acc: str | None) -> ml.KernelGraph:
    """One customized kernel: V's rows split by y and the loop, the loop's tiles accumulated by ``acc``."""
    g = ml.new_kernel_graph()
    v = g.new_input(dims=V_DIMS, dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=GRID, forloop_range=F)
    tv = tb.new_input(dtensor=v, input_map=(P, 1, P), forloop_dim=1)
    tb.new_output(stensor=tb.forloop_accum(tv, acc), output_map=(P, 1, P))
    g.mark_output(g.customized([v], tb)[0])
    return g.freeze()


def _claim(op: Op) -> frozenset[tuple[int, int, int]]:
    src = T(V_DIMS, float16, var(0), source=True, deps=frozenset({0}))
    tile = T((1, 8, 8), float16, var(0), source=True, deps=src.deps,
             fold=folds.loader_move(src, (P, 1, P), 1, GRID, F))
    return folds.op_blind(OpInfo(op, Level.BLOCK), [tile])


@pytest.mark.parametrize("acc, op, blind", [(None, Op.ACCUM_NO_RED, True), ("sum", Op.ACCUM_SUM, True),
                                            ("mean", Op.ACCUM_MEAN, True), ("rms", Op.ACCUM_RMS, False)])
def test_what_an_accumulator_is_claimed_blind_to_is_what_it_cannot_see(acc: str | None, op: Op, blind: bool) -> None:
    """Rows 8 apart lie in one sum over the loop (same block, same offset, iterations 0 and 1): a summing
    accumulator's saved values do not change when 1 moves between them, and the walk claims exactly that move; rows 4
    apart are two offsets of one tile, which every accumulator tells apart; a sum of squares claims nothing."""
    claim = _claim(op)
    assert claim == ({(0, 1, 8)} if blind else set())
    g = _kernel(acc)
    x = np.random.default_rng(0).uniform(-1, 1, V_DIMS)
    (base,) = ml.interpret(g, [x])
    for step, unchanged in ((8, blind), (4, False)):
        (got,) = ml.interpret(g, [_moved(x, (0, 1, step))])
        assert (float(np.abs(got - base).max()) < 1e-12) is unchanged  # (rounding only, or a real change)


def test_blindness_passes_through_ops_of_blind_operands_only() -> None:
    m = (0, 1, 8)
    folded = T((1, 16, 8), float16, var(0), deps=frozenset({0}), blind=frozenset({m}))
    other = T((1, 16, 8), float16, var(1), deps=frozenset({1}))  # reads another input: blind to every move of v0
    fresh = T((1, 16, 8), float16, var(0), deps=frozenset({0}))  # reads v0 whole
    assert folds.joined([folded, other]) == {m}
    assert folds.joined([folded, fresh]) == set() and folds.joined([other, fresh]) == set()


def _attention(n: int = 64, q: int = 8, d: int = 8, v_first: bool = False) -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    qt = g.new_input(dims=(1, q, d), dtype=ml.float16)
    k = g.new_input(dims=(1, d, n), dtype=ml.float16)
    v = g.new_input(dims=(1, n, d), dtype=ml.float16)
    e = g.exp(g.matmul(qt, k))
    if v_first:  # rows of V summed before anything weighs them: blind to every move along them
        g.mark_output(g.mul(g.reduction(e, 2), g.reduction(v, 1)))
    else:
        g.mark_output(g.matmul(g.div(e, g.reduction(e, 2)), v))
    return g.freeze()


def test_the_verifier_tells_whether_the_program_sees_a_move() -> None:
    assert Verifier(_attention()).moved_by(2, 1, 8)
    assert not Verifier(_attention(v_first=True)).moved_by(2, 1, 8)


def test_the_cut_keeps_a_two_kernel_attention_spaces_verified_set(tmp_path: Path) -> None:
    """Split-KV attention's combine kernel opens below first kernels that sum V's tiles over the loop as they are;
    the check cuts those openings and nothing it cuts held a verified μGraph."""
    on = superoptimize(_attention(), preset("attention"), executor="serial", run_dir=tmp_path / "on",
                       progress=False)
    off = superoptimize(_attention(), preset("attention", disabled_checks=("folded_inputs",)), executor="serial",
                        run_dir=tmp_path / "off", progress=False)
    assert on.report.stop_reason == off.report.stop_reason == "complete"
    assert sorted(c.hash for c in on.candidates) == sorted(c.hash for c in off.candidates)
    assert any(len(c.graph.compute_nodes) == 2 for c in on.candidates)
    assert on.report.states < 0.8 * off.report.states
    cuts = [e for e in on.events() if e.get("why") == "goal" and "sums input v2 over the for-loop" in
            str(e.get("reason", ""))]
    assert cuts
