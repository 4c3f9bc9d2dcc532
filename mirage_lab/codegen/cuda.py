"""μGraph → standalone CUDA C (SPEC §8.2), one ``extern "C" __global__`` kernel per customized op.

A generated kernel follows the interpreter's §3.4 semantics exactly: ``blockIdx`` picks the
tiles by imap, loaders without a for-loop dim are hoisted before ``for (i < F)``, the others
read tile ``c·F + i`` along their fmap; accumulators live in fp32 shared memory (zeroed before
the loop, or seeded at i = 0 for max / rescale), are finalised after it, and post-loop ops and
savers run once at the end. Storage is the tensors' dtype (fp16 as ``__half``); arithmetic is
fp32. Every op is an element loop (``idx`` strided by the thread count) computing ``float v``;
ops fused into a producer's epilogue (SPEC §4) are applied to ``v`` in registers before the
store. Stages and barriers come from ``optimize.schedule``, offsets from ``optimize.memory``.

**Split sums** (``split_sums=True``, the default): a matmul feeding a sum accumulator, or a row-sum
accumulator, with fewer outputs than half the block's threads gives each output several threads (a power
of two); each sums a strided share of the terms, warp shuffles combine the shares (``mirage_warp_sum``),
and one lane adds the total into the fp32 accumulator, or one lane per warp ``atomicAdd``s when a share
spans several warps (GEMV-like tiles at batch 1 otherwise leave most threads idle behind one long serial
loop).

**Prefetch** (``prefetch=True``, the default): a loader that reads a new tile every iteration issues
iteration i+1's global loads into registers right after iteration i's tiles are in shared memory, and
stores them at the top of the next iteration, so memory latency overlaps the iteration's arithmetic
and twice the bytes are in flight. It needs no extra shared memory. It is skipped for F = 1, and for a
loop tile that would push a thread past ``PREFETCH_MAX_REGISTERS`` registers (the biggest tiles are
chosen first). Tiles are copied in the widest vectors (16, 8 or 4 bytes) their rows allow.
``prefetch=False`` gives the plain load–barrier–compute loop (for ablations: ``benchmarks/kernels.py``
times the variants side by side).

**Tensor cores** (``tensor_cores=True``, the default): a matmul whose fp16 tiles fit the wmma shapes
(``optimize.tensor_cores``) runs as warp-level ``nvcuda::wmma`` 16×16×16 (or 8×32×16) products with fp32
accumulation; each warp stores its output tile to a private fp32 staging tile in shared memory, and its
lanes apply the fused epilogue from there. ``__syncwarp()`` sits outside the ``tile < tiles`` guard, so
every thread meets it the same number of times (the CPU emulation runs it as a block barrier).

**Padding** (``padding=True``, the default): tiles read across several rows at once (wmma operands, row
sums, rms_norm, last-dim reductions) get one 16-byte chunk of padding per row when their rows would
otherwise meet the same shared-memory banks (``optimize.layout``). Every access goes through the tile's
layout (``KernelWriter.offset``); the rest stay dense.

The four are fields of ``CodegenOptions``; ``PLAIN`` turns all of them off. Kernel-level ops other than
customized ones are lowered to one-op custom kernels first (``codegen.lower``), so every op has a kernel; with
``library_calls=True`` they stay library calls instead, run through CuPy (cuBLAS) by ``run.py``.

**Strides**: a graph input declared with strides (``g.new_input(dims, strides=...)``, e.g. a column-major
weight) is read in that layout: its loaders address global memory by the strides, in vectors only where the
last dim is contiguous and the other strides keep rows aligned, element by element otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field

from mirage_lab.arguments import did_you_mean
from mirage_lab.codegen.lower import lower_kernel_ops
from mirage_lab.errors import ArgumentError, UnsupportedOpError
from mirage_lab.ir.builder import KernelGraphBuilder, as_graph
from mirage_lab.ir.dtype import DType
from mirage_lab.ir.graph import Attrs, BlockGraph, Grid, KernelGraph, Node, loader_dtensor, saver_dtensor
from mirage_lab.ir.ops import Kind, Level, Op, ops_at
from mirage_lab.ir.smem import SMEM_CAPACITY
from mirage_lab.ir.tensor import Dims, TensorType, contiguous_strides
from mirage_lab.optimize.hardware import HARDWARE
from mirage_lab.optimize.layout import TileLayout, choose_layouts
from mirage_lab.optimize.memory import SmemPlan, plan_shared_memory
from mirage_lab.optimize.occupancy import BlockResources, occupancy
from mirage_lab.optimize.schedule import BlockSchedule, schedule_block_graph
from mirage_lab.optimize.tensor_cores import MMA_ALIGN, WARP, MmaTiling, mma_matmuls

KERNEL_PREFIX = "mirage_k"
AXES = "xyz"
#: storage type, load conversion, store conversion
CTYPES: dict[DType, tuple[str, str, str]] = {
    DType.FLOAT16: ("__half", "__half2float({})", "__float2half({})"),
    DType.BFLOAT16: ("__nv_bfloat16", "__bfloat162float({})", "__float2bfloat16({})"),
    DType.FLOAT32: ("float", "{}", "{}"),
}
#: the most registers a thread may hold for prefetched loop tiles (a 16-byte vector takes 4)
PREFETCH_MAX_REGISTERS = 64  # data only: ptxas adds about as many again for addresses and the loop body
#: copy widths, widest first: bytes → CUDA vector type (alignment = size)
VECTORS = ((16, "uint4"), (8, "uint2"), (4, "uint1"))
#: the GPU whose waves ``__launch_bounds__`` sizes for: the most SMs (H100 / H200: 132)
WAVE_TARGET = max(HARDWARE.values(), key=lambda hw: hw.sms)
#: the fewest registers per thread ``__launch_bounds__`` may ask ptxas to fit in
MIN_REGISTERS = 64
#: kernel-level ops that run as CuPy library calls
LIBRARY_KINDS = frozenset({Kind.MATMUL, Kind.UNARY, Kind.BINARY, Kind.REDUCTION, Kind.NORM})

HELPERS = """\
#ifndef MIRAGE_LAB_HELPERS  // guarded, so that several generated sources can share one file
#define MIRAGE_LAB_HELPERS
__device__ __forceinline__ float mirage_sigmoid(float x) { return 1.f / (1.f + expf(-x)); }
__device__ __forceinline__ float mirage_silu(float x) { return x * mirage_sigmoid(x); }
__device__ __forceinline__ float mirage_gelu(float x) { return 0.5f * x * (1.f + erff(x * 0.70710678118654752f)); }
#endif
#ifndef MIRAGE_LAB_WARP_SUM  // the CPU emulation brings its own: one exchange instead of one per step
#define MIRAGE_LAB_WARP_SUM
// v[j] summed over each aligned group of W lanes (W a power of two, at most 32); every lane of the warp calls it
template <int N, int W> __device__ __forceinline__ void mirage_warp_sum(float (&v)[N]) {
  #pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) {
    #pragma unroll
    for (int j = 0; j < N; ++j) v[j] += __shfl_xor_sync(0xffffffffu, v[j], o);
  }
}
#endif
"""


# --------------------------------------------------------------------------- options and per-kernel plans


@dataclass(frozen=True)
class CodegenOptions:
    """What the generator may use; all on by default (``benchmarks/kernels.py`` times them off one by one)."""

    prefetch: bool = True
    split_sums: bool = True
    tensor_cores: bool = True
    padding: bool = True


#: everything off: one thread per output, scalar matmuls, dense tiles, load–barrier–compute loops
PLAIN = CodegenOptions(prefetch=False, split_sums=False, tensor_cores=False, padding=False)
#: padding never pushes a kernel past the smallest target's shared memory (it is dropped instead)
PADDING_LIMIT = SMEM_CAPACITY["sm_80"]


#: the keywords of the codegen entry points besides the option flags (named in the unknown-keyword message)
ENTRY_KEYWORDS = ("options", "library_calls")


def codegen_options(options: CodegenOptions | None, flags: Mapping[str, object],
                    keywords: Sequence[str] = ENTRY_KEYWORDS) -> CodegenOptions:
    """``options``, or the options that keyword ``flags`` (``prefetch=False``, …) name. An unknown keyword, a
    flag that is not a bool, or both ways at once is an ``ArgumentError`` naming the valid ones; ``keywords``
    are the caller's other keywords, suggested too when one of them was misspelt."""
    names = list(CodegenOptions.__dataclass_fields__)
    unknown = sorted(set(flags) - set(names))
    if unknown:
        hints = [f"{u!r}{did_you_mean(u, [*names, *keywords])}" for u in unknown]
        raise ArgumentError(f"unknown codegen option(s) {', '.join(hints)}; the options are {', '.join(names)} "
                            f"(keywords, or fields of CodegenOptions), besides {', '.join(keywords)}")
    if options is not None:
        if not isinstance(options, CodegenOptions):
            raise ArgumentError(f"options must be a CodegenOptions (e.g. CodegenOptions(prefetch=False), or PLAIN), "
                                f"got {type(options).__name__} {options!r:.60}")
        if flags:
            raise ArgumentError(f"pass options= or keyword flags, not both (got both and {sorted(flags)})")
        return options
    wrong = [f"{k}={v!r}" for k, v in flags.items() if not isinstance(v, bool)]
    if wrong:
        raise ArgumentError(f"codegen options take True or False, got {', '.join(wrong)}")
    return CodegenOptions(**flags)  # type: ignore[arg-type]  # every value is a bool, checked above


@dataclass(frozen=True)
class KernelPlan:
    """One custom kernel's decisions: stages, tensor-core matmuls, tile layouts and shared-memory offsets."""

    schedule: BlockSchedule
    mma: Mapping[int, MmaTiling]
    layouts: Mapping[int, TileLayout]
    smem: SmemPlan


def plan_kernel(bg: BlockGraph, options: CodegenOptions) -> KernelPlan:
    schedule = schedule_block_graph(bg)
    mma = mma_matmuls(bg) if options.tensor_cores else {}
    layouts = choose_layouts(bg, mma, options.padding)
    smem = plan_shared_memory(bg, schedule, mma, layouts)
    if smem.peak > PADDING_LIMIT and any(lay.padded for lay in layouts.values()):
        layouts = choose_layouts(bg, mma, padding=False)
        smem = plan_shared_memory(bg, schedule, mma, layouts)
    return KernelPlan(schedule, mma, layouts, smem)


# --------------------------------------------------------------------------- the kernel-graph plan


@dataclass(frozen=True)
class KernelLaunch:
    """A generated kernel; ``args`` are DTensor ids: the customized op's inputs, then its outputs."""

    node: int
    name: str
    grid: Grid
    threads: int
    smem_bytes: int
    args: tuple[int, ...]
    barriers: int

    def __str__(self) -> str:
        g = ",".join(map(str, self.grid))
        return (f"{self.name}<<<({g}), {self.threads}, {self.smem_bytes} B>>>"
                f"({', '.join(f'd{a}' for a in self.args)})  # {self.barriers} barriers")


@dataclass(frozen=True)
class LibraryCall:
    """A predefined kernel op run through CuPy (``run.LIBRARY``)."""

    node: int
    op: Op
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    attrs: Attrs = ()

    def __str__(self) -> str:
        outs = ", ".join(f"d{t}" for t in self.outputs)
        attrs = "".join(f", {k}={v}" for k, v in self.attrs)
        return f"{outs} = cupy.{self.op.value}({', '.join(f'd{t}' for t in self.inputs)}{attrs})"


Step = KernelLaunch | LibraryCall


@dataclass(frozen=True)
class CudaProgram:
    """What runs, in order. ``strides``: the graph inputs declared with a layout other than row-major (DTensor
    id → strides in elements); they must be passed laid out that way (``run.lay_out``)."""

    tensors: tuple[TensorType, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    steps: tuple[Step, ...]
    strides: Mapping[int, Dims] = field(default_factory=dict)

    @property
    def launches(self) -> tuple[KernelLaunch, ...]:
        return tuple(s for s in self.steps if isinstance(s, KernelLaunch))

    def __str__(self) -> str:
        ins = ", ".join(f"d{t}: {self.tensors[t]}" + (f" strides {self.strides[t]}" if t in self.strides else "")
                        for t in self.inputs)
        body = [f"  {s}" for s in self.steps]
        return "\n".join([f"CudaProgram({ins})", *body, f"  return {', '.join(f'd{t}' for t in self.outputs)}"])


def prepare(graph: KernelGraph | KernelGraphBuilder, library_calls: bool = False) -> KernelGraph:
    """``graph`` frozen, with its predefined kernel ops lowered to one-op custom kernels (``codegen.lower``), or
    left to library calls with ``library_calls=True``."""
    g = as_graph(graph)
    return g if library_calls else lower_kernel_ops(g)


def input_strides(graph: KernelGraph) -> dict[int, Dims]:
    """Graph input (DTensor id) → its declared strides, for the inputs that are not row-major."""
    out = {}
    for node in graph.nodes:
        if node.op is Op.INPUT and node.attr("strides") is not None:
            t = node.outputs[0]
            if tuple(node.attr("strides")) != contiguous_strides(graph.tensors[t].dims):
                out[t] = tuple(node.attr("strides"))
    return out


def plan_cuda(graph: KernelGraph | KernelGraphBuilder, options: CodegenOptions | None = None, *,
              library_calls: bool = False, **flags: bool) -> CudaProgram:
    """The launches of ``graph`` (a builder or a frozen graph): one per customized op, and one per predefined kernel
    op, lowered to a custom kernel; with ``library_calls=True`` those stay library calls (CuPy, cuBLAS). Tensor
    cores and padding change the shared memory."""
    opts = codegen_options(options, flags)
    graph = prepare(graph, library_calls)
    steps: list[Step] = []
    for k, node in enumerate(graph.nodes):
        if node.op is Op.INPUT:
            continue
        if node.body is not None:
            bg = node.body
            kp = plan_kernel(bg, opts)
            steps.append(KernelLaunch(k, f"{KERNEL_PREFIX}{k}", bg.grid, math.prod(bg.block), kp.smem.peak,
                                      node.inputs + node.outputs, kp.schedule.barriers))
        elif node.kind in LIBRARY_KINDS:
            steps.append(LibraryCall(k, node.op, node.inputs, node.outputs, node.attrs))
        else:
            raise UnsupportedOpError(f"kernel-level op {node.op.value} (node {k}) has no library call; "
                                     "generate its kernel (library_calls=False)")
    return CudaProgram(graph.tensors, graph.inputs, graph.outputs, tuple(steps), input_strides(graph))


def generate_cuda(graph: KernelGraph | KernelGraphBuilder, options: CodegenOptions | None = None, *,
                  library_calls: bool = False, **flags: bool) -> str:
    """The complete CUDA source of ``graph`` (a builder or a frozen graph): one kernel per customized op and per
    predefined kernel op (lowered to a one-op custom kernel by ``codegen.lower``; ``library_calls=True`` leaves
    those to CuPy and generates only the custom kernels), in node order. ``options`` (or keyword flags):
    ``prefetch`` overlaps each iteration's loads of the next tiles with its arithmetic; ``split_sums`` spreads
    sums with few outputs over the idle threads; ``tensor_cores`` runs the matmuls that fit on wmma; ``padding``
    pads the rows of tiles read across rows (see the module docstring). ``PLAIN``, all off: the plain loops.
    Inputs declared with strides are read in that layout."""
    opts = codegen_options(options, flags)
    graph = prepare(graph, library_calls)
    strides = input_strides(graph)
    dtypes = {t.dtype for bg in graph.block_graphs for t in bg.tensors}
    writers = [KernelWriter(node.body, f"{KERNEL_PREFIX}{k}", opts, [strides.get(t) for t in node.inputs])
               for k, node in enumerate(graph.nodes) if node.body is not None]
    head = ["// Generated by mirage_lab.codegen.cuda from a μGraph; regenerate rather than edit.",
            "#include <cuda_fp16.h>"]
    if DType.BFLOAT16 in dtypes:
        head.append("#include <cuda_bf16.h>")
    if any(w.mma for w in writers):
        head += ["#include <mma.h>", "namespace wmma = nvcuda::wmma;"]
    return "\n".join(head) + "\n\n" + HELPERS + "".join("\n" + w.source() for w in writers)


# --------------------------------------------------------------------------- C expression helpers


def cfloat(x: float) -> str:
    if math.isinf(x):
        return "INFINITY" if x > 0 else "-INFINITY"
    r = repr(float(x))
    return r + "f" if ("." in r or "e" in r) else r + ".f"


def coords(dims: Dims, idx: str) -> list[str]:
    """C expressions of the row-major coordinates of flat index ``idx`` (which is < numel)."""
    out = []
    for d, (n, s) in enumerate(zip(dims, contiguous_strides(dims), strict=True)):
        c = idx if s == 1 else f"{idx} / {s}"
        outermost = all(x == 1 for x in dims[:d])  # no modulo needed: idx / s < n already
        out.append("0" if n == 1 else c if outermost else f"({c}) % {n}" if s != 1 else f"{c} % {n}")
    return out


def flat(dims: Dims, cs: list[str], strides: Dims | None = None) -> str:
    """The flat row-major index of coordinates ``cs`` (size-1 dims broadcast: they read index 0), or the offset
    under ``strides`` (a DTensor's declared layout; in 64-bit arithmetic when its span passes 32 bits)."""
    st = contiguous_strides(dims) if strides is None else strides
    wide = strides is not None and sum((n - 1) * s for n, s in zip(dims, st, strict=True)) >= 2**31
    terms = [f"(long long)({c}) * {s}" if wide else c if s == 1 else f"({c}) * {s}" if " " in c else f"{c} * {s}"
             for c, n, s in zip(cs, dims, st, strict=True) if n > 1 and c != "0" and s != 0]
    return " + ".join(terms) or "0"


def _expression(op: Op) -> Callable[..., str]:
    """An elementwise op's CUDA expression, from its template in the op table (``OpSpec.cuda``)."""
    spec = op.spec
    template = spec.cuda
    assert template is not None, f"{op.value} declares no CUDA expression"
    if spec.arity == 1:
        return lambda x, n: template.format(x=x, **{a: cfloat(n.attr(a)) for a in spec.attrs})
    return lambda a, b: template.format(a=a, b=b)


_ELEMENTWISE = [op for op in Op if op.spec.lowering == "elementwise"]
UNARY_EXPR: dict[Op, Callable[[str, Node], str]] = {op: _expression(op) for op in _ELEMENTWISE if op.spec.arity == 1}
BINARY_EXPR: dict[Op, Callable[[str, str], str]] = {op: _expression(op) for op in _ELEMENTWISE if op.spec.arity == 2}
#: accumulator post-processing after the loop; ``count`` = F · (the input's last dim) (SPEC §3.3)
def _finalize(template: str) -> Callable[[str, int], str]:
    return lambda v, count: template.format(v=v, count=cfloat(count))


FINAL_EXPR: dict[Op, Callable[[str, int], str]] = {
    op: _finalize(t) for op in Op if op.spec.accum is not None and (t := op.spec.accum.cuda_finalize) is not None
}


# --------------------------------------------------------------------------- one kernel


class KernelWriter:
    """Emits the kernel of one block graph; ``EMIT[op](writer, k)`` writes node k's code."""

    def __init__(self, bg: BlockGraph, name: str, options: CodegenOptions | None = None,
                 input_strides: Sequence[Dims | None] = ()) -> None:
        """``input_strides``: per customized input (loader), its DTensor's declared strides, None for row-major."""
        options = options or CodegenOptions()
        self.bg, self.name, self.split_sums = bg, name, options.split_sums
        kp = plan_kernel(bg, options)
        self.schedule, self.mma, self.layouts, self.plan = kp.schedule, kp.mma, kp.layouts, kp.smem
        self.threads = math.prod(bg.block)
        self.lines: list[str] = []
        self.depth = 1
        self.loader_param = {k: f"in{j}" for j, k in enumerate(n for n, x in enumerate(bg.nodes) if x.op is Op.INPUT)}
        self.saver_param = {k: f"out{j}" for j, k in enumerate(n for n, x in enumerate(bg.nodes) if x.op is Op.OUTPUT)}
        #: loader → its DTensor's declared strides, for the loaders of inputs that are not row-major
        self.strides = {k: st for k, st in zip(self.loader_param, input_strides, strict=False) if st is not None}
        for t in bg.tensors:
            ctype(t.dtype)  # fail early on an unsupported dtype
        self.prefetched = self._prefetched_loaders() if options.prefetch else {}

    def _prefetched_loaders(self) -> dict[int, int]:
        """Loop loader → vectors per thread (of its copy width) for the loaders to prefetch: vector-copied
        tiles, the biggest first, while their data fits ``PREFETCH_MAX_REGISTERS``."""
        if self.bg.forloop_range == 1 or not self.schedule.loop:
            return {}
        need, regs = {}, {}
        for k in self.schedule.loop[0].nodes:
            node = self.bg.nodes[k]
            if node.op is not Op.INPUT:
                continue
            d = loader_dtensor(node)
            tc = tile_copy(self.dims(node.outputs[0]), d.dims, d.dtype.itemsize, self.threads, self.strides.get(k))
            if tc.vtype:  # rows of whole vectors only; the others keep the plain copy
                need[k] = tc.rounds
                regs[k] = tc.rounds * tc.step * d.dtype.itemsize // 4
        out: dict[int, int] = {}
        for k in sorted(need, key=lambda k: (-regs[k], k)):  # the biggest tiles first, while registers last
            if sum(regs[j] for j in out) + regs[k] <= PREFETCH_MAX_REGISTERS:
                out[k] = need[k]
        return dict(sorted(out.items()))

    # ----- text
    def line(self, s: str) -> None:
        self.lines.append("  " * self.depth + s)

    @contextmanager
    def block(self, head: str) -> Iterator[None]:
        self.line(f"{head} {{" if head else "{")
        self.depth += 1
        yield
        self.depth -= 1
        self.line("}")

    def for_each(self, n: int, var: str = "idx") -> AbstractContextManager[None]:
        return self.block(f"for (int {var} = threadIdx.x; {var} < {n}; {var} += {self.threads})")

    def barrier(self, why: str) -> None:
        self.line(f"__syncthreads();  // {why}")

    # ----- tensors
    def dims(self, t: int) -> Dims:
        return self.bg.tensors[t].dims

    def offset(self, t: int, idx: str) -> str:
        """Where element ``idx`` (the row-major flat index) of STensor t sits in its tile (rows may be padded)."""
        return self.layouts[t].index(idx)

    def pitch(self, t: int) -> int:
        """Elements from one row of STensor t to the next."""
        return self.layouts[t].pitch

    def ld(self, t: int, idx: str) -> str:
        """fp32 value of element ``idx`` (row-major flat index) of STensor t."""
        return self.ld_at(t, self.offset(t, idx))

    def ld_at(self, t: int, off: str) -> str:
        """fp32 value at offset ``off`` of STensor t's tile (a physical offset: ``row * pitch + column``)."""
        return CTYPES[self.bg.tensors[t].dtype][1].format(f"s{t}[{off}]")

    def st(self, t: int, idx: str, v: str) -> None:
        self.line(f"s{t}[{self.offset(t, idx)}] = {CTYPES[self.bg.tensors[t].dtype][2].format(v)};")

    def elementwise(self, k: int, body: Callable[[list[str]], list[str]]) -> None:
        """Loop over node k's output; ``body(coords)`` defines ``float v``; then its epilogue and the store."""
        node = self.bg.nodes[k]
        out = node.outputs[0]
        with self.for_each(self.bg.tensors[out].numel):
            for s in body(coords(self.dims(out), "idx")):
                self.line(s)
            self.epilogue(k)

    def epilogue(self, k: int) -> None:
        """Node k's fused chain applied to ``v`` (its output element ``idx``), then the store."""
        out = self.bg.nodes[k].outputs[0]
        for j in self.schedule.chain(k):
            fused = self.bg.nodes[j]
            if fused.kind is Kind.ACCUM:  # SPEC §4: a NO_RED accumulator at the end of the chain
                self.line(f"acc{j}[idx] += v;  // {fused.op.value}")
                return
            self.line(f"v = {UNARY_EXPR[fused.op]('v', fused)};  // fused {fused.op.value}")
            out = fused.outputs[0]
        self.st(out, "idx", "v")

    # ----- the kernel
    def source(self) -> str:
        bg, sched, plan = self.bg, self.schedule, self.plan
        params = [f"const {ctype(loader_dtensor(bg.nodes[k]).dtype)}* __restrict__ {p}"
                  for k, p in self.loader_param.items()]
        params += [f"{ctype(saver_dtensor(bg, bg.nodes[k]).dtype)}* __restrict__ {p}"
                   for k, p in self.saver_param.items()]
        self.line(f"// grid {bg.grid}, {self.threads} threads, F = {bg.forloop_range}, "
                  f"{plan.peak} B shared ({plan.strategy}; {plan.naive} B without reuse), {sched.barriers} barriers")
        # one alignment for every kernel: a source's kernels share this declaration, and wmma needs 32 bytes
        self.line(f"extern __shared__ __align__({MMA_ALIGN}) char smem[];")
        for b in plan.buffers:
            ty = ctype(bg.tensors[int(b.key[1:])].dtype) if b.key.startswith("s") else "float"
            self.line(f"{ty}* {b.key} = reinterpret_cast<{ty}*>(smem + {plan.offsets[b.key]});")
        for k, n in self.prefetched.items():  # first, so these loads fly during the hoisted ones
            d = loader_dtensor(bg.nodes[k])
            vtype = _vector(self.dims(bg.nodes[k].outputs[0]), d.dims, d.dtype.itemsize, self.strides.get(k))[1]
            self.line(f"{vtype} pf{k}[{n}];  // s{bg.nodes[k].outputs[0]}'s next tile")
            self.emit(k, "iteration 0, into registers", fetch="0")
        for st in sched.prologue:
            for k in st.nodes:
                self.emit(k, "hoisted: the same tile every iteration")
        for k, node in enumerate(bg.nodes):
            if node.kind is Kind.ACCUM and node.op.spec.accum and node.op.spec.accum.combine == "sum":
                with self.for_each(bg.tensors[node.outputs[0]].numel):
                    self.line(f"acc{k}[idx] = 0.f;  // each thread updates the elements it zeroes")
        if sched.prologue:
            self.barrier("hoisted tiles are read by every thread")
        with self.block(f"for (int i = 0; i < {bg.forloop_range}; ++i)"):
            for s, st in enumerate(sched.loop):
                for k in st.nodes:
                    self.emit(k, "from the registers prefetched last iteration" if k in self.prefetched else "",
                              store=k in self.prefetched)
                self.barrier("next stage reads this one" if s + 1 < len(sched.loop)
                             else "the next iteration overwrites tiles still being read")
                if s == 0 and self.prefetched:
                    with self.block(f"if (i + 1 < {bg.forloop_range})"):
                        for k in self.prefetched:
                            self.emit(k, "iteration i + 1, in flight during this one", fetch="i + 1")
        for s, st in enumerate(sched.epilogue):
            if s:
                self.barrier("next stage reads this one")
            for k in st.nodes:
                (self.finalize if bg.nodes[k].kind is Kind.ACCUM else self.emit)(k)
        body = "\n".join(self.lines)
        return f'extern "C" __global__ void {self.launch_bounds()} {self.name}(\n    ' \
               + ",\n    ".join(params) + ") {\n" + body + "\n}\n"

    def launch_bounds(self) -> str:
        """``__launch_bounds__(threads[, blocks per SM])``: asks ptxas to fit the registers of as many blocks per
        SM as put the whole grid in one wave on the largest target (``WAVE_TARGET``), where shared memory
        allows it and it leaves at least ``MIN_REGISTERS`` a thread."""
        hw = WAVE_TARGET
        room = occupancy(BlockResources(self.threads, MIN_REGISTERS, self.plan.peak), hw).blocks_per_sm
        blocks = min(-(-math.prod(self.bg.grid) // hw.sms), room)
        return f"__launch_bounds__({self.threads}, {blocks})" if blocks > 1 else f"__launch_bounds__({self.threads})"

    def emit(self, k: int, note: str = "", fetch: str | None = None, store: bool = False) -> None:
        """Node k's code; for a prefetched loader, ``fetch`` (the iteration) loads its tile into registers
        and ``store`` writes the registers to its shared-memory tile."""
        node = self.bg.nodes[k]
        if node.op not in EMIT:
            raise UnsupportedOpError(f"block op {node.op.value} (node {k}) is not supported by the CUDA backend"
                                     f"{': ' + UNSUPPORTED[node.op] if node.op in UNSUPPORTED else ''}")
        outs = ", ".join(f"s{t}" for t in node.outputs)
        ins = ", ".join(f"s{t}" for t in node.inputs)
        self.line(f"// {outs or 'saver'} = {node.op.value}({ins}){'  // ' + note if note else ''}")
        with self.block(""):
            if fetch is not None or store:
                emit_prefetch(self, k, fetch)
            else:
                EMIT[node.op](self, k)

    def finalize(self, k: int) -> None:
        node = self.bg.nodes[k]
        out = node.outputs[0]
        count = self.bg.forloop_range * self.dims(node.inputs[0])[-1]
        with self.for_each(self.bg.tensors[out].numel):
            v = FINAL_EXPR[node.op](f"acc{k}[idx]", count) if node.op in FINAL_EXPR else f"acc{k}[idx]"
            self.st(out, "idx", v)


def ctype(dtype: DType) -> str:
    if dtype not in CTYPES:
        raise UnsupportedOpError(f"dtype {dtype} has no CUDA storage type here; use fp16, bf16 or fp32")
    return CTYPES[dtype][0]


# --------------------------------------------------------------------------- per-op emission


def _tile_copy(w: KernelWriter, t: int, full: Dims, base: str, glob: str, load: bool, itemsize: int,
               strides: Dims | None = None) -> None:
    """Copy STensor t's tile between shared memory and a DTensor at offset ``base``: row-major, or laid out in
    ``strides`` (a strided graph input).

    In the widest vectors (16, 8 or 4 bytes) that whole tile rows and DTensor rows allow (``_vector``); a
    padded tile's rows are whole vectors too, so each vector stays inside one row."""
    tc = tile_copy(w.dims(t), full, itemsize, w.threads, strides)
    w.line(f"const long long base = {base};")
    loop: AbstractContextManager[None]
    if tc.group:
        w.line(f"const int col = threadIdx.x % {tc.per_row}, row0 = threadIdx.x / {tc.per_row};")
        loop = w.block(f"if (row0 < {tc.group}) for (int row = row0; row < {tc.rows}; row += {tc.group})")
    else:
        loop = w.for_each(tc.chunks, "c")
    with loop:
        smem, g = _copy_addresses(w, t, full, tc, strides)
        smem, g = f"s{t}[{smem}]", f"{glob}[base + {g}]"
        src, dst = (g, smem) if load else (smem, g)
        if tc.vtype:
            src, dst = f"*reinterpret_cast<const {tc.vtype}*>(&{src})", f"*reinterpret_cast<{tc.vtype}*>(&{dst})"
        w.line(f"{dst} = {src};")


@dataclass(frozen=True)
class TileCopy:
    """How a block's threads copy one tile: ``step`` elements per copy (a ``vtype`` vector, or one element when
    empty), ``per_row`` copies per tile row, ``rounds`` copies per thread. Flat (``group`` 0): copy c goes to
    thread ``c % threads``. By rows, when ``per_row`` does not divide the threads: thread t takes column
    ``t % per_row`` of rows ``t / per_row + r·group``, so a thread's copies are a constant stride apart (one
    base address and immediate offsets, instead of a division and an address register per copy)."""

    step: int
    vtype: str
    per_row: int
    rows: int
    group: int
    rounds: int

    @property
    def chunks(self) -> int:
        return self.per_row * self.rows


def tile_copy(tile: Dims, full: Dims, itemsize: int, threads: int, strides: Dims | None = None) -> TileCopy:
    step, vtype = _vector(tile, full, itemsize, strides)
    per_row, rows = tile[-1] // step, math.prod(tile[:-1])
    if per_row < threads and threads % per_row and rows > 1:
        group = threads // per_row
        return TileCopy(step, vtype, per_row, rows, group, -(-rows // group))
    return TileCopy(step, vtype, per_row, rows, 0, -(-(per_row * rows) // threads))


def _copy_addresses(w: KernelWriter, t: int, full: Dims, tc: TileCopy, strides: Dims | None = None
                    ) -> tuple[str, str]:
    """(shared-memory offset, DTensor offset from the tile's base) of the current copy: of ``c`` when flat,
    of (``row``, ``col``) by rows. Declares ``idx`` (the flat index) for the flat mapping. ``strides``: the
    DTensor's declared layout (None: row-major)."""
    tile = w.dims(t)
    if tc.group:
        col = f"col * {tc.step}" if tc.step > 1 else "col"
        return f"row * {w.pitch(t)} + {col}", flat(full, [*coords(tile[:-1], "row"), col], strides)
    w.line(f"const int idx = c * {tc.step};" if tc.step > 1 else "const int idx = c;")
    whole = tile == full and strides is None
    return w.offset(t, "idx"), "idx" if whole else flat(full, coords(tile, "idx"), strides)


def _vector(tile: Dims, full: Dims, itemsize: int, strides: Dims | None = None) -> tuple[int, str]:
    """(elements per copy, vector type): the widest vector such that every tile row is whole vectors and
    every DTensor row starts aligned (tile offsets are then aligned too); (1, "") for element copies. A DTensor
    laid out in ``strides`` takes vectors only where its last dim is contiguous (stride 1) and every other stride
    keeps rows aligned; otherwise each element is loaded on its own."""
    for size, vtype in VECTORS:
        vec = size // itemsize
        rows_aligned = full[-1] % vec == 0 if strides is None else strides[-1] == 1 and all(
            s % vec == 0 for n, s in zip(full[:-1], strides[:-1], strict=True) if n > 1)
        if vec > 1 and tile[-1] % vec == 0 and rows_aligned:
            return vec, vtype
    return 1, ""


def emit_prefetch(w: KernelWriter, k: int, iteration: str | None) -> None:
    """Loader k's tile of ``iteration`` into registers ``pf<k>``, or (``iteration=None``) the registers into
    its shared-memory tile. Register r of a thread holds its r-th copy in ``_tile_copy``'s order."""
    node = w.bg.nodes[k]
    d, t = loader_dtensor(node), node.outputs[0]
    strides = w.strides.get(k)
    tc = tile_copy(w.dims(t), d.dims, d.dtype.itemsize, w.threads, strides)
    if iteration is not None:
        base = _block_offset(w, d.dims, w.dims(t), node.attr("imap"), node.attr("fmap", -1), iteration, strides)
        w.line(f"const long long base = {base};")
    if tc.group:
        w.line(f"const int col = threadIdx.x % {tc.per_row}, row0 = threadIdx.x / {tc.per_row};")
    w.line("#pragma unroll")
    with w.block(f"for (int r = 0; r < {w.prefetched[k]}; ++r)"):
        if tc.group:
            w.line(f"const int row = row0 + r * {tc.group};")
            guard = f"row0 < {tc.group} && row < {tc.rows}"
        else:
            w.line(f"const int c = threadIdx.x + r * {w.threads};")
            guard = f"c < {tc.chunks}"
        with w.block(f"if ({guard})"):
            smem, g = _copy_addresses(w, t, d.dims, tc, strides)
            if iteration is not None:
                w.line(f"pf{k}[r] = *reinterpret_cast<const {tc.vtype}*>(&{w.loader_param[k]}[base + {g}]);")
            else:
                w.line(f"*reinterpret_cast<{tc.vtype}*>(&s{t}[{smem}]) = pf{k}[r];")


def _block_offset(w: KernelWriter, full: Dims, tile: Dims, amap: tuple[int, ...], fmap: int,
                  iteration: str = "i", strides: Dims | None = None) -> str:
    """The DTensor offset of this block's (and iteration's) tile: ``c[d]·t[d]`` per SPEC §3.4, in elements of
    a row-major DTensor or of one laid out in ``strides``."""
    strides = strides or contiguous_strides(full)
    terms = []
    for d in range(len(full)):
        unit = tile[d] * strides[d]
        if unit == 0:  # a stride-0 (broadcast) dim: every tile starts at the same place
            continue
        for a in range(3):
            if amap[a] == d and w.bg.grid[a] > 1:
                scale = unit * (w.bg.forloop_range if fmap == d else 1)
                terms.append(f"(long long)blockIdx.{AXES[a]} * {scale}")
        if fmap == d:
            it = iteration if iteration.isidentifier() or iteration.isdigit() else f"({iteration})"
            terms.append(f"(long long){it} * {unit}")
    return " + ".join(terms) or "0"


def emit_loader(w: KernelWriter, k: int) -> None:
    node = w.bg.nodes[k]
    d = loader_dtensor(node)
    t = node.outputs[0]
    strides = w.strides.get(k)
    base = _block_offset(w, d.dims, w.dims(t), node.attr("imap"), node.attr("fmap", -1), strides=strides)
    _tile_copy(w, t, d.dims, base, w.loader_param[k], True, d.dtype.itemsize, strides)


def emit_saver(w: KernelWriter, k: int) -> None:
    node = w.bg.nodes[k]
    t = node.inputs[0]
    d = saver_dtensor(w.bg, node)
    base = _block_offset(w, d.dims, w.dims(t), node.attr("omap"), -1)
    _tile_copy(w, t, d.dims, base, w.saver_param[k], False, d.dtype.itemsize)


def emit_unary(w: KernelWriter, k: int) -> None:
    node = w.bg.nodes[k]
    w.elementwise(k, lambda cs: [f"float v = {UNARY_EXPR[node.op](w.ld(node.inputs[0], 'idx'), node)};"])


def emit_binary(w: KernelWriter, k: int) -> None:
    node = w.bg.nodes[k]
    a, b = node.inputs

    def body(cs: list[str]) -> list[str]:
        ia, ib = (("idx" if w.dims(t) == w.dims(node.outputs[0]) else flat(w.dims(t), cs)) for t in (a, b))
        return [f"float v = {BINARY_EXPR[node.op](w.ld(a, ia), w.ld(b, ib))};"]

    w.elementwise(k, body)


def split_sum(w: KernelWriter, outputs: int, length: int) -> int:
    """Threads per output of a sum over ``length`` terms: when the outputs leave at least half the block idle,
    the idle threads each take a strided share of the terms (``_split_block``). A power of two when warp
    shuffles combine the shares (whole warps), so that a share's threads are an aligned group of lanes."""
    share = min(w.threads // outputs, length)
    if share < 2 or not w.split_sums:
        return 1
    return 1 << (share.bit_length() - 1) if w.threads % WARP == 0 else share


@contextmanager
def _split_block(w: KernelWriter, total: int, share: int, name: str) -> Iterator[None]:
    """The body of a split sum over ``total`` = outputs × ``share`` ≤ threads: declares ``t``, ``<name>`` (the
    output) and ``part``. Every thread runs it (``t < total`` guards the work, not the block), so that all
    lanes meet the warp shuffles of ``_combine``."""
    assert total <= w.threads, (total, w.threads)  # split_sum gives each output at most threads // outputs
    with w.block(""):
        w.line("const int t = threadIdx.x;")
        w.line(f"const int {name} = t / {share}, part = t % {share};  // consecutive threads: consecutive terms")
        yield


def _combine(w: KernelWriter, share: int, values: str, count: int, total: int) -> tuple[str, str]:
    """Sum the ``share`` threads' partial ``values`` (an array of ``count``). With whole warps, a shuffle
    butterfly (``mirage_warp_sum``) within each share, or each warp of it, leaves the total in every lane:
    returns the first lane's guard and ``"+="`` (one writer per output) or ``"atomic"`` (a share wider than a
    warp: one add per warp). Without whole warps: every thread's guard and ``"atomic"``."""
    if w.threads % WARP:
        return f"t < {total}", "atomic"
    group = min(share, WARP)
    w.line(f"mirage_warp_sum<{count}, {group}>({values});  // the partial sums of {group} lanes, in registers")
    if share <= WARP:
        return f"part == 0 && t < {total}", "+="
    return f"threadIdx.x % {WARP} == 0 && t < {total}", "atomic"


def _add(target: str, value: str, how: str, note: str) -> str:
    return f"atomicAdd(&{target}, {value});  // {note}" if how == "atomic" else f"{target} += {value};  // {note}"


def _strip_width(w: KernelWriter, parts: list[tuple[int, int]], n: int, rows: int, splits: bool) -> int:
    """Output columns per thread in a CUDA-core matmul: the widest fp16 vector (8, 4, 2) that N and every B
    pitch allow; without a K split, only while that still leaves a strip for every thread."""
    if any(w.bg.tensors[b].dtype is not DType.FLOAT16 for _, b in parts):
        return 1
    for width in (8, 4, 2):
        if n % width == 0 and all(w.pitch(b) % width == 0 for _, b in parts) and (
                splits or rows * n // width >= w.threads):
            return width
    return 1


def _cuda_core_matmul(w: KernelWriter, k: int, parts: list[tuple[int, int]], n: int) -> bool:
    """A matmul on CUDA cores with register blocking: each thread owns a strip of ``width`` consecutive output
    columns, reads A's element once and B's strip as one vector per step of K, and keeps ``width`` fp32 sums.
    When the strips leave at least half the block idle and the matmul feeds a plain sum accumulator, the K
    loop is split over the idle threads (consecutive threads on consecutive terms), whose partial sums
    ``_combine`` adds up. False when the parts' split points differ (``concat_then_matmul`` of unequal splits)."""
    if not all(w.dims(a)[-1] == w.dims(b)[-2] for a, b in parts):
        return False
    chain = w.schedule.chain(k)
    into = chain[0] if len(chain) == 1 and w.bg.nodes[chain[0]].op is Op.ACCUM_NO_RED else None
    rows = w.bg.tensors[w.bg.nodes[k].outputs[0]].numel // n
    width = _strip_width(w, parts, n, rows, into is not None and w.split_sums)
    strips, across = rows * n // width, n // width
    share = split_sum(w, strips, min(w.dims(a)[-1] for a, _ in parts)) if into is not None else 1
    total = strips * share
    loop = (_split_block(w, total, share, "strip") if share > 1
            else w.block(f"for (int strip = threadIdx.x; strip < {strips}; strip += {w.threads})"))
    with loop:
        w.line(f"const int m = strip / {across}, n0 = strip % {across} * {width};" if across > 1
               else "const int m = strip, n0 = 0;")
        w.line(f"float sum[{width}] = {{}};")
        with w.block(f"if (t < {total})") if share > 1 and total % w.threads else nullcontext():
            for a, b in parts:
                head = (f"for (int kk = part; kk < {w.dims(a)[-1]}; kk += {share})" if share > 1
                        else f"for (int kk = 0; kk < {w.dims(a)[-1]}; ++kk)")
                with w.block(head):
                    w.line(f"const float x = {w.ld_at(a, f'm * {w.pitch(a)} + kk')};")
                    _strip_products(w, b, width)
        guard, how = _combine(w, share, "sum", width, total) if share > 1 else ("", "")
        with w.block(f"if ({guard})") if guard else nullcontext():
            w.line("#pragma unroll")
            with w.block(f"for (int j = 0; j < {width}; ++j)"):
                w.line(f"const int idx = m * {n} + n0 + j;")
                if share > 1:
                    note = f"accum_no_red; the K sum split over {share} threads"
                    w.line(_add(f"acc{into}[idx]", "sum[j]", how, note))
                else:
                    w.line("float v = sum[j];")
                    w.epilogue(k)
    return True


def _strip_products(w: KernelWriter, b: int, width: int) -> None:
    """``sum[j] += x · B[kk][n0 + j]`` for the strip, B's strip read as one vector of ``width`` halves."""
    if width == 1:
        w.line(f"sum[0] += x * {w.ld_at(b, f'kk * {w.pitch(b)} + n0')};")
        return
    vtype = dict(VECTORS)[width * 2]
    w.line(f"const {vtype} y = *reinterpret_cast<const {vtype}*>(&s{b}[kk * {w.pitch(b)} + n0]);")
    w.line("const __half2* h = reinterpret_cast<const __half2*>(&y);")
    w.line("#pragma unroll")
    with w.block(f"for (int j = 0; j < {width // 2}; ++j)"):
        w.line("const float2 f = __half22float2(h[j]);")
        w.line("sum[2 * j] += x * f.x;")
        w.line("sum[2 * j + 1] += x * f.y;")


def emit_mma(w: KernelWriter, k: int) -> None:
    """Matmul k on tensor cores (``optimize.tensor_cores``): warps take output tiles in turn; each stores its
    fp32 tile to its staging tile, whose elements its lanes then finish like any element of the output."""
    t = w.mma[k]
    (m, n), cols = t.shape, t.cols

    def own_tile() -> AbstractContextManager[None]:
        """Guards a warp's work in a last round that some warps sit out (never a ``__syncwarp()``)."""
        return w.block(f"if (tile < {t.tiles})") if t.tiles % t.warps else nullcontext()

    w.line(f"float* stage = mma{k} + (threadIdx.x / {WARP}) * {m * n};  // this warp's fp32 output tile")
    with w.block(f"for (int t0 = 0; t0 < {t.tiles}; t0 += {t.warps})"):
        w.line(f"const int tile = t0 + threadIdx.x / {WARP};")
        across = cols // n  # tiles per row of tiles
        w.line(f"const int tm = tile / {across} * {m}, tn = tile % {across} * {n};" if across > 1
               else f"const int tm = tile * {m}, tn = 0;")
        with own_tile():
            w.line(f"wmma::fragment<wmma::accumulator, {m}, {n}, 16, float> c;")
            w.line("wmma::fill_fragment(c, 0.f);")
            for a, b, kdim in t.parts:
                with w.block(f"for (int kk = 0; kk < {kdim}; kk += 16)"):
                    w.line(f"wmma::fragment<wmma::matrix_a, {m}, {n}, 16, __half, wmma::row_major> a;")
                    w.line(f"wmma::fragment<wmma::matrix_b, {m}, {n}, 16, __half, wmma::row_major> b;")
                    pa, pb = w.pitch(a), w.pitch(b)
                    w.line(f"wmma::load_matrix_sync(a, &s{a}[tm * {pa} + kk], {pa});")
                    w.line(f"wmma::load_matrix_sync(b, &s{b}[kk * {pb} + tn], {pb});")
                    w.line("wmma::mma_sync(c, a, b, c);")
            w.line(f"wmma::store_matrix_sync(stage, c, {n}, wmma::mem_row_major);")
        w.line("__syncwarp();  // the lanes read what all of them stored")
        with own_tile(), w.block(f"for (int e = threadIdx.x % {WARP}; e < {m * n}; e += {WARP})"):
            w.line(f"const int idx = (tm + e / {n}) * {cols} + tn + e % {n};")
            w.line("float v = stage[e];")
            w.epilogue(k)
        if t.tiles > t.warps:  # after the last round, the stage's next writer is behind a __syncthreads()
            w.line("__syncwarp();  // read before the next tile overwrites the stage")


def emit_matmul(w: KernelWriter, k: int) -> None:
    node = w.bg.nodes[k]
    if k in w.mma:
        emit_mma(w, k)
        return
    parts = list(zip(node.inputs[:len(node.inputs) // 2], node.inputs[len(node.inputs) // 2:], strict=True))
    n = w.dims(node.outputs[0])[-1]
    if _cuda_core_matmul(w, k, parts, n):
        return

    def body(cs: list[str]) -> list[str]:
        lines = [f"const int m = idx / {n}, n = idx % {n};", "float v = 0.f;"]
        (a0, b0), (a1, b1) = parts  # concat_then_matmul whose split points differ: multiply the concatenations
        ka0, kb0 = w.dims(a0)[-1], w.dims(b0)[-2]
        pa0, pa1, pb0, pb1 = (w.pitch(t) for t in (a0, a1, b0, b1))
        lhs = f"(kk < {ka0} ? {w.ld_at(a0, f'm * {pa0} + kk')} : {w.ld_at(a1, f'm * {pa1} + kk - {ka0}')})"
        rhs = f"(kk < {kb0} ? {w.ld_at(b0, f'kk * {pb0} + n')} : {w.ld_at(b1, f'(kk - {kb0}) * {pb1} + n')})"
        return [*lines, f"for (int kk = 0; kk < {ka0 + w.dims(a1)[-1]}; ++kk) v += {lhs} * {rhs};"]

    w.elementwise(k, body)


def _reduce_lines(w: KernelWriter, x: int, dim: int, group: int, cs: list[str], op: str) -> list[str]:
    """``v = op over r of x[.., j + r·group, ..]`` along ``dim`` (strided grouping, SPEC §2)."""
    dims = w.dims(x)
    stride = contiguous_strides(dims)[dim] * group
    if dim == len(dims) - 1:  # the terms share a row: its (padded) offset once, then plain steps
        base, first, step = w.offset(x, flat(dims, cs)), w.ld_at(x, "base"), w.ld_at(x, f"base + r * {stride}")
    else:
        base, first, step = flat(dims, cs), w.ld(x, "base"), w.ld(x, f"base + r * {stride}")
    acc = f"v += {step};" if op == "sum" else f"v = fmaxf(v, {step});"
    return [f"const int base = {base};", f"float v = {first};",
            f"for (int r = 1; r < {dims[dim] // group}; ++r) {acc}"]


def emit_reduction(w: KernelWriter, k: int) -> None:
    node = w.bg.nodes[k]
    dim = int(node.attr("dim"))
    group = w.bg.reduction_dimx if node.op is Op.REDUCTION_TO_DIMX else int(node.attr("group_size", 1))
    w.elementwise(k, lambda cs: _reduce_lines(w, node.inputs[0], dim, group, cs, "sum"))


def emit_reduction_max(w: KernelWriter, k: int) -> None:
    """[lab] the running max over the loop and diff = previous max − new max (0 at i = 0, or post-loop)."""
    node = w.bg.nodes[k]
    big, diff = node.outputs
    post = w.bg.tensors[node.inputs[0]].post_loop
    with w.for_each(w.bg.tensors[big].numel):
        for s in _reduce_lines(w, node.inputs[0], int(node.attr("dim")), 1, coords(w.dims(big), "idx"), "max"):
            w.line(s)
        if post:
            w.st(big, "idx", "v")
            w.st(diff, "idx", "0.f")
            return
        w.line(f"const float prev = max{k}[idx], run = i == 0 ? v : fmaxf(prev, v);")
        w.line(f"max{k}[idx] = run;")
        w.st(big, "idx", "run")
        w.st(diff, "idx", "i == 0 ? 0.f : prev - run")


def emit_rms_norm(w: KernelWriter, k: int) -> None:
    node = w.bg.nodes[k]
    x = node.inputs[0]
    dims = w.dims(x)
    n = math.prod(tuple(node.attr("normalized_shape", dims[-1:])))
    with w.for_each(math.prod(dims) // n, "row"):
        w.line("float ss = 0.f;")
        e = w.ld(x, f"row * {n} + j") if n != dims[-1] else w.ld_at(x, f"row * {w.pitch(x)} + j")
        w.line(f"for (int j = 0; j < {n}; ++j) {{ const float e = {e}; ss += e * e; }}")
        w.line(f"rms{k}[row] = sqrtf(ss / {cfloat(n)});")
    w.barrier("every thread reads the row statistics")
    w.elementwise(k, lambda cs: [f"float v = {w.ld(x, 'idx')} / rms{k}[idx / {n}];"])


def emit_concat(w: KernelWriter, k: int) -> None:
    node = w.bg.nodes[k]
    a, b = node.inputs
    d = int(node.attr("dim"))
    na = w.dims(a)[d]

    def body(cs: list[str]) -> list[str]:
        shifted = [f"cd - {na}" if i == d else c for i, c in enumerate(cs)]
        at = [("cd" if i == d else c) for i, c in enumerate(cs)]
        return [f"const int cd = {cs[d]};",
                f"float v = cd < {na} ? {w.ld(a, flat(w.dims(a), at))} : {w.ld(b, flat(w.dims(b), shifted))};"]

    w.elementwise(k, body)


def emit_accumulate(w: KernelWriter, k: int) -> None:
    """One iteration's update of an accumulator's fp32 state (SPEC §3.3)."""
    node = w.bg.nodes[k]
    x, out = node.inputs[0], node.outputs[0]
    n = w.dims(x)[-1]
    outputs = w.bg.tensors[out].numel
    if node.op in (Op.ACCUM_SUM, Op.ACCUM_MEAN, Op.ACCUM_RMS) and (share := split_sum(w, outputs, n)) > 1:
        total = outputs * share
        with _split_block(w, total, share, "idx"):
            e = w.ld_at(x, f"idx * {w.pitch(x)} + j")
            w.line("float c[1] = {};")
            with w.block(f"if (t < {total})") if total % w.threads else nullcontext():
                w.line(f"for (int j = part; j < {n}; j += {share}) {{ const float e = {e}; "
                       f"c[0] += {'e * e' if node.op is Op.ACCUM_RMS else 'e'}; }}")
            guard, how = _combine(w, share, "c", 1, total)
            with w.block(f"if ({guard})"):
                w.line(_add(f"acc{k}[idx]", "c[0]", how, f"the row sum split over {share} threads"))
        return
    with w.for_each(outputs):
        if node.op in (Op.ACCUM_NO_RED, Op.ACCUM_NO_RED_RESCALE, Op.ACCUM_MAX):
            w.line(f"const float c = {w.ld(x, 'idx')};")
        elif node.op is Op.ACCUM_SUM_TODIMX:
            X = w.bg.reduction_dimx
            w.line(f"const int base = (idx / {X}) * {n} + idx % {X};")
            w.line("float c = 0.f;")
            w.line(f"for (int r = 0; r < {n // X}; ++r) c += {w.ld(x, f'base + r * {X}')};")
        else:  # a row sum (of squares for rms)
            e = w.ld_at(x, f"idx * {w.pitch(x)} + j")
            term = "e * e" if node.op is Op.ACCUM_RMS else "e"
            w.line("float c = 0.f;")
            w.line(f"for (int j = 0; j < {n}; ++j) {{ const float e = {e}; c += {term}; }}")
        a = f"acc{k}[idx]"
        if node.op is Op.ACCUM_MAX:
            w.line(f"{a} = i == 0 ? c : fmaxf({a}, c);")
        elif node.op in (Op.ACCUM_NO_RED_RESCALE, Op.ACCUM_SUM_RESCALE):
            w.line(f"{a} = i == 0 ? c : {a} * {w.ld(node.inputs[1], _row(node.op, n))} + c;")
        else:
            w.line(f"{a} += c;")


def _row(op: Op, n: int) -> str:
    """The rescale factor's index: one per row of the input (the state is per element or per row)."""
    return f"idx / {n}" if op is Op.ACCUM_NO_RED_RESCALE else "idx"


#: the emitter of each lowering family (``ir.ops.LOWERINGS``) but "kernel" (customized ops are whole kernels)
FAMILIES: dict[str, Callable[[KernelWriter, int], None]] = {
    "load": emit_loader, "save": emit_saver, "matmul": emit_matmul, "reduction": emit_reduction,
    "reduction_max": emit_reduction_max, "rms_norm": emit_rms_norm, "concat": emit_concat,
    "accumulate": emit_accumulate,
}
#: each block-level op's emitter, by its lowering family in the op table
EMIT: dict[Op, Callable[[KernelWriter, int], None]] = {
    op: (emit_unary if op in UNARY_EXPR else emit_binary) if op.spec.lowering == "elementwise"
    else FAMILIES[str(op.spec.lowering)] for op in ops_at(Level.BLOCK)
}
#: block-level ops the CUDA backend does not lower, with the reason (every block op is in EMIT or here)
UNSUPPORTED: dict[Op, str] = {}
