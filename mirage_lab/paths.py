"""Paths a user names: checked before anything is read or written, so that a directory where a file belongs,
a file where a directory belongs, a missing file or an unwritable place is one clear ``PathError`` naming
the path and the fix, never an ``OSError`` traceback from deep inside.

"Unwritable" is decided by trying (creating the directory, then a probe file), not by the mode bits:
root ignores modes, and a path below a regular file is unwritable for everyone.
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

from mirage_lab.errors import PathError


def input_file(path: str | os.PathLike[str], what: str = "file") -> Path:
    """An existing regular file to read."""
    p = Path(path)
    if p.is_dir():
        raise PathError(f"{p} is a directory, but a {what} is expected here; name a file inside it")
    if not p.exists():
        raise PathError(f"{p} does not exist; check the {what}'s path")
    if not p.is_file():
        raise PathError(f"{p} is not a regular file; name a {what}")
    return p


def input_dir(path: str | os.PathLike[str], what: str = "directory") -> Path:
    """An existing directory to read."""
    p = Path(path)
    if p.is_file():
        raise PathError(f"{p} is a file, but a {what} is expected here; name its folder instead")
    if not p.is_dir():
        raise PathError(f"{p} does not exist; check the {what}'s path")
    return p


def output_dir(path: str | os.PathLike[str], what: str = "output directory") -> Path:
    """A directory to write into, created (with its parents) when missing, and checked writable."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise PathError(f"{p} is a file, but it should be the {what}; name a directory (or remove the file)")
    _blocking_file(p, what)
    with writing(p, what):
        p.mkdir(parents=True, exist_ok=True)
        probe = p / f".mirage-lab-probe-{uuid.uuid4().hex[:8]}"
        probe.touch()
        probe.unlink()
    return p


def output_file(path: str | os.PathLike[str], what: str = "output file") -> Path:
    """A file to (over)write: missing or a regular file (``replaceable``), and its folder exists (created when
    missing) and is writable. Returns the path to write: through a symbolic link, the file it names."""
    p = Path(path)
    if p.is_dir():
        raise PathError(f"{p} is a directory, but it should be the {what}; name a file (inside it, or elsewhere)")
    p = replaceable(p, what)
    output_dir(p.parent if str(p.parent) else ".", f"folder of the {what}")
    return p


#: what ``stat`` calls the things that are neither regular files nor directories, for messages
_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def replaceable(path: str | os.PathLike[str], what: str = "file") -> Path:
    """The path an atomic write (temporary file, then rename) may replace: a missing path or a regular file.

    A rename replaces whatever stands at the path, so a FIFO, a device node (``/dev/null``: as root, gone), a
    socket or a directory is refused here, as the readers refuse them. A symbolic link to a regular file is
    written through (the link stays, the file it names is replaced); a dangling link, or one that names
    something else, is refused."""
    p = Path(path)
    try:
        mode = os.stat(p).st_mode  # through links, /proc's too (/dev/stdout names a pipe, a terminal or a file)
    except (FileNotFoundError, NotADirectoryError):  # nothing to replace (a file above it is said by the writer)
        if p.is_symlink():
            raise PathError(f"{p} is a symbolic link to nothing that exists; it would be replaced by the {what}; "
                            "remove the link or name another file") from None
        return p
    except OSError as e:
        raise PathError(f"cannot inspect {p} before writing the {what}: {e.strerror}") from None
    if stat.S_ISREG(mode):
        return p.resolve() if p.is_symlink() else p
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    shown = f"{p} (a link to {os.readlink(p)})" if p.is_symlink() else str(p)
    raise PathError(f"{shown} is {kind}, not a regular file; the {what} would replace it, so it is left alone: "
                    "name a regular file (or a path that does not exist yet)")


@contextlib.contextmanager
def writing(path: str | os.PathLike[str], what: str = "file") -> Iterator[None]:
    """Turn an ``OSError`` while writing ``path`` into a ``PathError`` that names it and says why."""
    try:
        yield
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise PathError(f"cannot write the {what} {path}: {reason}; choose a writable place") from None


@contextlib.contextmanager
def reading(path: str | os.PathLike[str], what: str = "file") -> Iterator[None]:
    """Turn an ``OSError`` while reading ``path`` into a ``PathError`` that names it and says why."""
    try:
        yield
    except OSError as e:
        raise PathError(f"cannot read the {what} {path}: {e.strerror or type(e).__name__}") from None


def file_in_the_way(path: Path) -> Path | None:
    """The nearest of ``path`` and its parents that exists but is not a directory (a file, or a dangling link),
    which makes ``path`` impossible as a folder for everyone, root included; None when there is none."""
    for p in (path, *path.parents):
        if p.is_dir():
            return None
        if p.exists() or p.is_symlink():
            return p
    return None


def _blocking_file(p: Path, what: str) -> None:
    """A file among ``p``'s parents makes it unwritable for everyone, root included: say which."""
    blocker = file_in_the_way(p.absolute().parent)
    if blocker is not None:
        raise PathError(f"cannot use {p} as the {what}: {blocker} is a file, not a directory; choose another place")
