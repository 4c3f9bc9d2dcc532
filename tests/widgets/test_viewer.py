"""The μGraph viewer, headless: drawing, drill-down from kernel to block to thread graph, selection."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.errors import InputError
from mirage_lab.widgets import draw
from mirage_lab.widgets.graph_view import GraphView
from mirage_lab.widgets.svg import fallback_svg, have_dot, render_svg
from mirage_lab.widgets.tiling import block_tilings_html, splits
from mirage_lab.widgets.viewer import MuGraphViewer

ENGINES = ["python", *(["dot"] if have_dot() else [])]


def ids(svg: str) -> set[str]:
    return set(re.findall(r'<g id="(\w+)" class="(?:node|cluster)"', svg))


@pytest.mark.parametrize("engine", ENGINES)
def test_every_element_of_every_level_is_drawn_with_its_id(engine: str) -> None:
    view = GraphView(fused.gated_mlp(1), engine)
    assert ids(view.svg()) == set(view.elements())
    assert view.click("n3") == "opened" and view.level.name == "block"
    assert ids(view.svg()) == set(view.elements())
    assert {"tg0", "tg1"} <= ids(view.svg())  # the two matmul→accumulator chains are clusters
    assert view.click("tg1") == "opened" and view.level.name == "thread"
    assert ids(view.svg()) >= set(view.elements())


def test_drill_down_and_back() -> None:
    view = GraphView(fused.rmsnorm(8))
    custom = next(k for k, n in enumerate(view.graph.nodes) if n.body is not None)
    assert view.click("n0") == "selected" and view.details()["what"] == "input"
    view.click(f"n{custom}")
    assert view.breadcrumbs() == ["kernel graph", f"custom kernel #{custom}"] and view.selected is None
    bg = view.block_graph()
    assert bg is not None and "imap" in view.details("b0") and view.tilings_html().count("<svg") == \
        len(bg.loaders) + len(bg.savers)
    view.up()
    assert view.level.name == "kernel" and view.tilings_html() == ""
    view.up()  # already at the top: stays
    assert view.breadcrumbs() == ["kernel graph"]


def test_selection_shows_shapes_bytes_and_expression() -> None:
    view = GraphView(programs.rmsnorm(1))
    out = view.details("o0")
    assert out["type"] == "f16[2,6144]" and out["bytes"] == 2 * 6144 * 2
    assert "rms" in out["expression"] and "v1" in out["expression"]
    view.click("n2")  # the rms_norm kernel
    assert view.details()["what"] == "library kernel rms_norm"


def test_block_details_name_phase_and_accumulators() -> None:
    view = GraphView(fused.rmsnorm(1))
    view.click(_custom(view))
    bg = view.block_graph()
    assert bg is not None
    roles = [view.details(f"b{j}")["what"] for j in range(len(bg.nodes))]
    assert "loader" in roles and "saver" in roles and any(r.startswith("accumulator") for r in roles)
    post = [view.details(f"b{j}").get("phase") for j in range(len(bg.nodes))]
    assert "after the loop" in post and "in the loop" in post


def _custom(view: GraphView) -> str:
    return next(f"n{k}" for k, n in enumerate(view.graph.nodes) if n.body is not None)


def test_bad_clicks_name_the_valid_elements() -> None:
    view = GraphView(fused.rmsnorm(1))
    with pytest.raises(InputError, match=r"no element 'n99'.*n0"):
        view.click("n99")
    with pytest.raises(InputError, match="not a custom kernel"):
        view.open_kernel(0)
    with pytest.raises(InputError, match="open a custom kernel first"):
        view.open_thread(0)


def test_tilings_follow_the_maps() -> None:
    g = fused.gated_mlp(1)
    bg = g.block_graphs[0]
    dims, cuts = splits(bg, bg.loaders[1])  # W1: imap x→1, fmap 0
    assert dims == (4096, 4096)
    assert {(c.dim, c.axis, c.parts) for c in cuts} == {(1, 0, bg.grid[0]), (0, -1, bg.forloop_range)}
    html = block_tilings_html(bg, ["d0", "d1", "d2"], ["d3"])
    assert "load d1 → s1" in html and "save s8 → d3" in html and "dim 0 ÷64 by for-loop" in html


def test_widget_round_trip_through_front_end_messages() -> None:
    v = MuGraphViewer(fused.gated_mlp(1), engine="python")
    assert v.crumbs == ["kernel graph"] and 'id="n3"' in v.svg
    v._on_front_end(v, {"kind": "click", "id": "n3"}, [])
    assert v.crumbs == ["kernel graph", "custom kernel #3"] and "mirage-tiling" in v.tilings
    v._on_front_end(v, {"kind": "click", "id": "b3"}, [])
    assert v.selected == "b3" and "matmul" in v.details
    v._on_front_end(v, {"kind": "click", "id": "nope"}, [])
    assert "no element 'nope'" in v.message and v.selected == "b3"  # state kept
    v._on_front_end(v, {"kind": "crumb", "index": 0}, [])
    assert v.crumbs == ["kernel graph"] and v.tilings == ""
    assert "MuGraphViewer(GraphView(kernel graph" in repr(v)


def test_reference_graphs_draw(reference_dir: Path) -> None:
    for path in sorted(reference_dir.glob("*.json"))[:6]:
        graph = ml.load_reference_checkpoint(path)[0]
        view = GraphView(graph, "python")
        assert ids(view.svg()) == set(view.elements())
        for k, node in enumerate(graph.nodes):
            if node.body is not None:
                view.open_kernel(k)
                assert ids(view.svg()) == set(view.elements())
                assert view.details("b0")["what"] == "loader"


def test_fallback_layout_keeps_labels_and_escapes() -> None:
    dot = draw.kernel_dot(programs.rmsnorm(1), title='a "quoted" <title>')
    svg = fallback_svg(dot)
    assert "rms_norm" in svg and "&lt;title&gt;" in svg and "<title>n2</title>" in svg
    assert render_svg(dot, "python") == svg


def test_its_output_carries_a_static_drawing_of_the_current_level_beside_the_widget() -> None:
    """An exported notebook or GitHub shows the text/html; JupyterLab the live view."""
    viewer = MuGraphViewer(fused.rmsnorm(8))
    data, _ = viewer._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == viewer.model_id
    assert "<svg" in data["text/html"] and "<script" not in data["text/html"]
    assert ids(data["text/html"]) == set(viewer.view.elements())
    custom = next(f"n{k}" for k, n in enumerate(viewer.view.graph.nodes) if n.body is not None)
    viewer.click(custom)
    opened = viewer._repr_mimebundle_()[0]["text/html"]
    assert ids(opened) == set(viewer.view.elements()) and "mirage-tiling" in opened
    assert viewer.view.breadcrumbs()[-1] in opened
