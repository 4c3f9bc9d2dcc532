"""The candidate diff on real graphs: hand-written fused vs unfused programs, engine mutants, reference μGraphs."""

from __future__ import annotations

from pathlib import Path

import mirage_lab as ml
from mirage_lab.search.runner import SearchResult
from mirage_lab.verify.mutate import mutants
from mirage_lab.widgets.diff import ABSENT, GraphDiff, align_kernels
from mirage_lab.widgets.diff_roles import KernelGroup, kernel_groups

PHI = -1


def changed(diff: GraphDiff) -> set[tuple[str, str]]:
    return {(r.kernel, r.what) for r in diff.changed_rows}


def small_fused() -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 64), dtype=ml.float16)
    w = g.new_input(dims=(64, 96), dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=(4, 1, 1), forloop_range=4)
    tx = tb.new_input(dtensor=x, input_map=(PHI, PHI, PHI), forloop_dim=1)
    tw = tb.new_input(dtensor=w, input_map=(1, PHI, PHI), forloop_dim=0)
    acc = tb.forloop_accum(tb.matmul(tx, tw))
    tb.new_output(stensor=tb.div(acc, tb.forloop_accum(tx, "rms")), output_map=(1, PHI, PHI))
    (out,) = g.customized([x, w], tb)
    g.mark_output(out)
    return g.freeze()


def test_identical_graphs_are_all_same() -> None:
    diff = GraphDiff(ml.bench.fused.gqa(), ml.bench.fused.gqa(), labels=("a", "b"))
    frame = diff.to_frame()
    assert diff.identical and frame["same"].all() and len(frame) > 20
    assert all(r.tag == "equal" for r in diff.listing) and "identical" in repr(diff)
    assert {"grid", "forloop range", "loader 0 imap", "loader 0 fmap", "saver 0 omap", "block ops", "smem"} \
        <= set(frame["what"])
    diff.set_changed_only(True)
    assert diff.to_frame().empty
    page = diff.to_html()
    assert "mlw-replace" not in page.split("</style>")[1] and "<mark>" not in page


def test_fused_vs_unfused_program_pairs_ops_by_role() -> None:
    fused, plain = ml.bench.fused.rmsnorm(), ml.bench.programs.rmsnorm()
    diff = GraphDiff(fused, plain, labels=("fused", "unfused"))
    assert align_kernels(fused, plain) == [(0, 0), (None, 1)]  # the fallback without expressions
    assert kernel_groups(fused, plain) == [KernelGroup((0,), (0, 1))]
    rows = {(r.kernel, r.what): r for r in diff.rows}
    assert rows["graph", "inputs"].same and rows["graph", "outputs"].same
    assert (rows["graph", "kernels"].left, rows["graph", "kernels"].right) == ("1", "2")
    group = "k0 ↔ k0+k1"
    assert (rows[group, "kernels"].left, rows[group, "kernels"].right) == ("k0 customized", "k0 rms_norm, k1 matmul")
    assert rows[group, "k0 launch"].left.startswith("grid (256, 1, 1)") and rows[group, "k0 launch"].right == ABSENT
    assert (rows[group, "computes rms_norm"].left, rows[group, "computes rms_norm"].right) == \
        ("k0 s2 accum_rms", "k0 rms_norm[normalized_shape=(4096,)]")
    assert rows[group, "computes matmul"].left == "k0 s3 matmul, k0 s4 accum_no_red, k0 s5 div (= its value)"
    assert {r.tag for r in diff.listing} >= {"equal", "replace", "delete"}
    page = diff.to_html()
    assert "<th>fused</th>" in page and "<th>unfused</th>" in page and "rms_norm" in page


def test_program_vs_the_demos_best_shows_few_rows() -> None:
    """The demo's best (a saved search best) against its program: the fusion in a few rows, not 27 of 29."""
    best = ml.load(Path(__file__).parents[2] / "data" / "search_best" / "rmsnorm_bs1.json")
    diff = GraphDiff(ml.bench.programs.rmsnorm(1), best, labels=("program", "best"))
    assert len(diff.rows) <= 12 and len(diff.changed_rows) <= 9
    roles = {r.what: (r.left, r.right) for r in diff.rows if r.what.startswith("computes")}
    assert roles == {"computes rms_norm": ("k0 rms_norm[normalized_shape=(4096,)]", "k0 s2 accum_rms"),
                     "computes matmul": ("k1 matmul", "k0 s3 matmul, k0 s4 accum_no_red, k0 s5 div (= its value)")}
    assert GraphDiff(best, best).identical and GraphDiff(diff.left, ml.bench.programs.rmsnorm(1)).identical


def test_one_imap_changed_shows_exactly_that_row() -> None:
    def square(imap: tuple[int, int, int]) -> ml.KernelGraph:
        g = ml.new_kernel_graph()
        x = g.new_input(dims=(64, 64), dtype=ml.float16)
        tb = ml.new_threadblock_graph(grid_dim=(4, 4, 1), forloop_range=1)
        tx = tb.new_input(dtensor=x, input_map=imap, forloop_dim=PHI)
        tb.new_output(stensor=tb.forloop_accum(tb.exp(tx)), output_map=(0, 1, PHI))
        (out,) = g.customized([x], tb)
        g.mark_output(g.exp(out))
        return g.freeze()

    diff = GraphDiff(square((0, 1, PHI)), square((1, 0, PHI)))
    assert changed(diff) == {("k0", "loader 0 imap")}
    row = diff.changed_rows[0]
    assert (row.left, row.right) == ("(x→0, y→1, z→φ)", "(x→1, y→0, z→φ)")
    assert [r.kernel for r in diff.rows if r.what == "op"] == ["k0", "k1"]


def test_forloop_mutant_flags_the_loop_and_its_tiles() -> None:
    base = small_fused()
    mutant = next(m for m in mutants(base, kinds="forloop_range") if "→ 8" in m.description)
    diff = GraphDiff(base, mutant.graph, labels=("F=4", "F=8"))
    assert changed(diff) == {("graph", "total smem"), ("k0", "forloop range"), ("k0", "smem"),
                             ("k0", "loader 0 tile"), ("k0", "loader 1 tile")}
    row = next(r for r in diff.rows if r.what == "forloop range")
    assert (row.left, row.right) == ("4", "8")
    assert any(r.tag == "replace" and "forloop_range=4" in r.left and "forloop_range=8" in r.right
               for r in diff.listing)
    assert "<mark>4</mark>" in diff.listing_html() and "<mark>8</mark>" in diff.listing_html()


def test_sibling_op_mutant_flags_only_the_block_ops() -> None:
    base = small_fused()
    mutant = next(m for m in mutants(base, kinds="sibling_op") if "div → mul" in m.description)
    diff = GraphDiff(base, mutant.graph)
    assert changed(diff) == {("k0", "block ops")}
    (line,) = [r for r in diff.listing if r.tag != "equal"]
    assert " div " in line.left and " mul " in line.right and line.left_no == line.right_no
    assert diff.labels == ("left", "right") and "1 of" in repr(diff)


def test_maps_and_grids_of_reference_mugraphs(reference_dir: Path) -> None:
    graphs = ml.load_reference_checkpoint(reference_dir / "rmsnorm_bs1.json")
    first, other = graphs[0], next(g for g in graphs[1:] if g.block_graphs[0].grid != graphs[0].block_graphs[0].grid)
    diff = GraphDiff(first, other, labels=("ref 0", "ref k"))
    assert ("k0", "grid") in changed(diff) and ("graph", "inputs") not in changed(diff)
    vs_program = GraphDiff(first, ml.bench.programs.rmsnorm(batch_size=1))
    rows = {(r.kernel, r.what): r for r in vs_program.rows}
    assert rows["k0 ↔ k0+k1", "kernels"].right == "k0 rms_norm, k1 matmul"
    assert rows["k0 ↔ k0+k1", "k0 loads"].right == ABSENT


def test_reference_graphs_with_several_kernels(reference_dir: Path) -> None:
    graphs = ml.load_reference_checkpoint(reference_dir / "gqa_bs1.json")
    diff = GraphDiff(graphs[0], ml.bench.fused.gqa(batch_size=1), labels=("reference", "hand-written"))
    kernels = {r.kernel for r in diff.rows} - {"graph"}
    assert len(kernels) == max(len(graphs[0].compute_nodes), len(ml.bench.fused.gqa().compute_nodes))
    assert diff.to_frame().attrs["labels"] == ("reference", "hand-written")


def test_widget_toggles_changed_rows() -> None:
    base = small_fused()
    mutant = next(m for m in mutants(base, kinds="sibling_op") if "div → mul" in m.description)
    diff = GraphDiff(base, mutant.graph, labels=("div", "mul"))
    header, toggle, table, listing = diff.widget().children
    assert "div ↔ mul" in header.value and table.value.count("<tr") == len(diff.rows) + 1
    toggle.value = True
    assert diff.changed_only and table.value.count("<tr") == 2 and "mlw-replace" in listing.value
    assert "application/vnd.jupyter.widget-view+json" in diff._repr_mimebundle_()


def test_two_search_candidates_are_named_by_their_hashes(small_run: SearchResult) -> None:
    assert len(small_run.candidates) >= 2
    first, other = small_run.candidates[0], small_run.candidates[-1]
    diff = GraphDiff(first, other)
    assert diff.labels == (f"candidate {first.hash[:10]}", f"candidate {other.hash[:10]}")
    assert not diff.identical  # the search dedupes on the canonical hash: distinct candidates differ
    assert GraphDiff(first, first.graph).identical
