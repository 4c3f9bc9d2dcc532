"""The verification inspector over real verifications: a correct fused graph, wrong ones, and the dict forms."""

from __future__ import annotations

import pytest

import mirage_lab as ml
from mirage_lab.search.runner import SearchResult
from mirage_lab.verify.mutate import different_mutants
from mirage_lab.verify.result import VerificationResult, Witness
from mirage_lab.verify.verifier import Verifier
from mirage_lab.widgets.inspector import NOT_RECORDED, VerificationInspector, evidence_of

PHI = -1
P, Q = 16_774_463, 8_387_231  # the default field


def program() -> ml.KernelGraph:
    """RMSNorm + Linear, small: X[8,64], W[64,96]."""
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 64), dtype=ml.float16)
    w = g.new_input(dims=(64, 96), dtype=ml.float16)
    g.mark_output(g.matmul(g.rms_norm(x, normalized_shape=(64,)), w))
    return g.freeze()


def fused(final: str = "div") -> ml.KernelGraph:
    """The fused kernel; ``final="mul"`` makes it wrong (x·W · rms instead of x·W / rms)."""
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 64), dtype=ml.float16)
    w = g.new_input(dims=(64, 96), dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=(4, 1, 1), forloop_range=4)
    tx = tb.new_input(dtensor=x, input_map=(PHI, PHI, PHI), forloop_dim=1)
    tw = tb.new_input(dtensor=w, input_map=(1, PHI, PHI), forloop_dim=0)
    rms = tb.forloop_accum(tx, "rms")
    acc = tb.forloop_accum(tb.matmul(tx, tw))
    tb.new_output(stensor=getattr(tb, final)(acc, rms), output_map=(1, PHI, PHI))
    (out,) = g.customized([x, w], tb)
    g.mark_output(out)
    return g.freeze()


@pytest.fixture(scope="module")
def good() -> VerificationResult:
    return ml.verify(fused(), program())


@pytest.fixture(scope="module")
def bad() -> VerificationResult:
    return ml.verify(fused("mul"), program())


def fact(insp: VerificationInspector, label: str) -> str:
    return dict(insp.facts())[label]


def test_correct_graph_shows_the_bound_and_no_witness(good: VerificationResult) -> None:
    assert good.equivalent and good.error_bound is not None
    insp = VerificationInspector(good)
    assert fact(insp, "verdict") == "EQUIVALENT"
    assert (fact(insp, "p"), fact(insp, "q")) == (str(P), str(Q))
    assert fact(insp, "degree D") == str(good.degree) and fact(insp, "trials run k") == "3"
    assert fact(insp, "error bound") == f"ε ≤ (D/p)^k = ({good.degree}/{P})^3 = {good.error_bound:.3g}"
    assert fact(insp, "bound").startswith("heuristic: accum_rms, rms_norm")
    assert fact(insp, "float64 check").startswith("passed")
    assert fact(insp, "output assignment") == "ref out 0 ← cand out 0"
    frame = insp.trials_frame()
    assert list(frame["trial"]) == [0, 1, 2] and frame["matched"].all()
    assert insp.selected_trial == 0 and insp.witness is None
    page = insp.to_html()
    assert 'class="mlw-verdict mlw-ok"' in page  # the class names also occur in the inline CSS
    assert 'class="mlw-witness"' not in page and 'class="mlw-failed' not in page
    assert "<script" not in page and "http" not in page  # self-contained


def test_failed_only_filter_moves_the_selection(good: VerificationResult) -> None:
    insp = VerificationInspector(good)
    insp.select(2)
    assert insp.selected is not None and insp.selected.trial == 2
    insp.set_failed_only(True)
    assert insp.trials_frame().empty and insp.selected_trial is None
    assert "no failed trial" in insp.trials_html()
    with pytest.raises(ValueError, match="trial 1"):
        insp.select(1)
    insp.set_failed_only(False)
    assert insp.selected_trial == 0


def test_wrong_graph_highlights_the_witness(bad: VerificationResult) -> None:
    assert not bad.equivalent
    insp = VerificationInspector(bad, title="x·W·rms")
    w = insp.witness
    assert isinstance(w, Witness) and isinstance(w.candidate, tuple) and isinstance(w.reference, tuple)
    assert fact(insp, "verdict") == "DIFFERENT" and fact(insp, "error bound") == "none: the verdict is DIFFERENT"
    assert insp.selected_trial == 0 and insp.witness_origin.startswith("trial 0")
    assert insp.trials_frame().equals(VerificationInspector(bad).trials_frame())
    insp.set_failed_only(True)
    assert list(insp.trials_frame()["trial"]) == [0]
    page = insp.to_html()
    box = page[page.index('class="mlw-witness"'):]
    for text in (f"{w.candidate[0]} (mod p), {w.candidate[1]} (mod q)",
                 f"{w.reference[0]} (mod p), {w.reference[1]} (mod q)", str(list(w.index)), "x·W·rms"):
        assert text in page
    assert str(w.candidate[0]) in box.split("</div>")[0]  # inside the highlighted box
    assert 'class="mlw-failed mlw-selected"' in page and 'class="mlw-verdict mlw-bad"' in page
    assert str(w.candidate[0]) in insp.selected_html()


def test_engine_mutant_is_caught_and_explained() -> None:
    (mutant,) = different_mutants(fused(), kinds="sibling_op", limit=1)
    res = ml.verify(mutant.graph, program())
    insp = VerificationInspector(res)
    assert not res.equivalent and insp.witness is not None
    assert 'class="mlw-witness"' in insp.to_html() and "DIFFERENT" in repr(insp)


def test_float_first_rejection_shows_the_float_witness() -> None:
    res = Verifier(program(), float_first=True).check(fused("mul"))
    insp = VerificationInspector(res)
    w = insp.witness
    assert not res.trials and isinstance(w, Witness) and isinstance(w.candidate, float)
    assert insp.witness_origin == "float64 check" and insp.selected_trial is None
    assert fact(insp, "float64 check").startswith("FAILED")
    assert f"{w.candidate:.9g}" in insp.to_html() and "no per-trial evidence" in insp.to_html()


def test_as_dict_form_shows_what_it_keeps(good: VerificationResult, bad: VerificationResult) -> None:
    insp = VerificationInspector(good.as_dict())
    assert insp.evidence.source == "as_dict" and fact(insp, "q") == str(Q)
    assert fact(insp, "error bound") == VerificationInspector(good).facts()[7][1]
    assert insp.trials_frame().empty and "no per-trial evidence recorded" in insp.to_html()
    wrong = VerificationInspector(bad.as_dict())
    assert wrong.witness == str(bad.witness) and str(bad.witness) in wrong.to_html()
    assert fact(wrong, "verdict") == "DIFFERENT"


def test_search_candidate_form(small_run: SearchResult) -> None:
    cand = small_run.candidates[0]  # the shared small RMSNorm+Linear search (tests/widgets/conftest.py)
    insp = VerificationInspector(cand)
    assert insp.title == f"candidate {cand.hash[:12]}" and insp.evidence.source == "candidate"
    assert fact(insp, "verdict").startswith("EQUIVALENT")
    v = cand.verification
    assert fact(insp, "error bound") == f"ε ≤ (D/p)^k = ({v['degree']}/{insp.evidence.p})^3 = {v['error_bound']:.3g}"
    assert evidence_of(cand.verification) == insp.evidence
    # the search keeps every number of its verification (issue 38, item 2): nothing reads "not recorded"
    for label in ("field", "p", "q", "degree D", "trials run k", "bound", "float64 check", "time"):
        assert fact(insp, label) != NOT_RECORDED and "not recorded" not in fact(insp, label), label
    assert fact(insp, "trials run k") == "3" and fact(insp, "float64 check").startswith("passed")
    again = ml.verify(cand.graph, small_run.program)
    assert fact(insp, "degree D") == str(again.degree) and fact(insp, "p") == str(again.p)


def test_widget_follows_the_state(good: VerificationResult, bad: VerificationResult) -> None:
    insp = VerificationInspector(good)
    view = insp.widget()
    header, controls, table, detail = view.children
    failed, pick = controls.children
    assert [v for _, v in pick.options] == [0, 1, 2] and 'class="mlw-witness"' not in header.value
    pick.value = 2
    assert insp.selected_trial == 2 and "<b>trial 2</b>" in detail.value
    failed.value = True
    assert insp.failed_only and pick.options == () and "no failed trial" in table.value
    bundle = VerificationInspector(bad)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and 'class="mlw-witness"' in bundle["text/html"]


def test_rejects_what_it_cannot_read() -> None:
    with pytest.raises(TypeError, match="VerificationResult"):
        VerificationInspector(42)
