"""The schema version of a run's event log: written as its first line, checked on reading; logs without one
(written before it existed) load as they are, and a newer version than this code knows is a FormatError."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

import mirage_lab as ml
from mirage_lab.errors import FormatError
from mirage_lab.jsonl import compress
from mirage_lab.search import SCHEMA_VERSION
from mirage_lab.search.event_schema import schema_line
from mirage_lab.search.events import read_events
from mirage_lab.search.run_folder import EVENTS
from mirage_lab.widgets.event_index import EventIndex
from tests.search.test_search import search


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> ml.search.SearchResult:
    return search(run_dir=tmp_path_factory.mktemp("runs"))


def _rewritten(run: ml.search.SearchResult, into: Path, first: str) -> Path:
    """The run's log with its schema line replaced by ``first`` (empty: an older log, without one)."""
    assert run.run_dir is not None
    lines = gzip.decompress((run.run_dir / EVENTS).read_bytes()).decode().splitlines(keepends=True)
    path = into / EVENTS
    path.write_bytes(compress(first + "".join(lines[1:])))
    return path


def test_a_run_log_opens_with_its_schema_line(run: ml.search.SearchResult) -> None:
    assert run.run_dir is not None
    first = gzip.decompress((run.run_dir / EVENTS).read_bytes()).decode().splitlines(keepends=True)[0]
    assert first == schema_line() == f'{{"e":"schema","version":{SCHEMA_VERSION}}}\n'
    events = list(read_events(run.run_dir / EVENTS))
    assert events[0]["e"] == "expand" and events == list(run.events())
    index = EventIndex(run.run_dir / EVENTS, progress=False)
    assert len(index) == len(events) and index.event(0) == events[0] and index.label(0) == "expand"


def test_a_log_without_a_schema_line_loads_as_before(run: ml.search.SearchResult, tmp_path: Path) -> None:
    old = _rewritten(run, tmp_path, "")
    assert run.run_dir is not None
    assert list(read_events(old)) == list(read_events(run.run_dir / EVENTS))
    assert len(EventIndex(old, progress=False)) == len(EventIndex(run.run_dir / EVENTS, progress=False))


@pytest.mark.parametrize("first, says", [(f'{{"e":"schema","version":{SCHEMA_VERSION + 1}}}\n', "upgrade mirage_lab"),
                                         ('{"e":"schema"}\n', "names no version")])
def test_a_newer_or_broken_schema_is_a_format_error(run: ml.search.SearchResult, tmp_path: Path, first: str,
                                                    says: str) -> None:
    log = _rewritten(run, tmp_path, first)
    with pytest.raises(FormatError, match=says):
        list(read_events(log))
    with pytest.raises(FormatError, match=says):
        EventIndex(log, progress=False)
