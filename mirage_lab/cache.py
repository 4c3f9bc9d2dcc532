"""The per-user private cache: where mirage_lab keeps what it builds and later loads (g++-built emulator libraries).

The root is ``$MIRAGE_LAB_CACHE`` if set, else ``$XDG_CACHE_HOME/mirage-lab``, else ``~/.cache/mirage-lab``.
Every directory of it is created mode 0700 and checked on every use: it must belong to the current user and be
writable by nobody else (a group- or other-writable directory of ours is made 0700; one of another user, or a
shared sticky directory such as /tmp, is a ``CacheError``). A library in a directory others can write is code
they choose, running in our process.

``HashedStore`` keeps artefacts with a record of their sha256, written after the artefact, both atomically:
``load`` recomputes the artefact's hash and returns it only when it matches the record written when we stored
it (and both files are ours and not writable by others); anything else (a planted file, a tampered one, a
half-written one) is treated as absent, so the caller rebuilds it.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mirage_lab.errors import CacheError

ENV_VAR = "MIRAGE_LAB_CACHE"
#: the bits a private directory or file must not have: writable by the group or by others
UNSAFE_BITS = stat.S_IWGRP | stat.S_IWOTH
RECORD_SUFFIX = ".sha256"


def cache_root() -> Path:
    """``$MIRAGE_LAB_CACHE``, else ``$XDG_CACHE_HOME/mirage-lab``, else ``~/.cache/mirage-lab`` (not created)."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "mirage-lab"


def private_dir(*parts: str) -> Path:
    """The cache directory ``root/parts…``, created 0700 where missing, each level checked (``ensure_private``)."""
    path = cache_root()
    ensure_private(path)
    for part in parts:
        path = path / part
        ensure_private(path)
    return path


def _uid() -> int | None:
    return os.getuid() if hasattr(os, "getuid") else None


def ensure_private(path: Path) -> Path:
    """Create ``path`` (mode 0700) if missing; make sure it is a directory of ours that nobody else can write."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
    except OSError as e:
        raise CacheError(f"cannot create the cache directory {path} ({e.strerror}); point {ENV_VAR} at a "
                         "directory you can write") from None
    if not stat.S_ISDIR(st.st_mode):
        raise CacheError(f"the cache path {path} is not a directory; remove it, or point {ENV_VAR} elsewhere")
    uid = _uid()
    if uid is not None and st.st_uid != uid:
        raise CacheError(f"the cache directory {path} belongs to uid {st.st_uid}, not to you (uid {uid}): its owner "
                         f"could plant code there that mirage_lab would load. Point {ENV_VAR} at a directory of "
                         f"your own (e.g. export {ENV_VAR}=~/.cache/mirage-lab), or remove {path}")
    if st.st_mode & UNSAFE_BITS:
        if st.st_mode & stat.S_ISVTX:  # /tmp and the like: shared on purpose, never made private behind their back
            raise CacheError(f"the cache directory {path} is a shared sticky directory (mode "
                             f"{stat.S_IMODE(st.st_mode):o}); point {ENV_VAR} at a private directory, e.g. "
                             "~/.cache/mirage-lab")
        try:
            path.chmod(0o700)
        except OSError as e:
            raise CacheError(f"the cache directory {path} is writable by other users and cannot be made private "
                             f"({e.strerror}); run chmod 700 {path}, or point {ENV_VAR} elsewhere") from None
    return path


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _ours(path: Path) -> bool:
    """A regular file of the current user that nobody else can write."""
    try:
        st = path.lstat()
    except OSError:
        return False
    uid = _uid()
    return stat.S_ISREG(st.st_mode) and (uid is None or st.st_uid == uid) and not st.st_mode & UNSAFE_BITS


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class HashedStore:
    """Artefacts in ``private_dir(name)``, each with a ``<file>.sha256`` record of the bytes we stored."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def dir(self) -> Path:
        """The store's directory, checked afresh on every use."""
        return private_dir(self.name)

    def load(self, filename: str) -> Path | None:
        """``filename``'s path when its sha256 matches the record we wrote when storing it; else None (rebuild)."""
        path = self.dir / filename
        record = path.with_name(filename + RECORD_SUFFIX)
        if not (_ours(path) and _ours(record)):
            return None
        try:
            want = record.read_text().split()[0]
        except (OSError, UnicodeDecodeError, IndexError):
            return None
        return path if sha256_file(path) == want else None

    def save(self, filename: str, built: Path) -> Path:
        """Move the file ``built`` (made by us, in ``scratch()``) into the store as ``filename``, then record its
        sha256; returns its path in the store."""
        path = self.dir / filename
        digest = sha256_file(built)
        built.chmod(0o700 if os.access(built, os.X_OK) else 0o600)
        os.replace(built, path)  # the artefact first, its record after: a record never vouches for half a file
        _write_atomically(path.with_name(filename + RECORD_SUFFIX), f"{digest}  {filename}\n".encode())
        return path

    def keep(self, filename: str, text: str) -> Path:
        """Write ``text`` to ``filename`` in the store (no record: for people to read, never loaded)."""
        path = self.dir / filename
        _write_atomically(path, text.encode())
        return path

    @contextmanager
    def scratch(self) -> Iterator[Path]:
        """A fresh private directory inside the store to build in; removed afterwards."""
        with tempfile.TemporaryDirectory(dir=self.dir, prefix=".build-") as tmp:
            yield Path(tmp)
