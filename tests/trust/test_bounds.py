"""Bounds on what a user can ask (issue 35, item 4): trial counts and timed runs have ceilings checked before the
work starts, against memory (the trials' kept evaluations) and time (the projected total of a timing), and the
command line gives the same answer as the API (it passes its numbers through to the same checks)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab import bounds
from mirage_lab.bench.timing import measure_cpu
from mirage_lab.cli import main
from mirage_lab.errors import InputError, MirageError, ResourceError
from mirage_lab.search.config import preset
from mirage_lab.verify import verifier as verifier_module


def _cli_error(argv: list[str]) -> str:
    """The one line the command line says for ``argv`` (exit status 2), without its prefix."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 2
    (line,) = [ln for ln in err.getvalue().splitlines() if ln.startswith("mirage-lab: error: ")]
    return line.removeprefix("mirage-lab: error: ")


def _api_error(call: Callable[[], Any]) -> str:
    with pytest.raises(MirageError) as e:
        call()
    return str(e.value)


def _small() -> ml.KernelGraph:
    return ml.bench.fused.FUSED["rmsnorm"](1)


@pytest.mark.parametrize(("argv", "call"), [
    (["verify", "fused:rmsnorm", "--trials", "1001"],
     lambda: ml.verify(_small(), ml.bench.programs.rmsnorm(1), trials=1001)),
    (["bench", "--cpu", "--programs", "rmsnorm", "--repeats", "100001"],
     lambda: measure_cpu(["rmsnorm"], [1], repeats=100_001, log=lambda _: None)),
    (["demo", "--no-search", "--repeats", "100001"],
     lambda: measure_cpu(["rmsnorm"], [1], repeats=100_001, log=lambda _: None)),
    (["search", "rmsnorm:1", "--set", "trials=1001", "--executor", "serial", "--quiet"],
     lambda: preset("mlp", trials=1001)),
], ids=["verify --trials", "bench --repeats", "demo --repeats", "search --set trials"])
def test_the_command_line_and_the_api_give_the_same_answer(argv: list[str], call: Callable[[], Any]) -> None:
    assert _cli_error(argv) == _api_error(call)


def test_the_ceilings_hold_exactly() -> None:
    assert bounds.check_trials(bounds.MAX_TRIALS) == bounds.MAX_TRIALS
    with pytest.raises(InputError, match="at most 1,000"):
        bounds.check_trials(bounds.MAX_TRIALS + 1)
    assert bounds.check_timed_runs(0, bounds.MAX_TIMED_RUNS) == (0, bounds.MAX_TIMED_RUNS)
    for warmup, repeats in ((bounds.MAX_TIMED_RUNS + 1, 1), (0, bounds.MAX_TIMED_RUNS + 1), (0, 0), (-1, 3),
                            (0, 2.5), (True, 3)):
        with pytest.raises(InputError):
            bounds.check_timed_runs(warmup, repeats)


def test_a_timing_is_refused_after_its_second_run_when_the_rest_would_take_too_long() -> None:
    """The first run may include compiling, so the second one projects the total; the rest never run."""
    calls: list[float] = []

    def run(seconds: float) -> Callable[[], float]:
        def once() -> float:
            calls.append(seconds)
            return seconds
        return once

    with pytest.raises(ResourceError, match=r"timing the kernel: 1,000 runs of 10 s each would take about 2\.8 h"):
        bounds.timed_runs(run(10.0), 0, 1000, "the kernel")
    assert len(calls) == 2
    calls.clear()
    assert len(bounds.timed_runs(run(1.0), 10, 100, "the kernel")) == 100  # 110 s: within the hour
    assert len(calls) == 110


def test_the_interpreter_backend_and_the_cpu_bench_use_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounds, "TIME_BUDGET_S", 1e-9)  # every timing of more than one run is over it
    g = _small()
    inputs = [np.ones(t.dims, np.float32) for t in g.input_types]
    with pytest.raises(ResourceError, match="timing the interpreter"):
        ml.codegen.BACKENDS["reference"].time(g, inputs, warmup=0, repeats=5)
    with pytest.raises(ResourceError, match="timing the interpreter"):
        measure_cpu(["lora"], [1], repeats=3, log=lambda _: None)
    assert ml.codegen.BACKENDS["reference"].time(g, inputs, warmup=0, repeats=1).median_ms > 0  # one run: no projection


def test_trials_whose_kept_evaluations_cannot_fit_are_refused_before_the_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each trial keeps its evaluation of the program (inputs and outputs, 16 bytes an element here)."""
    prog = ml.bench.programs.rmsnorm(1)
    per_trial = sum(t.numel for t in (*prog.input_types, *prog.output_types)) * 16
    ran: list[int] = []
    monkeypatch.setattr(verifier_module.Verifier, "program", lambda self, trial: ran.append(trial))
    monkeypatch.setattr(verifier_module, "available_bytes", lambda: 10 * per_trial)
    with pytest.raises(ResourceError, match=r"trials=20 \(each keeps one evaluation of the program, .*fewer trials"):
        verifier_module.Verifier(prog, trials=20)
    assert ran == []
    verifier_module.Verifier(prog, trials=3)  # 3 evaluations and one run's peak fit in 10


def test_the_drop_in_refuses_its_timing_counts_before_searching(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    g = ml.new_kernel_graph()
    g.mark_output(g.exp(g.new_input(dims=(8, 64), dtype=ml.float16)))
    with pytest.raises(InputError, match=r"profile_iters=200000 is more than mirage-lab runs"):
        g.superoptimize(profile_iters=200_000)
    with pytest.raises(InputError, match=r"warmup_iters must be an integer ≥ 0, got 2\.5"):
        g.superoptimize(warmup_iters=2.5)
    assert not (tmp_path / "runs").exists()  # no search started
