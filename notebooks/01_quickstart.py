# %% [markdown]
# # 01 · Quickstart: from an unfused program to a verified, fused CUDA kernel
#
# Mirage is a *superoptimizer* for tensor programs. You give it a small program written with whole-tensor ops
# (matmul, rms_norm, exp, …). It searches for **μGraphs**: kernel graphs whose kernels may be *custom*
# kernels, each described by a **block graph** (what one thread block does, tile by tile). It checks every
# candidate for equivalence with your program over finite fields and ranks the survivors with a cost model.
#
# This notebook runs that pipeline end to end on the classic example, **RMSNorm followed by a Linear layer**:
#
# 1. write the program with the builder API;
# 2. let `ml.superoptimize` *discover* the fused μGraph (nobody tells it the answer);
# 3. look at it (text listing and the interactive `MuGraphViewer`);
# 4. check it (`ml.verify`, and plain floating point);
# 5. turn it into CUDA (`ml.generate_cuda`) and, if `nvcc` is installed, compile it.
#
# Everything here runs on a CPU in a few seconds.

# %%
from pathlib import Path

import numpy as np
import pandas as pd
from IPython.display import HTML, display

import mirage_lab as ml
from mirage_lab import widgets as mw

ROOT = next(p for p in [Path.cwd(), *Path.cwd().parents] if (p / "pyproject.toml").is_file())
OUT = ROOT / "reports" / "notebooks"  # git-ignored: anything this notebook writes goes here
OUT.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(0)
print("repository:", ROOT)

# %% [markdown]
# ## 1 · The program
#
# `O = rms_norm(X) @ W`, where `rms_norm(x) = x / sqrt(mean(x²))` over each row. In the paper X is
# `[2, 4096]` and W is `[4096, 6144]`; we shrink both so that the search takes seconds on a laptop
# (notebook 03 walks a recorded search at the paper's shape). The builder records ops; `freeze()` turns it
# into an immutable, hashable `KernelGraph`, printed as a jaxpr-like listing.

# %%
M, K, N = 2, 256, 512
b = ml.new_kernel_graph()
X = b.new_input(dims=(M, K), dtype=ml.float16)
W = b.new_input(dims=(K, N), dtype=ml.float16)
b.mark_output(b.matmul(b.rms_norm(X, normalized_shape=(K,)), W))
program = b.freeze()
print(program)

# %% [markdown]
# Two kernels: one normalises X and writes it back to device memory, the next reads it again for the matmul.
# `ml.interpret` is the reference semantics of the IR (numpy, float64 by default). Check it against the
# formula written directly in numpy:

# %%
x, w = rng.standard_normal((M, K)), rng.standard_normal((K, N))
(plain,) = ml.interpret(program, [x, w])
by_hand = (x / np.sqrt((x**2).mean(axis=1, keepdims=True))) @ w
print("max |interpret − numpy| =", np.abs(plain - by_hand).max())
assert np.allclose(plain, by_hand)

# %% [markdown]
# ## 2 · Superoptimize it
#
# `ml.superoptimize(program, config)` enumerates μGraphs depth first: kernel ops, then custom kernels
# (a grid, a for-loop, how each input is tiled), then block ops inside them. Prefixes that cannot grow into
# the program are pruned by an *abstract-expression oracle*; complete graphs are verified.
#
# The `"mlp"` preset searches a large space. We narrow it to one for-loop length, one grid divisor and the
# block ops this program plausibly needs (plus `exp`, a distractor the oracle must reject). `run_dir=False`
# keeps nothing on disk; with a folder, the run would also be cached and explorable (notebook 03).

# %%
config = ml.search.preset("mlp", forloop_ranges=(4,), grid_divisors=(8,),
                          block_ops=("matmul", "exp", "div", "accum_no_red", "accum_rms"), max_block_ops=6,
                          kernel_ops=("matmul", "exp", "customized"))
res = ml.superoptimize(program, config, executor="serial", run_dir=False, progress=False)
res

# %% [markdown]
# The report says why the search stopped and how many branches each rule cut. Most prefixes die on cheap
# structural rules (shapes, phases, ordering); the `oracle` row counts prefixes whose abstract expression is
# not a subexpression of the program's — they could never become `rms_norm(X) @ W`.

# %%
rep = res.report
pd.DataFrame(sorted(rep.pruned.items(), key=lambda kv: -kv[1]), columns=["pruned because", "branches"])

# %%
assert rep.stop_reason == "complete" and rep.verified == len(res.candidates) >= 1
res.to_frame()

# %% [markdown]
# ## 3 · The fused μGraph it found
#
# Every candidate is ranked by a proxy cost (bytes moved and work per block). The best one is a **single
# custom kernel**: it reads X and W once and writes O once. The listing shows its block graph:
#
# * two loaders (`load[imap=…, fmap=…]`): which tile of each input a block reads (notebook 02 explains imap
#   and fmap);
# * `accum_rms` accumulates the row norm of X while `matmul` + `accum_no_red` accumulate `X·W` over the
#   for-loop — the normalisation is *moved after the matmul*: `rms_norm(X) @ W = (X @ W) / rms(X)`;
# * a `div` after the loop (marked ᵖ, post-loop), and a saver that writes each block's columns of O.
#
# At this small K the cost model may prefer a for-loop of a single iteration (`forloop_range=1`); the
# table above lists the other candidates, which differ in grid and loop length (notebook 02 explains both).

# %%
best = res.best.graph
print(best)
assert len(best.compute_nodes) == 1 and len(best.block_graphs) == 1  # one kernel does everything
(body,) = best.block_graphs
ops = {n.op.value for n in body.compute_nodes}
assert {"matmul", "accum_rms", "accum_no_red", "div"} <= ops
print(f"grid {body.grid}, for-loop of {body.forloop_range} iteration(s), {body.num_blocks} blocks")

# %% [markdown]
# The same graph in the **μGraph viewer**. Click the custom kernel to open its block graph (with tiling cards
# for each loader and saver), click a dashed chain for its thread graph, click any node for its shapes, bytes
# and abstract expression. The breadcrumbs bring you back up.

# %%
viewer = mw.MuGraphViewer(best)
viewer

# %% [markdown]
# The widget is driven from Python too: here we open the custom kernel and print the side panel it shows.

# %%
custom = next(f"n{k}" for k, node in enumerate(best.nodes) if node.body is not None)
opened = mw.MuGraphViewer(best)
assert opened.click(custom) == "opened"
print(" › ".join(opened.view.breadcrumbs()))
pd.Series(opened.view.details(), dtype=object).to_frame("block graph")

# %% [markdown]
# The tiling cards of that block graph, as static HTML: dark is what block (0,0,0) reads at iteration 0,
# light what it sweeps over the for-loop.

# %%
display(HTML(opened.view.tilings_html()))

# %% [markdown]
# ## 4 · Is it really the same function?
#
# First with plain floats: the interpreter runs the block graph exactly as the GPU would (every block, every
# loop iteration), vectorised in numpy.

# %%
(fused,) = ml.interpret(best, [x, w])
print("max |fused − unfused| =", np.abs(fused - plain).max())
assert np.allclose(fused, plain)

# %% [markdown]
# A few random floats prove little. `ml.verify` evaluates both graphs on random inputs drawn from a
# **finite field** Z_p × Z_q, where arithmetic is exact: no rounding can hide a difference, and a wrong graph
# agrees on a random input only with probability ≤ D/p (D a degree bound). Three independent trials give the
# error bound ε ≤ (D/p)³. It is labelled *heuristic* here because `rms` involves a square root, which has no
# exact field rule (notebook 04 explains all of this). A float64 cross-check runs too.

# %%
check = ml.verify(best, program)
assert check.equivalent and check.error_bound is not None and check.error_bound < 1e-12
check

# %% [markdown]
# The same evidence in the verification inspector (trials, fingerprints, the bound and the float check):

# %%
mw.VerificationInspector(check, title="best candidate vs the program")

# %% [markdown]
# Every candidate the search returned passes an independent verification (different seed):

# %%
rows = []
for c in res.candidates:
    r = ml.verify(c.graph, program, seed=7)
    rows.append({"hash": c.hash[:12], "grid": c.graph.block_graphs[0].grid,
                 "for-loop": c.graph.block_graphs[0].forloop_range, "equivalent": r.equivalent,
                 "ε ≤": r.error_bound})
table = pd.DataFrame(rows)
assert table["equivalent"].all()
table

# %% [markdown]
# ## 5 · CUDA
#
# `ml.generate_cuda` renders the μGraph as CUDA C: one `__global__` function per custom kernel, shared-memory
# tiles planned first-fit, loaders hoisted out of the loop when their tile never changes, and accumulators
# kept in registers where the rules allow. Rendering is pure Python, so it works without a GPU.

# %%
source = ml.generate_cuda(best)
(OUT / "01_rmsnorm_linear.cu").write_text(source)
lines = source.splitlines()
start = next(i for i, line in enumerate(lines) if "__global__" in line)
print(f"{len(lines)} lines, written to {OUT / '01_rmsnorm_linear.cu'}; the kernel begins:\n")
print("\n".join(lines[start:start + 40]))
assert "__global__" in source

# %% [markdown]
# If the CUDA compiler is installed we compile the source to PTX for an A100 (`sm_80`); no GPU is needed for
# that. Running and timing the kernel needs a GPU and CuPy (notebook 05).

# %%
from mirage_lab.codegen.compile import nvcc_available, nvcc_ptx

if nvcc_available():
    ptx = nvcc_ptx(source, "sm_80")
    print(f"nvcc --ptx -arch=sm_80: {len(ptx.ptx.splitlines())} lines of PTX in {ptx.seconds:.1f} s; "
          f"kernels {ptx.kernels}")
    assert ptx.kernels
else:
    print("nvcc is not on PATH: skipping the compile check (install the CUDA toolkit, or the "
          "nvidia-cuda-nvcc wheel, to try it)")

# %% [markdown]
# ## Where next
#
# * **02 · Anatomy of a μGraph** — imap, fmap, omap, the for-loop and accumulators, drawn and run by hand.
# * **03 · Walking the search tree** — every decision of a recorded search, and why each branch died.
# * **04 · Finite-field verification** — how `ml.verify` works, and the wrong graphs it catches.
