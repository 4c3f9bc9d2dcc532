"""The tile-access view (issue 39): which indices one block reads and writes, its numbers and its errors.

The ranges are checked against the interpreter end to end: a kernel that sums its loader's tiles over the
for-loop and saves the sum must hold, at the indices the view says block b writes, the sum of the inputs at the
indices the view says b reads at each iteration."""

from __future__ import annotations

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.errors import InputError
from mirage_lab.widgets import TileAccess, TileAccessView
from mirage_lab.widgets.tile_access import Access
from mirage_lab.widgets.viewer import MuGraphViewer

PHI = -1

# (input dims, grid, imap, fmap, for-loop, omap)
MAPS = {
    "imap x, fmap 1, loop 4": ((8, 16), (2, 1, 1), (0, PHI, PHI), 1, 4, (0, PHI, PHI)),
    "imap y, fmap 0, loop 4": ((8, 16), (1, 2, 1), (PHI, 1, PHI), 0, 4, (PHI, 1, PHI)),
    "imap x and y on two dims": ((12, 8), (2, 3, 1), (1, 0, PHI), PHI, 2, (1, 0, PHI)),
    "replicated φ, loop 4": ((8, 16), (2, 1, 1), (PHI, PHI, PHI), 1, 4, (0, PHI, PHI)),
    "fmap φ, loop 4": ((8, 16), (2, 2, 1), (0, 1, PHI), PHI, 4, (0, 1, PHI)),
    "rank 3, imap z": ((4, 6, 8), (1, 1, 2), (PHI, PHI, 0), 2, 4, (PHI, PHI, 0)),
}


def summing_kernel(dims: tuple[int, ...], grid: tuple[int, int, int], imap: tuple[int, int, int], fmap: int,
                   loop: int, omap: tuple[int, int, int]) -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=dims, dtype=ml.float32)
    tb = ml.new_threadblock_graph(grid_dim=grid, forloop_range=loop)
    tb.new_output(stensor=tb.forloop_accum(tb.new_input(dtensor=x, input_map=imap, forloop_dim=fmap)), output_map=omap)
    (out,) = g.customized([x], tb)
    g.mark_output(out)
    return g.freeze()


def _at(a: np.ndarray, ranges: tuple[range, ...]) -> np.ndarray:
    return a[tuple(slice(r.start, r.stop) for r in ranges)]


@pytest.mark.parametrize("case", MAPS)
def test_the_ranges_are_what_the_interpreter_reads_and_writes(case: str) -> None:
    dims, grid, imap, fmap, loop, omap = MAPS[case]
    graph = summing_kernel(dims, grid, imap, fmap, loop, omap)
    x = np.random.default_rng(0).standard_normal(dims)
    (out,) = ml.interpret(graph, [x])
    for block in np.ndindex(*grid):
        sums = []
        for i in range(loop):
            read, written = TileAccess(graph, block=block, iteration=i).accesses()
            sums.append(_at(x, read.ranges))
        assert read.role == "read" and written.role == "write"
        np.testing.assert_allclose(_at(np.asarray(out), written.ranges), sum(sums), rtol=1e-9)


def test_the_rmsnorm_kernel_at_iteration_1() -> None:
    view = TileAccess(fused.rmsnorm(1), block=(3, 0, 0), iteration=1)
    f = view.to_frame().set_index("tensor")
    assert f.loc["d0", "indices"] == "0:2, 128:256"  # X is replicated (imap φ), cut by the loop on dim 1
    assert f.loc["d1", "indices"] == "128:256, 72:96"  # W: block 3's 24 columns, the loop's 2nd 128 rows
    assert f.loc["d2", "indices"] == "0:2, 72:96" and f.loc["d2", "when"] == "after the for-loop"
    assert list(f["tile"]) == ["2×128", "128×24", "2×24"]
    assert list(f["bytes"]) == [2 * 128 * 2, 128 * 24 * 2, 2 * 24 * 2]
    assert list(f["contiguous bytes"]) == [256, 48, 48] and list(f["segments"]) == [2, 128, 2]
    assert view.smem_bytes == ml.ir.smem_bytes(view.bg) > 0 and view.smem_capacity == 223 * 1024
    assert "block (3, 0, 0), iteration 1" in repr(view) and "grid (256, 1, 1)" in repr(view)


def test_contiguous_runs_follow_the_strides() -> None:
    def access(tile: tuple[int, ...], strides: tuple[int, ...]) -> Access:
        dims = (8, 16)
        return Access("read", "d0", dims, strides, "f16", 2, tuple(range(t) for t in tile), (), "")

    assert access((4, 4), (16, 1)).run_elements == 4  # row-major: a row of the tile
    assert access((4, 16), (16, 1)).run_elements == 64  # whole rows: the tile is one run
    assert access((4, 4), (1, 8)).run_elements == 4  # column-major: a column of the tile
    assert access((8, 4), (1, 8)).run_elements == 32 and access((8, 4), (1, 8)).segments == 1
    assert access((4, 4), (32, 2)).run_elements == 1  # no unit-stride dim


def test_a_strided_program_input_is_read_in_its_layout() -> None:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 16), strides=(1, 8), dtype=ml.float16)  # column-major
    tb = ml.new_threadblock_graph(grid_dim=(2, 1, 1), forloop_range=4)
    tb.new_output(stensor=tb.forloop_accum(tb.new_input(dtensor=x, input_map=(0, PHI, PHI), forloop_dim=1)),
                  output_map=(0, PHI, PHI))
    (out,) = g.customized([x], tb)
    g.mark_output(out)
    f = TileAccess(g, block=(1, 0, 0), iteration=2).to_frame()
    assert f["indices"].tolist() == ["4:8, 8:12", "4:8, 0:4"]
    # the input: a tile column of 4 (column-major); the output (8×4, dense): whole rows, one run of 4×4
    assert f["contiguous bytes"].tolist() == [4 * 2, 16 * 2] and f["segments"].tolist() == [4, 1]


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"kernel": 1}, "kernel=1 is out of range: the graph has 1 custom kernel"),
    ({"block": (256, 0, 0)}, "block (256, 0, 0) is outside the grid (256, 1, 1)"),
    ({"block": (0, 1, 0)}, "0 ≤ y < 1"),
    ({"iteration": 32}, "iteration 32 is outside the for-loop range 32; pick 0 … 31"),
    ({"iteration": -1}, "outside the for-loop range"),
])
def test_bad_input_names_the_problem_and_the_fix(kwargs: dict, words: str) -> None:
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")):
        TileAccess(fused.rmsnorm(1), **kwargs)


def test_a_graph_without_custom_kernels_is_refused() -> None:
    with pytest.raises(InputError, match=r"no custom kernels.*fused graph"):
        TileAccess(programs.rmsnorm(1))


def test_the_static_html_holds_one_drawing_per_tensor_and_the_numbers() -> None:
    view = TileAccessView(fused.gated_mlp(1), block=(5, 0, 0), iteration=3)
    page = view.to_html()
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" class="mta-tensor"') == 4  # x, w1, w2, out
    assert page.count('class="mta-tile" data-iteration="3">') == 3  # each loader's tile at iteration 3, shown
    assert page.count('class="mta-tile" data-iteration="4" style="display:none"') == 3
    assert 'data-iteration="all"' in page  # the saver's tile, the same at every iteration
    assert "<table" in page and "192:256, 160:192" in page and "block (5, 0, 0)" in page
    data, _ = view._repr_mimebundle_()
    assert data["text/html"] == page and "application/vnd.jupyter.widget-view+json" in data


def test_the_pickers_move_the_view_and_a_bad_pick_keeps_it() -> None:
    view = TileAccessView(fused.rmsnorm(1), block=(3, 0, 0), iteration=1)
    view.iteration = 5
    assert "640:768, 72:96" in view.body and view.message == ""
    view.block = [300, 0, 0]  # what a picker past the grid sends
    assert "outside the grid" in view.message and "640:768, 72:96" in view.body
    view.show(block=(4, 0, 0), iteration=0)
    assert view.model.block == (4, 0, 0) and "0:128, 96:120" in view.body and view.message == ""
    with pytest.raises(InputError, match="iteration 40"):
        view.show(iteration=40)
    assert view.iteration == 0
    with pytest.raises(ml.errors.ArgumentError, match="unknown keyword"):
        TileAccessView(fused.rmsnorm(1), blok=(1, 0, 0))


def test_the_viewer_opens_the_tile_access_of_its_open_kernel() -> None:
    graph = fused.rmsnorm(1)
    viewer = MuGraphViewer(graph)
    first = viewer.tile_access(block=(1, 0, 0), iteration=2)  # at the kernel level: the first custom kernel
    assert first.model.kernel == 0 and first.model.block == (1, 0, 0) and first.model.iteration == 2
    custom = next(k for k, n in enumerate(graph.nodes) if n.body is not None)
    viewer.click(f"n{custom}")
    assert viewer.tile_access().model.node_index == custom
