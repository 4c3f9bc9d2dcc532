"""tanh and erf (issue 20, item 2): each is one op-table row plus its number systems' methods, and works in every
layer: builder, float interpreter, finite-field verifier (heuristic, said so), abstract expressions, mutations,
search, CUDA (nvcc sm_80 and sm_90) and the CPU emulator."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.absexpr.engines import make_engine
from mirage_lab.absexpr.of_graph import graph_expressions
from mirage_lab.absexpr.oracle import Limits
from mirage_lab.bench.harness import random_inputs, relative_error
from mirage_lab.codegen import emulate
from mirage_lab.codegen.compile import ARCHS, nvcc_available, nvcc_ptx
from mirage_lab.ir.ops import OPS, Op
from mirage_lab.search import preset, superoptimize
from mirage_lab.semantics.centered_field import verification_arith
from mirage_lab.semantics.field import DEFAULT_FIELD, FieldArith
from mirage_lab.verify.mutate import mutants, really_different

M, K, N = 8, 64, 128
PHI = -1


def unfused() -> ml.KernelGraph:
    """O = tanh(X·W) + erf(X·W)."""
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(M, K), dtype=ml.float16)
    w = g.new_input(dims=(K, N), dtype=ml.float16)
    h = g.matmul(x, w)
    g.mark_output(g.add(g.tanh(h), g.erf(h)))
    return g.freeze()


def fused() -> ml.KernelGraph:
    """The same in one kernel: the loop accumulates X·W, then tanh, erf and add run on the tile."""
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(M, K), dtype=ml.float16)
    w = g.new_input(dims=(K, N), dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=(4, 1, 1), forloop_range=4)
    tx = tb.new_input(x, input_map=(PHI, PHI, PHI), forloop_dim=1)
    tw = tb.new_input(w, input_map=(1, PHI, PHI), forloop_dim=0)
    acc = tb.forloop_accum(tb.matmul(tx, tw))
    tb.new_output(tb.add(tb.tanh(acc), tb.erf(acc)), output_map=(1, PHI, PHI))
    g.mark_output(g.customized([x, w], tb)[0])
    return g.freeze()


def test_the_interpreter_computes_numpys_tanh_and_maths_erf() -> None:
    ins = [a.astype(np.float64) for a in random_inputs(unfused(), seed=1, scale=0.2)]
    h = ins[0] @ ins[1]
    want = np.tanh(h) + np.vectorize(math.erf)(h)
    for graph in (unfused(), fused()):
        (got,) = ml.interpret(graph, ins)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("system", ["int64 residues", "centred float64 residues"])
def test_field_rules_are_deterministic_fingerprints_of_the_odd_logistic(system: str) -> None:
    ns = FieldArith(DEFAULT_FIELD) if system == "int64 residues" else verification_arith(DEFAULT_FIELD)
    exact = FieldArith(DEFAULT_FIELD)
    x = exact.random((3, 5), np.random.default_rng(0))
    p = DEFAULT_FIELD.p
    for op, slope in ((ns.tanh, 2), (ns.erf, 3)):
        got = ns.to_host(op(_lift(ns, x)))
        e = [pow(DEFAULT_FIELD.omega, slope * int(q) % DEFAULT_FIELD.q, p) for q in x.q.reshape(-1)]
        want = [(v - 1) * pow(v + 1, -1, p) % p for v in e]
        assert [int(v) % p for v in np.asarray(got.p).reshape(-1)] == want
        assert not np.asarray(got.q).any()
    assert OPS[Op.TANH].field is not None and OPS[Op.TANH].field.standing == "heuristic"
    assert OPS[Op.ERF].field is not None and OPS[Op.ERF].field.standing == "heuristic"


def _lift(ns: object, x: object) -> object:
    """A FieldArith value in another field number system (the centred one stores residues as float64)."""
    lift = getattr(ns, "lift", None)
    return lift(x) if lift is not None else x


def test_the_verifier_proves_the_fused_kernel_and_says_the_bound_is_heuristic() -> None:
    res = ml.verify(fused(), unfused())
    assert res.equivalent and res.bound_is_heuristic and {"tanh", "erf"} <= set(res.heuristic_ops)
    assert res.float_check.passed


def test_swapping_tanh_and_erf_is_caught() -> None:
    swaps = [m for m in mutants(fused(), kinds="sibling_op") if "tanh" in m.description or "erf" in m.description]
    assert any("tanh" in m.description and "erf" in m.description for m in swaps), swaps
    different = [m for m in swaps if really_different(fused(), m.graph)]
    assert different and not any(ml.verify(m.graph, unfused()).equivalent for m in different[:4])


@pytest.mark.parametrize("engine", ["normal", "egglog", "z3"])
def test_abstract_expressions_carry_tanh_and_erf(engine: str) -> None:
    (target,) = graph_expressions(unfused()).outputs
    (got,) = graph_expressions(fused()).outputs
    assert {"tanh", "erf"} <= {t.head for t in (target, *target.args)}
    if engine != "normal":
        pytest.importorskip({"egglog": "egglog", "z3": "z3"}[engine])
        made = make_engine(engine, [target], Limits())
        assert made is not None and made.contains(got.args[0]) is not False


def test_a_search_discovers_the_fused_kernel() -> None:
    res = superoptimize(unfused(), preset("mlp", block_ops=("matmul", "tanh", "erf", "add", "accum_no_red"),
                                          kernel_ops=("matmul", "tanh", "erf", "add", "customized"),
                                          forloop_ranges=(4,), grid_divisors=(4,), max_block_ops=8),
                        executor="serial", run_dir=False, progress=False)
    single = [c for c in res.candidates if len(c.graph.compute_nodes) == 1 and c.graph.block_graphs]
    assert single, res.report
    ops = {n.op for n in single[0].graph.block_graphs[0].nodes}
    assert {Op.TANH, Op.ERF} <= ops


@pytest.mark.skipif(not nvcc_available(), reason="nvcc not installed")
@pytest.mark.parametrize("arch", ARCHS)
def test_the_cuda_compiles(arch: str) -> None:
    source = ml.generate_cuda(fused())
    assert "tanhf(" in source and "erff(" in source
    assert nvcc_ptx(source, arch).kernels


@pytest.mark.skipif(not emulate.gxx_available(), reason="g++ not installed")
def test_the_cuda_runs_on_the_cpu_like_the_interpreter() -> None:
    graph = fused()
    ins = [a.astype(np.float16) for a in random_inputs(graph, seed=3, scale=0.5)]
    (want,) = ml.interpret(graph, [a.astype(np.float64) for a in ins])
    (got,) = emulate.run_cuda_on_cpu(graph, ins)
    assert relative_error(got.astype(np.float64), want) < 2e-2
