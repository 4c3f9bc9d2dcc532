"""What the calibrated cost model sees of a μGraph as the CUDA backend runs it: a few time terms per kernel.

``time_terms(graph, options)`` walks the graph as ``codegen`` runs it (the caller prepares it: predefined kernel ops
lowered to one-op custom kernels, or left as CuPy library calls) and returns one ``Terms``: each field
a time in seconds at the hardware's datasheet rate (or a count), which the calibration (``calibration.py``)
weighs by a fitted constant and sums. The terms, per generated kernel:

* ``launch``: the preset's ``launch_s`` per generated kernel. ``calls``: 1 per μGraph call (the runtime's Python
  work around the launches), ``library``: the CuPy kernels of each library call (a fp16 matmul is one cuBLAS
  call; any other op casts each input to fp32, evaluates and casts back), ``library_dram``: their DRAM bytes
  (``cost.py``) at the datasheet bandwidth.
* ``sectors``: every byte the blocks read (and write) through L2, divided by its **access efficiency**: the
  tile's contiguous row segment ``c`` in bytes against the 32-byte sectors (``c / ceil32(c)``) and the 128-byte
  lines, ``min(1, c/128) ** burst`` (a warp reading 128 rows × 48 bytes fetches 64-byte halves of lines), at the
  L2 bandwidth. Neighbouring blocks read the rest of those lines at about the same time, so DRAM itself still
  moves each byte about once: the narrow rows cost L2 transactions, not DRAM bytes.
* ``dram``: DRAM (and L2 re-read) bytes as ``cost.py`` counts them, divided by the
  **latency hiding** ``e_mem = min(1, bytes in flight / (bandwidth × latency))``:
  the blocks resident at once (grid against SMs × resident blocks, registers of the prefetch included) times the
  bytes one block has in flight (each loop tile × its stages: 2 with the register prefetch and 1 without, as the
  generator the committed tables measured (8fba1b8) worked; hoisted tiles once). The ring of asynchronous copies
  that replaced it (``codegen.pipeline``, issue 36) is to be modelled once a device table measures it.
* ``tensor``: matmul FLOPs that run on tensor cores (``options.tensor_cores`` and a tiling,
  ``optimize.tensor_cores``) at the tensor-core peak; ``fma``: the other matmul FLOPs at the fp32 FMA peak
  over the share of threads that have work (a matmul tile with fewer outputs than threads leaves the rest idle
  unless ``split_sums`` spreads each sum over them, ``codegen.split_sum``); ``vector``: every other FLOP at the
  fp32 peak. All over ``u``, the share of SM-time the grid fills (its last wave's tail). ``chain``: the
  dependent multiply-adds one thread of a CUDA-core matmul runs in a row (its outputs × K over its share),
  times the waves, in clock cycles (the clock from the shared-memory rate of 128 B per clock per SM): a GEMV
  tile with few outputs waits on that chain, whatever the throughput.
* ``smem``: shared-memory bytes (``cost.py``, plus both operands read once per multiply-add by a CUDA-core
  matmul, which keeps no operand in registers) at the shared-memory bandwidth, a tile that readers walk across
  rows (``optimize.layout.row_walked``) counted ``conflict`` times: the bank-conflict degree of its row pitch
  (``gcd(pitch in 4-byte words, 32)``, 1 when ``padding`` pads it to an odd number of 16-byte chunks).
* ``latency``: ``waves × (hoisted loads + F / stages)`` DRAM latencies: what a block waits for its tiles when
  nothing else covers it.

Everything comes from the graph, the ``CodegenOptions`` and the ``Hardware``; nothing names a program.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol

from mirage_lab.ir.builder import KernelGraphBuilder, as_graph
from mirage_lab.ir.dtype import DType
from mirage_lab.ir.graph import BlockGraph, KernelGraph, loader_dtensor
from mirage_lab.ir.ops import Kind, Op
from mirage_lab.ir.tensor import contiguous_strides
from mirage_lab.optimize.cost import _customized_kernel, _library_kernel
from mirage_lab.optimize.hardware import Hardware, get_hardware
from mirage_lab.optimize.layout import row_walked
from mirage_lab.optimize.occupancy import BlockResources, estimate_resources, occupancy
from mirage_lab.optimize.tensor_cores import mma_matmuls

__all__ = ["TERMS", "GeneratorOptions", "Terms", "time_terms"]

SECTOR, LINE, WARP_BANKS = 32, 128, 32
#: registers a thread could spend on prefetched data (the register prefetch's cap, in the generator the committed
#: tables measured)
PREFETCH_REGISTERS = 64


class GeneratorOptions(Protocol):
    """What the CUDA generator may use (``codegen.options.CodegenOptions`` is one; this layer sits below codegen)."""

    @property
    def prefetch(self) -> bool: ...
    @property
    def split_sums(self) -> bool: ...
    @property
    def tensor_cores(self) -> bool: ...
    @property
    def padding(self) -> bool: ...


@dataclass(frozen=True)
class AllOn:
    """The generator's defaults: everything on."""

    prefetch: bool = True
    split_sums: bool = True
    tensor_cores: bool = True
    padding: bool = True


@dataclass(frozen=True)
class Terms:
    """Time terms of a μGraph (seconds at datasheet rates, or counts); see the module docstring."""

    calls: float = 0.0
    launch: float = 0.0
    library: float = 0.0
    library_dram: float = 0.0
    dram: float = 0.0
    sectors: float = 0.0
    tensor: float = 0.0
    fma: float = 0.0
    chain: float = 0.0
    vector: float = 0.0
    smem: float = 0.0
    latency: float = 0.0

    def __add__(self, other: Terms) -> Terms:
        return Terms(*(getattr(self, f) + getattr(other, f) for f in TERMS))

    def vector_of(self) -> list[float]:
        return [float(getattr(self, f)) for f in TERMS]


TERMS: tuple[str, ...] = tuple(f.name for f in fields(Terms))


def time_terms(graph: KernelGraph | KernelGraphBuilder, options: GeneratorOptions | None = None,
               hardware: str | Hardware = "H100", *, latency_s: float = 500e-9, burst: float = 0.5) -> Terms:
    """The terms of ``graph`` as the CUDA backend runs it under ``options`` (module docstring). Pass the graph
    as the backend prepares it (``codegen.plan.prepare``): a predefined kernel op left in it is costed as a CuPy
    library call, which is what ``library_calls=True`` runs. ``latency_s`` and ``burst`` are the model's two
    shape constants (fitted by ``calibration.fit``)."""
    hw = get_hardware(hardware)
    opts = options or AllOn()
    g = as_graph(graph)
    strides = _input_strides(g)
    total = Terms(calls=1.0)
    for node in g.nodes:
        if node.kind is Kind.IO:
            continue
        if node.body is None:
            t = _library_kernel(node, g)
            cupy_kernels = 1 if node.op is Op.MATMUL else len(node.inputs) + 2
            total += Terms(library=cupy_kernels, library_dram=t.dram / hw.dram_bytes_per_s,
                           tensor=t.tensor_flops / hw.flops_per_s, vector=t.vector_flops / hw.vector_flops_per_s)
        else:
            total += _kernel_terms(node.body, node.inputs, [strides.get(i) for i in node.inputs], opts, hw,
                                   latency_s, burst)
    return total


def _input_strides(g: KernelGraph) -> dict[int, tuple[int, ...]]:
    """Graph input → its declared strides, where they are not row-major."""
    return {n.outputs[0]: tuple(n.attr("strides")) for n in g.nodes
            if n.op is Op.INPUT and n.attr("strides") is not None
            and tuple(n.attr("strides")) != contiguous_strides(g.tensors[n.outputs[0]].dims)}


def _contiguous_bytes(tile: Sequence[int], full: Sequence[int], itemsize: int, stride: Sequence[int] | None) -> int:
    """Bytes a tile row reads contiguously from its DTensor: its innermost dim, extended over the dims it covers
    whole. A strided input is read along its stride-1 dim (one element when it has none)."""
    if stride is not None:
        unit = [d for d, s in enumerate(stride) if s == 1]
        return tile[unit[0]] * itemsize if unit else itemsize
    run, d = tile[-1], len(tile) - 1
    while d > 0 and tile[d] == full[d]:
        run *= tile[d - 1]
        d -= 1
    return run * itemsize


def access_efficiency(c: int, burst: float) -> float:
    """Useful share of the bytes a ``c``-byte row segment makes DRAM move: whole 32-byte sectors, and lines."""
    return (c / (math.ceil(c / SECTOR) * SECTOR)) * min(1.0, c / LINE) ** burst


def _kernel_terms(bg: BlockGraph, inputs: Sequence[int], strides: Sequence[Any], opts: GeneratorOptions, hw: Hardware,
                  latency_s: float, burst: float) -> Terms:
    n, f = bg.num_blocks, bg.forloop_range
    threads = math.prod(bg.block)
    k = _customized_kernel(bg, inputs, hw.l2_bytes, 1)
    loaders = bg.loaders
    # which loop tiles the register prefetch takes: the biggest first, while their data fits the registers
    loop = [i for i, ld in enumerate(loaders) if int(ld.attr("fmap")) >= 0 and f > 1]
    regs = {i: bg.tensors[loaders[i].outputs[0]].nbytes / max(threads, 1) / 4 for i in loop}
    prefetched: set[int] = set()
    if opts.prefetch:
        for i in sorted(loop, key=lambda i: (-regs[i], i)):
            if sum(regs[j] for j in prefetched) + regs[i] <= PREFETCH_REGISTERS:
                prefetched.add(i)
    res = estimate_resources(bg)
    extra = math.ceil(sum(regs[i] for i in prefetched))
    occ = occupancy(BlockResources(res.threads, min(255, res.regs_per_thread + extra), res.smem_bytes), hw)
    bpsm = max(occ.blocks_per_sm, 1)
    waves = math.ceil(n / (hw.sms * bpsm))
    u = n / (hw.sms * math.ceil(n / hw.sms))
    # DRAM bytes, each loader's at its access efficiency; savers write rows of their tiles
    by_node = {id(node): t for _, node, _, t in k.ops}
    dram = sectors = 0.0
    inflight = 0.0
    stages = {i: 2 if i in prefetched else 1 for i in loop}  # two iterations in flight, or the plain loop's one
    for i, (ld, stride) in enumerate(zip(loaders, strides, strict=False)):
        t = by_node[id(ld)]
        d = loader_dtensor(ld)
        tile = bg.tensors[ld.outputs[0]]
        eff = access_efficiency(_contiguous_bytes(tile.dims, d.dims, d.dtype.itemsize, stride), burst)
        dram += t.dram + t.l2 * hw.dram_bytes_per_s / hw.l2_bytes_per_s
        sectors += t.smem / eff  # every byte a block reads, in the sectors and lines it touches
        inflight += tile.nbytes * stages.get(i, 1)
    for saver, out in zip(bg.savers, bg.output_types, strict=True):
        tile = bg.tensors[saver.inputs[0]]
        eff = access_efficiency(_contiguous_bytes(tile.dims, out.dims, out.dtype.itemsize, None), burst)
        dram += by_node[id(saver)].dram
        sectors += by_node[id(saver)].dram / eff
    resident = min(n, hw.sms * bpsm)
    e_mem = min(1.0, resident * inflight / (hw.dram_bytes_per_s * latency_s)) if latency_s > 0 else 1.0
    # FLOPs: tensor cores, FMA matmuls over their busy threads, the rest
    mma = mma_matmuls(bg) if opts.tensor_cores else {}
    tensor = fma = vector = operand_reads = steps = 0.0
    for idx, node, _, t in k.ops:
        if node.kind is Kind.MATMUL and idx in mma:
            tensor += t.tensor_flops
        elif node.kind is Kind.MATMUL:
            busy = _busy_share(bg, idx, threads, opts)
            fma += t.tensor_flops / busy
            # one thread's dependent multiply-adds per run, in clock cycles: what the slowest block waits for
            steps += t.tensor_flops / 2 / n / (busy * threads)
            # the scalar loop reads both operands from shared memory for every multiply-add
            operand_reads += t.tensor_flops * bg.tensors[node.inputs[0]].dtype.itemsize
        vector += t.vector_flops
    # shared memory, row-walked dense tiles at their bank-conflict degree
    walked = row_walked(bg, mma)
    smem = float(k.total.smem) + operand_reads
    for _, node, _, t in k.ops:
        for tid in dict.fromkeys(node.inputs):
            if tid in walked and node.op is not Op.OUTPUT:
                conflict = _conflict(bg.tensors[tid].dims, bg.tensors[tid].dtype, opts.padding)
                runs = t.smem / max(1, _touched(bg, node))
                smem += (conflict - 1) * bg.tensors[tid].nbytes * runs
    hoisted = 1 if any(int(ld.attr("fmap")) < 0 or f == 1 for ld in loaders) else 0
    depth = min((stages.get(i, 1) for i in loop), default=1)
    return Terms(
        launch=hw.launch_s,
        dram=dram / hw.dram_bytes_per_s / max(e_mem, 1e-9),
        sectors=sectors / hw.l2_bytes_per_s,
        tensor=tensor / hw.flops_per_s / u,
        fma=fma / hw.vector_flops_per_s / u,
        chain=waves * steps / (hw.smem_bytes_per_s / (LINE * hw.sms)),
        vector=vector / hw.vector_flops_per_s / u,
        smem=smem / hw.smem_bytes_per_s / u,
        latency=waves * (hoisted + (f / depth if loop else 0)) * latency_s,
    )


def _touched(bg: BlockGraph, node: Any) -> int:
    """Bytes one run of ``node`` touches in shared memory (as ``cost._customized_kernel`` counts them)."""
    smem = {o for nd in bg.nodes if nd.op.spec.smem_counted for o in nd.outputs}
    touched = sum(bg.tensors[i].nbytes for i in dict.fromkeys(node.inputs) if i in smem)
    if node.op.spec.smem_counted:
        touched += sum(bg.tensors[o].nbytes for o in node.outputs)
    return touched


def _conflict(dims: Sequence[int], dtype: DType, padding: bool) -> int:
    """Bank-conflict degree of a warp walking the rows of a tile with this row pitch (``optimize.layout``)."""
    rows = math.prod(dims[:-1]) if len(dims) > 1 else 1
    pitch = (dims[-1] if dims else 1) * dtype.itemsize
    if rows < 2:
        return 1
    if padding and pitch % 16 == 0 and (pitch // 16) % 2 == 0:
        pitch += 16  # padded to an odd number of chunks
    if pitch % 4:
        return 1
    return min(rows, math.gcd(pitch // 4, WARP_BANKS))


def _busy_share(bg: BlockGraph, idx: int, threads: int, opts: GeneratorOptions) -> float:
    """Share of the block's threads a CUDA-core matmul keeps busy: one per output, or with split sums several
    (a power of two, at most the contracted length)."""
    node = bg.nodes[idx]
    outputs = bg.tensors[node.outputs[0]].numel
    length = bg.tensors[node.inputs[0]].dims[-1]
    share = min(threads // max(outputs, 1), length)
    split = 1 << (share.bit_length() - 1) if opts.split_sums and share >= 2 else 1
    return min(1.0, outputs * split / max(threads, 1))
