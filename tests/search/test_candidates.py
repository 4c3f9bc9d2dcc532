"""Candidate generators (SPEC §7.3): unit tests on the SPEC's worked examples, user overrides, randomised
order, and reachability of the saved reference μGraphs (SPEC §9, §11 #10).

Reachability measured here is *generator* reachability: a block graph counts as reachable when its
customized-op inputs, grid, imaps, fmaps, F and (shared) omap are all in the lists the generators
produce for its input DTensor dims under the file's preset. Whether the whole μGraph is reachable also
depends on caps, the canonical order and pruning (e.g. MHA needs a kernel cap ≥ 6, SPEC §9).
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import mirage_lab as ml
from mirage_lab.errors import MirageError
from mirage_lab.ir.graph import PHI
from mirage_lab.ir.tensor import TensorType
from mirage_lab.search import candidates as C
from mirage_lab.search.config import SearchConfig, preset

P = PHI
MLP, DEFAULT, LORA = preset("mlp"), preset("default"), preset("lora")
ATT = preset("reference_attention")  # the reference's generators; ours adds normalise_imaps

# SPEC §3.2 / §9 shapes
X8, W = (16, 4096), (4096, 6144)  # RMSNorm+Linear bs 8
X1 = (2, 4096)  # RMSNorm+Linear bs 1
GQA1 = [(2, 256, 64), (2, 64, 4096), (2, 4096, 64)]
GQA8 = [(16, 256, 64), (16, 64, 4096), (16, 4096, 64)]
MQA1 = [(1, 1024, 64), (1, 64, 4096), (1, 4096, 64)]


# --------------------------------------------------------------------------- input indices
def test_unary_binary_nary_indices() -> None:
    assert list(C.input_index_candidates(1, 3)) == [(0,), (1,), (2,)]
    assert list(C.input_index_candidates(2, 2)) == [(0, 0), (0, 1), (1, 0), (1, 1)]  # i == j included
    three = list(C.input_index_candidates(3, 3))
    assert three == list(itertools.permutations(range(3)))  # distinct, ordered
    assert len(list(C.input_index_candidates(4, 5))) == 5 * 4 * 3 * 2  # concat_then_matmul
    assert list(C.input_index_candidates(3, 2)) == []
    assert list(C.input_index_candidates(2, 0)) == []
    with pytest.raises(ValueError, match="arity"):
        list(C.input_index_candidates(0, 3))


# --------------------------------------------------------------------------- customized inputs
@pytest.mark.parametrize(("n", "config", "expected"), [
    (2, DEFAULT, [(0, 1)]),  # a 2-input program fuses (X, W)
    (3, DEFAULT, [(0, 1, 2)]),
    (4, DEFAULT, [(2, 3)]),  # without lora, 4 tensors -> the last two
    (4, LORA, [(0, 1, 2, 3)]),
    (5, LORA, [(3, 4)]),
    (6, ATT, [(4, 5)]),  # a second customized op sees the two newest tensors
    (1, DEFAULT, [(0,)]),  # [lab] the reference would index tensor -1
    (0, DEFAULT, []),
    (4, preset("lora", max_block_inputs=3), []),  # the cap applies to the heuristic too
])
def test_customized_inputs_reference(n: int, config: SearchConfig, expected: list[tuple[int, ...]]) -> None:
    assert C.customized_input_candidates(n, config) == expected


def test_customized_inputs_subsets() -> None:
    cfg = preset("default", customized_inputs="subsets")
    got = C.customized_input_candidates(4, cfg)
    # larger subsets first, lexicographic within a size, capped at max_block_inputs = 3
    assert got[:4] == [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)]
    assert got[4:10] == list(itertools.combinations(range(4), 2))
    assert got[10:] == [(0,), (1,), (2,), (3,)]
    assert len(C.customized_input_candidates(5, cfg.replace(max_block_inputs=2))) == 10 + 5
    assert C.customized_input_candidates(2, cfg) == [(0, 1), (0,), (1,)]


# --------------------------------------------------------------------------- grids
def test_grids_rmsnorm_bs8() -> None:
    grids = C.grid_candidates([X8, W], MLP)
    # step 2: x in (8, 16, ..., 256) outer, distinct dims (16, 4096, 6144) inner; then (batch=16, 1, 1)
    assert grids == [(512, 1, 1), (768, 1, 1), (256, 1, 1), (384, 1, 1), (128, 1, 1), (192, 1, 1),
                     (64, 1, 1), (96, 1, 1), (32, 1, 1), (48, 1, 1), (16, 1, 1)]
    assert (256, 1, 1) in grids  # the worked example's grid
    # paper era: x ≤ 64
    paper = C.grid_candidates([X8, W], MLP.replace(grid_divisors=(8, 16, 32, 64)))
    assert paper == [(512, 1, 1), (768, 1, 1), (256, 1, 1), (384, 1, 1), (128, 1, 1), (192, 1, 1),
                     (64, 1, 1), (96, 1, 1), (16, 1, 1)]


def test_grid_batch_bypasses_block_filter_without_attention() -> None:
    """nTrans bs 1 runs on grid (8, 1, 1): 8 < 32 blocks, added by step (5) under the default preset."""
    grids = C.grid_candidates([(8, 4096)] * 3, DEFAULT)
    assert grids == [(512, 1, 1), (256, 1, 1), (128, 1, 1), (64, 1, 1), (32, 1, 1), (8, 1, 1)]
    # mixed ranks: no batch, so no (b, 1, 1)
    assert all(g[0] >= 32 for g in C.grid_candidates([(8, 4096), (8, 4, 64)], DEFAULT))
    # a batch above max_blocks is not added
    assert (8, 1, 1) not in C.grid_candidates([(8, 4096)] * 3, DEFAULT.replace(min_blocks=1, max_blocks=4))


def test_grids_attention_gqa() -> None:
    grids = C.grid_candidates(GQA1, ATT)
    assert grids == [(32, 1, 1), (512, 1, 1), (256, 1, 1), (128, 1, 1), (64, 1, 1),  # step 2
                     (2, 32, 1), (2, 512, 1), (2, 64, 1), (2, 16, 1),  # step 3, y = 8, 64, 128, 256
                     (2, 16, 4),  # step 3, more than two inputs
                     (2, 1, 1)]  # step 5
    # The saved GQA bs1 kernel 1 grid (2, 8, 16) is produced by no step of §7.3 (2-D grids have z = 1,
    # the only 3-D grid is (batch, 16, 4)): it needs a user grid list.
    assert (2, 8, 16) not in grids
    assert C.grid_candidates(GQA1, ATT.replace(grids=((2, 8, 16),)))[0] == (2, 8, 16)
    assert (16, 16, 4) in C.grid_candidates(GQA8, ATT)  # GQA bs 8 kernel 1
    # without attention there are no 2-D grids
    assert all(g[1:] == (1, 1) for g in C.grid_candidates(GQA1, DEFAULT))


def test_grids_user_list_first_filtered_deduped() -> None:
    cfg = MLP.replace(grids=((4, 4, 4), (256, 1, 1), (2, 2, 2), (4, 4, 4)))
    grids = C.grid_candidates([X8, W], cfg)
    assert grids[:2] == [(4, 4, 4), (256, 1, 1)]  # (2,2,2) has 8 < 32 blocks: dropped (as the reference)
    assert (2, 2, 2) not in grids
    assert len(grids) == len(set(grids)) == 12
    small = C.grid_candidates([X8, W], cfg.replace(min_blocks=1))
    assert small[:3] == [(4, 4, 4), (256, 1, 1), (2, 2, 2)]
    assert all(g[0] * g[1] * g[2] <= 256 for g in C.grid_candidates([X8, W], MLP.replace(max_blocks=256)))


# --------------------------------------------------------------------------- imaps
def test_imaps_rmsnorm_worked_example() -> None:
    imaps = C.imap_candidates([X8, W], (256, 1, 1), MLP)
    assert ((P, P, P), (1, P, P)) in imaps
    # X: (-1,-1,-1), (1,-1,-1) (16 % 256 fails for (0,-1,-1)); W: (-1,-1,-1), (1,-1,-1), (0,-1,-1);
    # the all-replicated combination is dropped
    assert imaps == [((P, P, P), (1, P, P)), ((P, P, P), (0, P, P)), ((1, P, P), (P, P, P)),
                     ((1, P, P), (1, P, P)), ((1, P, P), (0, P, P))]


def test_imaps_attention_set_and_filters() -> None:
    imaps = C.imap_candidates(GQA1, (2, 16, 4), ATT)
    assert ((0, P, 1), (0, 2, P), (0, 1, P)) in imaps  # GQA kernel 1 (with grid (2, 16, 4) or (2, 8, 16))
    assert len(imaps) == 36
    for combo in imaps:
        assert (P, P, P) not in combo and (1, P, P) not in combo  # attention: no φ / (1,-1,-1) imaps
        for axis in range(3):  # never every input replicated along an axis with g > 1
            assert any(m[axis] != P for m in combo)
    # on a 1-D grid only axis x may be mapped
    for combo in C.imap_candidates([X8, W], (64, 1, 1), MLP):
        assert all(m[1] == P and m[2] == P for m in combo)


def test_imaps_batch_one_mqa_unreachable() -> None:
    """SPEC §7.3: with batch = 1 the attention set cannot express (-1,-1,1) (an entry on a g = 1 axis is
    dropped, not normalised), so the saved MQA bs1 kernel 1 imaps are unreachable even on its grid."""
    saved = ((P, P, 1), (P, 2, P), (P, 1, P))
    assert saved not in C.imap_candidates(MQA1, (1, 8, 16), ATT)
    user = ATT.replace(imaps=(saved,))
    assert C.imap_candidates(MQA1, (1, 8, 16), user) == [saved]


def test_normalised_imaps_reach_batch_one_split_kv() -> None:
    """``normalise_imaps``: entries on g = 1 axes become φ instead of dropping the imap, so with batch 1 the
    attention set expresses (-1,-1,1) and the saved MQA kernel-1 imaps are generated on its grid."""
    saved = ((P, P, 1), (P, 2, P), (P, 1, P))
    normal = preset("attention")
    assert normal.normalise_imaps
    assert saved in C.imap_candidates(MQA1, (1, 8, 16), normal)
    assert set(C.imap_candidates(GQA1, (2, 16, 4), ATT)) <= set(C.imap_candidates(GQA1, (2, 16, 4), normal))
    for combo in C.imap_candidates(MQA1, (1, 8, 16), normal):
        assert all(m[0] == P for m in combo)  # nothing maps the one-block axis


def test_attention_grids_both_orientations() -> None:
    """Ours adds the transposed 3-D grid (batch, 4, 16): 4 KV splits × 16 query splits, where MQA's 1 024
    queries fit shared memory; with the normalised imap set the saved MQA kernel-1 imaps exist on it."""
    ours = preset("attention")
    assert (1, 16, 4) in C.grid_candidates(MQA1, ATT) and (1, 4, 16) not in C.grid_candidates(MQA1, ATT)
    grids = C.grid_candidates(MQA1, ours)
    assert grids.index((1, 4, 16)) == grids.index((1, 16, 4)) + 1 < grids.index((1, 128, 1))  # 3-D before 2-D
    assert sorted(grids) == sorted(C.grid_candidates(MQA1, ours.replace(attention_3d_first=False)))
    assert ((P, P, 1), (P, 2, P), (P, 1, P)) in C.imap_candidates(MQA1, (1, 4, 16), ours)
    # only with more than two inputs, and a user setting like the grid list
    assert (2, 4, 16) not in C.grid_candidates(GQA1[:2], ours)
    assert (2, 8, 8) in C.grid_candidates(GQA1, ours.replace(attention_grids_yz=((8, 8),)))
    with pytest.raises(MirageError, match="attention_grids_yz"):
        ours.replace(attention_grids_yz=((8, 0),))


def test_imaps_user_combinations() -> None:
    combos = (
        ((P, P, P), (1, 0, P)),  # y entry on a g = 1 axis: normalised to ((−1,−1,−1),(1,−1,−1))
        ((P, P, P), (1, P, P)),  # the same after normalising: deduplicated
        ((0, P, P), (1, P, P)),  # 16 % 256 != 0: dropped
        ((P, P, P), (1, P, 1)),  # rank ok but z has g = 1 -> normalised to (1,-1,-1): duplicate
        ((P, P, P), (2, P, P)),  # dim 2 of a 2-D tensor: dropped
        ((P, P, P),),  # wrong length: dropped
        ((P, P, P), (P, P, P)),  # all-replicated user combination: kept (the reference keeps it)
    )
    cfg = MLP.replace(imaps=combos)
    assert C.imap_candidates([X8, W], (256, 1, 1), cfg) == [((P, P, P), (1, P, P)), ((P, P, P), (P, P, P))]
    # [lab] two grid axes on one data dim
    assert C.imap_candidates([X8, W], (16, 2, 1), MLP.replace(imaps=(((P, P, P), (1, 1, P)),))) == []
    # an empty tuple means "not given", as in the reference
    assert C.imap_candidates([X8, W], (256, 1, 1), MLP.replace(imaps=())) == C.imap_candidates(
        [X8, W], (256, 1, 1), MLP)


# --------------------------------------------------------------------------- fmaps and forloop ranges
def test_fmaps() -> None:
    fmaps = C.fmap_candidates([X8, W], MLP)
    assert (1, 0) in fmaps
    assert fmaps == list(itertools.product((P, 0, 1), (P, 0, 1)))
    # dims of size 1 and missing dims are never loop dims
    assert C.fmap_candidates([(1, 8, 1)], MLP) == [(P,), (1,)]
    assert C.fmap_candidates([(4, 4, 4, 4)], MLP) == [(P,), (0,), (1,), (2,)]  # the list stops at dim 2
    user = MLP.replace(fmaps=((1, 0), (2, 0), (1, 0), (P, P)))
    assert C.fmap_candidates([X8, W], user) == [(1, 0), (P, P)]


def test_forloop_ranges() -> None:
    imaps = ((P, P, P), (1, P, P))
    assert C.forloop_candidates([X8, W], (256, 1, 1), imaps, (1, 0), MLP) == [4, 16, 64]
    tb = ml.new_threadblock_graph((256, 1, 1), forloop_range=4)
    tx = tb.new_input(TensorType(X8, ml.float16), (P, P, P), 1)
    tw = tb.new_input(TensorType(W, ml.float16), (1, P, P), 0)
    assert (tx.dims, tw.dims) == ((16, 1024), (1024, 24))  # SPEC §3.2 worked example
    # no loop dim -> F = 1 only, whatever the list
    assert C.forloop_candidates([X8, W], (256, 1, 1), imaps, (P, P), MLP) == [1]
    # the grid split of the loop dim counts: W dim 1 gives 6144 / 256 = 24 per block, divisible by 4 only
    assert C.forloop_candidates([X8, W], (256, 1, 1), imaps, (1, 1), MLP) == [4]
    # rmsnorm bs 1: X[2,128] per iteration needs F = 32, which only an override provides
    assert 32 not in C.forloop_candidates([X1, W], (256, 1, 1), imaps, (1, 0), MLP)
    assert C.forloop_candidates([X1, W], (256, 1, 1), imaps, (1, 0), MLP.replace(forloop_ranges=(32, 3))) == [32]


def test_every_generated_configuration_builds() -> None:
    """Every (grid, imaps, fmaps, F) the generators produce satisfies the §3.2 loader rules (the builder agrees)
    and is already normalised."""
    cases: list[tuple[list[Any], SearchConfig]] = [([X8, W], MLP), (GQA1, ATT), ([(8, 4096)] * 3, DEFAULT)]
    checked = 0
    for dims, cfg in cases:
        for grid in C.grid_candidates(dims, cfg):
            for imaps in C.imap_candidates(dims, grid, cfg):
                for fmaps in C.fmap_candidates(dims, cfg)[::3]:
                    for f in C.forloop_candidates(dims, grid, imaps, fmaps, cfg):
                        tb = ml.new_threadblock_graph(grid, forloop_range=f, smem_limit=1 << 40)
                        for d, m, fm in zip(dims, imaps, fmaps, strict=True):
                            assert all(m[a] == P for a in range(3) if grid[a] == 1)  # normalised (§3.2)
                            try:
                                tb.new_input(TensorType(d, ml.float16), m, fm)
                            except MirageError as e:  # pragma: no cover - the failure message is the point
                                pytest.fail(f"{grid} {imaps} {fmaps} F={f}: {e}")
                        checked += 1
    assert checked > 1000


# --------------------------------------------------------------------------- omaps
def test_omaps() -> None:
    assert C.omap_candidates([(16, 24)], (256, 1, 1), MLP) == [(0, P, P), (1, P, P)]
    assert C.omap_candidates([(1, 64, 1), (1, 64, 64)], (2, 8, 16), ATT) == [(0, 2, 1)]  # GQA kernel 1
    assert C.omap_candidates([(16, 24)], (2, 8, 16), ATT) == []  # a 2-D output cannot take dim 2
    assert C.omap_candidates([(1, 16, 1)], (2, 16, 1), ATT) == [(0, 1, P), (0, 2, P)]
    assert C.omap_candidates([(1, 16, 1)], (1, 64, 1), ATT) == [(P, 1, P), (P, 2, P)]  # MQA bs 1 kernel 2
    assert C.omap_candidates([(8, 8)], (1, 1, 1), DEFAULT) == [(P, P, P)]
    user = DEFAULT.replace(omaps=((1, P, P), (0, 0, P), (2, P, P), (0, P, 1)))
    # user entries first; (0,0,-1) names a dim twice, (2,-1,-1) exceeds the rank, (0,-1,1) maps a g = 1 axis
    assert C.omap_candidates([(16, 24)], (256, 1, 1), user) == [(1, P, P), (0, P, P)]


# --------------------------------------------------------------------------- randomised order
def test_randomized_branches_deterministic() -> None:
    base = ATT
    rnd = ATT.replace(randomized_branches=True, seed=7)
    plain = C.imap_candidates(GQA1, (2, 16, 4), base)
    a = C.imap_candidates(GQA1, (2, 16, 4), rnd)
    assert a == C.imap_candidates(GQA1, (2, 16, 4), rnd)  # same call, same order
    assert sorted(a) == sorted(plain) and a != plain
    assert C.imap_candidates(GQA1, (2, 16, 4), rnd.replace(seed=8)) != a
    pairs: list[tuple[list[Any], list[Any]]] = [
        (C.grid_candidates(GQA1, rnd), C.grid_candidates(GQA1, base)),
        (C.fmap_candidates(GQA1, rnd), C.fmap_candidates(GQA1, base)),
        (C.omap_candidates([(1, 64, 1)], (2, 16, 1), rnd), C.omap_candidates([(1, 64, 1)], (2, 16, 1), base)),
        (C.forloop_candidates([X8, W], (64, 1, 1), ((P, P, P), (1, P, P)), (1, 0), rnd),
         C.forloop_candidates([X8, W], (64, 1, 1), ((P, P, P), (1, P, P)), (1, 0), base)),
    ]
    for shuffled, plain_list in pairs:
        assert sorted(shuffled) == sorted(plain_list)
    assert C.grid_candidates(GQA1, rnd) == pairs[0][0]
    idx = list(C.input_index_candidates(2, 5, rnd))
    assert idx == list(C.input_index_candidates(2, 5, rnd)) and sorted(idx) == list(C.input_index_candidates(2, 5))
    assert idx != list(C.input_index_candidates(2, 5))
    subsets = rnd.replace(customized_inputs="subsets")
    assert sorted(C.customized_input_candidates(5, subsets)) == sorted(
        C.customized_input_candidates(5, subsets.replace(randomized_branches=False)))


# --------------------------------------------------------------------------- saved reference graphs
#: SPEC §9 presets
PRESET_OF = {"rmsnorm": "mlp", "gated_mlp": "mlp", "single_gated_mlp": "mlp", "lora": "lora",
             "single_lora": "lora", "gqa": "attention", "mha": "attention", "mqa": "attention",
             "single_mqa": "attention", "qknorm_gqa": "attention", "ntrans": "default"}


def preset_of(stem: str) -> str:
    return next(PRESET_OF[k] for k in sorted(PRESET_OF, key=len, reverse=True) if stem.startswith(k))


def unreached(g: ml.KernelGraph, node: Any, cfg: SearchConfig) -> tuple[str, ...]:
    """Which parts of one customized op the generators do not produce (empty: all are produced)."""
    bg = node.body
    dims = [g.tensors[i].dims for i in node.inputs]
    imaps = tuple(tuple(n.attr("imap")) for n in bg.loaders)
    fmaps = tuple(n.attr("fmap") for n in bg.loaders)
    omaps = {tuple(n.attr("omap")) for n in bg.savers}
    tiles = [bg.tensors[n.inputs[0]].dims for n in bg.savers]
    miss = []
    if node.inputs not in C.customized_input_candidates(min(node.outputs), cfg):  # tensors existing before it
        miss.append("inputs")
    if bg.grid not in C.grid_candidates(dims, cfg):
        miss.append("grid")
    if imaps not in C.imap_candidates(dims, bg.grid, cfg):
        miss.append("imaps")
    if fmaps not in C.fmap_candidates(dims, cfg):
        miss.append("fmaps")
    if bg.forloop_range not in C.forloop_candidates(dims, bg.grid, imaps, fmaps, cfg):
        miss.append("F")
    if len(omaps) != 1 or next(iter(omaps)) not in C.omap_candidates(tiles, bg.grid, cfg):
        miss.append("omap")
    return tuple(miss)


def reachability(path: Path, cfg: SearchConfig) -> Counter[tuple[str, ...]]:
    out: Counter[tuple[str, ...]] = Counter()
    for g in ml.load_reference_checkpoint(path):
        for node in g.compute_nodes:
            if node.body is not None:
                out[unreached(g, node, cfg)] += 1
    return out


#: measured: file -> {missing parts: block graphs}; () = produced by the generators under the file's preset.
#: * gqa_bs1: 16 kernel-1 block graphs use grid (2, 8, 16), which no §7.3 step builds (2-D grids have z = 1,
#:   the only 3-D grid is (batch, 16, 4)); the other 12 kernel-1 graphs use (2, 16, 4) and are reachable.
#: * mqa_bs8: all 17 kernel-1 block graphs use grid (8, 8, 16): unreachable for the same reason.
#: * mqa_bs1 / single_mqa_bs1: kernel 1 has grid (1, 8, 16) and imaps ((-1,-1,1), (-1,2,-1), (-1,1,-1));
#:   with batch = 1 the attention imap set cannot express them (SPEC §7.3).
#: * rmsnorm_bs1: 8 block graphs use F = 32, not in {4, 16, 64} (older settings, SPEC §7.1).
#: Every kernel-2 block graph (two inputs, the last two tensors) is reachable.
EXPECTED: dict[str, dict[tuple[str, ...], int]] = {
    "gated_mlp": {(): 32},
    "gqa_bs1": {(): 40, ("grid",): 16},
    "gqa_bs8": {(): 20},
    "lora": {(): 4},
    "mha_bs1": {(): 41},
    "mha_bs8": {(): 74},
    "mqa_bs1": {(): 12, ("grid", "imaps"): 12},
    "mqa_bs8": {(): 17, ("grid",): 17},
    "ntrans_bs1": {(): 9},
    "ntrans_bs8": {(): 9},
    "qknorm_gqa_bs1": {(): 380},
    "qknorm_gqa_bs8": {(): 380},
    "rmsnorm_bs1": {(): 10, ("F",): 8},
    "rmsnorm_bs8": {(): 20},
    "single_gated_mlp": {(): 1},
    "single_lora": {(): 1},
    "single_mqa_bs1": {(): 1, ("grid", "imaps"): 1},
}


def _reference_twin(name: str) -> SearchConfig:
    return preset("reference" if name == "default" else f"reference_{name}")


def test_reference_reachability(reference_dir: Path) -> None:
    measured = {p.stem: dict(reachability(p, _reference_twin(preset_of(p.stem))))
                for p in sorted(reference_dir.glob("*.json"))}
    assert measured == EXPECTED
    assert sum(n for d in measured.values() for n in d.values()) == 1105  # every block graph (SPEC §10)
    # ours (normalise_imaps): the batch-1 MQA imaps are generated; only the grid (1, 8, 16) is missing
    for stem in ("mqa_bs1", "single_mqa_bs1"):
        ours = dict(reachability(reference_dir / f"{stem}.json", preset("attention")))
        assert ours == {(): EXPECTED[stem][()], ("grid",): EXPECTED[stem][("grid", "imaps")]}


@pytest.mark.parametrize(("stem", "overrides"), [
    ("gqa_bs1", {"grids": ((2, 8, 16),)}),
    ("mqa_bs8", {"grids": ((8, 8, 16),)}),
    ("rmsnorm_bs1", {"forloop_ranges": (4, 16, 32, 64)}),
    # user imaps replace the generated product, so kernel 2's combination is listed too
    ("mqa_bs1", {"grids": ((1, 8, 16),), "imaps": (((P, P, 1), (P, 2, P), (P, 1, P)), ((P, 1, P), (P, 1, P)))}),
])
def test_overrides_reach_the_rest(reference_dir: Path, stem: str, overrides: dict[str, Any]) -> None:
    """The settings the unreachable block graphs need, given as SearchConfig overrides, reach all of them."""
    path = reference_dir / f"{stem}.json"
    got = reachability(path, preset(preset_of(stem), **overrides))
    assert set(got) == {()}, got
