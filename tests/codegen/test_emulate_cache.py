"""The emulator's libraries live in the per-user private cache and are loaded only when their sha256 matches the
record written when we built them: a library planted by someone else, or tampered with, never runs.

Every test points ``MIRAGE_LAB_CACHE`` at its own temporary directory, never at the real cache.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab import cache
from mirage_lab.cache import HashedStore, cache_root, private_dir, sha256_file
from mirage_lab.codegen import emulate
from mirage_lab.codegen.emulate import library_file, run_cuda_on_cpu
from mirage_lab.errors import CacheError

needs_gxx = pytest.mark.skipif(not emulate.gxx_available(), reason="g++ not installed")
needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="simulating another user's directory needs root (os.chown)")
PHI = -1
OLD_CACHE = Path(tempfile.gettempdir()) / "mirage_lab_emulate"  # where build_library used to look
PLANTED_C = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
  FILE* f = fopen("%s", "w");
  if (f) { fputs("planted library ran\n", f); fclose(f); }
}
"""


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh private cache and an empty in-process library table, so that every test really loads from disk."""
    root = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV_VAR, str(root))
    monkeypatch.setattr(emulate, "_LOADED", {})
    return root


def _graph() -> ml.KernelGraph:
    """exp of an (8, 64) tensor in one small custom kernel."""
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 64), dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=(2, 1, 1), forloop_range=1)
    tx = tb.new_input(dtensor=x, input_map=(0, PHI, PHI), forloop_dim=PHI)
    tb.new_output(stensor=tb.forloop_accum(tb.exp(tx)), output_map=(0, PHI, PHI))
    g.mark_output(g.customized([x], tb)[0])
    return g.freeze()


def _run(source: str) -> None:
    graph = _graph()
    x = np.random.default_rng(0).uniform(-1, 1, (8, 64)).astype(np.float16)
    (got,) = run_cuda_on_cpu(graph, [x], source=source)
    np.testing.assert_allclose(got.astype(np.float64), np.exp(x.astype(np.float64)), rtol=2e-3)


def _source(tag: str) -> str:
    """The graph's source with a comment unique to this test run: a library no earlier run has cached."""
    return ml.generate_cuda(_graph()) + f"// {tag} {os.getpid()} {id(tag)}\n"


def _planted_library(tmp_path: Path, marker: Path) -> Path:
    c = tmp_path / "planted.c"
    c.write_text(PLANTED_C % marker)
    so = tmp_path / "planted.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(so), str(c)], check=True, capture_output=True)
    return so


@needs_gxx
@pytest.mark.parametrize("record", ["none", "wrong hash", "planted library's own hash"])
def test_a_planted_library_never_runs(cache_dir: Path, tmp_path: Path, record: str) -> None:
    """A library under the source's cache name, in the old shared temp folder and in the new cache directory,
    without a record of ours (or with a record that does not match, or that vouches for the planted file but is
    not ours to trust — written by another user), is never loaded: its constructor would write the marker."""
    marker = tmp_path / "marker"
    planted = _planted_library(tmp_path, marker)
    source = _source("planted")
    name = library_file(source)
    OLD_CACHE.mkdir(exist_ok=True)
    old = OLD_CACHE / name
    new = private_dir("emulate") / name
    old.write_bytes(planted.read_bytes())
    new.write_bytes(planted.read_bytes())
    rec = new.with_name(name + ".sha256")
    if record == "wrong hash":
        rec.write_text("0" * 64 + "\n")
    elif record == "planted library's own hash":
        if os.geteuid() != 0:
            pytest.skip("making the record another user's needs root")
        rec.write_text(sha256_file(new) + "\n")
        os.chown(rec, 12345, 12345)
    try:
        _run(source)
    finally:
        old.unlink(missing_ok=True)
    assert not marker.exists(), "a planted library ran"
    assert sha256_file(new) != sha256_file(planted)  # rebuilt in its place, and recorded
    assert HashedStore("emulate").load(name) == new


@needs_gxx
def test_a_tampered_library_is_rebuilt(cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _source("tampered")
    _run(source)
    lib = private_dir("emulate") / library_file(source)
    good = sha256_file(lib)
    marker = tmp_path / "marker"
    os.replace(_planted_library(tmp_path, marker), lib)  # same name, our file, other bytes (a new inode: the
    # loaded library stays mapped; overwriting it in place would crash this process)
    monkeypatch.setattr(emulate, "_LOADED", {})
    builds = []
    real_run = subprocess.run
    monkeypatch.setattr(emulate.subprocess, "run", lambda cmd, **kw: builds.append(cmd) or real_run(cmd, **kw))
    _run(source)
    assert not marker.exists() and len(builds) == 1
    assert sha256_file(lib) == good
    monkeypatch.setattr(emulate, "_LOADED", {})
    _run(source)  # untouched now: loaded from the cache without building
    assert len(builds) == 1


@needs_gxx
def test_cache_directories_are_private(cache_dir: Path) -> None:
    _run(_source("private"))
    for d in (cache_dir, cache_dir / "emulate"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    files = list((cache_dir / "emulate").iterdir())
    assert files and all(not p.stat().st_mode & 0o022 for p in files)


def test_a_directory_open_to_others_is_made_private(cache_dir: Path) -> None:
    d = private_dir("emulate")
    d.chmod(0o777)
    assert HashedStore("emulate").dir == d
    assert stat.S_IMODE(d.stat().st_mode) == 0o700


def test_a_shared_sticky_directory_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setenv(cache.ENV_VAR, str(shared))
    with pytest.raises(CacheError, match=rf"{shared} is a shared sticky directory .*MIRAGE_LAB_CACHE"):
        private_dir("emulate")
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777  # left as it was


@needs_root
@pytest.mark.parametrize("which", ["root", "store"])
def test_a_directory_of_another_user_is_an_error(cache_dir: Path, which: str) -> None:
    d = private_dir("emulate")
    os.chown(cache_dir if which == "root" else d, 12345, 12345)
    path = cache_dir if which == "root" else d
    with pytest.raises(CacheError, match=rf"{path} belongs to uid 12345, not to you .*Point MIRAGE_LAB_CACHE"):
        private_dir("emulate")
    if emulate.gxx_available():
        with pytest.raises(CacheError):
            _run(_source("other user"))


def test_the_store_checks_every_record(cache_dir: Path, tmp_path: Path) -> None:
    store = HashedStore("things")
    assert store.load("a.bin") is None
    built = tmp_path / "a.bin"
    built.write_bytes(b"first")
    path = store.save("a.bin", built)
    assert store.load("a.bin") == path and not built.exists()
    path.write_bytes(b"other")
    assert store.load("a.bin") is None  # tampered
    path.with_name("a.bin.sha256").unlink()
    path.write_bytes(b"first")
    assert store.load("a.bin") is None  # the right bytes, but no record of ours


def test_cache_root_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cache.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "mirage-lab"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "mirage-lab"
    monkeypatch.setenv(cache.ENV_VAR, str(tmp_path / "mine"))
    assert cache_root() == tmp_path / "mine"
