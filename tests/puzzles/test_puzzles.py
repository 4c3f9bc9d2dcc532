"""Issue 39's acceptance tests for ``ml.puzzles``: every reference solution passes, another grid and loop
passes, a wrong variant fails with a witness and an explanation, a shape error is explained, never raised."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.puzzles import solutions
from mirage_lab.verify.mutate import mutants, really_different
from tests.puzzles.variants import OTHER_GRIDS, WRONG

NAMES = ml.puzzles.names()


def test_the_catalog_has_at_least_12_puzzles_each_with_a_solution_and_variants() -> None:
    assert len(NAMES) >= 12
    assert set(NAMES) == set(solutions.SOLUTIONS) == set(OTHER_GRIDS) == set(WRONG)


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_solution_passes(name: str) -> None:
    result = ml.puzzles.check(name, ml.puzzles.solution(name))
    assert result.passed, result.explanation
    assert result.witness is None and "every goal met" in result.explanation


@pytest.mark.parametrize("name", NAMES)
def test_a_solution_on_another_grid_and_loop_passes(name: str) -> None:
    other = ml.puzzles.solution(name, **OTHER_GRIDS[name])
    assert other != ml.puzzles.solution(name)
    result = ml.puzzles.check(name, other)
    assert result.passed, result.explanation


@pytest.mark.parametrize("name", NAMES)
def test_a_wrong_variant_fails_with_a_witness_and_an_explanation(name: str) -> None:
    result = ml.puzzles.check(name, WRONG[name])
    assert not result.passed
    assert result.explanation.startswith("your graph computes different values")
    w = result.witness
    assert w is not None and w.total >= 1 and list(w.inputs) == list(ml.puzzles.get(name).inputs)
    # the witness is real: the program and the wrong graph disagree there, as listed
    program = ml.puzzles.get(name).program
    d = w.differences[0]
    want = ml.interpret(program, list(w.inputs.values()))[d.output][d.index]
    got = ml.interpret(WRONG[name](), list(w.inputs.values()))[d.output][d.index]
    assert want == pytest.approx(d.expected) and (got == pytest.approx(d.got) or np.isnan(got) == np.isnan(d.got))
    assert want != pytest.approx(got)
    assert "expected" in str(w) and "<table>" in result._repr_html_()


@pytest.mark.parametrize("name", NAMES)
def test_single_edits_of_the_solution_are_judged_by_their_values(name: str) -> None:
    """The verifier's mutants (a map, a loop, an accumulator, an op, an operand changed): those the float64
    interpreter shows different fail with a witness; those it finds equal are never called different (they pass,
    or miss a goal, as a loop of 1 does)."""
    reference = ml.puzzles.solution(name)
    seen = {True: 0, False: 0}
    for m in mutants(reference):
        different = really_different(reference, m.graph)
        result = ml.puzzles.check(name, m.graph)
        seen[different] += 1
        if different:
            assert not result.passed and result.witness is not None, (m.kind, result)
        else:
            assert result.passed or result.goals_unmet, (m.kind, result)
    assert seen[True] >= 1 and seen[False] >= 1


@pytest.mark.parametrize("name", NAMES)
def test_a_shape_error_while_building_is_explained_not_raised(name: str) -> None:
    first = next(iter(inspect.signature(solutions.SOLUTIONS[name]).parameters))
    result = ml.puzzles.check(name, lambda: ml.puzzles.solution(name, **{first: 3}))  # 3 divides no dim
    assert not result.passed and result.witness is None
    assert result.explanation.startswith("building your graph failed") and "divisible" in result.explanation


def test_an_output_of_the_wrong_shape_is_explained() -> None:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 64))
    tb = ml.new_threadblock_graph(grid_dim=(2, 1, 1), forloop_range=4)
    tx = tb.new_input(dtensor=x, input_map=(0, -1, -1), forloop_dim=1)
    tb.new_output(stensor=tb.forloop_accum(tx), output_map=(0, -1, -1))  # acc=None keeps the columns
    (o,) = g.customized([x], tb)
    g.mark_output(o)
    result = ml.puzzles.check("row_sums", g)  # a builder is accepted too
    assert not result.passed
    assert "should have shape (8, 1), but yours has (8, 16)" in result.explanation
    assert "(4, 16) tile" in result.explanation and "grid x (2 blocks) along dim 0" in result.explanation


def test_inputs_that_differ_from_the_programs_are_explained() -> None:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 32))
    g.mark_output(x)
    result = ml.puzzles.check("copy_tile", g)
    assert not result.passed and "input X must be" in result.explanation


def test_right_values_without_the_goal_fail_with_the_goal_sentence() -> None:
    result = ml.puzzles.check("matmul_loop", ml.puzzles.solution("matmul_loop", forloop=1))
    assert not result.passed and result.witness is None
    assert "right values" in result.explanation and "forloop_range=1" in result.explanation
    unfused = ml.puzzles.check("matmul_loop", ml.puzzles.get("matmul_loop").program)
    assert not unfused.passed and "custom kernel" in unfused.explanation


def test_explanations_name_the_tensor_the_oracle_rejects_or_say_where_to_look() -> None:
    copy = ml.puzzles.check("copy_tile", WRONG["copy_tile"]).explanation
    assert "accumulator (acc=None) that makes s1 adds a tile that is the same in every iteration" in copy
    assert "adds it 2 times" in copy
    softmax = ml.puzzles.check("softmax", WRONG["softmax"]).explanation
    assert "tile s2 of custom kernel 1 (reduction) computes sum(64, X), which is no part of the program" in softmax
    assert "rms(32, X) occurs in no target" in ml.puzzles.check("rms_norm", WRONG["rms_norm"]).explanation
    assert "silu only as: silu(sum(64, mul(X, W1)))" in ml.puzzles.check("gated_mlp", WRONG["gated_mlp"]).explanation
    # mean is sum to the abstraction: the expressions agree, so the explanation points at maps and accumulators
    assert "'mean' divides" in ml.puzzles.check("row_sums", WRONG["row_sums"]).explanation
    assert "running max" in ml.puzzles.check("attention_online", WRONG["attention_online"]).explanation


def test_hints_are_graded_and_puzzles_read_well() -> None:
    p = ml.puzzles.get("rms_norm_linear")
    hints = [ml.puzzles.hint(p.name, level) for level in (1, 2, 3)]
    assert len(set(hints)) == 3 and hints[0].startswith("hint 1/3")
    assert ml.puzzles.check(p.name, p.program).hint(3) == hints[2]
    assert "X: " in str(p) and "goals" in str(p) and "rms_norm_linear" in repr(p) and "<ul>" in p._repr_html_()
    with pytest.raises(ml.MirageError, match="no puzzle named"):
        ml.puzzles.get("nope")
    with pytest.raises(ml.MirageError, match="1, 2 or 3"):
        p.hint(4)


def test_the_readme_example_runs_and_explains_the_mean(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.test_readme import section_code

    exec(compile(section_code("Puzzles"), "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "row_sums: not yet" in out and "'mean' divides" in out and "hint 2/3" in out


def test_a_passed_result_reads_well() -> None:
    result = ml.puzzles.check("lora", ml.puzzles.solution("lora"))
    assert result and "PASSED" in str(result) and "passed=True" in repr(result)
    assert "passed</b>" in result._repr_html_() and result.verification is not None
