# %% [markdown]
# # 02 · Anatomy of a μGraph: imap, fmap, omap, the for-loop and accumulators
#
# A μGraph has three levels. The **kernel graph** is what the host launches: library kernels (a matmul, an
# elementwise op) and *custom* kernels. A custom kernel is described by a **block graph**: the program that
# every thread block of its grid runs, on tiles held in shared memory. (The third level, thread graphs, is
# derived by rules during code generation: the viewer shows them as dashed chains.)
#
# What makes a block graph more than "a small program" is how it is **wired to device memory**:
#
# | word | per | says |
# |---|---|---|
# | **imap** | input | per grid axis x, y, z: the data dim the blocks along it split, or φ (every block reads all) |
# | **fmap** | input | which data dim advances one tile per for-loop iteration, or φ (the same tile every iteration) |
# | **F** | block graph | how many for-loop iterations every block runs |
# | **omap** | output | for each grid axis: along which data dim the blocks' result tiles are laid side by side |
#
# and **accumulators**, the only ops that carry a value from one iteration to the next. This notebook builds
# one block graph by hand, draws it, runs it with the interpreter (`ml.interpret`), and breaks it on purpose.

# %%
from pathlib import Path

import numpy as np
import pandas as pd
from IPython.display import HTML, display

import mirage_lab as ml
from mirage_lab import widgets as mw
from mirage_lab.semantics.interpret import load_tiles
from mirage_lab.widgets import draw
from mirage_lab.widgets.svg import render_svg
from mirage_lab.widgets.tiling import block_tilings_html

ROOT = next(p for p in [Path.cwd(), *Path.cwd().parents] if (p / "pyproject.toml").is_file())
PHI = -1  # φ: "no data dim"
rng = np.random.default_rng(0)

# %% [markdown]
# ## 1 · The program, and the fused μGraph written by hand
#
# RMSNorm + Linear again, with a square weight so that one of our mistakes later stays shape-correct:
# `O = rms_norm(X) @ W`, X `[4, 256]`, W `[256, 256]`.

# %%
M, K, N = 4, 256, 256


def unfused() -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(M, K), dtype=ml.float16)
    w = g.new_input(dims=(K, N), dtype=ml.float16)
    g.mark_output(g.matmul(g.rms_norm(x, normalized_shape=(K,)), w))
    return g.freeze()


program = unfused()
print(program)

# %% [markdown]
# The fused kernel: a grid of 4 blocks along x, each owning a 64-wide slab of O's columns, and a for-loop of
# F = 4 iterations that walks the shared dimension K in chunks of 64.
#
# * X: `imap = (φ, φ, φ)` — every block needs every row of X; `fmap = 1` — iteration i reads columns
#   `[64·i, 64·i + 64)`. Tile `[4, 64]`.
# * W: `imap = (1, φ, φ)` — grid x splits W's dim 1 (columns) into 4; `fmap = 0` — iteration i reads rows
#   `[64·i, 64·i + 64)`. Tile `[64, 64]`.
# * the block computes `matmul` of the two tiles each iteration and **accumulates** the products
#   (`accum_no_red`: a plain running sum), while `accum_rms` accumulates `Σ x²` over the same X tiles and
#   takes `sqrt(Σ / (F·64))` after the last iteration;
# * after the loop (post-loop ops run once): `div`, and a saver with `omap = (1, φ, φ)`: block b's `[4, 64]`
#   result lands in columns `[64·b, 64·b + 64)` of O.

# %%
def fused(grid=(4, 1, 1), F=4, x_imap=(PHI, PHI, PHI), x_fmap=1, w_imap=(1, PHI, PHI), w_fmap=0,
          omap=(1, PHI, PHI)) -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(M, K), dtype=ml.float16)
    w = g.new_input(dims=(K, N), dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=grid, forloop_range=F)
    tx = tb.new_input(dtensor=x, input_map=x_imap, forloop_dim=x_fmap)
    tw = tb.new_input(dtensor=w, input_map=w_imap, forloop_dim=w_fmap)
    rms = tb.forloop_accum(tx, "rms")
    acc = tb.forloop_accum(tb.matmul(tx, tw))
    tb.new_output(stensor=tb.div(acc, rms), output_map=omap)
    (o,) = g.customized([x, w], tb)
    g.mark_output(o)
    return g.freeze()


good = fused()
print(good)

# %% [markdown]
# Read the listing's block: each loader's tile shape follows from the rule *divide the dim an imap entry
# names by that axis's grid size, then divide the fmap's dim by F* (SPEC §3.2). `ᵖ` marks post-loop tensors.
# The same graph drawn: loaders in blue, accumulators and post-loop ops marked, tensors labelled with their
# tile shapes.

# %%
bg = good.block_graphs[0]
display(HTML(render_svg(draw.block_dot(bg, "block graph (one thread block)", inputs=["X", "W"], outputs=["O"]))))

# %% [markdown]
# ## 2 · What each block loads
#
# **Tiling cards** draw each loader and saver on the shape of its device tensor: solid lines are the grid's
# cuts (x red, y green, z blue), dashed lines the for-loop's; block (0,0,0)'s tile at iteration 0 is dark,
# and what it sweeps over the loop is light.

# %%
display(HTML(block_tilings_html(bg, ["X", "W"], ["O"])))

# %% [markdown]
# The interpreter's loader (`load_tiles`) turns a device tensor into a view indexed
# `[grid x, grid y, grid z, iteration, *tile]` (an axis of length 1 where the tile does not depend on it).
# Feed it a tensor whose entries are their own flat positions and
# it tells us exactly which rows and columns every block reads at every iteration:

# %%
def reads(bg, which: int, dims: tuple[int, ...], blocks=None) -> pd.DataFrame:
    """Rows and columns of input ``which`` that each block reads at each iteration."""
    tiles = load_tiles(np.arange(np.prod(dims)).reshape(dims), bg.loaders[which], bg)
    # axes of length 1 (φ, or no fmap) mean "the same tile for every block / iteration"
    tiles = np.broadcast_to(tiles, (*bg.grid, bg.forloop_range, *tiles.shape[4:]))
    rows = []
    for bx, by, bz in blocks or np.ndindex(*bg.grid):
        for i in range(tiles.shape[3]):
            r, c = np.divmod(tiles[bx, by, bz, i], dims[1])
            rows.append({"block": f"({bx},{by},{bz})", "iteration": i, "rows": f"{r.min()}–{r.max()}",
                         "cols": f"{c.min()}–{c.max()}", "elements": r.size})
    return pd.DataFrame(rows)


w_reads = reads(bg, 1, (K, N), blocks=[(0, 0, 0), (1, 0, 0)])
w_reads

# %% [markdown]
# Block 1 walks down W's rows (fmap = 0) inside its own column slab (imap x → 1); X is read the same way by
# every block (imap all φ), one column chunk per iteration:

# %%
x_reads = reads(bg, 0, (M, K), blocks=[(0, 0, 0), (3, 0, 0)])
x_reads

# %%
assert list(w_reads[w_reads["block"] == "(1,0,0)"]["cols"]) == ["64–127"] * 4  # imap: the block's own columns
assert list(w_reads["rows"][:4]) == ["0–63", "64–127", "128–191", "192–255"]  # fmap: one chunk per iteration
assert (x_reads.query("iteration == 2")["cols"] == "128–191").all()  # every block reads the same X tile

# %% [markdown]
# ## 3 · Run it: the fused graph computes the program
#
# `ml.interpret` runs every block and every iteration (vectorised over both), with exactly these index
# rules, in float64. The fused graph and the unfused program agree to rounding:

# %%
x, w = rng.standard_normal((M, K)), rng.standard_normal((K, N))
(want,) = ml.interpret(program, [x, w])
(got,) = ml.interpret(good, [x, w])
print("max |fused − program| =", np.abs(got - want).max())
assert np.allclose(got, want)

# %% [markdown]
# The viewer shows the same graph interactively: click the custom kernel to see its block graph, its tiling
# cards, and for each node the shapes, the phase (in the loop or after it) and the abstract expression.

# %%
mw.MuGraphViewer(good)

# %% [markdown]
# ## 4 · Accumulators and the for-loop, one at a time
#
# Inside the loop every tensor is recomputed each iteration; only accumulators persist. Each kind reduces
# differently (SPEC §3.3); with x_i the tile at iteration i and n its last dim:
#
# | kind | builder | result |
# |---|---|---|
# | NO_RED | `forloop_accum(t)` | `Σ_i x_i` (same shape as a tile) |
# | SUM | `forloop_accum(t, "sum")` | `Σ_i Σ_j x_i[..., j]` (last dim → 1) |
# | MEAN | `forloop_accum(t, "mean")` | SUM / (F·n) |
# | RMS | `forloop_accum(t, "rms")` | `sqrt(Σ_i Σ_j x_i[..., j]² / (F·n))` |
#
# Check each against numpy on one block that loops over X's columns (F = 4, tile `[4, 64]`):

# %%
def one_accumulator(kind: str | None) -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    xx = g.new_input(dims=(M, K), dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=(1, 1, 1), forloop_range=4)
    t = tb.new_input(dtensor=xx, input_map=(PHI, PHI, PHI), forloop_dim=1)
    tb.new_output(stensor=tb.forloop_accum(t, kind), output_map=(PHI, PHI, PHI))
    (o,) = g.customized([xx], tb)
    g.mark_output(o)
    return g.freeze()


chunks = x.reshape(M, 4, K // 4)  # chunks[:, i] is the tile of iteration i
expected = {None: chunks.sum(axis=1), "sum": x.sum(axis=1, keepdims=True), "mean": x.mean(axis=1, keepdims=True),
            "rms": np.sqrt((x**2).mean(axis=1, keepdims=True))}
rows = []
for kind, want_acc in expected.items():
    (out,) = ml.interpret(one_accumulator(kind), [x])
    rows.append({"accumulator": kind or "no_red", "output shape": out.shape,
                 "matches numpy": bool(np.allclose(out, want_acc))})
accums = pd.DataFrame(rows)
assert accums["matches numpy"].all()
accums

# %% [markdown]
# Note RMS divides by **F·n** (all 256 columns), not by the tile's 64: that is what makes
# `accum_rms` over the loop equal to the row's RMS, and the fused graph correct.

# %% [markdown]
# ## 5 · A second grid axis, and an omap with two entries
#
# Split the rows too: grid `(4, 2, 1)`, with X's imap sending **y** to dim 0 (each y-block takes 2 of the
# 4 rows) and the omap sending x → dim 1, y → dim 0, so the 8 result tiles `[2, 64]` tile O in two
# directions. Same function, twice the blocks:

# %%
two_d = fused(grid=(4, 2, 1), x_imap=(PHI, 0, PHI), omap=(1, 0, PHI))
bg2 = two_d.block_graphs[0]
display(HTML(block_tilings_html(bg2, ["X", "W"], ["O"])))
(got2,) = ml.interpret(two_d, [x, w])
assert np.allclose(got2, want)
reads(bg2, 0, (M, K), blocks=[(0, 0, 0), (0, 1, 0)]).query("iteration == 0")

# %% [markdown]
# ## 6 · What goes wrong with a wrong map
#
# **A map that breaks a shape rule** never becomes a graph: the builder checks every rule as ops are added and
# says which one failed. Here W's grid axis splits dim 0 instead of dim 1, so W's tile is `[16, 256]` and
# cannot be multiplied with X's `[4, 64]`:

# %%
try:
    fused(w_imap=(0, PHI, PHI))
    raise AssertionError("the builder should have rejected this map")
except ml.MirageError as e:
    print(type(e).__name__, "—", e)

# %% [markdown]
# **A wrong omap** can also change an output's shape: with x → dim 0 the four `[4, 64]` tiles are stacked
# vertically into a `[16, 64]` tensor. The graph is valid, but it cannot be the program: the verifier rejects
# it before evaluating anything, because no output has the program's type.

# %%
stacked = fused(omap=(0, PHI, PHI))
print("output type:", stacked.output_types[0], "— the program's:", program.output_types[0])
r = ml.verify(stacked, program)
print(r.summary())
assert not r.equivalent

# %% [markdown]
# **The dangerous mistake keeps every shape right.** Exchange W's imap and fmap dims (x → dim 0, fmap 1): the
# tile is still `[64, 64]`, so everything builds and runs. But block b at iteration i now reads W's tile at
# *(row-chunk b, column-chunk i)* instead of *(i, b)*: it multiplies by W transposed tile by tile.

# %%
swapped = fused(w_imap=(0, PHI, PHI), w_fmap=1)
print(dict(swapped.block_graphs[0].loaders[1].attrs))
reads(swapped.block_graphs[0], 1, (K, N), blocks=[(1, 0, 0)])

# %%
(bad,) = ml.interpret(swapped, [x, w])
rel = np.abs(bad - want).max() / np.abs(want).max()
print(f"max relative error of the swapped graph: {rel:.2f}")
assert rel > 0.1

# %% [markdown]
# The interpreter exposes it on the first random input, and so does the verifier, with a *witness*: the first
# output element where the two graphs differ over the finite field (notebook 04 explains the field).

# %%
verdict = ml.verify(swapped, program)
assert not verdict.equivalent and verdict.witness is not None
print(verdict.summary())
mw.GraphDiff(good, swapped, labels=("correct", "W read transposed"))

# %% [markdown]
# The diff pins the change to one loader's imap and fmap — two numbers in a graph that otherwise looks right.
# This is why the search never trusts a candidate's shape: every complete graph is verified.
#
# **Next:** notebook 03 walks a real search through thousands of such decisions.
