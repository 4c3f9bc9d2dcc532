"""The proxy cost model (SPEC §8.1 [lab]): an analytical latency estimate for CPU-only machines.

The reference has no cost model: it profiles every candidate on a GPU. mirage_lab's cost interface
has two implementations, *measured* (GPU timing) and this *proxy*. Every estimate it returns says
``kind="proxy"`` (in its repr, ``str``, HTML, ``to_dict`` and DataFrames) so a proxy figure is never
mistaken for a measurement. It ranks μGraphs; its absolute seconds are a roofline bound, not a
prediction. Results (``CostEstimate``, ``KernelCost``, ``OpCost``) live in ``estimate.py``, the GPU
figures in ``hardware.py``, the occupancy rules in ``occupancy.py``, ranking in ``ranking.py``.

``proxy_cost(graph, hardware="H100")`` walks the kernel graph once. Rules (each a [lab] decision
where SPEC is silent):

**Kernels and launches.** Every kernel-graph node other than an input is one kernel and one launch:
a predefined op (matmul, elementwise, reduction, rms_norm) runs as one library kernel, a customized
op as one generated kernel. Inputs cost nothing. There is no inter-kernel fusion and no overlap of
kernels; intermediate DTensors are written to and read back from device memory (DRAM), even when
they would fit in L2 — a known bias in favour of fusion, which is what the proxy is meant to
reward.

**Bytes, predefined kernel op.** ``DRAM = Σ bytes of its distinct input DTensors + Σ bytes of its
outputs`` (elements × ``DType.itemsize``; a broadcast operand is read once at its own size; an
operand used twice, ``mul(x, x)``, is read once).

**Bytes, customized op** (block graph with N = gx·gy·gz blocks and F iterations). Loader ℓ reads
its tile ``tile_bytes(ℓ)`` per block ``iters(ℓ)`` times, ``iters = F`` if it has a forloop dim and
``1`` if not (an ``fmap = φ`` loader is hoisted out of the loop, SPEC §8.2 step 5). Its total read is
``R(ℓ) = tile_bytes(ℓ) · iters(ℓ) · N``, which equals ``bytes(D) × replication``, where replication
is the product of the grid sizes on axes that replicate D (imap = φ). Per distinct input DTensor D:

* the first ``bytes(D)`` are compulsory DRAM traffic (charged to the first loader of D);
* the re-reads ``Σ_ℓ→D R(ℓ) − bytes(D)`` (replicated loaders, or D loaded twice) are served by L2
  if the kernel's re-read DTensors fit in L2 together (``Σ bytes(D) ≤ l2_bytes``), and are charged
  to L2 bandwidth; otherwise they are charged to DRAM as well.

Savers write their output DTensors once (blocks write disjoint regions, SPEC §3.2):
``DRAM += Σ bytes(saver DTensor)``. **Shared-memory traffic**: a loader writes what it reads
(``R(ℓ)``); a compute op reads its distinct input tiles and writes its output tiles on every run;
a saver reads its tile once per block. Which tiles live in shared memory follows the op table's
``smem_counted`` flag (the SPEC §3.6 accounting): outputs of unary ops and of ``accum_no_red`` stay in
registers (epilogue chains and register accumulators, SPEC §4) and are not counted.

**FLOPs**, by the op table's ``Kind`` (``ELEMENT_FLOPS``), counted on DTensor dims at kernel level
and on per-block, per-iteration tile dims at block level:

* MATMUL: ``2 · numel(out) · k``, k = the contracted size (the sum of the left operands' last dims for
  ``concat_then_matmul``); at kernel level ``out`` includes the batch dims, i.e. ``2·b·m·n·k``.
  Tensor-core FLOPs.
* UNARY, BINARY: 1 per output element. REDUCTION: 1 per input element. NORM (rms_norm): 3 per input
  element (square, sum, divide). CONCAT, IO (loaders, savers): 0. ACCUM: 1 per input element per
  iteration; 2 for ``accum_rms`` (square, add) and the two rescale accumulators (multiply, add).
  All of these are vector (CUDA-core) FLOPs.
* A block op runs ``F`` times per block, except a non-accumulator op with a post-loop input, which
  runs once (SPEC §3.4); accumulators run every iteration. Block FLOPs = per-run FLOPs × runs × N.

**Occupancy** of a customized op (``occupancy.py``): resident blocks per SM ``b`` from its shared
memory (the SPEC §3.6 sum), estimated registers and threads per block, and the architecture's limits;
``waves = ceil(N / (SMs · b))``. Blocks are spread evenly, so the busiest SM runs ``c = ceil(N / SMs)``
blocks over the kernel's life and holds ``r = min(b, c)`` at once. Then

* ``u = N / (SMs · c)``: the share of SM-time that has work (``N / SMs`` for a grid smaller than the
  GPU; the tail of the last wave otherwise). Co-resident blocks share their SM's throughput, so ``b``
  does not change ``u``. It scales compute and shared-memory time (per-SM resources).
* ``e_mem = min(1, (N / waves) · inflight / (dram_bytes_per_s · dram_latency_s))``: Little's law over
  the whole GPU, with ``N / waves`` the blocks resident on average and ``inflight`` the bytes one block
  loads per iteration (all of an iteration's loads are issued before its barrier, SPEC §8.2 step 5).
  It scales DRAM and L2 time: DRAM bandwidth is shared, and a few SMs can draw all of it (one SM loads
  ~128 B/clock, ~10× its even share) provided enough bytes are in flight.
* ``e_comp = min(1, r · warps / 4)``: an SM needs a warp on each of its 4 schedulers.

A block that does not fit an SM (shared memory over ``smem_per_block``, too many threads) costs
``inf`` and is reported as "does not fit". A library kernel gets ``u = e = 1`` (vendor kernels are
tuned for occupancy); with ``occupancy=False`` every kernel does (every kernel gets the whole GPU).

**Time** (a roofline per kernel)::

    memory_s  = max(DRAM / dram_bytes_per_s / e_mem, L2 / l2_bytes_per_s / e_mem, smem / smem_bytes_per_s / u)
    compute_s = (tensor_flops / flops_per_s + vector_flops / vector_flops_per_s) / (u · e_comp)
    kernel_s  = max(memory_s, compute_s) + launch_s
    seconds   = Σ_kernels kernel_s            ( = Σ roofline + launches × launch_s )

All matmul FLOPs are charged at the fp16 dense tensor-core peak whatever the dtype (the benchmarks
are fp16), other FLOPs at the fp32 CUDA-core peak (accumulation and transcendentals run in fp32).

**Per op** (``CostEstimate.per_op()``): a library kernel is one row charged its kernel's time; a
customized kernel is one row for its launch plus one row per block op, each charged the kernel's
roofline time in proportion to the op's own ``memory_s + compute_s`` (same formulas on the op's own
bytes and FLOPs). The rows sum to ``seconds``.

**Hardware presets** (``HARDWARE``: A100, H100, H200, in ``hardware.py``): datasheet / whitepaper and
CUDA Programming Guide figures for the SXM parts; each preset's ``source`` field cites them.
``launch_s`` (3 µs), ``l2_bytes_per_s`` and ``dram_latency_s`` are [uncertain] estimates. Pass a
``Hardware(...)`` (or ``dataclasses.replace`` a preset) to try other figures, and
``resources={node: BlockResources(...)}`` to replace the register / shared-memory estimate of a
customized op with measured figures (``nvcc -Xptxas -v``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mirage_lab.errors import ArgumentError
from mirage_lab.ir.builder import KernelGraphBuilder
from mirage_lab.ir.graph import BlockGraph, KernelGraph, Node, loader_dtensor
from mirage_lab.ir.ops import Kind, Op
from mirage_lab.ir.tensor import TensorType
from mirage_lab.optimize.estimate import CostEstimate, KernelCost, OpCost
from mirage_lab.optimize.hardware import HARDWARE, Hardware, get_hardware
from mirage_lab.optimize.occupancy import BlockResources, Occupancy, estimate_resources, occupancy

__all__ = ["ELEMENT_FLOPS", "HARDWARE", "BlockResources", "CostEstimate", "Hardware", "KernelCost", "OpCost",
           "customized_floor", "get_hardware", "proxy_cost"]

#: warps an SM needs resident to keep its four schedulers busy
SCHEDULERS_PER_SM = 4


# --------------------------------------------------------------------------- FLOPs

#: Kind → (which tensor's elements are counted: "in" = the first input, "out" = the first output,
#: FLOPs per element). MATMUL and CUSTOMIZED are computed separately.
ELEMENT_FLOPS: dict[Kind, tuple[str, int]] = {
    Kind.UNARY: ("out", 1),
    Kind.BINARY: ("out", 1),
    Kind.REDUCTION: ("in", 1),
    Kind.NORM: ("in", 3),
    Kind.ACCUM: ("in", 1),
    Kind.CONCAT: ("out", 0),
    Kind.IO: ("out", 0),
}
#: per-op exceptions to ``ELEMENT_FLOPS``: square + add, multiply + add
_FLOPS_OVERRIDE: dict[Op, int] = {Op.ACCUM_RMS: 2, Op.ACCUM_NO_RED_RESCALE: 2, Op.ACCUM_SUM_RESCALE: 2}


def _op_flops(node: Node, tensors: tuple[TensorType, ...]) -> tuple[int, int]:
    """(tensor-core, vector) FLOPs of one run of ``node`` on the given tensor types."""
    kind = node.kind
    if kind is Kind.MATMUL:
        ins = [tensors[i] for i in node.inputs]
        k = sum(t.dims[-1] for t in ins[: max(1, len(ins) // 2)])  # left operands: A, or A0 and A1
        return 2 * tensors[node.outputs[0]].numel * k, 0
    if kind is Kind.CUSTOMIZED:
        raise AssertionError("customized ops are costed by their block graph")
    side, per = ELEMENT_FLOPS[kind]
    per = _FLOPS_OVERRIDE.get(node.op, per)
    if per == 0:
        return 0, 0
    ids = node.inputs if side == "in" else node.outputs
    return 0, per * tensors[ids[0]].numel


# --------------------------------------------------------------------------- traffic


@dataclass
class _Traffic:
    """Bytes and FLOPs of one op or one kernel."""

    dram: int = 0
    l2: int = 0
    smem: int = 0
    tensor_flops: int = 0
    vector_flops: int = 0

    def add(self, other: _Traffic) -> None:
        self.dram += other.dram
        self.l2 += other.l2
        self.smem += other.smem
        self.tensor_flops += other.tensor_flops
        self.vector_flops += other.vector_flops


@dataclass
class _Kernel:
    """Totals of one kernel plus its ops (node index in the block graph, op, shape, traffic)."""

    total: _Traffic = field(default_factory=_Traffic)
    ops: list[tuple[int, Node, str, _Traffic]] = field(default_factory=list)
    inflight: int = 0  # bytes one block loads per iteration


def _shape(node: Node, tensors: tuple[TensorType, ...]) -> str:
    ids = node.outputs or node.inputs
    return "×".join(map(str, tensors[ids[0]].dims)) if ids else ""


def _library_kernel(node: Node, g: KernelGraph) -> _Traffic:
    t = _Traffic()
    t.dram = sum(g.tensors[i].nbytes for i in dict.fromkeys(node.inputs)) + \
        sum(g.tensors[i].nbytes for i in node.outputs)
    t.tensor_flops, t.vector_flops = _op_flops(node, g.tensors)
    return t


def _customized_kernel(bg: BlockGraph, inputs: Sequence[int] | None, l2_bytes: int, depth: int = 1) -> _Kernel:
    """Traffic of one customized op, per block op. ``inputs`` are the kernel tensor ids bound to the
    loaders (None: each loader reads its own DTensor); ``depth``: iterations in flight per forloop loader."""
    n, f = bg.num_blocks, bg.forloop_range
    loaders = bg.loaders
    ids = list(inputs) if inputs is not None else list(range(len(loaders)))
    reads: dict[int, int] = {}
    size: dict[int, int] = {}
    per_loader: list[tuple[int, Node, int]] = []
    kernel = _Kernel()
    for tid, loader in zip(ids, loaders, strict=True):
        tile = bg.tensors[loader.outputs[0]]
        iters = f if int(loader.attr("fmap")) >= 0 else 1
        r = tile.nbytes * iters * n
        reads[tid] = reads.get(tid, 0) + r
        size[tid] = loader_dtensor(loader).nbytes
        per_loader.append((tid, loader, r))
        kernel.inflight += tile.nbytes * (min(depth, f) if iters > 1 else 1)
    rereads_fit_l2 = sum(size[tid] for tid in reads if reads[tid] > size[tid]) <= l2_bytes
    compulsory = dict(size)
    index = {id(nd): i for i, nd in enumerate(bg.nodes)}
    smem_tensors = {o for nd in bg.nodes if nd.op.spec.smem_counted for o in nd.outputs}

    def in_smem(tensor: int) -> bool:
        return tensor in smem_tensors
    for tid, loader, r in per_loader:
        t = _Traffic(smem=r)
        first = min(r, compulsory[tid])
        compulsory[tid] -= first
        t.dram = first
        if rereads_fit_l2:
            t.l2 = r - first
        else:
            t.dram += r - first
        kernel.ops.append((index[id(loader)], loader, _shape(loader, bg.tensors), t))
    for node in bg.nodes:
        if node.op is Op.INPUT:
            continue
        t = _Traffic()
        if node.op is Op.OUTPUT:
            t.smem = bg.tensors[node.inputs[0]].nbytes * n if in_smem(node.inputs[0]) else 0
            t.dram = next(o for s, o in zip(bg.savers, bg.output_types, strict=True) if s is node).nbytes
        else:
            post_input = any(bg.tensors[i].post_loop for i in node.inputs)
            runs = 1 if post_input and node.kind is not Kind.ACCUM else f
            tf, vf = _op_flops(node, bg.tensors)
            t.tensor_flops, t.vector_flops = tf * runs * n, vf * runs * n
            touched = sum(bg.tensors[i].nbytes for i in dict.fromkeys(node.inputs) if in_smem(i))
            if node.op.spec.smem_counted:
                touched += sum(bg.tensors[o].nbytes for o in node.outputs)
            t.smem = touched * runs * n
        kernel.ops.append((index[id(node)], node, _shape(node, bg.tensors), t))
    kernel.ops.sort(key=lambda e: e[0])
    for *_, t in kernel.ops:
        kernel.total.add(t)
    return kernel


# --------------------------------------------------------------------------- time


def _memory_s(t: _Traffic, hw: Hardware, e_mem: float = 1.0, u: float = 1.0) -> float:
    """Memory time: DRAM and L2 terms at the latency-hiding factor, shared memory at the SMs in use."""
    if e_mem <= 0 or u <= 0:
        return math.inf if (t.dram or t.l2 or t.smem) else 0.0
    return max(t.dram / hw.dram_bytes_per_s / e_mem, t.l2 / hw.l2_bytes_per_s / e_mem,
               t.smem / hw.smem_bytes_per_s / u)


def _compute_s(t: _Traffic, hw: Hardware, scale: float = 1.0) -> float:
    flops = t.tensor_flops / hw.flops_per_s + t.vector_flops / hw.vector_flops_per_s
    if scale <= 0:
        return math.inf if flops else 0.0
    return flops / scale


def _library_cost(index: int, node: Node, g: KernelGraph, hw: Hardware) -> KernelCost:
    t = _library_kernel(node, g)
    memory_s, compute_s = _memory_s(t, hw), _compute_s(t, hw)
    op = OpCost(kernel=index, node=None, level="kernel", op=node.op.value, shape=_shape(node, g.tensors),
                dram_bytes=t.dram, l2_bytes=t.l2, smem_bytes=0, tensor_flops=t.tensor_flops,
                vector_flops=t.vector_flops, memory_s=memory_s, compute_s=compute_s,
                seconds=max(memory_s, compute_s) + hw.launch_s)
    return KernelCost(node=index, op=node.op.value, dram_bytes=t.dram, l2_bytes=t.l2,
                      tensor_flops=t.tensor_flops, vector_flops=t.vector_flops, blocks=None, utilisation=1.0,
                      memory_s=memory_s, compute_s=compute_s, launch_s=hw.launch_s, ops=(op,))


def _efficiencies(n: int, occ: Occupancy, inflight: int, hw: Hardware) -> tuple[float, float, float]:
    """(u, e_mem, e_comp) of a fitting customized op (module docstring)."""
    u, e_mem = _spread(n, occ.blocks_per_sm, inflight, hw)
    r = min(occ.blocks_per_sm, math.ceil(n / hw.sms))
    e_comp = min(1.0, r * occ.resources.warps / SCHEDULERS_PER_SM)
    return u, e_mem, e_comp


def _spread(n: int, blocks_per_sm: int, inflight: int, hw: Hardware) -> tuple[float, float]:
    """(u, e_mem) of ``n`` blocks, ``blocks_per_sm`` resident per SM, each with ``inflight`` bytes loading."""
    u = n / (hw.sms * math.ceil(n / hw.sms))
    need = hw.dram_bytes_per_s * hw.dram_latency_s
    resident = n / math.ceil(n / (hw.sms * blocks_per_sm))  # blocks / waves
    return u, min(1.0, resident * inflight / need) if need > 0 else 1.0


def _customized_cost(index: int, bg: BlockGraph, inputs: Sequence[int] | None, hw: Hardware, use_occupancy: bool,
                     resources: BlockResources | None) -> KernelCost:
    k = _customized_kernel(bg, inputs, hw.l2_bytes, hw.pipeline_depth)
    n = bg.num_blocks
    occ = occupancy(resources or estimate_resources(bg), hw)
    if not use_occupancy:
        u, e_mem, e_comp = 1.0, 1.0, 1.0
    elif occ.fits:
        u, e_mem, e_comp = _efficiencies(n, occ, k.inflight, hw)
    else:
        u, e_mem, e_comp = 0.0, 0.0, 0.0
    memory_s, compute_s = _memory_s(k.total, hw, e_mem, u), _compute_s(k.total, hw, u * e_comp)
    roofline = max(memory_s, compute_s)
    own = [(_memory_s(t, hw, e_mem, u), _compute_s(t, hw, u * e_comp)) for *_, t in k.ops]
    weight = math.fsum(m + c for m, c in own)
    ops = [OpCost(kernel=index, node=None, level="kernel", op=Op.CUSTOMIZED.value,
                  shape="×".join(map(str, bg.grid)) + f" grid, F={bg.forloop_range}", dram_bytes=0, l2_bytes=0,
                  smem_bytes=0, tensor_flops=0, vector_flops=0, memory_s=0.0, compute_s=0.0, seconds=hw.launch_s)]
    for (i, node, shape, t), (m, c) in zip(k.ops, own, strict=True):
        share = (m + c) / weight if weight > 0 and math.isfinite(weight) else 1.0 / len(own)
        ops.append(OpCost(kernel=index, node=i, level="block", op=node.op.value, shape=shape, dram_bytes=t.dram,
                          l2_bytes=t.l2, smem_bytes=t.smem, tensor_flops=t.tensor_flops,
                          vector_flops=t.vector_flops, memory_s=m, compute_s=c, seconds=roofline * share))
    res = occ.resources
    return KernelCost(node=index, op=Op.CUSTOMIZED.value, dram_bytes=k.total.dram, l2_bytes=k.total.l2,
                      tensor_flops=k.total.tensor_flops, vector_flops=k.total.vector_flops, blocks=n, utilisation=u,
                      memory_s=memory_s, compute_s=compute_s, launch_s=hw.launch_s, smem_bytes=k.total.smem,
                      memory_efficiency=e_mem, compute_efficiency=e_comp, blocks_per_sm=occ.blocks_per_sm,
                      waves=occ.waves(n, hw), limiter=occ.limiter, threads=res.threads,
                      regs_per_thread=res.regs_per_thread, smem_per_block=res.smem_bytes,
                      resources_source=res.source, ops=tuple(ops))


def customized_floor(bg: BlockGraph, inputs: Sequence[int] | None = None, hardware: str | Hardware = "H100") -> float:
    """A lower bound, in seconds, on the proxy cost of *any* customized op whose block graph extends ``bg`` (more
    block ops, then its savers), for the search's branch and bound (``search/bound.py``).

    Every op's traffic and FLOPs depend on that op alone, so ``bg``'s totals only grow as ops are added. The grid
    fixes ``u``, and the loaders fix the bytes in flight, so the best latency hiding any extension can reach is
    that of the most blocks per SM the architecture allows (more shared memory or registers only lowers it);
    compute efficiency is at most 1. With those, the roofline of ``bg``'s own traffic plus the launch is at most
    the cost of the completed kernel (``tests/optimize/test_cost_floor.py`` checks it on every prefix of every
    benchmark, search-best and reference kernel)."""
    hw = get_hardware(hardware)
    k = _customized_kernel(bg, inputs, hw.l2_bytes, hw.pipeline_depth)
    u, e_mem = _spread(bg.num_blocks, hw.max_blocks_per_sm, k.inflight, hw)
    return max(_memory_s(k.total, hw, e_mem, u), _compute_s(k.total, hw, u)) + hw.launch_s


# --------------------------------------------------------------------------- entry point


def proxy_cost(graph: KernelGraph | KernelGraphBuilder | BlockGraph, hardware: str | Hardware = "H100", *,
               occupancy: bool = True, resources: Mapping[int, BlockResources] | None = None) -> CostEstimate:
    """The proxy cost of a μGraph (rules in the module docstring); always ``kind == "proxy"``.

    A ``BlockGraph`` is costed as a kernel graph holding just that customized op (node 0).
    ``occupancy=False`` drops the grid-size and latency-hiding factors (every kernel gets the whole
    GPU). ``resources`` maps a customized op's kernel-graph node index to measured
    ``BlockResources`` (threads, registers per thread, shared memory) that replace the estimate.
    """
    hw = get_hardware(hardware)
    given = dict(resources or {})
    kernels: list[KernelCost] = []
    if isinstance(graph, KernelGraphBuilder):
        graph = graph.freeze()
    if isinstance(graph, BlockGraph):
        kernels.append(_customized_cost(0, graph, None, hw, occupancy, given.get(0)))
    elif isinstance(graph, KernelGraph):
        for i, node in enumerate(graph.nodes):
            if node.kind is Kind.IO:
                continue
            if node.body is not None:
                kernels.append(_customized_cost(i, node.body, node.inputs, hw, occupancy, given.get(i)))
            else:
                kernels.append(_library_cost(i, node, graph, hw))
    else:
        raise ArgumentError(f"proxy_cost expects a kernel graph (or its builder) or a BlockGraph, got "
                            f"{type(graph).__name__}")
    per_kernel = tuple(kernels)
    return CostEstimate(
        seconds=math.fsum(k.seconds for k in per_kernel),
        bytes_moved=sum(k.dram_bytes for k in per_kernel),
        flops=sum(k.flops for k in per_kernel),
        launches=len(per_kernel),
        per_kernel=per_kernel,
        hardware=hw.name,
    )
