"""Kernels evaluated once per set of inputs (``semantics/kernel_memo.py``): same values, same verdicts."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.semantics.arith import FloatArith
from mirage_lab.semantics.interpret import run_kernel_graph
from mirage_lab.semantics.kernel_memo import KernelMemo
from mirage_lab.verify.verifier import Verifier

PHI = -1


def _program() -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(16, 64), dtype=ml.float32)
    w = g.new_input(dims=(64, 32), dtype=ml.float32)
    g.mark_output(g.exp(g.matmul(x, w)))
    return g.freeze()


def _two_kernels(last: str, grid: int = 4) -> ml.KernelGraph:
    """Kernel 1 a tiled matmul; kernel 2 applies ``last`` ("exp": the program; "silu": something else)."""
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(16, 64), dtype=ml.float32)
    w = g.new_input(dims=(64, 32), dtype=ml.float32)
    tb = ml.new_threadblock_graph(grid_dim=(2, 1, 1), forloop_range=4)
    tx = tb.new_input(dtensor=x, input_map=(PHI, PHI, PHI), forloop_dim=1)
    tw = tb.new_input(dtensor=w, input_map=(1, PHI, PHI), forloop_dim=0)
    tb.new_output(stensor=tb.forloop_accum(tb.matmul(tx, tw)), output_map=(1, PHI, PHI))
    (y,) = g.customized([x, w], tb)
    t2 = ml.new_threadblock_graph(grid_dim=(grid, 1, 1), forloop_range=1)
    ty = t2.new_input(dtensor=y, input_map=(0, PHI, PHI), forloop_dim=PHI)
    t2.new_output(stensor=t2.forloop_accum(getattr(t2, last)(ty)), output_map=(0, PHI, PHI))
    (out,) = g.customized([y], t2)
    g.mark_output(out)
    return g.freeze()


def _inputs(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, (16, 64)), rng.uniform(-1, 1, (64, 32))]


def test_a_shared_first_kernel_runs_once_and_gives_the_same_values() -> None:
    ns, memo = FloatArith(), KernelMemo()
    ins = [ns.from_host(a) for a in _inputs()]
    first = _two_kernels("exp")
    second = _two_kernels("exp", grid=8)  # kernel 2 on another grid: kernel 1 is the same
    got = run_kernel_graph(first, ins, ns, memo.scope("trial", [None, None]))
    assert (memo.hits, memo.misses) == (0, 2)
    again = run_kernel_graph(second, ins, ns, memo.scope("trial", [None, None]))
    assert (memo.hits, memo.misses) == (1, 3)
    np.testing.assert_array_equal(again[0], run_kernel_graph(second, ins, ns)[0])
    np.testing.assert_array_equal(got[0], again[0])


def test_other_inputs_or_tags_do_not_meet() -> None:
    ns, memo = FloatArith(), KernelMemo()
    g = _two_kernels("exp")
    a = [ns.from_host(x) for x in _inputs(0)]
    b = [ns.from_host(x) for x in _inputs(1)]
    out_a = run_kernel_graph(g, a, ns, memo.scope("a", [None, None]))[0]
    out_b = run_kernel_graph(g, b, ns, memo.scope("b", [None, None]))[0]  # another context: run again
    tagged = run_kernel_graph(g, b, ns, memo.scope("a", [None, "other"]))[0]  # another tag at input 1
    assert memo.hits == 0
    assert not np.allclose(out_a, out_b)
    np.testing.assert_array_equal(out_b, tagged)


def test_the_budget_evicts_the_least_recently_used() -> None:
    ns = FloatArith()
    ins = [ns.from_host(a) for a in _inputs()]
    one_kernel = 16 * 32 * 8  # each kernel's output: (16, 32) float64
    small, room = KernelMemo(max_bytes=one_kernel), KernelMemo(max_bytes=2 * one_kernel)
    for memo in (small, room):
        run_kernel_graph(_two_kernels("exp"), ins, ns, memo.scope("t", [None, None]))
        run_kernel_graph(_two_kernels("silu"), ins, ns, memo.scope("t", [None, None]))
        assert memo.bytes <= memo.max_bytes
    assert small.hits == 0 and "1 nodes" in repr(small)  # kernel 1 made way for kernel 2, then was needed
    assert room.hits == 1 and "2 nodes" in repr(room)


def test_kept_values_are_read_only() -> None:
    ns, memo = FloatArith(), KernelMemo()
    ins = [ns.from_host(a) for a in _inputs()]
    (out,) = run_kernel_graph(_program(), ins, ns, memo.scope("t", [None, None]))
    with pytest.raises(ValueError, match="read-only"):
        out += 1


@pytest.mark.parametrize("float_first", [False, True])
def test_verdicts_do_not_depend_on_the_memo(float_first: bool) -> None:
    program = _program()
    candidates = [_two_kernels("exp"), _two_kernels("silu"), _two_kernels("exp", grid=8), _two_kernels("silu", 8)]
    with_memo = Verifier(program, float_check=True, float_first=float_first)
    without = Verifier(program, float_check=True, float_first=float_first)
    without.memo = KernelMemo(max_bytes=0)
    verdicts = [with_memo.check(c) for c in candidates]
    assert [v.equivalent for v in verdicts] == [True, False, True, False]
    assert [v.equivalent for v in verdicts] == [without.check(c).equivalent for c in candidates]
    assert [v.reason for v in verdicts] == [without.check(c).reason for c in candidates]
    assert with_memo.memo.hits > 0 and without.memo.hits == 0
    assert with_memo.cached_bytes() > without.cached_bytes()
    with_memo.release()
    assert with_memo.memo.bytes == 0


def test_the_kept_kernels_give_way_to_a_candidate_that_needs_the_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    verifier_module = importlib.import_module("mirage_lab.verify.verifier")  # (``ml.verify`` is the function)
    v = Verifier(_program(), float_check=False)
    v.check(_two_kernels("exp"))
    hits = v.memo.hits
    v.check(_two_kernels("exp", grid=8))
    assert v.memo.hits > hits  # kernel 1 was kept
    hits = v.memo.hits
    monkeypatch.setattr(verifier_module, "available_bytes", lambda: 0)  # (what the memory check sees is untouched)
    assert v.check(_two_kernels("exp", grid=8)).equivalent
    assert v.memo.hits == hits  # cleared before the check: everything ran again
