# %% [markdown]
# # 07 · A gallery of the reference implementation's μGraphs
#
# The reference Mirage saved the μGraphs its search found for the paper's benchmark programs
# (`benchmark/saved_mugraphs` in github.com/mirage-project/mirage; SPEC §10 describes the format). This
# project keeps them read-only in `../shared/reference_mugraphs/`, one JSON file per program and batch,
# every graph in a file claimed equivalent to that file's program. They are test oracle data — and a
# good picture of what a superoptimizer actually finds. In this notebook:
#
# 1. load every file (`ml.load_reference_checkpoint`) and summarise it: graphs, kernels, grids, loops;
# 2. draw a few (`MuGraphViewer`, static SVGs);
# 3. check graphs against their programs (the interpreter, and `ml.verify`);
# 4. rank them with the cost model against the unfused program;
# 5. look at the known finding: **no QKNorm+GQA reference graph computes its program**.
#
# Without the reference folder the notebook falls back to this project's own search results
# (`data/search_best/*.json`) and says what it skips.

# %%
import time
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.express as px
from IPython.display import HTML, display

import mirage_lab as ml
from mirage_lab import widgets as mw
from mirage_lab.bench import programs
from mirage_lab.bench.harness import CHECKPOINTS, find_reference_dir, input_scale, random_inputs, relative_error
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.io import read_json
from mirage_lab.ir.printer import smem_bytes
from mirage_lab.optimize.cost import proxy_cost
from mirage_lab.widgets.draw import block_dot, kernel_dot
from mirage_lab.widgets.svg import have_dot, render_svg

ROOT = next(p for p in [Path.cwd(), *Path.cwd().parents] if (p / "pyproject.toml").is_file())
DATA = ROOT / "data"
pd.set_option("display.width", 160)
pd.set_option("display.max_colwidth", 90)

# %% [markdown]
# ## 1 · Finding and loading the files
#
# `find_reference_dir()` looks at `$MIRAGE_REFERENCE_MUGRAPHS`, then `shared/reference_mugraphs` beside the
# working directory or beside the checkout. If you do not have the folder: copy `benchmark/saved_mugraphs`
# from the reference repository (github.com/mirage-project/mirage, commit de8745d9) to
# `../shared/reference_mugraphs/`, or point `MIRAGE_REFERENCE_MUGRAPHS` at it.

# %%
REF = find_reference_dir()
t0 = time.perf_counter()
if REF is not None:
    SOURCE = "reference checkpoints"
    gallery: dict[str, list[KernelGraph]] = {p.stem: ml.load_reference_checkpoint(p)
                                              for p in sorted(REF.glob("*.json")) if p.stem in CHECKPOINTS}
    program_of = dict(CHECKPOINTS)
else:
    SOURCE = "this project's search results (data/search_best)"
    print("The reference μGraphs are not available (no ../shared/reference_mugraphs and no "
          "$MIRAGE_REFERENCE_MUGRAPHS): showing the best μGraph of each of our own recorded searches instead.")
    gallery, program_of = {}, {}
    for p in sorted((DATA / "search_best").glob("*.json")):
        gallery[p.stem] = [ml.load(p)]
        name, _, b = p.stem.rpartition("_bs")
        program_of[p.stem] = (name, int(b))
print(f"{SOURCE}: {len(gallery)} files, {sum(map(len, gallery.values()))} graphs, "
      f"loaded in {time.perf_counter() - t0:.1f} s from {REF or DATA / 'search_best'}")
assert gallery


def program_for(stem: str) -> KernelGraph:
    name, batch = program_of[stem]
    return programs.PROGRAMS[name](batch)


# %% [markdown]
# ## 2 · What is in each file
#
# One row per graph first: its kernels (custom kernels are generated code; the rest are library
# kernels), the grid and for-loop range of each custom kernel, the block ops, the shared memory of the
# largest block (SPEC §3.6 accounting) and the proxy cost on an H100 (notebook 05).

# %%
def describe(stem: str, i: int, g: KernelGraph) -> dict:
    custom = [n.body for n in g.compute_nodes if n.body is not None]
    return {"file": stem, "graph": i, "program": program_of[stem][0], "batch": program_of[stem][1],
            "kernels": len(g.compute_nodes), "custom": len(custom),
            "library ops": ", ".join(n.op.value for n in g.compute_nodes if n.body is None) or "—",
            "grids": " ".join(str(bg.grid) for bg in custom), "F": " ".join(str(bg.forloop_range) for bg in custom),
            "block ops": sum(len(bg.compute_nodes) for bg in custom),
            "max smem KiB": max((smem_bytes(bg) for bg in custom), default=0) / 1024,
            "proxy_us": proxy_cost(g, "H100").microseconds}


graphs = pd.DataFrame([describe(stem, i, g) for stem, gs in gallery.items() for i, g in enumerate(gs)])
graphs.head(10)

# %% [markdown]
# And one row per file. Most files hold many graphs: the reference keeps every verified μGraph it met,
# and they differ in grids, loop ranges, the order of independent ops or where a cheap op sits — the
# "kernels" range shows how many launches they use.

# %%
per_file = graphs.groupby("file", sort=False).agg(
    program=("program", "first"), batch=("batch", "first"), graphs=("graph", "count"),
    kernels=("kernels", lambda s: f"{s.min()}–{s.max()}" if s.min() != s.max() else str(s.min())),
    single_kernel=("kernels", lambda s: int((s == 1).sum())),
    grids=("grids", "nunique"), loop_ranges=("F", lambda s: ", ".join(sorted(set(" ".join(s).split()), key=int))),
    max_smem_kib=("max smem KiB", "max"), best_proxy_us=("proxy_us", "min"))
display(per_file)

# %%
assert per_file["graphs"].sum() == sum(len(gs) for gs in gallery.values())
fig = px.histogram(graphs, x="file", color=graphs["kernels"].astype(str), barmode="stack",
                   labels={"color": "kernels"}, title=f"Graphs per file, by number of kernels ({SOURCE})")
fig.update_layout(xaxis_tickangle=-35, height=420)

# %% [markdown]
# ## 3 · A few drawings
#
# The interactive viewer: click a custom kernel to open its block graph — loaders with their imap /
# fmap, ops, accumulators (double border), savers — and a dashed chain for its thread graph.

# %%
first = next(iter(gallery))
example = gallery.get("rmsnorm_bs1", gallery[first])[0]
mw.MuGraphViewer(example)

# %% [markdown]
# Static SVGs (graphviz `dot` when installed, otherwise a built-in layout) of a multi-kernel graph: the
# kernel graph, then the block graph of its first custom kernel.

# %%
multi_stem, multi_index = next(((s, i) for s, gs in gallery.items() for i, g in enumerate(gs)
                                if sum(n.body is not None for n in g.compute_nodes) >= 2),
                               (first, 0))
multi = gallery[multi_stem][multi_index]
print(f"{multi_stem}[{multi_index}] — graphviz dot: {have_dot()}")
display(HTML(render_svg(kernel_dot(multi, title=f"{multi_stem}[{multi_index}]"))))
display(HTML(render_svg(block_dot(multi.block_graphs[0]))))

# %% [markdown]
# ## 4 · Do they compute their programs?
#
# The cheap check: run each graph in the interpreter in float32 and the program in float64 on the same
# random inputs (small for attention: the benchmark programs have no max subtraction), and compare with
# `rel = max|a − b| / max|b|`. float32 rounding of 4096-long reductions is ~1e-6; a wrong graph is off
# by ~1e-2 or more, so `1e-4` separates them. QKNorm+GQA is left for section 6. To keep the notebook
# quick on a CPU we check up to eight graphs of each file whose program is cheap to evaluate, skipping
# the batch-8 attention files (their float64 programs alone take seconds each); the full check of all
# 601 graphs is `benchmarks/reference_equivalence.py`, whose recorded result follows.

# %%
TOL = 1e-4
MAX_PER_FILE = 8


def check_file(stem: str, limit: int = MAX_PER_FILE) -> pd.DataFrame:
    prog = program_for(stem)
    inputs = random_inputs(prog, seed=0, scale=input_scale(program_of[stem][0]))
    (want,) = ml.interpret(prog, inputs)
    rows = []
    for i, g in enumerate(gallery[stem][:limit]):
        (got,) = ml.interpret(g, inputs, dtype="float32")
        err = relative_error(got.astype(np.float64), want) if np.isfinite(got).all() else np.inf
        rows.append({"file": stem, "graph": i, "rel_err": err, "matches": err <= TOL})
    return pd.DataFrame(rows)


def cheap(stem: str) -> bool:
    name, batch = program_of[stem]
    return name != "qknorm_gqa" and not (name in ("gqa", "mha", "mqa") and batch > 1)


t0 = time.perf_counter()
checked = pd.concat([check_file(s) for s in gallery if cheap(s)], ignore_index=True)
print(f"{len(checked)} graphs interpreted in {time.perf_counter() - t0:.1f} s")
checked.groupby("file").agg(checked=("graph", "count"), matches=("matches", "sum"), worst_rel_err=("rel_err", "max"))

# %%
assert checked["matches"].all(), checked[~checked["matches"]]

# %% [markdown]
# The recorded full check (`data/reference_equivalence_cpu.json`, every graph of every file, same metric):

# %%
recorded_path = DATA / "reference_equivalence_cpu.json"
if recorded_path.is_file():
    recorded = pd.DataFrame(read_json(recorded_path)["files"]).set_index("file")
    recorded["max_match_err"] = recorded["max_match_err"].where(recorded["matches"] > 0)
    recorded["min_mismatch_err"] = recorded["mismatches"].map(
        lambda m: min((x["max_rel_err"] for x in m), default=None))
    display(recorded[["program", "batch", "graphs", "matches", "max_match_err", "min_mismatch_err"]])
    print(f"{recorded['matches'].sum()} of {recorded['graphs'].sum()} graphs compute their program")
    live = checked.groupby("file")["matches"].all()
    assert all(recorded.loc[f, "matches"] == recorded.loc[f, "graphs"] for f in live.index if f in recorded.index)
else:
    print("data/reference_equivalence_cpu.json is not in this checkout: run benchmarks/reference_equivalence.py")

# %% [markdown]
# The interpreter check uses one set of inputs. `ml.verify` is the real test (SPEC §6): random trials over
# finite fields, where a wrong graph almost surely differs, with an error bound ε, plus a float64
# cross-check for the heuristic ops. It runs at full size, so we verify a few small graphs here.

# %%
to_verify = [s for s in ("lora", "ntrans_bs1", "single_lora") if s in gallery] or list(gallery)[:1]
for stem in to_verify:
    t0 = time.perf_counter()
    result = ml.verify(gallery[stem][0], program_for(stem))
    print(f"{stem}[0] ({time.perf_counter() - t0:.1f} s): {result}")
    assert result.equivalent

# %% [markdown]
# ## 5 · The cost model's ranking against the unfused program
#
# The reference picked among its graphs by *timing* them on a GPU. Here the proxy cost model ranks them
# on an H100: for each file, the cheapest, median and dearest graph against the unfused program, and
# how many of the graphs the model expects to beat it.

# %%
unfused = {stem: proxy_cost(program_for(stem), "H100").microseconds for stem in gallery}
ranking = graphs.assign(unfused_us=graphs["file"].map(unfused))
ranking["speedup"] = ranking["unfused_us"] / ranking["proxy_us"]
table = ranking.groupby("file", sort=False).agg(
    graphs=("graph", "count"), unfused_us=("unfused_us", "first"), best_us=("proxy_us", "min"),
    median_us=("proxy_us", "median"), worst_us=("proxy_us", "max"), best_speedup=("speedup", "max"),
    beat_unfused=("speedup", lambda s: int((s > 1).sum())))
table.round(2)

# %% [markdown]
# Every file's best graph beats the unfused program under the model: a little for RMSNorm and GatedMLP
# (bound by reading the weights, which no fusion avoids), several times for GQA, MQA, LoRA and nTrans
# (fewer launches, and intermediates such as `exp(Q·K)` never go through DRAM). A spread within a file
# is a spread of tilings. Where the model's ranking within a file disagrees with the reference's GPU
# choice, only a measured run (`benchmarks/kernels.py`, notebook 05) can settle it. The figure draws the
# same estimates per program and batch, each file's graphs as one box (their spread), next to the unfused
# program, our hand-fused graph and our search's best:

# %%
assert (table["best_us"] < table["unfused_us"]).all()
shown = sorted({program_of[s][0] for s in gallery} & {"rmsnorm", "gated_mlp", "lora", "gqa", "ntrans"},
               key=list(programs.PROGRAMS).index)
estimates = mw.cost_model_timing_frame(("H100",), program_names=shown, batches=(1, 8),
                                       reference_dir=REF, search_best_dir=DATA / "search_best")
mw.timing_figure(estimates, hardware="H100")

# %% [markdown]
# ## 6 · The known finding: QKNorm + GQA
#
# The reference saved 190 QKNorm+GQA graphs per batch size. **None of them computes its program**
# (docs/decisions.md § Reference checkpoints). Their first kernel gives block `y` only row `y` of `K`
# and multiplies the *sum* of each normalised `Q` row by it — `mul(sum(64, nQ), K)` instead of
# `sum(64, mul(nQ, K))`. Both expressions have the same *abstract* form (SPEC §5.4: the abstraction
# forgets which elements are summed against which), so the search's pruning could not tell them apart,
# and the reference's single deterministic test let them through.

# %%
if "qknorm_gqa_bs1" in gallery:
    qk = gallery["qknorm_gqa_bs1"]
    qk_program = program_for("qknorm_gqa_bs1")
    print(qk[0])
else:
    qk = None
    print("The QKNorm+GQA reference files are not available: this section needs ../shared/reference_mugraphs.")

# %% [markdown]
# **The abstraction accepts it.** The pruning oracle's audit finds every tensor of the graph inside the
# program's expression, and the output *as the whole term* — look at the `accum_sum` and `mul` rows of
# the first kernel:

# %%
if qk is not None:
    audit = ml.absexpr.Oracle.for_program(qk_program).audit(qk[0])
    assert (audit["status"] == "subexpression").all()
    display(audit[["tensor", "op", "expression", "reason"]])

# %% [markdown]
# **The verifier rejects it**, with a witness: an output element where the two differ over the field.

# %%
if qk is not None:
    t0 = time.perf_counter()
    verdict = ml.verify(qk[0], qk_program)
    print(f"({time.perf_counter() - t0:.1f} s) {verdict}")
    assert not verdict.equivalent

# %% [markdown]
# **What they compute instead.** Written out in numpy (the diagnosis of
# `benchmarks/reference_equivalence.py`): `scores[r, n] = (Σ_j nQ[r, j]) · K[r // (Lq/d), n]`, then the
# softmax-like normalisation and the product with the normalised `V`. The saved graphs match this formula
# to float32 rounding, and the program not at all.

# %%
def qknorm_as_saved(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    def rms(x: np.ndarray) -> np.ndarray:
        return x / np.sqrt((x * x).mean(-1, keepdims=True))

    rows = np.arange(q.shape[1]) // (q.shape[1] // k.shape[1])
    e = np.exp(rms(q).sum(-1, keepdims=True) * k[:, rows, :])
    return (e / e.sum(-1, keepdims=True)) @ rms(v)


if qk is not None:
    inputs = random_inputs(qk_program, seed=0, scale=0.5)
    (want,) = ml.interpret(qk_program, inputs)
    alt = qknorm_as_saved(*(x.astype(np.float64) for x in inputs))
    rows = []
    for i, g in enumerate(qk[:10]):
        (got,) = ml.interpret(g, inputs, dtype="float32")
        rows.append({"graph": i, "vs program": relative_error(got.astype(np.float64), want),
                     "vs qknorm_as_saved": relative_error(got.astype(np.float64), alt)})
    diagnosis = pd.DataFrame(rows)
    assert (diagnosis["vs program"] > 1e-2).all() and (diagnosis["vs qknorm_as_saved"] < TOL).all()
    display(diagnosis)

# %% [markdown]
# And the cost model? It happily ranks these wrong graphs — a cost model measures speed, not meaning,
# which is why every candidate is verified before it is ranked:

# %%
if qk is not None:
    print(table.loc[[s for s in table.index if s.startswith("qknorm")]].round(2))

# %% [markdown]
# ## Summary
#
# * The reference files hold hundreds of μGraphs; most use one or two custom kernels, differing in grid,
#   loop range and op placement — the space of good tilings is wide and flat.
# * Every graph we checked from the MLP, LoRA, attention and nTrans files computes its program; the
#   proxy cost model expects most files' best graph to beat the unfused program.
# * The QKNorm+GQA graphs are the exception, and a lesson: an abstraction that forgets index structure
#   (SPEC §5.4) can accept a wrong graph, so pruning needs verification behind it — and verification must
#   test with random values (SPEC §6), not a single fixed input.
