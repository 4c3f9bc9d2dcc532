# %% [markdown]
# # 05 · From μGraph to CUDA: generated code, cost model, timings
#
# A μGraph found by the search is only useful once it runs. This notebook follows one fused μGraph
# all the way down:
#
# 1. **the generated CUDA** (`ml.generate_cuda`, `mirage_lab/codegen/cuda.py`): one `__global__` kernel
#    per custom kernel, and how each part of the block graph becomes code — tiling by imap / omap, the
#    for-loop, accumulators, the fused epilogue, the shared-memory plan (`optimize/schedule.py`,
#    `optimize/memory.py`);
# 2. **compiling** it with `nvcc --ptx` for `sm_80` (when nvcc is installed), and running the very same
#    kernel text on the CPU (`codegen/emulate.py`) to check it computes the program;
# 3. **the analytic cost model** (`mirage_lab/optimize`): an estimate per kernel and per block op on
#    A100 / H100 / H200, and where each kernel sits on the roofline;
# 4. **timings**: measured ones when a GPU has recorded them (`data/timings/*.csv`), otherwise the cost
#    model's, clearly labelled as estimates; and, on a machine with CuPy and a GPU, `ml.compile` and a
#    live timing.
#
# Everything except the last step runs on a CPU-only machine.

# %%
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from IPython.display import display

import mirage_lab as ml
from mirage_lab import widgets as mw
from mirage_lab.bench import fused, programs
from mirage_lab.bench.harness import random_inputs, relative_error
from mirage_lab.bench.tolerance import TOLERANCE, within
from mirage_lab.codegen import CodegenOptions, plan_cuda
from mirage_lab.codegen.compile import nvcc_available, nvcc_ptx
from mirage_lab.codegen.cuda import plan_kernel
from mirage_lab.codegen.emulate import gxx_available, run_cuda_on_cpu
from mirage_lab.ir.ops import Kind
from mirage_lab.optimize.cost import HARDWARE, proxy_cost
from mirage_lab.optimize.memory import plan_shared_memory
from mirage_lab.optimize.occupancy import estimate_resources
from mirage_lab.optimize.ranking import rank_by_cost
from mirage_lab.optimize.schedule import schedule_block_graph
from mirage_lab.optimize.tensor_cores import mma_matmuls

ROOT = next(p for p in [Path.cwd(), *Path.cwd().parents] if (p / "pyproject.toml").is_file())
DATA = ROOT / "data"
OUT = ROOT / "reports" / "notebooks" / "05"
OUT.mkdir(parents=True, exist_ok=True)
pd.set_option("display.width", 160)
print("repository:", ROOT)


def excerpt(source: str, start: str, stop: str | None = None, after: int = 0) -> str:
    """The lines of ``source`` from the first one containing ``start`` to the next containing ``stop``
    (inclusive), or ``after`` more lines."""
    lines = source.splitlines()
    i = next(n for n, line in enumerate(lines) if start in line)
    j = next(n for n in range(i + 1, len(lines)) if stop in lines[n]) if stop else i + after
    return "\n".join(lines[i:j + 1])


# %% [markdown]
# ## 1 · The μGraph
#
# We take the hand-written fused RMSNorm + Linear of the benchmarks (`mirage_lab.bench.fused.rmsnorm`),
# the μGraph the search rediscovers (notebook 02): **one** custom kernel that accumulates `Σx²` and the
# matmul `x·W` side by side over the reduction dimension, then divides once at the end. Compare it with
# the unfused program, two library kernels (`rms_norm`, then `matmul`).

# %%
program = programs.rmsnorm(batch_size=1)
graph = fused.rmsnorm(batch_size=1)
print(program, "\n")
print(graph)
assert ml.verify(graph, programs.rmsnorm(batch_size=1), trials=1, float_check=False).equivalent

# %% [markdown]
# Click the custom kernel to open its block graph (and the dashed chain for its thread graph):

# %%
mw.MuGraphViewer(graph)

# %% [markdown]
# ## 2 · The launch plan
#
# `plan_cuda` turns the kernel graph into a sequence of *steps*: a custom kernel becomes a generated
# kernel launch `<<<grid, threads, dynamic shared memory>>>`. A predefined kernel op (matmul, rms_norm,
# …) is first lowered to a one-op custom kernel (`codegen/lower.py`), so the unfused program gets a
# kernel per op; `library_calls=True` keeps them as CuPy library calls instead (the timing baseline).
# The grid and the thread count come straight from the block graph; the shared-memory size comes from
# the planner of section 4.

# %%
plan = plan_cuda(graph)
print(plan)
print()
print(plan_cuda(program))  # the unfused program: one lowered kernel per op
print(plan_cuda(program, library_calls=True))  # … or library calls, nothing to generate

# %% [markdown]
# ## 3 · The generated source
#
# `ml.generate_cuda(graph)` writes standalone CUDA C: a header, a few device helpers, then one
# `extern "C" __global__` kernel per custom kernel (named `mirage_k<node>`). Every op is an element
# loop over its output tile, `idx` strided by the thread count; storage is the tensors' dtype (fp16 as
# `__half`), arithmetic is fp32.

# %%
source = ml.generate_cuda(graph)
(OUT / "rmsnorm_fused.cu").write_text(source)
custom_kernels = sum(1 for n in graph.nodes if n.body is not None)
assert source.count("__global__") == custom_kernels == len(plan.launches)
print(f"{len(source.splitlines())} lines, {source.count('__global__')} __global__ kernel(s); "
      f"written to {(OUT / 'rmsnorm_fused.cu').relative_to(ROOT)}\n")
print(source)

# %% [markdown]
# ### 3.1 · Tiling: imap, fmap and omap become address arithmetic
#
# Each loader copies *one tile* of a device tensor into shared memory. Which tile is a sum of terms,
# one per partitioned dimension (SPEC §3.4): the **imap** sends grid axis `x` to a tensor dimension, so
# block `blockIdx.x` reads tile number `blockIdx.x` along it; the **fmap** does the same for the loop
# counter `i`. For `W` (imap `x→1`, fmap `0`) block `x` owns a strip of columns, and iteration `i`
# walks down its rows. `X` has imap `φ` everywhere — every block reads the same rows (replication) —
# but also fmap `1`, so it walks along the reduction dimension in step with `W`. The copy itself moves
# 16-byte vectors (8 halves) whenever the tile rows allow it (8- or 4-byte ones otherwise), with
# **asynchronous copies** (`cp.async`, `mirage_cp_async<16>`): global memory to shared memory without
# passing through registers.
#
# The loop is **pipelined**: each loop tile has a *ring* of several copies in shared memory (`s1_ring`),
# and iteration `i`'s tiles were requested `stages − 1` iterations earlier (offset `(i + stages − 1)·…`),
# so that many iterations' bytes are in flight while one computes — as many as an SM needs to hide DRAM
# latency (`codegen/pipeline.py` sizes the ring). `ml.generate_cuda(graph, prefetch=False)` gives the
# copy–wait–compute loop; the GPU benchmark times both.

# %%
body = graph.block_graphs[0]
X, W = graph.input_types
loader_w = body.loaders[1]
tile_w = body.tensors[loader_w.outputs[0]].dims
print("W tile per block and iteration:", tile_w, " imap", loader_w.attr("imap"), " fmap", loader_w.attr("fmap"))
print(excerpt(source, "// s1 = input()  // iteration 0", "mirage_cp_async"))
stages = plan_kernel(body, CodegenOptions()).stages
print("ring of", stages, "copies of each loop tile")
# the offset terms the text describes, computed from the graph rather than copied from the source
assert f"(long long)blockIdx.x * {tile_w[1]}" in source                # imap x→1: column strip of width tile[1]
assert f"(long long)(i + {stages - 1}) * {tile_w[0] * W.dims[1]}" in source  # fmap 0: tile[0] rows a step
plain = ml.generate_cuda(graph, prefetch=False)
assert f"(long long)i * {tile_w[0] * W.dims[1]}" in plain and "s1_ring" in source and "s1_ring" not in plain

# %% [markdown]
# The saver works the same way in reverse: its **omap** (`x→1`) says block `x` writes output columns
# `x·24 … x·24+23`, so no two blocks write the same element and no atomic is needed.

# %%
print(excerpt(source, "// saver = output(", "uint4"))
saver_tile = body.tensors[body.savers[0].inputs[0]].dims
assert f"(long long)blockIdx.x * {saver_tile[1]}" in source

# %% [markdown]
# ### 3.2 · The for-loop and the schedule
#
# `optimize/schedule.py` orders the block ops into **stages** separated by `__syncthreads()`. An op's
# depth is its longest path from the loaders; ops of equal depth only read shallower tensors, so they
# share a stage. There are three sections: the *prologue* (loaders with no fmap are hoisted: their tile
# is the same every iteration), the *loop body* (run `F` times) and the *epilogue* (after the loop).

# %%
schedule = schedule_block_graph(body)
print(schedule)
stages = [{"section": sec, "depth": st.depth,
           "ops": ", ".join(f"{k}:{body.nodes[k].op.value}" for k in st.nodes)}
          for sec, section in (("prologue", schedule.prologue), ("loop", schedule.loop),
                               ("epilogue", schedule.epilogue)) for st in section]
pd.DataFrame(stages)

# %%
loop_head = f"for (int i = 0; i < {body.forloop_range}; ++i)"
assert loop_head in source and source.count("__syncthreads()") == schedule.barriers
print(excerpt(source, loop_head, after=2), "\n    ...")
print(f"{schedule.barriers} barriers in the source = {schedule.barriers} in the schedule")

# %% [markdown]
# ### 3.3 · Accumulators
#
# An accumulator (`forloop_accum`) keeps fp32 state in shared memory across iterations: it is zeroed
# before the loop, updated every iteration, and **finalised** after it into its post-loop STensor
# (marked `ᵖ` in the listing). `accum_rms` keeps `Σx²` and finalises to `sqrt(Σx² / count)` where
# `count = F × (the tile's last dim)` is the full reduction length — which is why the fused kernel never
# needs the whole row of `X` at once.

# %%
accums = [k for k, n in enumerate(body.nodes) if n.kind is Kind.ACCUM]
print("accumulators:", [(k, body.nodes[k].op.value) for k in accums])
print(excerpt(source, f"acc{accums[0]}[idx] = 0.f", after=1))
print("...")
rms = next(k for k in accums if body.nodes[k].op.value == "accum_rms")
count = body.forloop_range * body.tensors[body.nodes[rms].inputs[0]].dims[-1]
print(excerpt(source, f"sqrtf(acc{rms}[idx]", after=0).strip())
assert count == X.dims[-1] and f"sqrtf(acc{rms}[idx] / {float(count)}f)" in source

# %% [markdown]
# ### 3.4 · The fused epilogue (thread graphs)
#
# Element-wise ops that directly follow a producer are **fused** into it (SPEC §4): the producer's
# element loop applies them to `v` in registers before a single store. In the RMSNorm kernel the
# matmul's result is never stored at all — the `accum_no_red` that follows it is fused, so the matmul
# keeps its running sums in registers across the whole for-loop and writes them to the accumulator once,
# in the last iteration (`acc…[pair] = c[j][2 * h];  // the whole for-loop's sums`).
#
# The split-KV attention μGraph (`fused.gqa`, two custom kernels) shows the other case: `exp(Q·K)` is
# computed by the matmul and written once, already exponentiated (`v0 = expf(v0);  // fused exp`).

# %%
print("thread graphs of the RMSNorm kernel:", schedule.fusion)
print(excerpt(source, "= matmul(", "the whole for-loop's sums"))

gqa = fused.gqa(batch_size=1)
gqa_source = ml.generate_cuda(gqa)
(OUT / "gqa_fused.cu").write_text(gqa_source)
print("\nthread graphs of the attention kernel:", schedule_block_graph(gqa.block_graphs[0]).fusion)
print(excerpt(gqa_source, "// s3 = matmul(s0, s1)", "fused exp"))
assert gqa_source.count("__global__") == len(gqa.block_graphs) == 2
assert "// fused exp" in gqa_source and "// the whole for-loop's sums" in source and "acc4[idx] +=" not in source

# %%
print(plan_cuda(gqa))

# %% [markdown]
# ### 3.5 · Tensor cores
#
# Every fp16 matmul whose columns are whole 8-column tiles (and K a multiple of 16) runs on **tensor
# cores** (`optimize/tensor_cores.py` decides): warps take *tasks* of 16 rows × up to 4 eight-column
# tiles in turn, read operand fragments from the shared-memory tiles with `ldmatrix` (`mirage_load_a`,
# `mirage_load_b`) and multiply them with `mma.sync.m16n8k16` (`mirage_mma`), accumulating in fp32
# registers. The fragment layout is fixed by the PTX ISA — lane `l` holds rows `l/4` and `l/4 + 8`,
# columns `2·(l%4)` and the next — so each lane applies the fused epilogue (the `expf` above) straight
# from its registers. Small M is padded in registers: the RMSNorm kernel's `(2, 128)·(128, 24)` runs on
# tensor cores too, its lanes for rows 2…15 reading row 1 again and dropping those outputs. A matmul
# feeding a plain accumulator keeps its sums in registers for the whole loop. `tensor_cores=False`
# gives the CUDA-core loop (the GPU benchmark times both).

# %%
tilings = mma_matmuls(gqa.block_graphs[0])
print({k: f"{t.rows}×{t.cols} outputs in {t.tasks} tasks of 16×{8 * t.n_tiles}, K = "
       f"{[kdim for *_, kdim in t.parts]}, {t.warps} warps" for k, t in tilings.items()})
print(excerpt(gqa_source, "float v0 = c[j][2 * h]", "fused exp"))  # the epilogue, from the registers
assert gqa_source.count("mirage_mma(c[j], fa, fb);") == len(tilings) == 2
(small,) = mma_matmuls(body).values()  # RMSNorm's 2-row matmul, padded to 16 rows
assert small.rows == 2 and small.padded_rows
assert "mirage_mma(" not in ml.generate_cuda(gqa, tensor_cores=False).split('extern "C"')[1]

# %% [markdown]
# ## 4 · The shared-memory plan
#
# Which buffers live in shared memory: every loader tile, every op output that is not fused away, each
# accumulator's fp32 state, and a few per-op scratch buffers. `optimize/memory.py` gives each buffer a
# **lifetime** (from the stage that writes it to the last stage that reads it; anything live across the
# loop boundary is live for the whole loop) and packs them so that two buffers share bytes only if
# their lifetimes are disjoint — first-fit and best-fit both run, the smaller peak wins. The picture
# shows time (schedule steps) across and byte offsets up: rectangles never overlap.
#
# Before packing, each tile gets a **layout** (`optimize/layout.py`): row-major like its device tensor,
# and — if some reader walks several rows at once (a row sum with a thread per row, a tensor-core
# fragment load) and its rows are an even number of 16-byte chunks — one chunk of padding per row, so
# that consecutive rows start in different shared-memory banks. Here `X`'s tile, read by the `Σx²` row
# sum and as the tensor-core A operand, is padded; `W`'s rows are 48 bytes, an odd number of chunks
# already, so they stay dense.

# %%
kernel_plan = plan_kernel(body, CodegenOptions())
print({t: f"{lay.rows}×{lay.cols}, pitch {lay.pitch}" for t, lay in kernel_plan.layouts.items() if lay.padded})
smem_plan = kernel_plan.smem
assert plan_shared_memory(body, schedule).peak <= smem_plan.peak  # dense tiles: the padding's bytes less
print(smem_plan)
buffers = pd.DataFrame([{"buffer": b.key, "offset": smem_plan.offsets[b.key], "bytes": b.nbytes,
                         "first": b.first, "last": b.last} for b in smem_plan.buffers])
display(buffers)

# %%
fig = go.Figure()
for r in buffers.itertuples():
    x0, x1, y0, y1 = r.first - 0.45, r.last + 0.45, r.offset, r.offset + r.bytes
    fig.add_trace(go.Scatter(x=[x0, x1, x1, x0, x0], y=[y0, y0, y1, y1, y0], fill="toself", mode="lines",
                             name=r.buffer, hoverinfo="text",
                             text=f"{r.buffer}: {r.bytes} B at {r.offset}, steps {r.first}–{r.last}"))
fig.add_hline(y=smem_plan.peak, line_dash="dash", annotation_text=f"peak {smem_plan.peak} B")
fig.update_layout(title=f"Shared-memory plan ({smem_plan.strategy}): {smem_plan.peak} B instead of "
                        f"{smem_plan.naive} B without reuse", xaxis_title="schedule step",
                  yaxis_title="byte offset", height=420)
fig

# %%
# the plan's invariant: buffers whose lifetimes overlap never share a byte
for a in smem_plan.buffers:
    for b in smem_plan.buffers:
        if a.key < b.key and a.overlaps(b):
            oa, ob = smem_plan.offsets[a.key], smem_plan.offsets[b.key]
            assert oa + a.nbytes <= ob or ob + b.nbytes <= oa, (a, b)
assert smem_plan.peak <= smem_plan.naive and plan.launches[0].smem_bytes == smem_plan.peak
print(f"planned {smem_plan.peak} B; the SPEC §3.6 budget heuristic (used by the search and the occupancy "
      f"model) counts {estimate_resources(body).smem_bytes} B")

# %% [markdown]
# ## 5 · Compiling: `nvcc --ptx` for sm_80
#
# Compiling to PTX needs the CUDA toolkit but no GPU. With `resources=True` the source is also assembled
# to a cubin, and `ptxas -v` reports the registers per thread — a measured figure the cost model can use
# instead of its estimate (`proxy_cost(..., resources=...)`).

# %%
if nvcc_available():
    compiled = {}
    for name, src in (("rmsnorm", source), ("gqa", gqa_source)):
        r = nvcc_ptx(src, "sm_80", resources=True)
        compiled[name] = r
        (OUT / f"{name}_fused.sm_80.ptx").write_text(r.ptx)
        print(f"{name}: {len(r.ptx.splitlines())} PTX lines in {r.seconds:.1f} s; entries {r.kernels}")
        for kernel, res in r.resources.items():
            print(f"   {kernel}: {res.registers} registers/thread, {res.spill_bytes} B spilled")
    assert compiled["rmsnorm"].kernels == [launch.name for launch in plan.launches]
    assert sorted(compiled["gqa"].kernels) == sorted(launch.name for launch in plan_cuda(gqa).launches)
else:
    print("nvcc is not on PATH (nor in /usr/local/cuda/bin): skipping the PTX compile. Install the CUDA "
          "toolkit, or `pip install nvidia-cuda-nvcc-cu12`, to run this step.")

# %% [markdown]
# ### 5.1 · Does the generated code compute the program? (on the CPU)
#
# `codegen/emulate.py` compiles the *exact kernel text* with g++ against a small shim (`__half` becomes
# `_Float16`, each CUDA thread a fiber, `__syncthreads()` a real barrier) and runs every block. Shared
# memory starts as NaN, so a read of a byte nobody wrote would show up in the result. We compare with
# the interpreter running the *unfused program* in float64: the only difference left is fp16 storage.

# %%
if gxx_available():
    inputs = random_inputs(program, seed=0)
    (emulated,) = run_cuda_on_cpu(graph, [x.astype(np.float16) for x in inputs])
    (expected,) = ml.interpret(program, inputs)
    err = relative_error(emulated.astype(np.float64), expected)
    print(f"generated kernel on the CPU vs the program: max relative error {err:.2e} (fp16 storage)")
    assert np.isfinite(emulated).all() and err < 1e-2
else:
    print("g++ is not installed: skipping the CPU run of the generated kernel")

# %% [markdown]
# ## 6 · The analytic cost model
#
# Without a GPU we rank μGraphs with a **proxy**: a roofline per kernel (`mirage_lab/optimize/cost.py`).
# Each kernel costs `max(memory time, compute time) + launch`, where memory time counts DRAM bytes (first
# reads compulsory, re-reads served by L2 when they fit), L2 and shared-memory bytes, and compute counts
# tensor-core and CUDA-core FLOPs; occupancy (blocks per SM from shared memory, registers and threads)
# scales both. Every figure says `proxy` — it ranks graphs; it is not a prediction of microseconds.
#
# The hardware presets:

# %%
pd.DataFrame([{"gpu": h.name, "arch": h.arch, "DRAM TB/s": h.dram_bytes_per_s / 1e12,
               "fp16 tensor TFLOP/s": h.flops_per_s / 1e12, "fp32 TFLOP/s": h.vector_flops_per_s / 1e12,
               "SMs": h.sms, "L2 MB": h.l2_bytes / 2**20, "smem/block KiB": h.smem_per_block / 1024,
               "launch µs": h.launch_s * 1e6, "ridge FLOP/B": h.flops_per_s / h.dram_bytes_per_s}
              for h in HARDWARE.values()]).set_index("gpu")

# %% [markdown]
# Per kernel: the fused graph moves the same ~50 MB of `W` as the unfused matmul (it must read every
# weight once) but saves a launch and the round trip of the normalised `X` through DRAM. The block-op
# rows below the kernel show where its time goes: most of it is the loader of `W`.

# %%
est = proxy_cost(graph, "H100")
print(est)
print()
print(proxy_cost(program, "H100"))

# %%
per_op = est.per_op()
assert abs(per_op["est_us"].sum() - est.microseconds) < 1e-6 * est.microseconds  # rows add up to the total
blocks = per_op[per_op["level"] == "block"]
assert blocks.loc[blocks["est_us"].idxmax(), "node"] == body.nodes.index(loader_w)  # the W loader dominates
per_op[["kernel", "node", "level", "op", "shape", "dram_bytes", "l2_bytes", "smem_bytes", "tensor_flops",
        "vector_flops", "est_us", "share"]]

# %% [markdown]
# The same comparison on the three GPUs, with the split-KV attention graph added. For RMSNorm the fused
# graph wins by about one launch: the program is bound by reading `W`, which fusion cannot avoid. For
# GQA the gain is larger: five library kernels become two, and the `exp(Q·K)` scores never travel
# through DRAM (compare the `dram_mb` column) — the second kernel only reads per-chunk partial sums.

# %%
ranking = rank_by_cost({"unfused": program, "fused": graph, "unfused gqa": programs.gqa(1), "fused gqa": gqa},
                       ["A100", "H100", "H200"])
display(ranking)

# %%
wide = ranking.pivot(index="label", columns="hardware", values="proxy_us")
for hw in ("A100", "H100", "H200"):
    assert wide.loc["fused", hw] < wide.loc["unfused", hw] and wide.loc["fused gqa", hw] < wide.loc["unfused gqa", hw]
dram = ranking.groupby("label")["dram_mb"].first()
assert dram["fused gqa"] < dram["unfused gqa"]
speedup = pd.DataFrame({"RMSNorm": wide.loc["unfused"] / wide.loc["fused"],
                        "GQA": wide.loc["unfused gqa"] / wide.loc["fused gqa"]}).T
speedup.round(2)  # proxy speed-up of the fused graph over the unfused program

# %% [markdown]
# ### 6.1 · Roofline
#
# Each point is a kernel at (arithmetic intensity, FLOP/s implied by its estimate), under the DRAM
# bandwidth slope and the tensor-core ceiling. Everything here sits far left of the ridge point: at
# batch 1 a "matmul" is a matrix–vector product (2 rows of `X`), so these kernels are memory-bound, and
# fusion helps by removing traffic and launches, not FLOPs. The second figure splits the fused kernel
# into its block ops (◆).

# %%
mw.roofline_figure({"unfused": program, "fused": graph, "unfused gqa": programs.gqa(1), "fused gqa": gqa}, "H100")

# %%
roof = mw.roofline_frame({"fused": graph}, "H100", per="op")
assert (roof.loc[roof["flops"] > 0, "ai_dram"].dropna() < HARDWARE["H100"].flops_per_s
        / HARDWARE["H100"].dram_bytes_per_s).all()  # every op with FLOPs is left of the ridge
mw.roofline_figure(roof, level="dram")

# %% [markdown]
# ## 7 · Timings
#
# Measured timings come from `benchmarks/kernels.py` on a GPU, which writes `data/timings/<gpu>.csv`
# (CUDA-event medians with p10 / p90 of the unfused program, the hand-fused graphs, the reference
# μGraphs and the search's best). When none are recorded, the same table is built from the cost model
# (`cost_model_timing_frame`), every row labelled `source = "cost model"`.

# %%
timing_files = sorted((DATA / "timings").glob("*.csv"))
if timing_files:
    timings = pd.concat([mw.timing_frame(p) for p in timing_files], ignore_index=True)
    print("measured timings:", [p.name for p in timing_files])
else:
    print("No measured timings are recorded yet (data/timings/*.csv is absent: no GPU has been available to "
          "this project so far). Showing the cost model's estimates instead — proxies, not measurements.")
    timings = mw.cost_model_timing_frame(("A100", "H100", "H200"),
                                         program_names=["rmsnorm", "gated_mlp", "lora", "gqa"], batches=(1, 8))
timings[["source", "hardware", "program", "batch", "graph", "median_us", "speedup", "role"]].head(12)

# %% [markdown]
# One panel per program and batch (log scale). With measured data each box spans p10–p90 around the
# median; with cost-model data each box is the *spread over a group of graphs* (e.g. all the reference
# μGraphs of one checkpoint file), every graph one point. Grey is the unfused baseline.

# %%
hw = "H100" if "H100" in set(timings["hardware"]) else sorted(timings["hardware"])[0]
source_kind = sorted(timings["source"].unique())[0]
mw.timing_figure(timings, hardware=hw, source_label=source_kind)

# %%
summary = (timings[timings["graph"].isin(["unfused", "fused"])]
           .pivot_table(index=["program", "batch"], columns=["hardware", "graph"], values="median_us"))
summary.round(2)

# %% [markdown]
# ## 8 · On a GPU: `ml.compile` and a live timing
#
# With CuPy and a CUDA device, `ml.compile(graph)` generates the source, compiles it with NVRTC
# (`cupy.RawModule`) and returns a callable on CuPy arrays; `codegen/run.py`'s `time_callable` times it
# with CUDA events. On this CPU-only run the cell says so and skips.

# %%
try:
    import cupy

    gpu = bool(cupy.is_available())
except Exception as e:  # no CuPy, or a driver error: no GPU here
    gpu, why = False, f"{type(e).__name__}: {e}"
else:
    why = "CuPy finds no CUDA device"

if gpu:
    from mirage_lab.codegen.run import time_callable, unfused_cupy

    compiled_graph = ml.compile(graph)
    args = [cupy.asarray(x, dtype=cupy.float16) for x in random_inputs(program, seed=0)]
    (out,) = compiled_graph(*args)
    (want,) = ml.interpret(program, [cupy.asnumpy(a).astype(np.float64) for a in args])
    err = relative_error(cupy.asnumpy(out).astype(np.float64), want)
    print(compiled_graph, "max relative error", err)
    assert within(err, TOLERANCE["float16"]), f"the compiled kernel disagrees with the program ({err:.2e})"
    fused_t = time_callable(compiled_graph, args)
    unfused_t = time_callable(unfused_cupy(program), args)
    print(f"fused   {fused_t}\nunfused {unfused_t}\nspeed-up {unfused_t.median_ms / fused_t.median_ms:.2f}×")
else:
    print(f"Skipping the GPU run: {why}. On a GPU machine: pip install -e '.[gpu]' and rerun this cell; "
          "benchmarks/kernels.py records the full table to data/timings/.")

# %% [markdown]
# ## Summary
#
# * A custom kernel becomes one `__global__` function whose structure mirrors the block graph: tiles
#   addressed by imap / fmap / omap, a `for` loop over `F` iterations, fp32 accumulators zeroed before
#   and finalised after it, element-wise chains fused into their producer, and one shared-memory arena
#   whose buffers reuse bytes when their lifetimes do not overlap.
# * The source compiles for sm_80 and, run on the CPU, reproduces the program up to fp16 rounding.
# * The proxy cost model explains *why* fusion pays here: these kernels are memory- and launch-bound, so
#   removing a launch and a DRAM round trip is the whole gain. Its absolute numbers are estimates; only a
#   GPU run (`benchmarks/kernels.py`) turns them into measurements.
