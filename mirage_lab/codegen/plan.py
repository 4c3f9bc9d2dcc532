"""What runs: per-kernel plans (stages, tensor-core matmuls, tile layouts, shared memory) and the kernel-graph plan
(one launch per customized op, or a library call).

Kernel-level ops other than customized ones are lowered to one-op custom kernels first (``codegen.lower``), so every
op has a kernel; with ``library_calls=True`` they stay library calls instead, run through CuPy (cuBLAS) by
``run.py``. Stages and barriers come from ``optimize.schedule``, offsets from ``optimize.memory``.

**Padding** (``padding=True``, the default): tiles read across several rows at once (tensor-core operands, row
sums, rms_norm, last-dim reductions) get one 16-byte chunk of padding per row when their rows would
otherwise meet the same shared-memory banks (``optimize.layout``). Every access goes through the tile's
layout (``KernelWriter.offset``); the rest stay dense.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mirage_lab.codegen.lower import lower_kernel_ops
from mirage_lab.codegen.options import CodegenOptions, codegen_options
from mirage_lab.codegen.pipeline import NO_PIPELINE, SMEM_LIMIT, Pipeline, plan_pipeline
from mirage_lab.errors import UnsupportedOpError
from mirage_lab.ir.builder import KernelGraphBuilder, as_graph
from mirage_lab.ir.graph import Attrs, BlockGraph, Grid, KernelGraph
from mirage_lab.ir.ops import Kind, Op
from mirage_lab.ir.tensor import Dims, TensorType, contiguous_strides
from mirage_lab.optimize.layout import TileLayout, choose_layouts
from mirage_lab.optimize.memory import SmemPlan, plan_shared_memory
from mirage_lab.optimize.schedule import BlockSchedule, schedule_block_graph
from mirage_lab.optimize.tensor_cores import MmaTiling, held_sums, mma_matmuls

KERNEL_PREFIX = "mirage_k"
#: kernel-level ops that run as CuPy library calls
LIBRARY_KINDS = frozenset({Kind.MATMUL, Kind.UNARY, Kind.BINARY, Kind.REDUCTION, Kind.NORM})
#: padding never pushes a kernel past the smallest target's shared memory (it is dropped instead)
PADDING_LIMIT = SMEM_LIMIT


@dataclass(frozen=True)
class KernelPlan:
    """One custom kernel's decisions: stages, tensor-core matmuls, tile layouts, the copy pipeline
    (``codegen.pipeline``) and shared-memory offsets."""

    schedule: BlockSchedule
    mma: Mapping[int, MmaTiling]
    layouts: Mapping[int, TileLayout]
    smem: SmemPlan
    pipeline: Pipeline = NO_PIPELINE
    #: tensor-core matmul → the accumulator whose sums it keeps in registers over the loop
    held: Mapping[int, int] = field(default_factory=dict)

    @property
    def stages(self) -> int:
        """Shared-memory copies of each loop tile: 1 = copy, wait, compute; S = S − 1 iterations in flight."""
        return self.pipeline.stages

    @property
    def barriers(self) -> int:
        """``__syncthreads()`` statements in the kernel: the schedule's, less the prologue's where a ring's
        first wait and barrier in the loop cover the hoisted tiles too."""
        return self.schedule.barriers - (1 if self.pipeline.ring and self.schedule.prologue else 0)


def plan_kernel(bg: BlockGraph, options: CodegenOptions, strides: Mapping[int, Dims] | None = None) -> KernelPlan:
    """``strides``: loader node → the declared strides of its input, for inputs that are not row-major."""
    schedule = schedule_block_graph(bg)
    mma = mma_matmuls(bg) if options.tensor_cores else {}
    layouts = choose_layouts(bg, mma, options.padding)
    if plan_shared_memory(bg, schedule, layouts).peak > PADDING_LIMIT and any(lay.padded for lay in layouts.values()):
        layouts = choose_layouts(bg, mma, padding=False)
    pipeline = plan_pipeline(bg, schedule, options, strides or {}, layouts,
                             lambda rings: plan_shared_memory(bg, schedule, layouts, rings))
    smem = plan_shared_memory(bg, schedule, layouts, pipeline.ring_tensors(bg))
    return KernelPlan(schedule, mma, layouts, smem, pipeline, held_sums(bg, schedule, mma))


def loader_strides(bg: BlockGraph, strides: Sequence[Dims | None]) -> dict[int, Dims]:
    """Loader node → its input's declared strides, from the customized op's per-input ``strides``."""
    loaders = [k for k, node in enumerate(bg.nodes) if node.op is Op.INPUT]
    return {k: st for k, st in zip(loaders, strides, strict=False) if st is not None}


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
    strides = input_strides(graph)
    steps: list[Step] = []
    for k, node in enumerate(graph.nodes):
        if node.op is Op.INPUT:
            continue
        if node.body is not None:
            bg = node.body
            kp = plan_kernel(bg, opts, loader_strides(bg, [strides.get(t) for t in node.inputs]))
            steps.append(KernelLaunch(k, f"{KERNEL_PREFIX}{k}", bg.grid, math.prod(bg.block), kp.smem.peak,
                                      node.inputs + node.outputs, kp.barriers))
        elif node.kind in LIBRARY_KINDS:
            steps.append(LibraryCall(k, node.op, node.inputs, node.outputs, node.attrs))
        else:
            raise UnsupportedOpError(f"kernel-level op {node.op.value} (node {k}) has no library call; "
                                     "generate its kernel (library_calls=False)")
    return CudaProgram(graph.tensors, graph.inputs, graph.outputs, tuple(steps), input_strides(graph))
