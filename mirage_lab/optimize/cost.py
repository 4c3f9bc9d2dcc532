"""The proxy cost model (SPEC §8.1 [lab]): an analytical latency estimate for CPU-only machines.

The reference has no cost model: it profiles every candidate on a GPU. mirage_lab's cost interface
has two implementations, *measured* (GPU timing) and this *proxy*. Every estimate it returns says
``kind="proxy"`` (in its repr, ``str``, HTML and ``to_dict``) so a proxy figure is never mistaken for
a measurement. It ranks μGraphs; its absolute seconds are a roofline bound, not a prediction.

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

* the first ``bytes(D)`` are compulsory DRAM traffic;
* the re-reads ``Σ_ℓ→D R(ℓ) − bytes(D)`` (replicated loaders, or D loaded twice) are served by L2
  if the kernel's re-read DTensors fit in L2 together (``Σ bytes(D) ≤ l2_bytes``), and are charged
  to L2 bandwidth; otherwise they are charged to DRAM as well.

Savers write their output DTensors once (blocks write disjoint regions, SPEC §3.2):
``DRAM += Σ bytes(saver DTensor)``. Shared-memory traffic is free.

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

**Time** (a roofline per kernel). With ``u`` the kernel's share of the GPU — ``min(1, N / SMs)`` for a
customized op (one block per SM; pessimistic for memory-bound kernels, whose few SMs could each
draw more than their share of bandwidth), 1 for a library kernel, and 1 everywhere with
``occupancy=False``::

    memory_s  = max(DRAM / dram_bytes_per_s, L2 / l2_bytes_per_s) / u
    compute_s = (tensor_flops / flops_per_s + vector_flops / vector_flops_per_s) / u
    kernel_s  = max(memory_s, compute_s) + launch_s
    seconds   = Σ_kernels kernel_s            ( = Σ roofline + launches × launch_s )

All matmul FLOPs are charged at the fp16 dense tensor-core peak whatever the dtype (the benchmarks
are fp16), other FLOPs at the fp32 CUDA-core peak (accumulation and transcendentals run in fp32).

**Hardware presets** (``HARDWARE``: A100, H100, H200): vendor datasheet / whitepaper figures for the
SXM parts; each preset's ``source`` field cites them. ``launch_s`` (3 µs) and ``l2_bytes_per_s`` are
[uncertain] estimates, not datasheet figures. Pass a ``Hardware(...)`` (or ``dataclasses.replace`` a
preset) to try other figures.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from mirage_lab.errors import MirageError
from mirage_lab.ir.graph import BlockGraph, KernelGraph, Node, loader_dtensor
from mirage_lab.ir.ops import Kind, Op
from mirage_lab.ir.tensor import TensorType

__all__ = ["ELEMENT_FLOPS", "HARDWARE", "CostEstimate", "Hardware", "KernelCost", "get_hardware", "proxy_cost"]


# --------------------------------------------------------------------------- hardware


@dataclass(frozen=True)
class Hardware:
    """Throughput figures of one GPU.

    ``dram_bytes_per_s``: peak HBM bandwidth. ``flops_per_s``: dense fp16 tensor-core peak (no
    sparsity). ``vector_flops_per_s``: fp32 CUDA-core peak. ``launch_s``: per-kernel launch overhead.
    ``l2_bytes``: L2 capacity. ``l2_bytes_per_s``: aggregate L2 → SM bandwidth. ``sms``: SM count.
    ``arch``: the compute capability, as SPEC §3.6 names it.
    """

    name: str
    arch: str
    dram_bytes_per_s: float
    flops_per_s: float
    vector_flops_per_s: float
    launch_s: float
    l2_bytes: int
    l2_bytes_per_s: float
    sms: int
    source: str = ""

    def __post_init__(self) -> None:
        for f in ("dram_bytes_per_s", "flops_per_s", "vector_flops_per_s", "l2_bytes_per_s", "sms"):
            if not getattr(self, f) > 0:
                raise MirageError(f"Hardware {self.name!r}: {f} must be positive, got {getattr(self, f)!r}")
        if self.launch_s < 0 or self.l2_bytes < 0:
            raise MirageError(f"Hardware {self.name!r}: launch_s and l2_bytes must be ≥ 0")


MB = 1 << 20
LAUNCH_S = 3e-6  # [uncertain] back-to-back launch gap on one stream, a lab estimate (typically 2–5 µs)

HARDWARE: dict[str, Hardware] = {
    "A100": Hardware(
        "A100", "sm_80", dram_bytes_per_s=2.039e12, flops_per_s=312e12, vector_flops_per_s=19.5e12,
        launch_s=LAUNCH_S, l2_bytes=40 * MB, l2_bytes_per_s=5.0e12, sms=108,
        source="NVIDIA A100 datasheet (SXM4 80GB: 2,039 GB/s HBM2e, FP16 tensor 312 TFLOPS dense, FP32 19.5 "
               "TFLOPS); A100 whitepaper (108 SMs, 40 MB L2). L2 bandwidth [uncertain]: the whitepaper's "
               "'2.3x V100 L2 read bandwidth' applied to V100's ~2.1 TB/s measured by Jia et al. (2018)."),
    "H100": Hardware(
        "H100", "sm_90", dram_bytes_per_s=3.35e12, flops_per_s=989.4e12, vector_flops_per_s=66.9e12,
        launch_s=LAUNCH_S, l2_bytes=50 * MB, l2_bytes_per_s=7.0e12, sms=132,
        source="NVIDIA H100 datasheet / Hopper whitepaper (SXM5: 3.35 TB/s HBM3, FP16 tensor 989.4 TFLOPS "
               "dense (1,979 with sparsity), FP32 66.9 TFLOPS, 132 SMs, 50 MB L2). L2 bandwidth [uncertain]: "
               "microbenchmarks report ~5.5 TB/s (H100 PCIe, Chips and Cheese 2023) to ~10 TB/s."),
    "H200": Hardware(
        "H200", "sm_90", dram_bytes_per_s=4.8e12, flops_per_s=989.4e12, vector_flops_per_s=66.9e12,
        launch_s=LAUNCH_S, l2_bytes=50 * MB, l2_bytes_per_s=7.0e12, sms=132,
        source="NVIDIA H200 datasheet (SXM: 4.8 TB/s HBM3e, FP16 tensor 1,979 TFLOPS with sparsity = 989 "
               "dense, FP32 67 TFLOPS); same GH100 die as H100 SXM (132 SMs, 50 MB L2, same L2 estimate)."),
}


def get_hardware(hardware: str | Hardware) -> Hardware:
    """A preset by name (case-insensitive) or a ``Hardware`` as is."""
    if isinstance(hardware, Hardware):
        return hardware
    for name, hw in HARDWARE.items():
        if name.lower() == str(hardware).lower():
            return hw
    raise MirageError(f"unknown hardware {hardware!r}; use one of {', '.join(HARDWARE)} or pass a Hardware(...)")


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class KernelCost:
    """The proxy cost of one kernel (one non-input kernel-graph node)."""

    node: int                 # index in the kernel graph's ``nodes``
    op: str                   # "matmul", "customized", ...
    dram_bytes: int
    l2_bytes: int
    tensor_flops: int
    vector_flops: int
    blocks: int | None        # grid size of a customized op; None for a library kernel
    utilisation: float        # u: the kernel's share of the GPU's throughput
    memory_s: float
    compute_s: float
    launch_s: float

    @property
    def flops(self) -> int:
        return self.tensor_flops + self.vector_flops

    @property
    def roofline_s(self) -> float:
        return max(self.memory_s, self.compute_s)

    @property
    def seconds(self) -> float:
        return self.roofline_s + self.launch_s

    @property
    def bound(self) -> str:
        """What dominates: "launch", "memory" or "compute"."""
        if self.launch_s >= self.roofline_s:
            return "launch"
        return "memory" if self.memory_s >= self.compute_s else "compute"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "flops": self.flops, "seconds": self.seconds, "bound": self.bound}


@dataclass(frozen=True)
class CostEstimate:
    """A cost estimate of a whole μGraph. ``kind`` is "proxy" for every estimate of this module."""

    seconds: float
    bytes_moved: int          # DRAM bytes
    flops: int
    launches: int
    per_kernel: tuple[KernelCost, ...]
    hardware: str
    kind: str = "proxy"

    @property
    def l2_bytes_moved(self) -> int:
        return sum(k.l2_bytes for k in self.per_kernel)

    @property
    def launch_s(self) -> float:
        return sum(k.launch_s for k in self.per_kernel)

    @property
    def microseconds(self) -> float:
        return self.seconds * 1e6

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "hardware": self.hardware, "seconds": self.seconds,
                "bytes_moved": self.bytes_moved, "l2_bytes_moved": self.l2_bytes_moved, "flops": self.flops,
                "launches": self.launches, "per_kernel": [k.to_dict() for k in self.per_kernel]}

    def __repr__(self) -> str:
        each = f" × {_us(self.launch_s / self.launches)}" if self.launches else ""
        return (f"CostEstimate({self.kind} on {self.hardware}: {_us(self.seconds)} = "
                f"{_us(self.seconds - self.launch_s)} roofline + {self.launches} launch"
                f"{'' if self.launches == 1 else 'es'}{each}; {_mb(self.bytes_moved)} DRAM, "
                f"{_mb(self.l2_bytes_moved)} L2, {self.flops / 1e9:.3g} GFLOP)")

    def table(self) -> list[dict[str, Any]]:
        """One row per kernel, for printing or a DataFrame."""
        return [{"node": k.node, "op": k.op, "blocks": k.blocks, "DRAM MB": k.dram_bytes / 1e6,
                 "L2 MB": k.l2_bytes / 1e6, "GFLOP": k.flops / 1e9, "u": k.utilisation,
                 "µs": k.seconds * 1e6, "bound": k.bound} for k in self.per_kernel]

    def __str__(self) -> str:
        lines = [repr(self), f"  {'node':>4}  {'op':<12} {'blocks':>6} {'DRAM MB':>9} {'L2 MB':>8} "
                             f"{'GFLOP':>8} {'u':>5} {'µs':>8}  bound"]
        for r in self.table():
            blocks = "-" if r["blocks"] is None else str(r["blocks"])
            lines.append(f"  {r['node']:>4}  {r['op']:<12} {blocks:>6} {r['DRAM MB']:>9.3f} {r['L2 MB']:>8.3f} "
                         f"{r['GFLOP']:>8.4f} {r['u']:>5.2f} {r['µs']:>8.2f}  {r['bound']}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in
                       ("node", "op", "blocks", "DRAM MB", "L2 MB", "GFLOP", "u", "µs", "bound"))
        rows = []
        for r in self.table():
            cells = [r["node"], r["op"], "-" if r["blocks"] is None else r["blocks"], f"{r['DRAM MB']:.3f}",
                     f"{r['L2 MB']:.3f}", f"{r['GFLOP']:.4f}", f"{r['u']:.2f}", f"{r['µs']:.2f}", r["bound"]]
            rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
        return (f'<div class="mirage-lab-cost"><div style="font-family:monospace">{html.escape(repr(self))}</div>'
                f"<table><tr>{head}</tr>{''.join(rows)}</table></div>")


def _us(s: float) -> str:
    return f"{s * 1e6:.3g} µs"


def _mb(b: int) -> str:
    return f"{b / 1e6:.3g} MB"


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


# --------------------------------------------------------------------------- per kernel


@dataclass
class _Traffic:
    dram: int = 0
    l2: int = 0
    tensor_flops: int = 0
    vector_flops: int = 0


def _library_kernel(node: Node, g: KernelGraph) -> _Traffic:
    t = _Traffic()
    t.dram = sum(g.tensors[i].nbytes for i in dict.fromkeys(node.inputs)) + \
        sum(g.tensors[i].nbytes for i in node.outputs)
    t.tensor_flops, t.vector_flops = _op_flops(node, g.tensors)
    return t


def _customized_kernel(bg: BlockGraph, inputs: Iterable[int] | None, l2_bytes: int) -> _Traffic:
    """Traffic of one customized op. ``inputs`` are the kernel tensor ids bound to the loaders (None:
    each loader reads its own DTensor)."""
    t = _Traffic()
    n, f = bg.num_blocks, bg.forloop_range
    loaders = bg.loaders
    ids = list(inputs) if inputs is not None else list(range(len(loaders)))
    reads: dict[int, int] = {}
    size: dict[int, int] = {}
    for tid, loader in zip(ids, loaders, strict=True):
        tile = bg.tensors[loader.outputs[0]]
        iters = f if int(loader.attr("fmap")) >= 0 else 1
        reads[tid] = reads.get(tid, 0) + tile.nbytes * iters * n
        size[tid] = loader_dtensor(loader).nbytes
    rereads = {tid: reads[tid] - size[tid] for tid in reads if reads[tid] > size[tid]}
    t.dram = sum(size.values())
    if sum(size[tid] for tid in rereads) <= l2_bytes:
        t.l2 = sum(rereads.values())
    else:
        t.dram += sum(rereads.values())
    t.dram += sum(o.nbytes for o in bg.output_types)
    for node in bg.compute_nodes:
        post_input = any(bg.tensors[i].post_loop for i in node.inputs)
        runs = 1 if post_input and node.kind is not Kind.ACCUM else f
        tf, vf = _op_flops(node, bg.tensors)
        t.tensor_flops += tf * runs * n
        t.vector_flops += vf * runs * n
    return t


def _kernel_cost(index: int, node: Node, t: _Traffic, blocks: int | None, hw: Hardware,
                 occupancy: bool) -> KernelCost:
    u = min(1.0, blocks / hw.sms) if (blocks is not None and occupancy) else 1.0
    memory_s = max(t.dram / hw.dram_bytes_per_s, t.l2 / hw.l2_bytes_per_s) / u
    compute_s = (t.tensor_flops / hw.flops_per_s + t.vector_flops / hw.vector_flops_per_s) / u
    return KernelCost(node=index, op=node.op.value, dram_bytes=t.dram, l2_bytes=t.l2,
                      tensor_flops=t.tensor_flops, vector_flops=t.vector_flops, blocks=blocks,
                      utilisation=u, memory_s=memory_s, compute_s=compute_s, launch_s=hw.launch_s)


# --------------------------------------------------------------------------- entry point


def proxy_cost(graph: KernelGraph | BlockGraph, hardware: str | Hardware = "H100", *,
               occupancy: bool = True) -> CostEstimate:
    """The proxy cost of a μGraph (rules in the module docstring); always ``kind == "proxy"``.

    A ``BlockGraph`` is costed as a kernel graph holding just that customized op.
    ``occupancy=False`` drops the grid-size utilisation factor (every kernel gets the whole GPU).
    """
    hw = get_hardware(hardware)
    kernels: list[KernelCost] = []
    if isinstance(graph, BlockGraph):
        node = Node(Op.CUSTOMIZED, (), (), body=graph)
        kernels.append(_kernel_cost(0, node, _customized_kernel(graph, None, hw.l2_bytes), graph.num_blocks,
                                    hw, occupancy))
    elif isinstance(graph, KernelGraph):
        for i, node in enumerate(graph.nodes):
            if node.kind is Kind.IO:
                continue
            if node.body is not None:
                traffic = _customized_kernel(node.body, node.inputs, hw.l2_bytes)
                kernels.append(_kernel_cost(i, node, traffic, node.body.num_blocks, hw, occupancy))
            else:
                kernels.append(_kernel_cost(i, node, _library_kernel(node, graph), None, hw, occupancy))
    else:
        raise TypeError(f"proxy_cost expects a KernelGraph or BlockGraph, got {type(graph).__name__}")
    per_kernel = tuple(kernels)
    return CostEstimate(
        seconds=math.fsum(k.seconds for k in per_kernel),
        bytes_moved=sum(k.dram_bytes for k in per_kernel),
        flops=sum(k.flops for k in per_kernel),
        launches=len(per_kernel),
        per_kernel=per_kernel,
        hardware=hw.name,
    )
