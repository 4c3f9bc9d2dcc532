"""The readable listing (jaxpr-like), the HTML view and the reprs of user-facing objects."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

import mirage_lab as ml
from mirage_lab.ir import printer
from mirage_lab.ir.graph import BlockGraph, KernelGraph
from tests.strategies import every_op_graph, rmsnorm_linear_fused

FUSED = """\
{ lambda d0:f16[16,4096] d1:f16[4096,6144] . let
    d2:f16[16,6144] = customized d0 d1
      { block grid=(256,1,1) forloop_range=4 reduction_dimx=64 smem=81.5KiB
          s0:f16[16,1024] = load[imap=(x→φ, y→φ, z→φ), fmap=1] d0
          s1:f16[1024,24] = load[imap=(x→1, y→φ, z→φ), fmap=0] d1
          s2:f16[16,1]ᵖ = accum_rms s0
          s3:f16[16,24] = matmul s0 s1
          s4:f16[16,24]ᵖ = accum_no_red s3
          s5:f16[16,24]ᵖ = div s4 s2
          d2 = save[omap=(x→1, y→φ, z→φ)] s5
      }
  in ( d2 ) }"""

FUSED_BLOCK = """\
{ block grid=(256,1,1) forloop_range=4 reduction_dimx=64 smem=81.5KiB
    s0:f16[16,1024] = load[imap=(x→φ, y→φ, z→φ), fmap=1] in0:f16[16,4096]
    s1:f16[1024,24] = load[imap=(x→1, y→φ, z→φ), fmap=0] in1:f16[4096,6144]
    s2:f16[16,1]ᵖ = accum_rms s0
    s3:f16[16,24] = matmul s0 s1
    s4:f16[16,24]ᵖ = accum_no_red s3
    s5:f16[16,24]ᵖ = div s4 s2
    out0:f16[16,6144] = save[omap=(x→1, y→φ, z→φ)] s5
}"""

FUSED_PYTHON = """\
import mirage_lab as ml

g = ml.new_kernel_graph()
d0 = g.new_input(dims=(16, 4096), dtype=ml.float16)
d1 = g.new_input(dims=(4096, 6144), dtype=ml.float16)

tb = ml.new_threadblock_graph(grid_dim=(256, 1, 1), block_dim=(128, 1, 1),
                              forloop_range=4, reduction_dimx=64)
s0 = tb.new_input(dtensor=d0, input_map=(-1, -1, -1), forloop_dim=1)
s1 = tb.new_input(dtensor=d1, input_map=(1, -1, -1), forloop_dim=0)
s2 = tb.forloop_accum(s0, "rms")
s3 = tb.matmul(s0, s1)
s4 = tb.forloop_accum(s3)
s5 = tb.div(s4, s2)
tb.new_output(stensor=s5, output_map=(1, -1, -1))
(d2,) = g.customized([d0, d1], tb)

g.mark_output(d2)
g = g.freeze()
"""

RMSNORM = """\
{ lambda d0:f16[16,4096] d1:f16[4096,6144] . let
    d2:f16[16,4096] = rms_norm[normalized_shape=(4096,)] d0
    d3:f16[16,6144] = matmul d2 d1
  in ( d3 ) }"""

GQA = """\
{ lambda d0:f16[2,256,64] d1:f16[2,64,4096] d2:f16[2,4096,64] . let
    d3:f16[2,256,4096] = matmul d0 d1
    d4:f16[2,256,4096] = exp d3
    d5:f16[2,256,1] = reduction[dim=2] d4
    d6:f16[2,256,4096] = div d4 d5
    d7:f16[2,256,64] = matmul d6 d2
  in ( d7 ) }"""


def test_fused_rmsnorm_linear_listing() -> None:
    g = rmsnorm_linear_fused()
    assert str(g) == FUSED
    assert printer.format_kernel_graph(g) == FUSED


def test_fused_block_graph_listing_standalone() -> None:
    (bg,) = rmsnorm_linear_fused().block_graphs
    assert str(bg) == FUSED_BLOCK
    assert printer.format_block_graph(bg) == FUSED_BLOCK


def test_nested_block_listing_is_the_standalone_one_indented_and_renamed() -> None:
    (bg,) = rmsnorm_linear_fused().block_graphs
    nested = printer.format_block_graph(bg, "  ", inputs=["d0", "d1"], outputs=["d2"])
    assert nested.splitlines()[0] == "  " + FUSED_BLOCK.splitlines()[0]
    assert nested.splitlines()[-1] == "  }"
    assert "  " + "    d2 = save[omap=(x→1, y→φ, z→φ)] s5" in nested.splitlines()


def test_fused_to_python_golden() -> None:
    assert printer.to_python(rmsnorm_linear_fused()) == FUSED_PYTHON
    assert rmsnorm_linear_fused().to_python() == FUSED_PYTHON


@pytest.mark.parametrize(("name", "golden"), [("rmsnorm", RMSNORM), ("gqa", GQA)])
def test_benchmark_listing_golden(name: str, golden: str) -> None:
    g = ml.bench.programs.PROGRAMS[name](batch_size=8 if name == "rmsnorm" else 1)
    assert str(g) == golden


@pytest.mark.parametrize("name", sorted(ml.bench.programs.PROGRAMS))
def test_benchmark_listings_are_short_and_complete(name: str) -> None:
    g = ml.bench.programs.PROGRAMS[name]()
    text = str(g)
    lines = text.splitlines()
    assert lines[0].startswith("{ lambda ") and lines[0].endswith(". let")
    assert lines[-1] == f"  in ( {', '.join(f'd{i}' for i in g.outputs)} ) }}"
    assert len(lines) == len(g.compute_nodes) + 2
    assert max(map(len, lines)) <= 100


def test_every_op_listing() -> None:
    text = str(every_op_graph())
    for fragment in [
        "d1:f32[8,4]{strides=(1,8)}",  # non-contiguous input strides are shown
        "= mul_scalar[scalar=0.5] d12",
        "= clamp[min=-1.0, max=2.5] d13",
        "= reduction[dim=1, group_size=2] d22",  # group size shown only when ≠ 1
        "= reduction[dim=0] d25",
        "= rms_norm[normalized_shape=(4,4)] d22",
        "{ block grid=(2,1,1) forloop_range=2 reduction_dimx=2 smem=736B",
        "s22:f32[2,1] s23:f32[2,1] = reduction_max[dim=1] s19",  # multi-output
        "s21:f32[2,2] = reduction_to_dimx[dim=1] s19",
        "s25:f32[2,8] = concat[dim=1] s19 s24",
        "s26:f32[2,4] = concat_then_matmul s0 s0 s1 s1",
        "s31:f32[2,4]ᵖ = accum_no_red_rescale s19 s20",
        "s39:f32[2,2]ᵖ = accum_sum_todimx s25",
        "d26 = save[omap=(x→0, y→φ, z→φ)] s38",
        "d26:f32[4,4] d27:f32[4,2] = customized d0 d1",
        "in ( d28, d29, d30 ) }",
    ]:
        assert fragment in text, fragment


def test_smem_matches_the_builder_heuristic() -> None:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(64, 64), dtype=ml.float32)
    tb = ml.new_threadblock_graph(grid_dim=(4, 1, 1), forloop_range=2)
    s = tb.new_input(dtensor=x, input_map=(0, -1, -1), forloop_dim=1)
    e = tb.exp(s)  # free
    r = tb.forloop_accum(tb.add(e, s), "sum")
    tb.new_output(stensor=r, output_map=(0, -1, -1))
    used = tb.smem_usage
    (o,) = g.customized([x], tb)
    g.mark_output(o)
    (bg,) = g.freeze().block_graphs
    assert printer.smem_bytes(bg) == used == 16 * 32 * 4 * 2 + 16 * 4
    assert "smem=4.1KiB" in str(bg)


def test_block_dim_shown_only_when_not_default() -> None:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 8), dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=(2, 1, 1), block_dim=(256, 1, 1))
    tb.new_output(stensor=tb.forloop_accum(tb.new_input(dtensor=x, input_map=(1, -1, -1))),
                  output_map=(1, -1, -1))
    (o,) = g.customized([x], tb)
    g.mark_output(o)
    assert "block_dim=(256,1,1)" in str(g.freeze())
    assert "block_dim" not in str(rmsnorm_linear_fused())


def test_long_header_wraps() -> None:
    g = ml.new_kernel_graph()
    ins = [g.new_input(dims=(1024, 1024, 1024, 1024), dtype=ml.bfloat16) for _ in range(6)]
    g.mark_output(ins[-1])
    lines = str(g.freeze()).splitlines()
    assert lines[0].startswith("{ lambda d0:bf16[1024,1024,1024,1024] ")
    assert lines[1].startswith(" " * len("{ lambda ") + "d")
    assert lines[-2].endswith(". let") and lines[-1] == "  in ( d5 ) }"
    assert max(map(len, lines)) <= printer.WIDTH


def test_printers_accept_builders_and_both_levels() -> None:
    g = rmsnorm_linear_fused()
    (bg,) = g.block_graphs
    assert printer.format_graph(g) == FUSED
    assert printer.format_graph(bg) == FUSED_BLOCK
    assert printer.format_kernel_graph(bg) == FUSED_BLOCK
    assert printer.format_block_graph(g) == FUSED
    b = ml.new_kernel_graph()
    b.mark_output(b.exp(b.new_input(dims=(2, 2))))
    assert printer.format_graph(b) == str(b.freeze())
    with pytest.raises(TypeError, match="KernelGraph or BlockGraph"):
        printer.format_graph(42)


class _TextOf(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text[self.tags[-1]] = self.text.get(self.tags[-1], "") + data


@pytest.mark.parametrize("which", ["kernel", "block"])
def test_html_is_an_escaped_pre_block_with_a_summary(which: str) -> None:
    g = rmsnorm_linear_fused()
    obj: KernelGraph | BlockGraph = g if which == "kernel" else g.block_graphs[0]
    out = printer.to_html(obj)
    parsed = _TextOf()
    parsed.feed(out)
    assert parsed.tags == ["div", "div", "pre"]
    assert parsed.text["pre"] == str(obj)
    summary = parsed.text["div"]
    assert "\n" not in summary
    if which == "kernel":
        assert g._repr_html_() == out
        assert summary.startswith("KernelGraph: 2 inputs, 1 op, 1 output · 1 customized op (4 block ops)")
        assert f"hash {g.canonical_hash()[:12]}" in summary
    else:
        assert summary.startswith("BlockGraph: 2 in, 4 ops, 1 out · grid=(256,1,1)")


def test_html_escapes_markup() -> None:
    out = printer.to_html(rmsnorm_linear_fused())
    body = out.split("<pre", 1)[1].split(">", 1)[1].rsplit("</pre>", 1)[0]
    assert "<" not in body and ">" not in body.replace("→", "")


# --------------------------------------------------------------------------- reprs


def test_reprs_are_readable() -> None:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(16, 4096), dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=(64, 1, 1), forloop_range=4)
    s = tb.new_input(dtensor=x, input_map=(-1, -1, -1), forloop_dim=1)
    assert repr(ml.float16) == "ml.float16" and str(ml.bfloat16) == "ml.bfloat16"
    assert repr(x) == "DTensor(d0: f16[16, 4096])"
    assert repr(s) == "STensor(s0: f16[16, 1024])"
    assert repr(g) == "KNGraph(1 tensor, 1 op, 0 outputs)"
    assert repr(tb) == "BlockGraphBuilder(grid=(64, 1, 1), forloop_range=4, 1 tensor, 0 outputs, smem=32768 B)"
    fused = rmsnorm_linear_fused()
    assert repr(fused).startswith("KernelGraph(2 inputs, ops=[customized], 1 ")
    assert repr(fused.block_graphs[0]) == "BlockGraph(grid=(256, 1, 1), forloop_range=4, 2 in, 4 ops, 1 out)"
    assert repr(fused.nodes[-1].op) == "Op.CUSTOMIZED"
    assert repr(fused.tensors[0]) == "TensorType(dims=(16, 4096), dtype=ml.float16, post_loop=False)"


@pytest.mark.parametrize("obj", [
    ml.new_kernel_graph(), ml.new_threadblock_graph(grid_dim=(2, 1, 1)), ml.float32, every_op_graph(),
    every_op_graph().block_graphs[0], every_op_graph().nodes[2], every_op_graph().tensors[0],
], ids=lambda o: type(o).__name__)
def test_no_default_object_reprs(obj: object) -> None:
    text = repr(obj)
    assert " object at 0x" not in text
    assert len(text) < 2000
