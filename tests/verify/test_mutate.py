"""Mutants and rewrites (mirage_lab.verify.mutate / rewrite) on small-shape hand-written μGraphs.

The small graphs below have the structure of bench/fused.py's graphs (and nTrans and a
column-normalisation graph with an explicit block reduction) at shapes where the float64
interpreter and the finite-field verifier take milliseconds.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.ir.builder import KernelGraphBuilder
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.verify.mutate import (
    KINDS,
    Mutant,
    RewriteStats,
    different_mutants,
    mutants,
    really_different,
    rewrites,
)
from mirage_lab.verify.rewrite import REWRITES, build, same_io

PHI = -1
verify = pytest.importorskip("mirage_lab.verify").verify
Verifier = pytest.importorskip("mirage_lab.verify").Verifier


def _out(g: KernelGraphBuilder, t: ml.ir.tensor.DTensor) -> KernelGraph:
    g.mark_output(t)
    return g.freeze()


# --------------------------------------------------------------------------- small programs and fused graphs


def rmsnorm_program() -> KernelGraph:
    g = ml.new_kernel_graph()
    x, w = g.new_input((4, 64)), g.new_input((64, 32))
    return _out(g, g.matmul(g.rms_norm(x), w))


def rmsnorm_fused() -> KernelGraph:
    g = ml.new_kernel_graph()
    x, w = g.new_input((4, 64)), g.new_input((64, 32))
    tb = ml.new_threadblock_graph((4, 1, 1), forloop_range=4)
    tx = tb.new_input(x, (PHI, PHI, PHI), 1)
    tw = tb.new_input(w, (1, PHI, PHI), 0)
    rms = tb.forloop_accum(tx, "rms")
    tb.new_output(tb.div(tb.forloop_accum(tb.matmul(tx, tw)), rms), (1, PHI, PHI))
    return _out(g, g.customized([x, w], tb)[0])


def gated_mlp_program() -> KernelGraph:
    g = ml.new_kernel_graph()
    x, w1, w2 = g.new_input((4, 64)), g.new_input((64, 64)), g.new_input((64, 64))
    return _out(g, g.mul(g.silu(g.matmul(x, w1)), g.matmul(x, w2)))


def gated_mlp_fused() -> KernelGraph:
    g = ml.new_kernel_graph()
    x, w1, w2 = g.new_input((4, 64)), g.new_input((64, 64)), g.new_input((64, 64))
    tb = ml.new_threadblock_graph((4, 1, 1), forloop_range=4)
    tx = tb.new_input(x, (PHI, PHI, PHI), 1)
    t1, t2 = tb.new_input(w1, (1, PHI, PHI), 0), tb.new_input(w2, (1, PHI, PHI), 0)
    a1, a2 = tb.forloop_accum(tb.matmul(tx, t1)), tb.forloop_accum(tb.matmul(tx, t2))
    tb.new_output(tb.mul(tb.silu(a1), a2), (1, PHI, PHI))
    return _out(g, g.customized([x, w1, w2], tb)[0])


def lora_program() -> KernelGraph:
    g = ml.new_kernel_graph()
    x, w, a, b = g.new_input((4, 32)), g.new_input((32, 64)), g.new_input((32, 8)), g.new_input((8, 64))
    return _out(g, g.add(g.matmul(x, w), g.matmul(g.matmul(x, a), b)))


def lora_fused() -> KernelGraph:
    g = ml.new_kernel_graph()
    x, w, a, b = g.new_input((4, 32)), g.new_input((32, 64)), g.new_input((32, 8)), g.new_input((8, 64))
    tb = ml.new_threadblock_graph((4, 1, 1), forloop_range=1)
    tx, tw = tb.new_input(x, (PHI, PHI, PHI), PHI), tb.new_input(w, (1, PHI, PHI), PHI)
    ta, tbb = tb.new_input(a, (PHI, PHI, PHI), PHI), tb.new_input(b, (1, PHI, PHI), PHI)
    xab = tb.matmul(tb.matmul(tx, ta), tbb)
    tb.new_output(tb.forloop_accum(tb.add(xab, tb.matmul(tx, tw))), (1, PHI, PHI))
    return _out(g, g.customized([x, w, a, b], tb)[0])


def gqa_program() -> KernelGraph:
    g = ml.new_kernel_graph()
    q, k, v = g.new_input((2, 16, 8)), g.new_input((2, 8, 64)), g.new_input((2, 64, 8))
    e = g.exp(g.matmul(q, k))
    return _out(g, g.matmul(g.div(e, g.reduction(e, 2)), v))


def gqa_fused() -> KernelGraph:
    """Split-KV attention as bench/fused.gqa: kernel 1 grid (2, 4, 2), F = 2; kernel 2 with X = 8."""
    g = ml.new_kernel_graph()
    q, k, v = g.new_input((2, 16, 8)), g.new_input((2, 8, 64)), g.new_input((2, 64, 8))
    tb = ml.new_threadblock_graph((2, 4, 2), forloop_range=2)
    tq = tb.new_input(q, (0, PHI, 1), PHI)
    tk = tb.new_input(k, (0, 2, PHI), 2)
    tv = tb.new_input(v, (0, 1, PHI), 1)
    e = tb.exp(tb.matmul(tq, tk))
    tb.new_output(tb.forloop_accum(e), (0, 2, 1))
    tb.new_output(tb.forloop_accum(tb.matmul(e, tv)), (0, 2, 1))
    sums, partial = g.customized([q, k, v], tb)
    tb2 = ml.new_threadblock_graph((2, 4, 1), forloop_range=1, reduction_dimx=8)
    ts = tb2.new_input(sums, (0, 1, PHI), PHI)
    tp = tb2.new_input(partial, (0, 1, PHI), PHI)
    tb2.new_output(tb2.div(tb2.forloop_accum(tp, "sum_todimx"), tb2.forloop_accum(ts, "sum")), (0, 1, PHI))
    return _out(g, g.customized([sums, partial], tb2)[0])


def ntrans_program() -> KernelGraph:
    g = ml.new_kernel_graph()
    h, x, alpha = g.new_input((4, 16)), g.new_input((4, 16)), g.new_input((4, 16))
    return _out(g, g.rms_norm(g.add(x, g.mul(alpha, g.add(g.rms_norm(h), x)))))


def ntrans_fused() -> KernelGraph:
    g = ml.new_kernel_graph()
    h, x, alpha = g.new_input((4, 16)), g.new_input((4, 16)), g.new_input((4, 16))
    tb = ml.new_threadblock_graph((4, 1, 1), forloop_range=1)
    th, tx, ta = (tb.new_input(t, (0, PHI, PHI), PHI) for t in (h, x, alpha))
    s = tb.add(tb.mul(tb.add(tx, tb.rms_norm(th)), ta), tx)
    tb.new_output(tb.rms_norm(tb.forloop_accum(s)), (0, PHI, PHI))
    return _out(g, g.customized([h, x, alpha], tb)[0])


def colnorm_program() -> KernelGraph:
    """``X / colsum(X)`` per batch: the kernel reduction over dim 1, broadcast back."""
    g = ml.new_kernel_graph()
    x = g.new_input((4, 8, 8))
    return _out(g, g.div(x, g.reduction(x, 1)))


def colnorm_fused() -> KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input((4, 8, 8))
    tb = ml.new_threadblock_graph((4, 1, 1), forloop_range=1)
    tx = tb.new_input(x, (0, PHI, PHI), PHI)
    tb.new_output(tb.forloop_accum(tb.div(tx, tb.reduction(tx, 1))), (0, PHI, PHI))
    return _out(g, g.customized([x], tb)[0])


def rowsum_program() -> KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input((4, 64))
    return _out(g, g.reduction(x, 1))


def rowsum_fused() -> KernelGraph:
    """Row sums with the loop walking the row (F = 4): an fmap change here keeps every type."""
    g = ml.new_kernel_graph()
    x = g.new_input((4, 64))
    tb = ml.new_threadblock_graph((4, 1, 1), forloop_range=4)
    tb.new_output(tb.forloop_accum(tb.new_input(x, (0, PHI, PHI), 1), "sum"), (0, PHI, PHI))
    return _out(g, g.customized([x], tb)[0])


#: name → (program, hand-written fused graph)
SMALL: dict[str, tuple[Callable[[], KernelGraph], Callable[[], KernelGraph]]] = {
    "rmsnorm": (rmsnorm_program, rmsnorm_fused),
    "gated_mlp": (gated_mlp_program, gated_mlp_fused),
    "lora": (lora_program, lora_fused),
    "gqa": (gqa_program, gqa_fused),
    "ntrans": (ntrans_program, ntrans_fused),
    "colnorm": (colnorm_program, colnorm_fused),
    "rowsum": (rowsum_program, rowsum_fused),
}
SOURCES = [(f"{name}:{which}", pair[i]) for name, pair in SMALL.items() for i, which in enumerate(("program", "fused"))]
#: a single kernel reduction: every edit changes the output type
NO_MUTANTS = {"rowsum:program"}
MUTATED = [n for n, _ in SOURCES if n not in NO_MUTANTS]


@pytest.fixture(scope="module")
def all_mutants() -> dict[str, tuple[KernelGraph, list[Mutant]]]:
    out = {}
    for name, make in SOURCES:
        g = make()
        out[name] = (g, list(mutants(g)))
    return out


@pytest.fixture(scope="module")
def different(all_mutants: dict[str, tuple[KernelGraph, list[Mutant]]]) -> dict[str, list[Mutant]]:
    return {name: [m for m in ms if really_different(g, m.graph)] for name, (g, ms) in all_mutants.items()}


# --------------------------------------------------------------------------- the small graphs themselves


@pytest.mark.parametrize("name", list(SMALL))
def test_small_fused_graphs_compute_their_programs(name: str) -> None:
    prog, fused = (f() for f in SMALL[name])
    assert really_different(prog, fused) is False
    assert verify(fused, prog).equivalent


# --------------------------------------------------------------------------- mutants


def test_every_kind_occurs(all_mutants: dict[str, tuple[KernelGraph, list[Mutant]]],
                           different: dict[str, list[Mutant]]) -> None:
    kinds = collections.Counter(m.kind for ms in different.values() for m in ms)
    assert set(kinds) == set(KINDS), f"kinds without a really-different mutant: {set(KINDS) - set(kinds)}"


@pytest.mark.parametrize("name", MUTATED)
def test_mutants_are_valid_and_keep_types(name: str, all_mutants: dict[str, tuple[KernelGraph, list[Mutant]]]
                                          ) -> None:
    g, ms = all_mutants[name]
    assert ms, f"{name} has no mutants"
    hashes = {g.canonical_hash()}
    for m in ms:
        assert m.kind in KINDS and m.description
        assert repr(m) == f"<Mutant {m.kind}: {m.description}>"
        assert same_io(g, m.graph)
        # rebuilt through the builders: its own dict form replays to an equal graph
        assert build(ml.ir.io.graph_to_dict(m.graph)) == m.graph
        h = m.graph.canonical_hash()
        assert h not in hashes, f"duplicate or unchanged mutant: {m}"
        hashes.add(h)


@pytest.mark.parametrize("name", ["rmsnorm", "gated_mlp", "lora", "gqa"])
def test_mutants_of_paper_shape_fused_graphs_are_valid(name: str) -> None:
    """Generation only (no evaluation): every mutant of bench/fused.py's graphs rebuilds and keeps its types."""
    from mirage_lab.bench import fused

    g = fused.FUSED[name](1)
    ms = list(mutants(g))
    assert len(ms) >= 8
    assert all(same_io(g, m.graph) and m.graph != g for m in ms)
    assert {m.kind for m in ms} >= {"forloop_range", "accum_kind", "sibling_op"}
    assert [m.kind for m in rewrites(g, check=False, kinds="retile", limit=1)] == ["retile"]


def test_descriptions_name_the_change() -> None:
    ms = {m.description: m for m in mutants(rmsnorm_fused(), kinds="accum_kind")}
    assert "block 0 node 2: accum_rms → accum_sum" in ms
    assert "block 0 node 4: accum_no_red → accum_max" in ms
    sib = [m.description for m in mutants(gated_mlp_fused(), kinds="sibling_op")]
    assert "block 0 node 7: silu → exp" in sib and "block 0 node 8: mul → add" in sib
    assert "kernel node 5: reduction dim 2 → 1" in [m.description for m in mutants(gqa_program(),
                                                                                    kinds="reduction_dim")]


def test_mutants_deterministic_and_filtered() -> None:
    g = gqa_fused()
    first = [(m.kind, m.description, m.graph.canonical_hash()) for m in mutants(g)]
    assert first == [(m.kind, m.description, m.graph.canonical_hash()) for m in mutants(g)]
    assert [k for k, _, _ in first] == sorted((k for k, _, _ in first), key=KINDS.index)
    assert len(list(mutants(g, limit=5))) == 5
    assert {m.kind for m in mutants(g, kinds=["imap", "omap"])} <= {"imap", "omap"}
    with pytest.raises(ValueError, match="unknown mutation kind"):
        list(mutants(g, kinds="nonsense"))


@pytest.mark.parametrize("name", MUTATED)
def test_most_mutants_really_differ(name: str, all_mutants: dict[str, tuple[KernelGraph, list[Mutant]]],
                                    different: dict[str, list[Mutant]]) -> None:
    _g, ms = all_mutants[name]
    assert different[name], f"no mutant of {name} differs"
    assert len(different[name]) >= len(ms) // 3


def test_different_mutants_filters_and_limits() -> None:
    g = gqa_fused()
    ms = list(different_mutants(g, limit=6))
    assert len(ms) == 6 and all(really_different(g, m.graph) for m in ms)
    assert [m.description for m in ms] == [m.description for m in mutants(g) if really_different(g, m.graph)][:6]


def test_really_different_cases() -> None:
    g = gated_mlp_fused()
    silu_exp = next(m for m in mutants(g, kinds="sibling_op") if "silu → exp" in m.description)
    assert really_different(g, silu_exp.graph) is True
    assert really_different(g, g) is False
    assert really_different(gated_mlp_program(), g) is False
    # output types differ: different; input types differ: meaningless
    assert really_different(rmsnorm_program(), colnorm_program()) is None
    b = ml.new_kernel_graph()
    x, w = b.new_input((4, 64)), b.new_input((64, 32))
    b.mark_output(b.matmul(x, w))
    b.mark_output(x)
    assert really_different(rmsnorm_program(), b.freeze()) is True


def test_really_different_none_when_not_finite() -> None:
    g = ml.new_kernel_graph()
    x = g.new_input((4, 8))
    tb = ml.new_threadblock_graph((1, 1, 1))
    tx = tb.new_input(x)
    tb.new_output(tb.forloop_accum(tb.div(tx, tb.sub(tx, tx))))  # x / 0 everywhere
    bad = _out(g, g.customized([x], tb)[0])
    assert really_different(bad, bad) is None


# --------------------------------------------------------------------------- rewrites


@pytest.mark.parametrize("name", [n for n, _ in SOURCES])
def test_rewrites_are_equal(name: str) -> None:
    g = dict(SOURCES)[name]()
    stats = RewriteStats()
    rws = list(rewrites(g, stats=stats))
    assert stats.kept == len(rws)
    for m in rws:
        assert m.kind in REWRITES and same_io(g, m.graph)
        assert really_different(g, m.graph, seed=7) is False, m


def test_every_rewrite_kind_occurs() -> None:
    kinds = collections.Counter(m.kind for _, make in SOURCES for m in rewrites(make()))
    assert set(kinds) == set(REWRITES), kinds


def test_rewrite_descriptions() -> None:
    descs = [m.description for m in rewrites(ntrans_fused())]
    assert "block 0 node 4: add(x, y) → add(y, x)" in descs
    assert "block 0 node 5: (a+b)·c → a·c + b·c" in descs
    assert "block 0 node 5: matmul(matmul(a, b), c) → matmul(a, matmul(b, c))" in [
        m.description for m in rewrites(lora_fused(), kinds="reassociate")]
    assert "kernel node 7: matmul(div(a, b), c) → div(matmul(a, c), b)" in [
        m.description for m in rewrites(gqa_program(), kinds="reassociate")]
    rm = [m.description for m in rewrites(rmsnorm_fused(), kinds="retile")]
    assert "block 0: grid (4, 1, 1) → (2, 1, 1)" in rm and "block 0: forloop_range 4 → 8" in rm
    assert [m.description for m in rewrites(lora_fused(), kinds="accum_split")] == [
        "block 0 node 8: accum_no_red(a + b) → accum_no_red(a) + accum_no_red(b)"]


def test_rewrite_check_discards_unequal_candidates() -> None:
    # lora's loaders all have fmap φ: a larger F would scale the sum, so retile proposes no F change;
    # a wrong reassociation is impossible, but the stats still count what was tried
    stats = RewriteStats()
    rws = list(rewrites(gqa_fused(), kinds="retile", stats=stats))
    assert rws and stats.invalid > 0  # retilings that change the intermediate DTensors are invalid
    unchecked = list(rewrites(gqa_fused(), kinds="retile", check=False))
    assert len(unchecked) == len(rws) + len(stats.discarded) + len(stats.inconclusive)


# --------------------------------------------------------------------------- the verifier


def test_verifier_rejects_every_small_mutant_and_accepts_every_rewrite(
        different: dict[str, list[Mutant]]) -> None:
    t0 = time.perf_counter()
    missed = []
    n = 0
    for name, make in SOURCES:
        prog = SMALL[name.split(":")[0]][0]()
        for m in different[name]:
            n += 1
            if verify(m.graph, prog, trials=1).equivalent:
                missed.append(f"{name}: {m}")
        for m in rewrites(make()):
            r = verify(m.graph, prog, trials=1)
            assert r.equivalent, f"{name}: rewrite {m} rejected: {r}"
    assert not missed, missed
    assert n >= 200
    assert time.perf_counter() - t0 < 120


def test_verifier_default_trials_rejects_mutants() -> None:
    prog, g = rmsnorm_program(), rmsnorm_fused()
    ms = [m for m in mutants(g) if really_different(g, m.graph)]
    assert ms
    for m in ms:
        r = verify(m.graph, prog)
        assert not r.equivalent and r.witness is not None, m
    for m in rewrites(g, limit=3):
        r = verify(m.graph, prog)
        assert r.equivalent and r.error_bound is not None and len(r.trials) == 3, m


def test_rms_norm_scale_invariance_known_limitation() -> None:
    """Formerly a known limitation: the root v^((m+1)/4) gives sqrt(c²·s) = c·(c|m)·sqrt(s), and with the old
    q = 8 387 339 (2 a non-residue) rms_norm(2·x) = −rms_norm(x) in the q-part, so a graph whose F = 2 loop adds
    the same tile twice before an rms_norm was rejected. DEFAULT_FIELD now makes 2 and 3 residues mod p and q."""
    g = ntrans_fused()
    d = ml.ir.io.graph_to_dict(g)
    d["nodes"][3]["body"]["forloop_range"] = 2  # every loader has fmap φ: the accumulator sums the tile twice
    twice = build(d)
    assert really_different(g, twice) is False
    assert verify(twice, ntrans_program()).equivalent


# --------------------------------------------------------------------------- reference graphs


@pytest.mark.parametrize("stem", ["ntrans_bs1", "lora", "single_lora"])
def test_verifier_rejects_mutants_of_reference_graphs(reference_dir, stem: str) -> None:
    from mirage_lab.bench import harness, programs

    graphs = ml.load_reference_checkpoint(reference_dir / f"{stem}.json")
    name, b = harness.CHECKPOINTS[stem]
    prog = programs.PROGRAMS[name](b)
    verifier = Verifier(prog, trials=1)
    checked = 0
    for g in graphs[:3]:
        for m in mutants(g):
            if really_different(g, m.graph):
                checked += 1
                assert not verifier.check(m.graph).equivalent, m
        for m in rewrites(g, limit=2):
            assert verifier.check(m.graph).equivalent, m
    assert checked > 0


def test_mutant_inputs_are_seeded() -> None:
    from mirage_lab.verify import compare

    a = compare._inputs(gqa_program(), 3, 0)
    assert all(np.array_equal(x, y) for x, y in zip(a, compare._inputs(gqa_program(), 3, 0), strict=True))
    assert max(float(np.abs(x).max()) for x in a) <= 0.2  # exp in the graph: small inputs
