"""Issue 35: a check that cannot fail is a defect. For every numeric check of the project, a planted
disagreement — a NaN, an inf, a plain error over the tolerance — makes it fail (exit 1, a flagged row,
passed=False), and a correct result passes. NaN is planted in a *late* output where there are several, so
that Python's ``max`` over the errors would have hidden it behind the first output's small error.

The checks and what they do when they fail are listed in docs/decisions.md ("Checks that can fail").
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

import mirage_lab as ml
from mirage_lab import cli
from mirage_lab.bench import fused, programs, timing
from mirage_lab.bench.harness import relative_error
from mirage_lab.bench.tolerance import OK, OTHER_GRAPH, TOLERANCE, agreement, within, worst_error
from tests.conftest import REPO_ROOT, load_script

Plant = Callable[[list[np.ndarray]], list[np.ndarray]]


def _at_last(value: float) -> Plant:
    """Outputs with ``value`` written into one entry of the last output (the others left exact)."""
    def plant(outs: list[np.ndarray]) -> list[np.ndarray]:
        outs = [np.array(o, dtype=np.float32) for o in outs]
        outs[-1].flat[-1] = value
        return outs
    return plant


def _scaled(outs: list[np.ndarray]) -> list[np.ndarray]:
    """Finite outputs, 10 % too large: over every tolerance of the table."""
    return [np.asarray(o, dtype=np.float32) * 1.1 for o in outs]


def _exact(outs: list[np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(o, dtype=np.float32) for o in outs]


PLANTS = {"nan": _at_last(math.nan), "inf": _at_last(math.inf), "too_large": _scaled}


# --------------------------------------------------------------------------- the shared rule


@pytest.mark.parametrize(("got", "want"), [
    ([1.0, math.nan], [1.0, 2.0]),  # NaN in the result
    ([1.0, 2.0], [1.0, math.nan]),  # NaN in the expected values: nothing can be checked
    ([1.0, math.nan], [1.0, math.nan]),  # NaN on both sides is still no number
    ([1.0, math.inf], [1.0, 2.0]),
    ([1.0, -math.inf], [1.0, math.inf]),
    ([1.0, 2.0], [1.0, math.inf]),
    ([[1.0, 2.0]], [1.0, 2.0]),  # shapes differ (no broadcasting)
])
def test_relative_error_is_inf_where_values_are_not_finite_alike(got: list[Any], want: list[Any]) -> None:
    assert relative_error(np.array(got), np.array(want)) == math.inf


def test_relative_error_of_an_fp16_overflow_is_inf_and_matching_infinities_agree() -> None:
    want = np.array([70000.0, 1.0])  # beyond fp16's largest finite value
    with np.errstate(over="ignore"):
        assert relative_error(want.astype(np.float16), want) == math.inf
    assert relative_error(np.array([math.inf, 1.0, 2.0]), np.array([math.inf, 1.0, 2.0])) == 0.0
    assert relative_error(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9])) < 1e-9


def test_worst_error_cannot_lose_a_nan_and_within_rejects_nan_and_inf() -> None:
    assert max(1e-3, math.nan) == 1e-3  # the habit this replaces: the NaN is gone
    assert worst_error([1e-3, math.nan, 2e-3]) == math.inf
    assert worst_error([math.nan, 1e-3]) == math.inf
    assert worst_error([1e-3, 2e-3]) == 2e-3
    assert math.isnan(worst_error([]))  # nothing compared
    assert not within(math.nan, 1.0) and not within(math.inf, 1.0) and not within(worst_error([]), 1.0)
    assert within(1e-3, 2e-2) and not within(3e-2, 2e-2)


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_agreement_names_the_output_that_failed(plant: str) -> None:
    want = [np.ones((4, 4)), np.ones(8)]
    result = agreement(PLANTS[plant](want), want, TOLERANCE["float16"], "float16")
    assert not result.ok and "OVER the float16 tolerance" in str(result)
    assert "output 1" in str(result) and ("output 0" in str(result)) == (plant == "too_large")
    if plant != "too_large":
        assert f"1 {'NaN' if plant == 'nan' else 'inf'} of 8 entries" in str(result)
    good = agreement(_exact(want), want, TOLERANCE["float16"], "float16")
    assert good.ok and "within the float16 tolerance" in str(good)
    assert not agreement(want[:1], want, 1.0).ok  # a missing output


# --------------------------------------------------------------------------- mirage-lab codegen --emulate


def _two_outputs(tmp_path: Path) -> Path:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 64), dtype=ml.float16)
    w = g.new_input(dims=(64, 32), dtype=ml.float16)
    g.mark_output(g.matmul(x, w))
    g.mark_output(g.exp(x))
    return ml.save(g.freeze(), tmp_path / "two_outputs.json")


@pytest.mark.parametrize("plant", [*sorted(PLANTS), "exact"])
def test_cuda_emulation_exits_1_over_the_tolerance(plant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The g++ run is replaced by the interpreter's outputs, planted; before issue 35 this exited 0 with any of them."""
    from mirage_lab.codegen import emulate

    change = PLANTS.get(plant, _exact)
    monkeypatch.setattr(emulate, "run_cuda_on_cpu", lambda g, ins, **kw: [
        o.astype(np.float16) for o in change(ml.interpret(g, ins, dtype="float32"))])
    rc = cli.main(["codegen", str(_two_outputs(tmp_path)), "--out", str(tmp_path / "k.cu"), "--emulate"])
    err = capsys.readouterr().err
    if plant == "exact":
        assert rc == 0 and "within the float16 tolerance 0.02" in err
        return
    assert rc == 1 and "OVER the float16 tolerance 0.02" in err and "output 1" in err, err
    if plant in ("nan", "inf"):
        assert f"{'NaN' if plant == 'nan' else 'inf'} of 512 entries" in err


@pytest.mark.parametrize("plant", [*sorted(PLANTS), "exact"])
def test_triton_emulation_exits_1_over_the_tolerance(plant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from mirage_lab.codegen.triton import toolchain

    graph = ml.load(_two_outputs(tmp_path))
    change = PLANTS.get(plant, _exact)
    monkeypatch.setattr(toolchain, "emulate", lambda source, ins, dtype: change(ml.interpret(graph, ins)))
    rc = cli.main(["codegen", str(tmp_path / "two_outputs.json"), "--backend", "triton", "--out",
                   str(tmp_path / "k.py"), "--emulate"])
    err = capsys.readouterr().err
    assert rc == (0 if plant == "exact" else 1), err
    assert ("within" if plant == "exact" else "OVER") + " the float16 tolerance" in err


# --------------------------------------------------------------------------- timings (CPU and GPU)


def _plant_fused_on_cpu(monkeypatch: pytest.MonkeyPatch, plant: Plant) -> None:
    """measure_cpu's interpreter runs, with ``plant`` applied to every hand-fused graph's outputs."""
    real = timing._timed_interpret
    programs_ = {p(1) for p in programs.PROGRAMS.values()}

    def timed(graph: ml.KernelGraph, inputs: list[np.ndarray], repeats: int) -> tuple[list[np.ndarray], float]:
        outs, seconds = real(graph, inputs, repeats)
        return (outs if graph in programs_ else plant(outs)), seconds

    monkeypatch.setattr(timing, "_timed_interpret", timed)


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_cpu_timing_flags_a_wrong_fused_result_and_bench_exits_1(plant: str, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _plant_fused_on_cpu(monkeypatch, PLANTS[plant])
    df = timing.with_speedups(pd.DataFrame(timing.measure_cpu(["lora"], [1], repeats=1, log=lambda _: None)))
    unfused, fused_row = df.iloc[0], df.iloc[1]
    assert unfused["result"] == OK and unfused["speed-up vs unfused"] == 1.0
    assert fused_row["result"].startswith("WRONG: ") and "OVER the float32 tolerance" in fused_row["result"]
    assert not within(fused_row["rel_error"], TOLERANCE["float32"]) and math.isnan(fused_row["speed-up vs unfused"])
    capsys.readouterr()
    assert cli.main(["bench", "--cpu", "--programs", "lora", "--repeats", "1"]) == 1
    assert "1 kernel(s) computed a wrong result" in capsys.readouterr().err


def test_cpu_timing_of_correct_graphs_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["bench", "--cpu", "--programs", "lora", "--repeats", "1"]) == 0
    assert "wrong result" not in capsys.readouterr().err


def _wrong_lora() -> ml.KernelGraph:
    """LoRA's inputs, another function: X @ W + 2 (X @ A) @ B."""
    g = ml.new_kernel_graph()
    x, w, a, b = (g.new_input(dims=t.dims, dtype=t.dtype) for t in programs.lora(1).input_types)
    y = g.matmul(g.matmul(x, a), b)
    g.mark_output(g.add(g.matmul(x, w), g.add(y, y)))
    return g.freeze()


def test_gpu_timing_checks_each_kernel_before_timing_it(tmp_path: Path) -> None:
    """measure_gpu with a stand-in CuPy and timer (as tests/optimize/test_kernels_bench.py): the planted kernels are
    WRONG and have no speed-up; a saved reference graph that is not the program, run right, is "graph ≠ program"
    (a graph of our own is WRONG then)."""
    from mirage_lab.codegen import PLAIN
    from mirage_lab.codegen import run as real_run
    from mirage_lab.ir.checkpoint_export import save_reference_checkpoint

    hand_fused, found = fused.FUSED["lora"](1), ml.load(timing.SEARCH_BEST_DIR / "lora_bs1.json")
    for stem in ("lora", "single_lora"):  # (the files measure_gpu reads for LoRA; an accumulator gives their era)
        save_reference_checkpoint([found, _wrong_lora()], tmp_path / f"{stem}.json")
    (tmp_path / "best").mkdir()
    ml.save(_wrong_lora(), tmp_path / "best" / "lora_bs1.json")  # a "search best" of ours that is not the program

    def compile_(graph: ml.KernelGraph, *args: Any, **kw: bool) -> Callable[..., list[np.ndarray]]:
        plant = _exact  # the unfused program, the reference graphs, the other ablations
        if graph == hand_fused and not args:
            plant = PLANTS["too_large"] if kw == {"prefetch": False} else PLANTS["nan"]
        elif graph == hand_fused and args == (PLAIN,):
            plant = PLANTS["inf"]
        return lambda *xs: plant(ml.interpret(graph, [np.asarray(x, np.float32) for x in xs], dtype="float32"))

    fake_run = SimpleNamespace(compile=compile_, unfused_cupy=lambda p: compile_(p),
                               time_callable=lambda fn, args, **kw: real_run.Timing(0.01, 0.009, 0.02, (0.01,)))
    rows = timing.measure_gpu(SimpleNamespace(asarray=np.asarray), fake_run, "H200", ["lora"], [1], max_graphs=2,
                              reference_dir=str(tmp_path), search_best_dir=tmp_path / "best", log=lambda _: None)
    df = timing.with_speedups(pd.DataFrame(rows, columns=timing.COLUMNS))
    result = dict(zip(df["graph"], df["result"], strict=True))
    assert result["unfused"] == OK and result["lora[0]"] == OK and result["lora[1]"] == OTHER_GRAPH
    assert "NaN of" in result["fused"] and "inf of" in result["fused (plain loops)"]
    assert result["fused (no prefetch)"].startswith("WRONG: ") and "relative error" in result["fused (no prefetch)"]
    assert result["search best"].startswith("WRONG: ")  # ours: run right, but not the program
    speedup = dict(zip(df["graph"], df["speed-up vs unfused"], strict=True))
    assert all(math.isnan(speedup[g]) for g in ("fused", "fused (plain loops)", "fused (no prefetch)", "search best",
                                                "lora[1]"))
    assert speedup["lora[0]"] == 1.0
    assert timing.check_results(df, out=sys.stderr) == 1
    assert timing.check_results(df[~df["result"].str.startswith("WRONG")]) == 0  # "graph ≠ program" is no failure


def test_kernels_script_exits_1_on_a_table_with_a_wrong_row(tmp_path: Path) -> None:
    csv = tmp_path / "t.csv"
    rows = [{"program": "lora", "batch": 1, "graph": "unfused", "median_us": 10.0, "proxy_us": 12.0, "result": OK},
            {"program": "lora", "batch": 1, "graph": "fused", "median_us": 5.0, "proxy_us": 4.0,
             "result": "WRONG: inf (OVER the float16 tolerance 0.02: output 0: 3 NaN of 64 entries)"}]
    pd.DataFrame(rows).to_csv(csv, index=False)
    script = str(REPO_ROOT / "benchmarks" / "kernels.py")
    bad = subprocess.run([sys.executable, script, "--from-csv", str(csv)], capture_output=True, text=True)
    assert bad.returncode == 1 and "lora b1 fused: WRONG" in bad.stderr
    pd.DataFrame(rows[:1]).to_csv(csv, index=False)
    assert subprocess.run([sys.executable, script, "--from-csv", str(csv)], capture_output=True).returncode == 0


def test_timing_figure_draws_a_wrong_row_as_failed() -> None:
    mw = pytest.importorskip("mirage_lab.widgets", reason="the plots need the lab extra")
    df = pd.DataFrame([
        {"program": "lora", "batch": 1, "graph": "unfused", "median_us": 10.0, "proxy_us": 12.0, "result": OK},
        {"program": "lora", "batch": 1, "graph": "fused", "median_us": 5.0, "proxy_us": 4.0, "result": "WRONG: x"},
        {"program": "lora", "batch": 1, "graph": "lora[1]", "median_us": 4.0, "proxy_us": 4.0, "result": OTHER_GRAPH},
        {"program": "lora", "batch": 1, "graph": "lora[0]", "median_us": 5.0, "proxy_us": 4.0, "result": OK},
    ]).assign(p10_us=math.nan, p90_us=math.nan, hardware="H200", error="")
    frame = mw.timing_frame(df)
    assert frame["wrong"].tolist() == [False, True, False, False]
    assert frame["speedup"].isna().tolist() == [False, True, True, False]
    fig = mw.timing_figure(df)
    assert any("1 row(s) with a WRONG result" in a.text for a in fig.layout.annotations)
    assert not mw.timing_frame(df.drop(columns="result"))["wrong"].any()  # a table from before the check


# --------------------------------------------------------------------------- the demo


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_demo_exits_1_and_reports_a_wrong_fused_graph(plant: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _plant_fused_on_cpu(monkeypatch, PLANTS[plant])
    rc = cli.main(["demo", "--no-search", "--no-references", "--programs", "lora", "--repeats", "1", "--out",
                   str(tmp_path / "r")])
    assert rc == 1
    assert "WRONG: " in (tmp_path / "r" / "report.md").read_text()


def _checkpoint_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plant: Plant) -> dict[str, Any]:
    """``checkpoint_rows`` over one saved file of two LoRA graphs, ``plant`` applied to the saved graphs' outputs
    (not to the program's)."""
    from mirage_lab.cli import demo
    from mirage_lab.ir.checkpoint_export import save_reference_checkpoint

    program = programs.lora(1)
    save_reference_checkpoint([program, fused.FUSED["lora"](1)], tmp_path / "lora.json")
    real = demo.interpret
    monkeypatch.setattr(demo.programs, "PROGRAMS", {**programs.PROGRAMS, "lora": lambda b: program})
    monkeypatch.setattr(demo, "interpret", lambda g, ins, **kw: real(g, ins, **kw) if g is program
                        else plant(real(g, ins, **kw)))
    (row,) = demo.checkpoint_rows(tmp_path, 0, 1e-4)
    return row


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_demo_checkpoint_table_counts_nan_and_inf_as_not_matching(plant: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    row = _checkpoint_rows(tmp_path, monkeypatch, PLANTS[plant])
    assert row["checked"] == 2 and row["matching"] == 0
    assert not within(row["worst_rel_error"], 1e-4)


def test_demo_checkpoint_table_of_matching_graphs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    row = _checkpoint_rows(tmp_path, monkeypatch, _exact)
    assert row["checked"] == row["matching"] == 2 and within(row["worst_rel_error"], 1e-4)


# --------------------------------------------------------------------------- verification's float checks


@pytest.mark.parametrize("plant", [*sorted(PLANTS), "exact"])
def test_the_verifiers_float64_check_fails_on_nan_inf_and_error(plant: str) -> None:
    from mirage_lab.verify.verifier import Verifier

    want = [np.linspace(1.0, 2.0, 16).reshape(4, 4), np.ones(8)]
    got = [o.astype(np.float64) for o in PLANTS.get(plant, _exact)(want)]
    check = Verifier._float_verdict((want, got, True), (0, 1))
    assert check.passed is (plant == "exact"), check
    if plant in ("nan", "inf"):
        assert check.witness is not None and check.witness.output == 1  # the late output, not hidden
        assert check.max_rel_error == math.inf


def _x_over(make_denominator: Callable[[Any, Any], Any]) -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(4, 8), dtype=ml.float16)
    g.mark_output(g.div(x, make_denominator(g, x)))
    return g.freeze()


def test_verify_rejects_a_candidate_whose_float_result_is_inf() -> None:
    """x / (0·x) is inf or NaN where x / x is 1: the float64 check alone (trials=0) must reject it."""
    reference = _x_over(lambda g, x: x)
    candidate = _x_over(lambda g, x: g.mul_scalar(x, 0.0))
    result = ml.verify(candidate, reference, trials=0, float_check=True)
    assert not result.equivalent and result.float_check.passed is False
    assert ml.verify(reference, reference, trials=0, float_check=True).equivalent


def test_really_different_counts_a_non_finite_mutant_as_different() -> None:
    """Before issue 35 a mutant that is inf or NaN on every attempt was 'inconclusive' (None)."""
    from mirage_lab.verify.compare import really_different

    reference = _x_over(lambda g, x: x)
    assert really_different(reference, _x_over(lambda g, x: g.mul_scalar(x, 0.0))) is True
    assert really_different(reference, _x_over(lambda g, x: g.mul_scalar(g.mul_scalar(x, 0.0), 0.0))) is True
    assert really_different(reference, reference) is False


# --------------------------------------------------------------------------- benchmark scripts


def _reference_equivalence() -> ModuleType:
    return load_script(REPO_ROOT / "benchmarks" / "reference_equivalence.py", "reference_equivalence")


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_reference_equivalence_metric_fails_on_a_late_nan_or_inf(plant: str) -> None:
    re_eq = _reference_equivalence()
    want = [np.ones((4, 4)), np.ones(8)]
    assert not within(re_eq.rel_error(PLANTS[plant](want), want), re_eq.TOL)
    assert re_eq.rel_error(_exact(want), want) == 0.0


@pytest.mark.parametrize("explained", [True, False])
def test_reference_equivalence_exits_1_on_an_unexplained_mismatch(explained: bool, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    re_eq = _reference_equivalence()
    if not re_eq.reference_dir().is_dir():
        pytest.skip("the script needs ../shared/reference_mugraphs")
    # a planted result: graph 0 of the file is inf away from the program; the QKNorm diagnosis explains it or not
    mismatch = re_eq.Mismatch(0, math.inf, "planted", 1e-6 if explained else math.nan)
    monkeypatch.setattr(re_eq, "check_file", lambda path, seed, tol: re_eq.FileResult(
        path.stem, "qknorm_gqa", 1, False, 2, 1, [mismatch], 1e-7, [math.inf, 1e-7]))
    assert re_eq.main(["--files", "qknorm_gqa_bs1"]) == (0 if explained else 1)
    assert ("no diagnosis explains them: qknorm_gqa_bs1[0]" in capsys.readouterr().err) is not explained


def test_verify_benchmark_fails_on_differing_verdicts_and_nan_figures() -> None:
    bench_verify = load_script(REPO_ROOT / "benchmarks" / "verify.py", "bench_verify")
    assert bench_verify.agree([{"verdicts_agree": True}], [])
    assert not bench_verify.agree([{"verdicts_agree": False}], [])
    assert not bench_verify.agree([], [{"side": "before", "states": 5, "verified": 2},
                                       {"side": "after", "states": 5, "verified": 1}])
    assert "[FAIL]" in bench_verify._verdict_line("ratio", [1.0, math.nan, 2.0], 10.0, "low")
    assert "[FAIL]" in bench_verify._verdict_line("speed-up", [20.0, math.nan], 10.0, "high")
    assert "[PASS]" in bench_verify._verdict_line("ratio", [1.0, 2.0], 10.0, "low")


@pytest.mark.parametrize("python", ["/bin/false", "/bin/true"])
def test_gpu_check_script_exits_1_when_a_step_fails(python: str, tmp_path: Path) -> None:
    """Every step runs whatever happens to the others; a failed one (here: all, through a failing interpreter)
    makes the script exit 1 and say which, at the end."""
    env = {"PATH": "/usr/bin:/bin", "OUT": str(tmp_path), "PYTHON": python}
    r = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "gpu_check.sh")], env=env, capture_output=True,
                       text=True, timeout=60)
    if python == "/bin/false":
        assert r.returncode == 1 and "== FAILED: environment (exit 1) gpu_tests (exit 1)" in r.stdout, r.stdout
    else:
        assert r.returncode == 0 and "FAILED" not in r.stdout, r.stdout
