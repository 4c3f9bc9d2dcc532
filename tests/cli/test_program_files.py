"""A ``.py`` GRAPH runs the user's own code: the command says so in one line first; an error in the file shows
the traceback of the user's code (and nothing of ours), then one line; a file that exits or builds no graph is
named, with the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirage_lab.cli import main
from tests.cli.small import program_file


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    status = main(argv)
    return status, capsys.readouterr().err.splitlines()


def test_a_program_file_is_announced_before_it_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = program_file(tmp_path)
    status, err = run(["verify", f"{prog}#wrong", "--against", str(prog), "--trials", "1"], capsys)
    assert status == 1  # it ran: the wrong graph differs
    assert err[0] == f"mirage-lab: running {prog} as Python to build its graph (your code; name only files you trust)"


def test_an_error_shows_the_users_traceback_then_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = tmp_path / "weights.py"
    prog.write_text("def load():\n    return {}['w']\n\n\nW = load()\n")
    status, err = run(["codegen", str(prog)], capsys)
    assert status == 2
    assert err[1] == "Traceback (most recent call last):"
    body = "\n".join(err[2:-1])
    assert f'File "{prog}", line 5, in <module>' in body and f'File "{prog}", line 2, in load' in body
    assert "mirage_lab" not in body and "runpy" not in body  # only the user's own frames
    assert err[-1] == f"mirage-lab: error: running {prog} failed (KeyError: 'w'); fix the program file"


def test_exit_and_missing_graph_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exits = tmp_path / "exits.py"
    exits.write_text("import sys\nsys.exit('bye')\n")
    status, err = run(["verify", str(exits)], capsys)
    assert status == 2 and "called sys.exit('bye')" in err[-1] and len(err) == 2
    empty = tmp_path / "empty.py"
    empty.write_text("")
    status, err = run(["verify", str(empty)], capsys)
    assert status == 2 and "defines no 'program' or 'graph'" in err[-1]
