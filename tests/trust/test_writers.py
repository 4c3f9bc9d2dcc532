"""Writers never replace what is not a regular file of ours (issue 35, item 2): an atomic write renames a temporary
file over the path, which would turn a FIFO, a device node or a socket into a plain file (as root, ``--out
/dev/null`` would have destroyed /dev/null). Each is refused and left exactly as it was; a link to a regular file
is written through; printing to standard output stays possible."""

from __future__ import annotations

import contextlib
import io
import os
import socket
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import mirage_lab as ml
from mirage_lab.cli import main
from mirage_lab.errors import PathError
from mirage_lab.ir.io import write_atomic
from mirage_lab.paths import replaceable


def _graph() -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    g.mark_output(g.exp(g.new_input(dims=(8, 64), dtype=ml.float16)))
    return g.freeze()


@contextlib.contextmanager
def _socket_at(path: Path) -> Iterator[None]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(str(path))
        yield


def _char_device(path: Path) -> None:
    """A character device like /dev/null, made here (needs CAP_MKNOD: root on CI; skipped elsewhere)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError) as e:
        pytest.skip(f"cannot make a device node here ({e})")


SPECIAL: dict[str, Callable[[Path], Any]] = {"fifo": os.mkfifo, "device": _char_device}

WRITERS: dict[str, Callable[[Path], Any]] = {
    "ml.save": lambda p: ml.save(_graph(), p),
    "write_atomic": lambda p: write_atomic(p, "text"),
    "codegen --out": lambda p: _cli_refuses(["codegen", "fused:rmsnorm", "--out", str(p)]),
    "codegen --backend triton --out": lambda p: _cli_refuses(["codegen", "fused:rmsnorm", "--backend", "triton",
                                                              "--out", str(p)]),
}


def _cli_refuses(argv: list[str]) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(argv)
    assert status == 2, err.getvalue()
    raise PathError(err.getvalue().strip())


@pytest.mark.parametrize("kind", SPECIAL)
@pytest.mark.parametrize("writer", WRITERS)
def test_a_special_file_is_refused_and_left_as_it_was(tmp_path: Path, kind: str, writer: str) -> None:
    path = tmp_path / "target"
    SPECIAL[kind](path)
    before = path.lstat()
    with pytest.raises(PathError, match="not a regular file"):
        WRITERS[writer](path)
    after = path.lstat()
    assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino
    assert sorted(p.name for p in tmp_path.iterdir()) == ["target"]  # no temporary file left beside it


def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with _socket_at(path):
        with pytest.raises(PathError, match="a socket, not a regular file"):
            ml.save(_graph(), path)
        assert stat.S_ISSOCK(path.lstat().st_mode)


def test_links(tmp_path: Path) -> None:
    """A link to a regular file is written through (the link stays); a dangling one, or one to a FIFO, is refused."""
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    ml.save(_graph(), link)
    assert link.is_symlink() and ml.load(target) == _graph()
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(PathError, match="symbolic link to nothing"):
        ml.save(_graph(), dangling)
    assert dangling.is_symlink() and not (tmp_path / "nowhere").exists()
    os.mkfifo(tmp_path / "fifo")
    to_fifo = tmp_path / "to_fifo.json"
    to_fifo.symlink_to(tmp_path / "fifo")
    with pytest.raises(PathError, match=r"a link to .*named pipe"):
        ml.save(_graph(), to_fifo)


def test_regular_files_and_new_paths_are_replaceable(tmp_path: Path) -> None:
    assert replaceable(tmp_path / "new.json") == tmp_path / "new.json"
    (tmp_path / "old.json").write_text("x")
    assert replaceable(tmp_path / "old.json") == tmp_path / "old.json"
    with pytest.raises(PathError, match="a directory"):
        replaceable(tmp_path)


def test_codegen_prints_to_standard_output(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["codegen", "fused:rmsnorm"], ["codegen", "fused:rmsnorm", "--out", "-"]):
        assert main(argv) == 0
        assert "__global__" in capsys.readouterr().out


def test_a_fifo_among_a_reports_files_is_refused_not_waited_on(tmp_path: Path) -> None:
    """The demo writes its tables into a folder: a FIFO there (report.md) is refused in one line; a plain write would
    have blocked until something read the pipe."""
    out = tmp_path / "demo"
    out.mkdir()
    os.mkfifo(out / "report.md")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(["demo", "--no-search", "--no-references", "--programs", "lora", "--repeats", "1",
                       "--out", str(out)])
    assert status == 2 and "report.md is a named pipe (FIFO)" in err.getvalue()
    assert stat.S_ISFIFO((out / "report.md").lstat().st_mode)
