"""A real search run folder for the explorer's tests: the small RMSNorm+Linear search (about a second)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirage_lab.search.runner import SearchResult
from tests.search.test_search import search


@pytest.fixture(scope="session")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> SearchResult:
    res = search(run_dir=tmp_path_factory.mktemp("runs"))
    assert res.run_dir is not None and res.candidates
    return res


@pytest.fixture(scope="session")
def small_run_dir(small_run: SearchResult) -> Path:
    assert small_run.run_dir is not None
    return small_run.run_dir
