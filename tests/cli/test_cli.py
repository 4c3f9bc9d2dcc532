"""The ``mirage-lab`` commands on a small RMSNorm+Linear program: search, verify, codegen, bench, demo, and
the errors a user meets (bad names, hostile files, bad settings) — each a one-line message and exit status 2."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd
import pytest

import mirage_lab as ml
from mirage_lab.cli import main
from mirage_lab.cli.demo import INTERPRETER_SECTION, MODEL_SECTION
from mirage_lab.codegen import plan_cuda
from mirage_lab.codegen.compile import nvcc_available
from mirage_lab.codegen.emulate import gxx_available
from mirage_lab.codegen.triton.tuned import TIMINGS_DIR
from mirage_lab.search.load import load_run
from tests.cli.small import SETTINGS, program_file, run_small_demo


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the program file, the run folder) of one small search through the CLI."""
    root = tmp_path_factory.mktemp("cli")
    prog = program_file(root)
    out = root / "out"
    assert main(["search", str(prog), *SETTINGS, "--executor", "serial", "--runs", str(root / "runs"),
                 "--out", str(out), "--quiet", "--html", str(out / "run.html")]) == 0
    (run,) = (root / "runs").iterdir()
    return prog, run


def test_search_discovers_saves_and_reports(searched: tuple[Path, Path]) -> None:
    prog, run = searched
    out = prog.parent / "out"
    best = ml.load(out / "best.json")
    assert isinstance(best, ml.KernelGraph) and len(best.block_graphs) == 1  # the fused kernel
    ranking = pd.read_csv(out / "ranking.csv")
    assert list(ranking["rank"]) == list(range(len(ranking))) >= [0]
    assert (out / "run.html").stat().st_size > 100_000 and (run / "result.json").is_file()


def test_verify_says_equivalent_or_different(searched: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    prog, run = searched
    assert main(["verify", str(run)]) == 0  # the best against the run's own program
    assert "EQUIVALENT" in capsys.readouterr().out
    assert main(["verify", f"{run}#0", "--against", str(prog), "--trials", "2"]) == 0
    assert main(["verify", f"{prog}#wrong", "--against", str(prog)]) == 1
    text = capsys.readouterr().out
    assert "DIFFERENT" in text and "small_rmsnorm_wrong against small_rmsnorm" in text


def test_verify_a_hand_fused_benchmark_against_its_program(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "fused:lora", "--trials", "1"]) == 0
    assert "fused_lora_bs1 against lora_bs1" in capsys.readouterr().out


def test_codegen_writes_compiles_and_emulates(searched: tuple[Path, Path], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    _, run = searched
    cu = tmp_path / "best.cu"
    args = ["codegen", str(run), "--out", str(cu)]
    args += ["--ptx", "sm_80", "sm_90"] if nvcc_available() else []
    args += ["--emulate"] if gxx_available() else []
    assert main(args) == 0
    assert cu.read_text().count("__global__") == 1
    err = capsys.readouterr().err
    if nvcc_available():
        assert "nvcc --ptx -arch=sm_90: 1 kernel in" in err
        # ptxas counts static __shared__ only; the tiles' dynamic shared memory is the plan's (issue 38, item 5)
        best = load_run(run).best
        assert best is not None
        dynamic = plan_cuda(best.graph).launches[0].smem_bytes
        assert dynamic > 0 and f"B static + {dynamic} B dynamic smem" in err
    if gxx_available():
        error = float(err.split("relative error against the interpreter ")[1].split()[0])
        assert error < 5e-3  # fp16 storage


def test_codegen_prints_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["codegen", "fused:rmsnorm"]) == 0
    assert "__global__" in capsys.readouterr().out


def test_codegen_flags_turn_the_options_off(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["codegen", "fused:gqa"]) == 0
    default = capsys.readouterr().out
    assert main(["codegen", "fused:gqa", "--no-tensor-cores", "--no-padding", "--no-prefetch", "--no-split",
                 "--no-async-copies"]) == 0
    plain = capsys.readouterr().out
    assert "mirage_mma(c[j], fa, fb);" in default and "* 72 +" in default  # tensor cores, padded 64-wide Q rows
    assert "s1_ring" in default  # K's tiles copied ahead
    assert plain == ml.generate_cuda(ml.bench.fused.FUSED["gqa"](1), ml.codegen.PLAIN)


def test_bench_on_the_cpu_writes_a_labelled_table(tmp_path: Path) -> None:
    assert main(["bench", "--cpu", "--programs", "lora", "--batches", "1", "--repeats", "1",
                 "--out", str(tmp_path)]) == 0
    (csv,) = tmp_path.glob("cpu_*.csv")
    df = pd.read_csv(csv)
    assert set(df["graph"]) == {"unfused", "fused"} and df["hardware"].str.startswith("numpy interpreter").all()
    assert (df["rel_error"] < 1e-4).all() and (df["proxy_us"] > 0).all()


@pytest.mark.parametrize(("args", "message"), [
    (["verify", "nosuch"], "names no benchmark, file or run folder"),
    (["verify", "fused:moe"], "no hand-written fused μGraph for 'moe'"),
    (["verify", "rmsnorm:0"], "must be a positive integer"),
    (["codegen", "missing.json"], "does not exist"),
    (["search", "rmsnorm", "--set", "no_such_setting=1"], "unknown search setting"),
    (["search", "rmsnorm", "--set", "forloop_ranges"], "expected KEY=VALUE"),
    (["search", "rmsnorm", "--executor", "threads"], "--executor 'threads': expected process, serial or dask:ADDRESS"),
])
def test_bad_input_is_one_clear_line(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("mirage-lab: error: ") and message in err and "Traceback" not in err


def test_hostile_and_ambiguous_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "mirage-lab", "graphs": [' * 50)
    assert main(["codegen", str(bad)]) == 2
    two = ml.save([ml.bench.fused.lora(1), ml.bench.programs.lora(1)], tmp_path / "two.json")
    assert main(["codegen", str(two)]) == 2
    assert "holds 2 μGraphs; pick one" in capsys.readouterr().err
    assert main(["verify", f"{two}#0", "--against", f"{two}#1", "--trials", "1"]) == 0
    broken = tmp_path / "broken.py"
    broken.write_text("raise ValueError('boom')\n")
    assert main(["verify", str(broken), "--against", "lora"]) == 2
    assert "running" in capsys.readouterr().err


def test_demo_end_to_end_writes_every_format(tmp_path: Path) -> None:
    out = run_small_demo(tmp_path / "demo")
    page = (out / "report.html").read_text()
    for heading in ("The best μGraph", "Its verification", "Cost model", "Generated CUDA of the best μGraph",
                    "How the search found it", INTERPRETER_SECTION, MODEL_SECTION):
        assert f"<h2>{html.escape(heading)}" in page, heading
    sections = json.loads((out / "report.json").read_text())
    # no speed-up read off the CPU interpreter (issue 38, item 3): the model's table is labelled a model, and each
    # GPU table of data/timings is shown with its hardware named
    assert all("speed-up vs unfused" not in row for row in sections[INTERPRETER_SECTION])
    assert all(row["model speed-up"] > 0 for row in sections[MODEL_SECTION])
    assert "Rows per batch size: rmsnorm at batch 1 and 8" in page  # why rmsnorm has rows at two batches
    gpus = sorted(TIMINGS_DIR.glob("*.csv"))
    measured = [k for k in sections if k.startswith("Fused vs unfused: measured on ")]
    assert len(measured) == len(gpus) and all(any(g.name in k for g in gpus) for k in measured)
    assert sections["Superoptimization of small_rmsnorm"][0]["kernels"] == 1
    assert "## Search report" in (out / "report.md").read_text()


def test_load_run_reads_without_writing(searched: tuple[Path, Path], tmp_path: Path) -> None:
    from mirage_lab.errors import InputError
    from mirage_lab.search.load import load_run

    _, run = searched
    res = load_run(run)
    assert res.report.cached and res.best is not None and isinstance(res.program, ml.KernelGraph)
    assert ml.load(run.parent.parent / "out" / "best.json") == res.best.graph
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InputError, match="not a run folder"):
        load_run(plain)
    assert not any(plain.iterdir())  # nothing created in a folder that is not a run


def test_a_cut_search_says_how_to_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = program_file(tmp_path)
    args = ["search", str(prog), *SETTINGS, "--executor", "serial", "--runs", str(tmp_path / "runs"), "--quiet"]
    assert main([*args, "--time-limit", "0.001"]) == 0
    assert "run the same command again to resume" in capsys.readouterr().err
    assert main(args) == 0  # resumed without a limit: it completes from the same folder
    assert "resume" not in capsys.readouterr().err
    assert len(list((tmp_path / "runs").iterdir())) == 1


def test_a_dask_scheduler_is_used_named_and_let_go(searched: tuple[Path, Path], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """--executor dask:ADDRESS: the search runs on the scheduler's workers, the dashboard is named, and the
    client is closed afterwards (the scheduler then holds no client of ours)."""
    distributed = pytest.importorskip("distributed")
    prog, _ = searched
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster:
        assert main(["search", str(prog), *SETTINGS, "--executor", f"dask:{cluster.scheduler_address}",
                     "--runs", str(tmp_path / "runs"), "--quiet"]) == 0
        assert "dashboard http" in capsys.readouterr().err
        assert not [c for c in cluster.scheduler.clients if c != "fire-and-forget"]


def test_an_unreachable_scheduler_is_one_clear_line(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("distributed")
    from mirage_lab.cli import commands

    monkeypatch.setattr(commands, "DASK_CONNECT_S", 1)
    assert main(["search", "rmsnorm", "--executor", "dask:tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mirage-lab: error: ") and "no Dask scheduler answered at 'tcp://127.0.0.1:9'" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_workers_of_another_version_are_refused_in_one_line(searched: tuple[Path, Path], tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    distributed = pytest.importorskip("distributed")
    from mirage_lab.cli import commands

    prog, _ = searched
    monkeypatch.setattr(commands, "_worker_version", lambda: "0.0.1")  # (in-process workers run this one)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        assert main(["search", str(prog), *SETTINGS, "--executor", f"dask:{cluster.scheduler_address}",
                     "--runs", str(tmp_path / "runs"), "--quiet"]) == 2
        assert not [c for c in cluster.scheduler.clients if c != "fire-and-forget"]  # closed all the same
    err = capsys.readouterr().err
    (line,) = [ln for ln in err.splitlines() if ln.startswith("mirage-lab: error:")]
    assert "workers run another mirage-lab version" in line and "has 0.0.1" in line and "Traceback" not in err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
