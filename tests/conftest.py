"""Shared fixtures. The reference μGraphs live outside the repository, in ``../shared/`` (a sibling of the clone)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
REFERENCE_DIR = REPO_ROOT.parent / "shared" / "reference_mugraphs"


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """``../shared/reference_mugraphs`` relative to the repository root; skips the test when it is absent."""
    if not REFERENCE_DIR.is_dir():
        pytest.skip(f"reference checkpoints not found at {REFERENCE_DIR} (expected ../shared/reference_mugraphs "
                    "next to the repository clone)")
    return REFERENCE_DIR
