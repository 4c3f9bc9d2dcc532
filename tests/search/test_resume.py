"""A walk stopped at its state cap and then continued where it stopped (``Enumerator.run(resume=...)``, what the
runner does with a task's slice) is one walk: the same events byte for byte, the same candidates, no state twice."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import pytest

from mirage_lab.errors import MirageError
from mirage_lab.ir.io import graph_to_dict
from mirage_lab.search.config import preset
from mirage_lab.search.enumerate import Enumerator
from mirage_lab.search.event_blocks import events_of
from mirage_lab.search.events import event_line
from mirage_lab.search.task import join_slice, run_task, task_context
from tests.search.test_search import SMALL, small_rmsnorm

PROGRAM, CONFIG = graph_to_dict(small_rmsnorm()), preset("mlp", **SMALL).to_dict()


def lines(out: object) -> list[str]:
    return [event_line(e) for e in out.events.events]  # type: ignore[attr-defined]


def test_a_stopped_walk_continued_is_the_whole_walk() -> None:
    """At every tenth of the caps over a whole search (states at kernel and block level, the root itself) and a
    few caps inside each of a handful of tasks."""
    prog, config, oracle, verifier = task_context(PROGRAM, CONFIG)
    front = Enumerator(prog, config, oracle, verifier, ids="f").run(frontier=True)
    walks = [((), None)] + [(prefix, parent) for parent, prefix in front.tasks[::60]]
    for prefix, parent in walks:
        whole = Enumerator(prog, config, oracle, verifier, ids="7.").run(prefix, parent)
        for cap in range(0, whole.states, max(1, whole.states // 10)):
            stopped = Enumerator(prog, config, oracle, verifier, ids="7.", state_cap=cap)
            first = stopped.run(prefix, parent)
            assert first.stop_reason == "state limit"
            resume = json.loads(json.dumps(stopped.resume_point(prefix)))  # (it crosses process boundaries)
            then = Enumerator(prog, config, oracle, verifier, ids="7.").run(prefix, parent, resume=resume)
            assert lines(first) + lines(then) == lines(whole), (prefix, cap)
            assert first.states + then.states == whole.states
            assert [c.hash for c in first.candidates + then.candidates] == [c.hash for c in whole.candidates]


def test_a_tasks_slice_and_its_continuation_join_into_the_whole_task() -> None:
    prog, config, oracle, verifier = task_context(PROGRAM, CONFIG)
    front = Enumerator(prog, config, oracle, verifier, ids="f").run(frontier=True)
    index = next(i for i, (parent, prefix) in enumerate(front.tasks)  # a task with a verified μGraph
                  if Enumerator(prog, config, oracle, verifier, ids="x").run(prefix, parent).candidates)
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "candidates").mkdir()
        args = (PROGRAM, CONFIG, index, *front.tasks[index], d, None, time.time())
        whole = run_task(*args)
        assert whole["states"] > 10 and whole["candidates"]
        first = run_task(*args, None, whole["states"] // 2)
        assert first["stop_reason"] == "slice" and first["resume"] is not None
        joined = join_slice(first, run_task(*args, None, None, first["resume"]))
    # (the record a worker encodes for its parent is that of a task walked whole, never of a part)
    assert "record_gz" in whole and "record_gz" not in first and "record_gz" not in joined
    assert list(events_of(joined["events_gz"], "joined")) == list(events_of(whole["events_gz"], "whole"))
    assert joined["summary"] == whole["summary"] and joined["verdicts"] == whole["verdicts"]
    assert joined["states"] == whole["states"] and joined["stop_reason"] == "complete"
    assert [c["hash"] for c in joined["candidates"]] == [c["hash"] for c in whole["candidates"]]


def test_a_walk_that_deduplicates_states_is_not_continued() -> None:
    prog, config, oracle, verifier = task_context(PROGRAM, {**CONFIG, "order": "semantic"})
    stopped = Enumerator(prog, config, oracle, verifier, ids="", state_cap=5)
    stopped.run()
    with pytest.raises(MirageError, match="cannot be resumed"):
        Enumerator(prog, config, oracle, verifier, ids="").run(resume=stopped.resume_point(()))
