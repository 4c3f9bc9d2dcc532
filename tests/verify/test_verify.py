"""ml.verify: verdicts, evidence, permutations, bounds, parity mode (SPEC §6, §11)."""

from __future__ import annotations

import pytest

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.errors import InputError
from mirage_lab.semantics.field import REFERENCE_FIELD
from mirage_lab.verify import Verifier


def _two_outputs(swapped: bool) -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 32), dtype=ml.float16)
    w1 = g.new_input(dims=(32, 16), dtype=ml.float16)
    w2 = g.new_input(dims=(32, 16), dtype=ml.float16)
    a, b = g.matmul(x, w1), g.matmul(x, w2)
    for o in ((b, a) if swapped else (a, b)):
        g.mark_output(o)
    return g.freeze()


def _clamped(lo: float, hi: float) -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(4, 8), dtype=ml.float32)
    g.mark_output(g.clamp(x, lo, hi))
    return g.freeze()


def _gated_mlp_swapped() -> ml.KernelGraph:
    """GatedMLP with W1 and W2 exchanged inside the fused kernel: silu(X·W2) ⊙ (X·W1)."""
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 4096), dtype=ml.float16)
    w1 = g.new_input(dims=(4096, 4096), dtype=ml.float16)
    w2 = g.new_input(dims=(4096, 4096), dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=(128, 1, 1), forloop_range=64)
    tx = tb.new_input(dtensor=x, input_map=(-1, -1, -1), forloop_dim=1)
    t1 = tb.new_input(dtensor=w1, input_map=(1, -1, -1), forloop_dim=0)
    t2 = tb.new_input(dtensor=w2, input_map=(1, -1, -1), forloop_dim=0)
    a1, a2 = tb.forloop_accum(tb.matmul(tx, t1)), tb.forloop_accum(tb.matmul(tx, t2))
    tb.new_output(stensor=tb.mul(tb.silu(a2), a1), output_map=(1, -1, -1))
    (o,) = g.customized([x, w1, w2], tb)
    g.mark_output(o)
    return g.freeze()


@pytest.mark.parametrize("name", sorted(fused.FUSED))
def test_hand_written_fused_graphs_verify(name: str) -> None:
    r = ml.verify(fused.FUSED[name](1), programs.PROGRAMS[name](1))
    assert r.equivalent, r
    assert r.permutation == (0,)
    assert len(r.trials) == 3 and all(t.matched for t in r.trials)
    assert r.error_bound is not None and r.error_bound < 1e-15


def test_lax_bound_meets_the_target_and_is_not_heuristic() -> None:
    r = ml.verify(fused.lora(1), programs.lora(1))
    assert not r.bound_is_heuristic and r.heuristic_ops == ()
    assert r.error_bound is not None and r.error_bound <= 1e-9
    assert r.degree == 6  # X·W + (X·A)·B has degree 3, counted for both graphs


def test_heuristic_ops_are_named() -> None:
    r = ml.verify(fused.gqa(1), programs.gqa(1))
    assert r.bound_is_heuristic and "exp" in r.heuristic_ops
    assert r.float_check.ran and r.float_check.passed


def test_swapped_weights_are_rejected_with_a_witness() -> None:
    r = ml.verify(_gated_mlp_swapped(), programs.gated_mlp(1))
    assert not r.equivalent
    assert len(r.trials) == 1 and not r.trials[0].matched  # stops at the first failing trial
    w = r.witness
    assert w is not None and w.candidate != w.reference
    assert "witness" in repr(r)


def test_the_matching_permutation_is_returned() -> None:
    """SPEC §11 #3: outputs produced in swapped order must be reported as swapped, not as the identity."""
    r = ml.verify(_two_outputs(swapped=True), _two_outputs(swapped=False))
    assert r.equivalent and r.permutation == (1, 0)
    assert ml.verify(_two_outputs(swapped=False), _two_outputs(swapped=False)).permutation == (0, 1)


def test_older_parity_inputs_hide_swapped_operands() -> None:
    """SPEC §11 #2: the older reference gives same-shape inputs identical fingerprints, so it accepts a wrong
    graph; random trials reject it."""
    wrong, program = _gated_mlp_swapped(), programs.gated_mlp(1)
    assert ml.verify(wrong, program, parity="older").equivalent
    assert not ml.verify(wrong, program, parity="current").equivalent
    assert not ml.verify(wrong, program).equivalent


def test_parity_mode_uses_the_reference_field_and_one_trial() -> None:
    r = ml.verify(fused.lora(1), programs.lora(1), parity="current")
    assert r.equivalent and len(r.trials) == 1 and r.p == REFERENCE_FIELD.p
    assert not r.float_check.ran


def test_float_check_catches_what_the_heuristic_field_rule_misses() -> None:
    """clamp's field rule ignores its bounds (SPEC §6.2): only the float64 check tells these apart."""
    r = ml.verify(_clamped(0.0, 0.1), _clamped(-1.0, 1.0))
    assert all(t.matched for t in r.trials)
    assert not r.equivalent and r.float_check.passed is False
    assert "float64 check failed" in r.reason


def test_different_output_types_never_match() -> None:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 32), dtype=ml.float16)
    w1 = g.new_input(dims=(32, 16), dtype=ml.float16)
    w2 = g.new_input(dims=(32, 16), dtype=ml.float16)
    g.mark_output(g.reduction(g.matmul(x, w1), 1))
    g.mark_output(g.matmul(x, w2))
    r = ml.verify(g.freeze(), _two_outputs(False))
    assert not r.equivalent and "dims and dtypes" in r.reason


def test_inputs_must_agree() -> None:
    with pytest.raises(InputError, match="same tensors in the same order"):
        ml.verify(programs.lora(1), programs.rmsnorm(1))


def test_results_are_deterministic_under_a_seed_and_differ_across_seeds() -> None:
    a = ml.verify(fused.lora(1), programs.lora(1), seed=5)
    b = ml.verify(fused.lora(1), programs.lora(1), seed=5)
    c = ml.verify(fused.lora(1), programs.lora(1), seed=6)
    assert [t.fingerprints for t in a.trials] == [t.fingerprints for t in b.trials]
    assert a.trials[0].fingerprints != c.trials[0].fingerprints


def test_a_verifier_evaluates_its_program_once_per_trial() -> None:
    v = Verifier(programs.lora(1), trials=2)
    first = v.check(fused.lora(1))
    second = v.check(fused.lora(1))
    assert first.timings["program"] > 0 and second.timings["program"] == 0
    assert "trials=2" in repr(v)


def test_result_renders_for_notebooks() -> None:
    r = ml.verify(fused.lora(1), programs.lora(1))
    frame = r.to_frame()
    assert list(frame["matched"]) == [True, True, True]
    assert "EQUIVALENT" in r._repr_html_()
    assert r.as_dict()["equivalent"] is True


def test_float_first_rejects_before_the_field_trials_with_the_same_verdicts() -> None:
    """What the search uses: the cheap float64 check first; verdicts equal the field-first order's."""
    program = programs.gated_mlp(1)
    quick = Verifier(program, float_first=True)
    wrong = quick.check(_gated_mlp_swapped())
    assert not wrong.equivalent and wrong.trials == () and "before any field trial" in wrong.reason
    assert wrong.float_check.witness is not None
    for cand in (_two_outputs(swapped=True), _two_outputs(swapped=False)):
        a = Verifier(_two_outputs(swapped=False), float_first=True).check(cand)
        b = Verifier(_two_outputs(swapped=False)).check(cand)
        assert (a.equivalent, a.permutation) == (b.equivalent, b.permutation) and a.equivalent
