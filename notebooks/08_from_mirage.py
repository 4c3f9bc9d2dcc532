# %% [markdown]
# # 08 · From Mirage: a reference script, run as it is, then explored
#
# People come to mirage-lab with Mirage scripts. The reference's demos build a program with
# `mi.new_kernel_graph()`, call `graph.superoptimize(config=...)`, and call the graph that comes back on their
# inputs. mirage-lab accepts the same code (`mirage_lab.compat`; `docs/compat.md` lists every name of the
# reference's Python API as same, mapped or not supported). In this notebook:
#
# 1. run a script written the reference's way, **changing only the import**, with its search capped by
#    `MIRAGE_LAB_TIME_LIMIT`;
# 2. read the notices it printed: what means something else without a GPU;
# 3. check what it computed against the interpreter, `mi.interpret`;
# 4. open what the reference could not show: the `SearchResult` behind the answer, the μGraph viewer and the
#    search explorer;
# 5. use the reference's `visualize`, `to_json` and `from_json`;
# 6. see what the reference's keywords turn into here, and what is not supported.
#
# It runs on a CPU in about a minute.

# %%
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from IPython.display import Image, display

ROOT = next(p for p in [Path.cwd(), *Path.cwd().parents] if (p / "pyproject.toml").is_file())
WORK = ROOT / "reports" / "notebooks" / "08_from_mirage"  # git-ignored
shutil.rmtree(WORK, ignore_errors=True)
WORK.mkdir(parents=True)
os.chdir(WORK)  # the script writes where it runs: runs/, the drawing, the JSON file
pd.set_option("display.max_colwidth", 200)
print("working in", WORK.relative_to(ROOT))

# %% [markdown]
# ## 1 · The script
#
# An RMSNorm followed by a Linear layer, written as the reference's demos write their programs:
# `new_input(dims=..., dtype=...)`, `rms_norm(A, normalized_shape)`, `superoptimize(config="mlp")`, and a
# call with `inputs=[...]`. Two lines differ from a reference script:
#
# * `import mirage_lab as mi` instead of `import mirage as mi`: the only change to the code;
# * `MIRAGE_LAB_TIME_LIMIT`, an environment variable, caps every search the script starts (here at 10 s),
#   whatever the script asks. A script written for an hours-long search can be tried in seconds; a shell
#   would set it outside the script (`MIRAGE_LAB_TIME_LIMIT=10 python demo.py`).
#
# The reference's scripts make their inputs with `torch.randn(..., device="cuda:0")`. Those lines work
# unchanged here too, with torch installed (`pip install 'mirage-lab[torch]'`): a graph takes torch tensors,
# CuPy arrays or numpy arrays, and gives back the same kind. This notebook uses numpy so that it runs where
# torch is not installed. The shapes are small so that the search takes seconds.

# %%
os.environ["MIRAGE_LAB_TIME_LIMIT"] = "10"  # seconds; caps every search below

import mirage_lab as mi  # was: import mirage as mi

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(8, 256), dtype=mi.float16)
W = graph.new_input(dims=(256, 512), dtype=mi.float16)
D = graph.rms_norm(X, normalized_shape=(256,))
Y = graph.matmul(D, W)
graph.mark_output(Y)
optimized_graph = graph.superoptimize(config="mlp")

rng = np.random.default_rng(0)
input_tensors = [rng.standard_normal((8, 256)).astype(np.float16),
                 rng.standard_normal((256, 512)).astype(np.float16)]
outputs = optimized_graph(inputs=input_tensors)
print(outputs[0].shape, outputs[0].dtype)

# %% [markdown]
# ## 2 · The notices
#
# The cell printed two `CompatNotice` warnings, each pointing at the script's line it is about:
#
# * **`superoptimize: no CUDA device, so the μGraphs are ranked by mirage-lab's cost model rather than
#   timed`**. On a GPU, the reference compiles every verified μGraph and times it (`warmup_iters`,
#   `profile_iters`), and so does mirage-lab when CuPy sees a device. Without one, the best μGraph is the
#   one the cost model ranks first. Said once per process.
# * **`no CUDA device: running μGraphs with mirage-lab's interpreter …`**. Calling a graph runs its
#   compiled kernels on a GPU. Here it runs the interpreter, in float64, with the outputs rounded to the
#   graph's dtype (float16). Also said once.
#
# A notice is a warning of its own category: `warnings.simplefilter("ignore", mi.CompatNotice)` silences
# them, and `"error"` turns them into exceptions (useful in tests). What the search itself did is in the report
# (section 4). It ends with `capped at 10 s by MIRAGE_LAB_TIME_LIMIT` when the cap lowered the search's time
# limit, and its first word is `time limit` when the cap stopped it before it was complete.

# %% [markdown]
# ## 3 · Is the answer right?
#
# `optimized_graph` is a `KNGraph`: the best verified μGraph, callable like the program it came from. The
# search already verified it against the program by finite-field testing (notebook 04). Here we check the
# numbers it gave back against `mi.interpret`, the reference semantics of the IR, run on the original program.

# %%
print(repr(optimized_graph))
print(optimized_graph.freeze())

# %%
(expected,) = mi.interpret(graph.freeze(), input_tensors)
(got,) = outputs
rel = np.abs(got.astype(np.float64) - expected).max() / np.abs(expected).max()
print(f"max |optimized − interpreted program| / max |program| = {rel:.2e}  (float16 output)")
assert got.shape == expected.shape and rel < 1e-2

# %% [markdown]
# A hand-built graph is callable too, with `outputs=` to pick which tensors come back. Here the program
# itself returns the normalised X and the product. The reference accepts `outputs=` and ignores it.

# %%
normalised, product = graph(inputs=input_tensors, outputs=[D, Y])
assert np.allclose(product.astype(np.float64), expected, rtol=1e-2, atol=1e-2 * np.abs(expected).max())
print(normalised.shape, product.shape)

# %% [markdown]
# ## 4 · What the reference could not show: the search behind the answer
#
# `superoptimize` returns one graph, as in the reference. The whole `SearchResult` stays on it as `.result`:
# the report (why the search stopped, how many branches each pruning rule cut, where the time went), every
# verified candidate ranked, and the run folder with the event stream.

# %%
res = optimized_graph.result
print(res.report)
print("stopped because:", res.report.stop_reason, "|", "run folder:", res.run_dir)

# %%
res.to_frame().head(10)

# %% [markdown]
# The best μGraph in the viewer: click a custom kernel to open its block graph, and an op for its tiles.

# %%
from mirage_lab import widgets as mw

mw.MuGraphViewer(optimized_graph.freeze())

# %% [markdown]
# The run folder holds every event of the search, so the explorer can step through it (notebook 03 shows
# how). Here we count the events per verdict. Its `verified` count is the candidates' count above.

# %%
explorer = mw.SearchExplorer(res, progress=False)
counts = explorer.state.counts()
display(counts)
assert counts.set_index("verdict")["count"]["candidate:verified"] == len(res.candidates)
explorer

# %% [markdown]
# ## 5 · `visualize`, `to_json`, `from_json`
#
# `visualize(name)` writes `name.dot` and, with graphviz's `dot` installed, `name.png`: the kernel graph with
# each custom kernel's block graph drawn inside it. Without graphviz it writes the `.dot` file and says so.

# %%
drawing = optimized_graph.visualize("rmsnorm_linear")
print("wrote", drawing)
if drawing.suffix == ".png":
    display(Image(filename=str(drawing), width=900))

# %% [markdown]
# `to_json` writes the reference's own JSON format (a list of operators), which the reference's `from_json`
# reads. Loading it back gives the same μGraph, which computes the same outputs.

# %%
optimized_graph.to_json("rmsnorm_linear.json")
text = Path("rmsnorm_linear.json").read_text()
print(f"{len(text)} characters; starts with: {text[:160]} …")

loaded = mi.new_kernel_graph()
loaded.from_json("rmsnorm_linear.json")
assert loaded.freeze().canonical_hash() == optimized_graph.freeze().canonical_hash()
(again,) = loaded(inputs=input_tensors)
assert np.array_equal(again, got)
print("round trip: same μGraph, same outputs")

# %% [markdown]
# ## 6 · The reference's keywords, and what is not supported
#
# Scripts pass more keywords than `config`. Each one means what it means in the reference (`imaps`, `griddims`,
# `franges`, … in the reference's formats), or is accepted with a notice when it means nothing here. None is
# ignored silently. Asking for the same search again answers from its run folder, and a search the cap cut short
# resumes where it stopped. Here it goes on under the same 10 s cap.

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", mi.CompatNotice)
    again_graph = graph.superoptimize(config="mlp", warmup_iters=16, profile_iters=1000, use_graph_dataset=True,
                                      is_formal_verified=True)
print(again_graph.result.report)
pd.DataFrame({"notice": [str(w.message) for w in caught if issubclass(w.category, mi.CompatNotice)]})

# %% [markdown]
# * **`use_graph_dataset`**: the reference keeps a dataset of optimized graphs. mirage-lab has none; its run
#   folders (`runs/`) cache every search and answer it when it is asked again.
# * **`is_formal_verified=True`**: the reference can verify formally. mirage-lab verifies by randomized
#   finite-field testing, which is probabilistic (notebook 04 measures how strong it is).
# * `warmup_iters` and `profile_iters` raise no new notice: the "no CUDA device" notice above covered them once.
#
# What mirage-lab does not do raises an error that names the alternative: the NKI backend (AWS Neuron) and the
# persistent-kernel runtime (MPK). `backend="triton"` works (mirage-lab has a Triton backend: `ml.generate_triton`,
# `mirage-lab codegen --backend triton`), and `optimized_graph.triton_call(inputs=...)` runs the Triton module — in
# Triton's CPU interpreter here. The reference's compile keywords in a call are taken, with a notice for
# what changes nothing here (`target_cc`: kernels are compiled for the device they run on):

# %%
for what, attempt in [
    ("superoptimize(backend='nki')", lambda: graph.superoptimize(config="mlp", backend="nki")),
    ("mi.PersistentKernel(...)", lambda: mi.PersistentKernel(world_size=1)),
    ("import mirage_lab.mpk", lambda: __import__("mirage_lab.mpk")),
]:
    try:
        attempt()
        raise AssertionError(f"{what} was expected to raise")
    except mi.MirageError as e:
        print(f"{what}\n    {type(e).__name__}: {e}\n")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", mi.CompatNotice)
    optimized_graph(inputs=input_tensors, target_cc=90)
print("optimized_graph(inputs=..., target_cc=90)\n    notice:", *[str(w.message) for w in caught])

# %% [markdown]
# `docs/compat.md` has the full list, a row per item with how it maps or why it is not supported. A test
# (`tests/compat/test_compat_doc.py`) checks it against the code. Its totals:

# %%
print(next(line for line in (ROOT / "docs" / "compat.md").read_text().splitlines() if line.startswith("**Counts:**")))

# %% [markdown]
# ## What changed from the reference, in short
#
# | In a Mirage script | Here |
# |---|---|
# | `import mirage as mi` | `import mirage_lab as mi`, the only edit |
# | `graph.superoptimize(...)`, then CUDA timing | capped by `MIRAGE_LAB_TIME_LIMIT`; cost-ranked without a GPU |
# | the best graph, callable on torch CUDA tensors | numpy, CuPy or torch; the interpreter without a GPU |
# | nothing more to inspect | `.result`: the report, every verified candidate, the run folder (explorer, viewer) |
# | `visualize`, `to_json`, `from_json` | the same names and file formats |
# | MPK, Triton/NKI backends, nvshmem | not supported: an error naming the alternative |
