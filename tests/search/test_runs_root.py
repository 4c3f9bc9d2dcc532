"""Where run folders go (issue 24, item 2): ``--runs DIR`` or ``run_dir=``, else ``$MIRAGE_LAB_RUNS``, else ./runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import mirage_lab as ml
from mirage_lab.cli import main
from mirage_lab.search.run_folder import DEFAULT_ROOT, RUNS_ENV, runs_root
from mirage_lab.search.runner import run_folder_path


def test_the_root_is_chosen_explicitly_then_by_the_environment_then_by_default(monkeypatch: pytest.MonkeyPatch,
                                                                               tmp_path: Path) -> None:
    monkeypatch.delenv(RUNS_ENV, raising=False)
    assert runs_root() == "runs" and runs_root(DEFAULT_ROOT) == "runs"
    monkeypatch.setenv(RUNS_ENV, str(tmp_path / "elsewhere"))
    assert runs_root() == str(tmp_path / "elsewhere")
    assert runs_root("runs") == "runs"  # given explicitly (even the default's spelling): itself
    assert runs_root(tmp_path / "mine") == tmp_path / "mine"
    program = ml.bench.programs.rmsnorm(1)
    assert run_folder_path(program, "mlp").parent == tmp_path / "elsewhere"


def test_a_search_writes_its_run_folder_where_the_environment_says(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(RUNS_ENV, str(tmp_path / "shared-runs"))
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 64), dtype=ml.float16)
    g.mark_output(g.exp(x))
    result = ml.superoptimize(g, "default", progress=False, max_kernel_ops=2, executor="serial")
    assert result.run_dir is not None and result.run_dir.parent == tmp_path / "shared-runs"
    assert not (tmp_path / "runs").exists()
    assert main(["runs"]) == 0  # the listing looks there too


def test_version_and_python_dash_m(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "mirage_lab", "--version"], capture_output=True, text=True,
                         cwd=tmp_path, check=True).stdout
    assert out.strip() == f"mirage-lab {ml.__version__}"
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0


@pytest.mark.parametrize("command", ["demo", "search", "verify", "codegen", "bench", "report", "runs"])
def test_every_subcommand_takes_quiet_and_verbose(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    assert "-q, --quiet" in text and "-v, --verbose" in text


def test_the_library_logs_and_the_cli_shows_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    main(["runs", "-q", str(tmp_path)])
    logging.getLogger("mirage_lab.search.pool").warning("a warning from the library")
    assert "a warning from the library" not in capsys.readouterr().err  # -q: errors only
    main(["runs", "-v", str(tmp_path)])
    logging.getLogger("mirage_lab.search.pool").info("some news")
    assert "mirage-lab: some news" in capsys.readouterr().err
