"""The search-tree explorer, headless, on a real run folder: stepping, jumping, filtering, the tree, reasons."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from mirage_lab.errors import FormatError, InputError
from mirage_lab.ir.io import graph_to_dict
from mirage_lab.search.enumerate import Enumerator
from mirage_lab.search.events import EventLog, read_events
from mirage_lab.search.run_folder import EVENTS, RunFolder
from mirage_lab.search.runner import SearchResult
from mirage_lab.search.task import task_context
from mirage_lab.widgets import event_index
from mirage_lab.widgets.event_index import LABELS, EventIndex, label_of
from mirage_lab.widgets.explorer import SearchExplorer
from mirage_lab.widgets.explorer_state import ExplorerState, decision_text
from mirage_lab.widgets.viewer import details_html


def test_index_matches_the_events_and_the_report(small_run: SearchResult, small_run_dir: Path) -> None:
    events = list(read_events(small_run_dir / EVENTS))
    ix = EventIndex(small_run_dir / EVENTS, progress=False)
    assert len(ix) == len(events)
    assert [ix.label(i) for i in range(len(ix))] == [label_of(e) for e in events]
    assert all(ix.event(i) == events[i] for i in range(0, len(events), max(1, len(events) // 50)))
    counts = ix.counts()
    report = small_run.report
    assert counts["expand"] == report.states
    for why, n in report.pruned.items():
        assert counts[f"pruned:{why}"] == n  # counted prunes weigh what they stand for
    assert counts["candidate:verified"] == report.candidates["verified"]


def test_counts_up_to_any_event_use_the_kept_block_sums(small_run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``counts(upto)`` adds kept per-block sums and the rest of one block; it agrees with counting every event."""
    monkeypatch.setattr(event_index, "BLOCK", 1000)  # (a small run: several blocks)
    ix = EventIndex(small_run_dir / EVENTS, progress=False)
    assert len(ix) > 3000
    for upto in [0, 1, 999, 1000, 1001, 2500, len(ix) - 1, len(ix), None]:
        end = len(ix) if upto is None else upto
        naive = np.bincount(ix.labels[:end], weights=ix.weights[:end], minlength=len(LABELS))
        assert ix.counts(upto) == {LABELS[i]: int(n) for i, n in enumerate(naive) if n}, upto
    assert list(ix.events_per_label()) == list(np.bincount(ix.labels, minlength=len(LABELS)))
    kids = ix.children(0)
    assert len(kids) and all(int(ix.parents[k]) == 0 for k in kids)


def test_fast_reader_agrees_with_json(tmp_path: Path, small_run_dir: Path) -> None:
    # the same events written with spaces defeat the fast path: every line goes through json.loads
    spaced = tmp_path / "events.jsonl"
    spaced.write_text("".join(json.dumps(e) + "\n" for e in read_events(small_run_dir / EVENTS)))
    a, b = EventIndex(small_run_dir / EVENTS, progress=False), EventIndex(spaced, progress=False)
    assert np.array_equal(a.labels, b.labels) and np.array_equal(a.parents, b.parents)
    assert np.array_equal(a.weights, b.weights)


def test_damaged_log_names_the_line_and_the_fix(tmp_path: Path) -> None:
    bad = tmp_path / "events.jsonl"
    bad.write_text('{"e":"expand","id":"f0","parent":null,"d":null}\n{"e": "prune", "parent": "f0"\n')
    with pytest.raises(FormatError, match=r"events.jsonl:2 .*rerun the search"):
        EventIndex(bad, progress=False)
    with pytest.raises(InputError, match=r"holds no events\.blocks"):
        ExplorerState(tmp_path / "nowhere")


def test_counted_oracle_prunes_are_listed_on_demand(small_run_dir: Path) -> None:
    """A state's oracle prunes are one counted event; the explorer lists them again, each with its decision,
    expression and the run's recorded verdict, as many as the event stands for."""
    st = ExplorerState(small_run_dir, progress=False)
    counted = [i for i in np.flatnonzero(st.index.labels == st.index.codes(["pruned:oracle"])[0])
               if "n" in st.index.event(int(i))]
    assert counted
    for i in counted[:: max(1, len(counted) // 10)]:
        listed = st.oracle_prunes(int(i))
        assert len(listed) == st.index.event(int(i))["n"]
        assert all(listed["oracle"]) and all(listed["expression"])
        assert all(d.startswith(("block op", "kernel op")) for d in listed["decision"])
    info = st.explain(int(counted[0]))
    assert info["expression"] == st.oracle_prunes(int(counted[0]))["expression"].iloc[0]
    assert info["oracle"] != "(no recorded verdict)" and len(info["children"]) == min(info.get("rejections", 1), 40)
    shown = details_html({**info, "children": ["s0 < s1", "b"]})  # the widget's table: a child a line, escaped
    assert "s0 &lt; s1<br>b" in shown
    with pytest.raises(InputError, match="not an oracle prune"):
        st.oracle_prunes(0)


def test_older_folders_listing_each_oracle_prune_still_explain(tmp_path: Path, small_run_dir: Path) -> None:
    """Run folders written before the counting list each oracle prune as its own event, with its expression."""
    old = tmp_path / small_run_dir.name
    shutil.copytree(small_run_dir, old)
    program, config = RunFolder(old).program(), RunFolder(old).config()
    prog, cfg, oracle, verifier = task_context(graph_to_dict(program), config.to_dict())
    log = EventLog(keep=False, packed=True, list_oracle=True)
    Enumerator(prog, cfg, oracle, verifier, ids="", log=log).run()
    (old / EVENTS).write_bytes(log.packed_events())
    st = ExplorerState(old, progress=False)
    i = next(int(i) for i in np.flatnonzero(st.index.labels == st.index.codes(["pruned:oracle"])[0])
             if "d" in st.index.event(int(i)))  # (the root's first ones name an op no target applies)
    assert "n" not in st.index.event(i)
    listed = st.oracle_prunes(i)
    assert len(listed) == 1 and listed["expression"].iloc[0] == st.index.event(i)["expr"]
    assert st.explain(i)["expression"] == st.index.event(i)["expr"] and "children" not in st.explain(i)


def test_step_jump_and_filter(small_run_dir: Path) -> None:
    st = ExplorerState(small_run_dir, progress=False)
    assert st.event_index == 0 and st.index.label(0) == "expand"
    assert st.step(-1) == 0 and st.step(3) == 3 and st.step(-2) == 1
    v = st.jump("verified")
    assert v is not None and st.index.label(v) == "candidate:verified"
    assert st.jump("verified", -1) is None or st.index.label(st.event_index) == "candidate:verified"
    st.set_filter(["pruned"])
    assert len(st.positions) == sum(st.index.label(i).startswith("pruned:") for i in range(len(st.index)))
    here = st.event_index
    assert st.index.label(here).startswith("pruned:")
    nxt = st.step(1)
    assert nxt > here and st.index.label(nxt).startswith("pruned:")
    st.set_filter(["pruned"])
    v2 = st.jump("verified")  # jumping shows what it jumped to, widening the filter
    assert v2 is not None and st.index.label(st.event_index) == "candidate:verified"
    with pytest.raises(InputError, match="unknown verdicts"):
        st.set_filter(["bogus"])


def test_counts_so_far_grow_with_the_cursor(small_run_dir: Path) -> None:
    st = ExplorerState(small_run_dir, progress=False)
    first = st.counts().set_index("verdict")["so far"]
    st.select(len(st.index) - 1)
    last = st.counts().set_index("verdict")
    assert (last["so far"] == last["count"]).all() and (first <= last["so far"]).all()


def test_explanations_of_each_kind(small_run_dir: Path) -> None:
    st = ExplorerState(small_run_dir, progress=False)
    st.jump("pruned:oracle")
    info = st.explain()
    assert info["reason"] == "oracle" and info["expression"] and info["oracle"] != "(no recorded verdict)"
    v = st.jump("verified")
    assert v is not None
    info = st.explain()
    assert info["outcome"] == "verified" and info["verification"]["reason"] == "every trial matched"
    graph = st.candidate_graph()
    assert graph is not None and graph.block_graphs
    # the candidate's path replays to the same graph the search saved
    pg = st.partial(v)
    assert pg.block is None
    assert [n.op for n in pg.kernel.compute_nodes] == [n.op for n in graph.compute_nodes]
    # an expansion inside a block graph: its newest expression passes the oracle
    node = next(i for i in st.index.ancestors(v) if st.partial(i).block is not None and
                st.partial(i).block.compute_nodes)  # type: ignore[union-attr]
    info = st.explain(node)
    assert info["verdict"] == "expand" and info["oracle"].startswith("✓ subexpression")


def test_decision_text_covers_every_shape() -> None:
    assert decision_text(None).endswith("(root)")
    assert decision_text(["k", "matmul", [0, 1], {}]) == "kernel op matmul(d0, d1)"
    opened = decision_text(["c", [0, 1], [8, 1, 1], [[-1, -1, -1], [1, -1, -1]], [1, 0], 4])
    assert opened == "custom kernel on d0 imap (x→φ) fmap 1, d1 imap (x→1) fmap 0; grid (8, 1, 1), for-loop ×4"
    assert "d1 imap (x→0, y→1)" in decision_text(["c", [0, 1], [8, 2, 1], [[-1, -1, -1], [0, 1, -1]], [1, -1], 1])
    assert decision_text(["b", "accum_rms", [0], {}]) == "block op accum_rms(s0)"
    assert decision_text(["s", [1, -1, -1]]) == "close the block graph: save with omap (x→1, y→φ, z→φ)"


def test_tree_labels_show_each_imap_within_the_first_80_characters(small_run_dir: Path) -> None:
    st = ExplorerState(small_run_dir, progress=False)
    st.jump("verified")
    opened = [r["text"] for r in st.tree_rows() if r["text"].startswith("custom kernel on")]
    assert opened and all(t.index("imap") < 30 and t.rindex("imap") < 80 for t in opened)


def test_verification_evidence_is_a_table_not_json(small_run: SearchResult) -> None:
    evidence = small_run.candidates[0].verification
    page = details_html({"outcome": "verified", "verification": evidence})
    assert "{" not in page and '"' not in re.sub(r'class="[-a-z]+"', "", page)
    assert page.count('class="mirage-subtable"') == 3  # the evidence, its float check and its timings
    assert "<th>field</th>" in page and "<th>trials</th>" in page and "<th>max rel error</th>" in page
    assert f"<td>{evidence['degree']}</td>" in page and " ms</td>" in page


def test_tree_is_lazy_and_follows_the_cursor(small_run_dir: Path) -> None:
    st = ExplorerState(small_run_dir, progress=False)
    rows = st.tree_rows()
    assert rows[0]["index"] == 0 and rows[0]["open"]
    assert len(rows) <= 1 + 40 + 1  # the root's children, capped, and a "… more" row
    v = st.jump("verified")
    rows = st.tree_rows(limit=3)
    assert any(r["index"] == v and r["current"] for r in rows)  # its ancestors were opened
    assert len(rows) < len(st.index)
    with pytest.raises(InputError, match="only expanded states"):
        st.toggle(v)  # type: ignore[arg-type]
    st.toggle(0)
    assert len(st.tree_rows()) == 1


def test_widget_round_trip(small_run: SearchResult) -> None:
    x = SearchExplorer(small_run, engine="python", progress=False)
    assert "event 1 of" in x.status and "candidate:verified" in x.labels
    x._on_front_end(x, {"kind": "jump", "to": "verified", "direction": 1}, [])
    assert "candidate:verified" in x.status and "kernel graph so far" in x.svg
    x._on_front_end(x, {"kind": "step", "n": 1}, [])
    x._on_front_end(x, {"kind": "filter", "labels": ["pruned:oracle"]}, [])
    assert x.active == ["pruned:oracle"] and "pruned:oracle" in x.status
    x._on_front_end(x, {"kind": "select", "index": 10 ** 9}, [])
    assert "no event" in x.message
    x._on_front_end(x, {"kind": "toggle", "index": 0}, [])
    assert x.tree.count("mx-row") == 1
    assert "SearchExplorer(ExplorerState(" in repr(x)
    page = x.to_html()
    assert page.startswith('<div class="mx-explorer mx-static"><style>') and ".mx-details" in page and x.status in page
    assert "<script" not in page and x.tree in page and x.details in page


def test_a_result_without_a_run_folder_says_how_to_keep_one(small_run: SearchResult) -> None:
    kept_nothing = SearchResult(small_run.program, small_run.config, small_run.candidates, small_run.report)
    with pytest.raises(InputError, match="run_dir="):
        ExplorerState(kept_nothing)


def test_its_output_carries_a_static_copy_of_the_current_step_beside_the_widget(small_run_dir: Path) -> None:
    """An exported notebook or GitHub shows the text/html: status, counters, tree, details and drawing."""
    ex = SearchExplorer(small_run_dir, progress=False)
    ex.jump("verified")
    data, _ = ex._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == ex.model_id
    static = data["text/html"]
    assert "<script" not in static and static.count("<svg") == ex.svg.count("<svg") >= 1
    assert ex.status.split(" · ")[0] in static and ex.counters in static and ex.tree in static
    assert "candidate:verified" in static
