"""Shared fixtures. The reference μGraphs live outside the repository, in ``../shared/`` (a sibling of the clone)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
REFERENCE_DIR = REPO_ROOT.parent / "shared" / "reference_mugraphs"


def load_script(path: Path, name: str) -> ModuleType:
    """A repository script (``benchmarks/*.py``, ``scripts/*.py``) imported as module ``name``, once; it is
    registered in ``sys.modules`` because dataclasses look their module up there."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """``../shared/reference_mugraphs`` relative to the repository root; skips the test when it is absent."""
    if not REFERENCE_DIR.is_dir():
        pytest.skip(f"reference checkpoints not found at {REFERENCE_DIR} (expected ../shared/reference_mugraphs "
                    "next to the repository clone)")
    return REFERENCE_DIR
