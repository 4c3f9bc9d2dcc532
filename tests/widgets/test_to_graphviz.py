"""ml.to_graphviz: the viewer's drawing as a restylable graphviz.Digraph, and the viewer rendering through it."""

from __future__ import annotations

import re

import graphviz
import pytest

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.widgets import draw
from mirage_lab.widgets.svg import digraph, have_dot, render_svg

needs_dot = pytest.mark.skipif(not have_dot(), reason="graphviz's dot is not installed")


def _statements(dot: str) -> list[str]:
    return [line for line in dot.splitlines() if re.match(r"\s*\w+ (\[id=|->)", line)]


def test_a_digraph_with_the_viewer_drawing_and_its_defaults_apart() -> None:
    g = fused.rmsnorm()
    d = ml.to_graphviz(g)
    assert isinstance(d, graphviz.Digraph)
    assert d.graph_attr["rankdir"] == "TB" and d.graph_attr["label"] == "kernel graph · 1 kernel"
    assert d.node_attr["fontname"] == "Helvetica" and d.edge_attr["arrowsize"] == "0.7"
    assert _statements(d.source) == _statements(draw.mugraph_dot(g))  # every node and edge the viewer draws
    assert "cluster_k2" in d.source  # the custom kernel's block graph, nested
    assert repr(d).startswith("MuGraphDigraph('kernel graph · 1 kernel': 11 nodes, 11 edges")
    kernel_only = ml.to_graphviz(g, level="kernel", title="just kernels")
    assert "cluster_k2" not in kernel_only.source and kernel_only.graph_attr["label"] == "just kernels"
    assert "imap" in ml.to_graphviz(g.block_graphs[0]).source
    with pytest.raises(ml.MirageError, match="level="):
        ml.to_graphviz(g, level="thread")


def test_a_builder_and_every_benchmark_program() -> None:
    b = ml.new_kernel_graph()
    x = b.new_input(dims=(8, 64), dtype=ml.float16)
    b.mark_output(b.exp(x))
    assert _statements(ml.to_graphviz(b).source) == _statements(draw.mugraph_dot(b.freeze()))
    for name, make in programs.PROGRAMS.items():
        assert ml.to_graphviz(make()).body, name


def test_not_a_drawing_is_refused() -> None:
    with pytest.raises(ml.MirageError, match="DOT digraph"):
        digraph("graph { a -- b }")


@needs_dot
def test_it_renders_and_restyles_with_dot() -> None:
    d = ml.to_graphviz(fused.gated_mlp())
    svg = d.pipe(format="svg", encoding="utf-8")
    assert 'id="n3"' in svg and 'class="cluster"' in svg
    assert "image/svg+xml" in d._repr_mimebundle_()
    tall = svg
    d.graph_attr["rankdir"] = "LR"
    wide = d.pipe(format="svg", encoding="utf-8")
    size = re.compile(r'<svg width="(\d+)pt" height="(\d+)pt"')
    (tw, th), (ww, wh) = (tuple(map(int, size.search(s).groups())) for s in (tall, wide))  # type: ignore[union-attr]
    assert ww / wh > tw / th  # left to right is wider than top to bottom


@needs_dot
def test_the_viewer_renders_through_the_graphviz_package(monkeypatch: pytest.MonkeyPatch) -> None:
    """render_svg runs dot through graphviz.Digraph.pipe (no hand-run subprocess): a pipe that is not called
    cannot give the viewer its drawing."""
    dot = draw.kernel_dot(fused.lora(), title="through graphviz")
    calls = []
    real = graphviz.Digraph.pipe

    def spy(self: graphviz.Digraph, *a: object, **kw: object) -> object:
        calls.append(self)
        return real(self, *a, **kw)

    monkeypatch.setattr(graphviz.Digraph, "pipe", spy)
    render_svg.cache_clear()
    svg = render_svg(dot, "dot")
    assert len(calls) == 1 and 'id="n0"' in svg and svg.startswith("<svg")


def test_without_dot_jupyter_gets_the_built_in_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    bundle = ml.to_graphviz(fused.rmsnorm())._repr_mimebundle_()
    assert "built-in layout" in bundle["image/svg+xml"] and 'id="n2"' in bundle["image/svg+xml"]
