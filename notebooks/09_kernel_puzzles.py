# %% [markdown]
# # 09 · Kernel puzzles the verifier grades
#
# Twelve puzzles, from copying a tile to attention with online softmax. Each gives a program (whole-tensor ops)
# and goals ("one custom kernel", "a for-loop of at least 2"); you build a μGraph with the usual builders and
# `ml.puzzles.check(name, graph)` grades it:
#
# * **equal values** are decided by the verifier (`ml.verify`: finite-field trials with a stated error bound, and
#   a float64 check), so any correct grid and for-loop passes and a wrong graph never does;
# * a wrong graph gets a **witness** — a small input and the output elements that differ, expected beside got —
#   and an **explanation** in your terms: a shape or map error, a goal not met, or the oracle's reason;
# * `result.hint(1)` … `hint(3)` give graded hints.
#
# Below: a worked example, a wrong attempt and what the checker says, then a skeleton per puzzle. Fill in a
# skeleton (return your graph instead of `None`) and run its cell. At the end, the tile-access view shows which
# part of each tensor one block of your kernel reads at each iteration.
#
# (When the tests run this notebook, their kernel sets `MIRAGE_LAB_PUZZLE_SOLUTIONS=1` and an empty skeleton
# takes the teacher's solution, so that every cell is exercised; you never need it.)

# %%
import os

import pandas as pd
from IPython.display import display

import mirage_lab as ml
import mirage_lab.widgets as mw

PHI = -1  # φ: a map entry that partitions no dim (replicated), or "no for-loop dim"
SOLVED = os.environ.get("MIRAGE_LAB_PUZZLE_SOLUTIONS") == "1"
results = {}


def attempt(name, build):
    """Your graph for ``name`` (``build()``), or the teacher's solution when the tests run this notebook."""
    graph = build()
    if graph is None and SOLVED:
        graph = ml.puzzles.solution(name)
    return graph


def grade(name, build):
    """Check your attempt at ``name`` and keep the result for the summary at the end."""
    results[name] = ml.puzzles.check(name, attempt(name, build))
    return results[name]


pd.DataFrame([{"puzzle": n, "title": ml.puzzles.get(n).title,
               "inputs": ", ".join(ml.puzzles.get(n).input_lines()),
               "goals": "; ".join(g.text for g in ml.puzzles.get(n).goals)} for n in ml.puzzles.names()])

# %% [markdown]
# ## A worked example: copy a tile
#
# The program is the identity on `X: f16[8, 64]`. One custom kernel: a grid of 2 blocks, each loading the rows
# it owns (`input_map=(0, PHI, PHI)`: grid x partitions dim 0), and saving them where they came from
# (`output_map`). The for-loop runs once; `forloop_accum` passes its single tile through.

# %%
print(ml.puzzles.get("copy_tile"))


def copy_tile():
    g = ml.new_kernel_graph()
    X = g.new_input(dims=(8, 64), dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=(2, 1, 1), forloop_range=1)
    tx = tb.new_input(dtensor=X, input_map=(0, PHI, PHI), forloop_dim=PHI)
    tb.new_output(stensor=tb.forloop_accum(tx), output_map=(0, PHI, PHI))
    (out,) = g.customized([X], tb)
    g.mark_output(out)
    return g


grade("copy_tile", copy_tile)

# %% [markdown]
# ## A wrong attempt, and what the checker says
#
# Row sums: `O[i] = Σ_j X[i, j]`. This attempt loops over the columns (`forloop_dim=1`) but accumulates with
# `"mean"`, which divides by the count. The checker finds the values differ, shows a witness (a small input and
# the output elements that differ) and says where to look.

# %%
def row_sums_wrong():
    g = ml.new_kernel_graph()
    X = g.new_input(dims=(8, 64), dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=(2, 1, 1), forloop_range=4)
    tx = tb.new_input(dtensor=X, input_map=(0, PHI, PHI), forloop_dim=1)
    tb.new_output(stensor=tb.forloop_accum(tx, "mean"), output_map=(0, PHI, PHI))
    (out,) = g.customized([X], tb)
    g.mark_output(out)
    return g


wrong = ml.puzzles.check("row_sums", row_sums_wrong)
print(wrong.explanation)
print(wrong.hint(1))
wrong

# %% [markdown]
# ## The puzzles
#
# Each skeleton declares the program's inputs; build your custom kernel(s) and `return g`. Run the cell to grade
# it. `print(ml.puzzles.get(name))` shows the statement, the program and the goals; `ml.puzzles.hint(name, 1)`
# a hint.

# %% [markdown]
# ### add_bias: broadcast a row

# %%
print(ml.puzzles.get("add_bias"))


def add_bias():
    g = ml.new_kernel_graph()
    X = g.new_input(dims=(8, 64), dtype=ml.float16)
    B = g.new_input(dims=(1, 64), dtype=ml.float16)
    # your kernel: tb = ml.new_threadblock_graph(...); tb.new_input(...); ...; g.customized([...], tb)
    return None  # return g once it is built


grade("add_bias", add_bias)

# %% [markdown]
# ### row_sums: sum along the for-loop

# %%
print(ml.puzzles.get("row_sums"))


def row_sums():
    g = ml.new_kernel_graph()
    X = g.new_input(dims=(8, 64), dtype=ml.float16)
    # your kernel: tb = ml.new_threadblock_graph(...); tb.new_input(...); ...; g.customized([...], tb)
    return None  # return g once it is built


grade("row_sums", row_sums)

# %% [markdown]
# ### column_sums: sum across rows

# %%
print(ml.puzzles.get("column_sums"))


def column_sums():
    g = ml.new_kernel_graph()
    X = g.new_input(dims=(8, 64), dtype=ml.float16)
    # your kernel: tb = ml.new_threadblock_graph(...); tb.new_input(...); ...; g.customized([...], tb)
    return None  # return g once it is built


grade("column_sums", column_sums)

# %% [markdown]
# ### rms_norm: a whole row per block

# %%
print(ml.puzzles.get("rms_norm"))


def rms_norm():
    g = ml.new_kernel_graph()
    X = g.new_input(dims=(8, 64), dtype=ml.float16)
    # your kernel: tb = ml.new_threadblock_graph(...); tb.new_input(...); ...; g.customized([...], tb)
    return None  # return g once it is built


grade("rms_norm", rms_norm)

# %% [markdown]
# ### matmul_loop: a matmul with a for-loop and an accumulator

# %%
print(ml.puzzles.get("matmul_loop"))


def matmul_loop():
    g = ml.new_kernel_graph()
    X = g.new_input(dims=(8, 64), dtype=ml.float16)
    W = g.new_input(dims=(64, 32), dtype=ml.float16)
    # your kernel: tb = ml.new_threadblock_graph(...); tb.new_input(...); ...; g.customized([...], tb)
    return None  # return g once it is built


grade("matmul_loop", matmul_loop)

# %% [markdown]
# ### rms_norm_linear: RMSNorm and Linear in one kernel

# %%
print(ml.puzzles.get("rms_norm_linear"))


def rms_norm_linear():
    g = ml.new_kernel_graph()
    X = g.new_input(dims=(8, 64), dtype=ml.float16)
    W = g.new_input(dims=(64, 32), dtype=ml.float16)
    # your kernel: tb = ml.new_threadblock_graph(...); tb.new_input(...); ...; g.customized([...], tb)
    return None  # return g once it is built


grade("rms_norm_linear", rms_norm_linear)

# %% [markdown]
# ### gated_mlp: gated MLP

# %%
print(ml.puzzles.get("gated_mlp"))


def gated_mlp():
    g = ml.new_kernel_graph()
    X = g.new_input(dims=(8, 64), dtype=ml.float16)
    W1 = g.new_input(dims=(64, 32), dtype=ml.float16)
    W2 = g.new_input(dims=(64, 32), dtype=ml.float16)
    # your kernel: tb = ml.new_threadblock_graph(...); tb.new_input(...); ...; g.customized([...], tb)
    return None  # return g once it is built


grade("gated_mlp", gated_mlp)

# %% [markdown]
# ### lora: LoRA

# %%
print(ml.puzzles.get("lora"))


def lora():
    g = ml.new_kernel_graph()
    X = g.new_input(dims=(8, 64), dtype=ml.float16)
    W = g.new_input(dims=(64, 32), dtype=ml.float16)
    A = g.new_input(dims=(64, 8), dtype=ml.float16)
    B = g.new_input(dims=(8, 32), dtype=ml.float16)
    # your kernel: tb = ml.new_threadblock_graph(...); tb.new_input(...); ...; g.customized([...], tb)
    return None  # return g once it is built


grade("lora", lora)

# %% [markdown]
# ### softmax: softmax along rows

# %%
print(ml.puzzles.get("softmax"))


def softmax():
    g = ml.new_kernel_graph()
    X = g.new_input(dims=(8, 64), dtype=ml.float16)
    # your kernel: tb = ml.new_threadblock_graph(...); tb.new_input(...); ...; g.customized([...], tb)
    return None  # return g once it is built


grade("softmax", softmax)

# %% [markdown]
# ### attention_split: attention with a split sequence

# %%
print(ml.puzzles.get("attention_split"))


def attention_split():
    g = ml.new_kernel_graph()
    Q = g.new_input(dims=(2, 8, 16), dtype=ml.float16)
    K = g.new_input(dims=(2, 16, 64), dtype=ml.float16)
    V = g.new_input(dims=(2, 64, 16), dtype=ml.float16)
    # your kernel: tb = ml.new_threadblock_graph(...); tb.new_input(...); ...; g.customized([...], tb)
    return None  # return g once it is built


grade("attention_split", attention_split)

# %% [markdown]
# ### attention_online: attention with online softmax

# %%
print(ml.puzzles.get("attention_online"))


def attention_online():
    g = ml.new_kernel_graph()
    Q = g.new_input(dims=(2, 8, 16), dtype=ml.float16)
    K = g.new_input(dims=(2, 16, 64), dtype=ml.float16)
    V = g.new_input(dims=(2, 64, 16), dtype=ml.float16)
    # your kernel: tb = ml.new_threadblock_graph(...); tb.new_input(...); ...; g.customized([...], tb)
    return None  # return g once it is built


grade("attention_online", attention_online)

# %% [markdown]
# ## What one block touches: the tile-access view
#
# Your RMSNorm+Linear kernel (the teacher's, if you left it empty): pick a block and move the slider over the
# for-loop's iterations. Each input is drawn as a grid of tiles with the one this block reads at that iteration;
# the output with what it writes after the loop; the table gives each tile's bytes, its contiguous runs and the
# block's shared memory.

# %%
mine = attempt("rms_norm_linear", rms_norm_linear)
if mine is None:
    print("build rms_norm_linear above to see which tiles its blocks read")
else:
    display(mw.TileAccessView(mine, block=(1, 0, 0), iteration=1))

# %% [markdown]
# ## Your scores

# %%
summary = pd.DataFrame([{"puzzle": n, "passed": r.passed, "says": r.explanation.splitlines()[0]}
                        for n, r in results.items()])
if SOLVED:  # the tests' run: every teacher's solution passes
    assert summary["passed"].all(), summary[~summary["passed"]]
summary
