"""The schema version of a run's event log: in every event block's head (version 3), or as the first line of a
JSON-line log (version 2), checked on reading; logs without one (written before it existed) load as they are, and
a newer version than this code knows is a FormatError."""

from __future__ import annotations

from pathlib import Path

import pytest

import mirage_lab as ml
from mirage_lab.errors import FormatError
from mirage_lab.jsonl import compress
from mirage_lab.search import SCHEMA_VERSION, event_blocks
from mirage_lab.search.event_schema import JSONL_VERSION, event_line, schema_line
from mirage_lab.search.events import read_events
from mirage_lab.search.run_folder import EVENTS, JSONL_EVENTS
from mirage_lab.widgets.event_index import EventIndex
from tests.search.test_search import search


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> ml.search.SearchResult:
    return search(run_dir=tmp_path_factory.mktemp("runs"))


def _rewritten(run: ml.search.SearchResult, into: Path, first: str) -> Path:
    """The run's log as JSON lines (as folders held it before event schema version 3) opening with ``first``
    (empty: an older log, without a schema line)."""
    assert run.run_dir is not None
    path = into / JSONL_EVENTS
    path.write_bytes(compress(first + "".join(event_line(e) + "\n" for e in read_events(run.run_dir / EVENTS))))
    return path


def test_a_run_log_names_its_schema_version(run: ml.search.SearchResult) -> None:
    assert run.run_dir is not None
    heads = list(event_blocks.heads((run.run_dir / EVENTS).read_bytes(), EVENTS))
    assert heads and all(h.doc["v"] == SCHEMA_VERSION == 3 for h in heads)
    assert any(h.task is not None for h in heads)  # the tasks' events spliced in, not copied
    assert schema_line() == f'{{"e":"schema","version":{JSONL_VERSION}}}\n'  # (JSON-line logs, version 2)
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
