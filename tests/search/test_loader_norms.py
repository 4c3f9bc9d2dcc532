"""``free_loader_norms`` (issue 37): norms of loaded tiles the block-op cap does not count, the targeted tenth block
op of QKNorm+GQA's fused kernel 1 (rms_norm on the Q and V tiles)."""

from __future__ import annotations

import mirage_lab as ml
from mirage_lab.ir.ops import Op
from mirage_lab.search.config import preset
from tests.search.test_search import search, small_rmsnorm

#: RMSNorm+Linear's fused kernel without accum_rms: loaders, rms_norm of X's tile, matmul, accumulator (F = 1)
NORMED = dict(block_ops=("matmul", "rms_norm", "accum_no_red"), forloop_ranges=(1,))


def _normed(res: ml.search.SearchResult) -> list[str]:
    return [c.hash for c in res.candidates if any(n.op is Op.RMS_NORM for bg in c.graph.block_graphs for n in bg.nodes)]


def test_a_free_norm_reaches_what_one_more_block_op_reaches_in_fewer_states() -> None:
    capped = search(**NORMED, max_block_ops=4)
    free = search(**NORMED, max_block_ops=4, free_loader_norms=1)
    wider = search(**NORMED, max_block_ops=5)
    assert not capped.candidates  # five ops: one more than the cap
    assert _normed(free) and [c.hash for c in free.candidates] == [c.hash for c in wider.candidates]
    assert free.report.states < wider.report.states
    for c in free.candidates[:3]:
        assert ml.verify(c.graph, small_rmsnorm(), seed=5).equivalent


def test_off_by_default_and_out_of_the_hash() -> None:
    """Configs that leave it at 0 keep their JSON and hash, so their run folders."""
    plain = preset("attention")
    assert plain.free_loader_norms == 0 and "free_loader_norms" not in plain.to_dict()
    assert preset("attention", free_loader_norms=2).hash() != plain.hash()
