"""Kernel analysis without a GPU: one row per generated kernel, from ptxas and the SASS (``codegen.sass``).

``analyze_kernel(graph, arch="sm_90")`` compiles the μGraph's CUDA for ``arch`` and gives, per kernel:

* launch and resources: grid, threads, registers, spill bytes (stores + loads), static shared memory (ptxas's
  ``smem``, ``__shared__`` arrays only) and dynamic shared memory (the plan's ``smem.peak``, given at launch);
* theoretical occupancy on the arch's GPU (``optimize.occupancy``): blocks per SM, warps as a percent of the SM's
  maximum, and what limits it;
* the static instruction mix (``sass.InstructionMix.row``): global and shared accesses by width, ldmatrix,
  asynchronous copies (LDGSTS, TMA), tensor-core and FMA instructions;
* bytes in flight per SM against what Little's law asks (``Hardware.bytes_in_flight_per_sm``, DRAM bandwidth ×
  latency / SMs): one block's loads in flight × the blocks resident on an SM (at most ``ceil(blocks / SMs)``). A
  block keeps ``max(1, stages − 1)`` iterations of its for-loop tiles in flight (with one stage, the current
  iteration's loads while it waits for them); with F = 1, its hoisted loads;
* a roofline per kernel: the proxy cost model's bytes (DRAM, L2, shared memory) and FLOPs at the GPU's peaks, the
  per-SM resources (shared memory, tensor cores, FMA) scaled by the share of SMs the grid keeps busy. Matmul FLOPs
  go to the tensor cores only when the SASS has HMMA or HGMMA; otherwise they run on the FMA pipes. The largest
  term is the predicted bound (or the launch, when every term is shorter);
* the program's DRAM floor: the graph's input and output bytes at the DRAM bandwidth, the same in every row.

``analyze_source(source, arch)`` gives the ptxas and SASS columns of any CUDA source. Both return a
``KernelTable`` (a DataFrame shown a column per kernel) whose ``attrs["sass"]`` holds the SASS text per kernel
(``kernel_sass`` gives it directly).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from mirage_lab.codegen.arch import check_arch
from mirage_lab.codegen.options import CodegenOptions, codegen_options
from mirage_lab.codegen.plan import KernelLaunch, plan_cuda, plan_kernel, prepare
from mirage_lab.codegen.sass import Disassembly, InstructionMix, compile_sass
from mirage_lab.codegen.source import generate_cuda
from mirage_lab.errors import MirageError
from mirage_lab.ir.builder import KernelGraphBuilder
from mirage_lab.ir.graph import BlockGraph, KernelGraph
from mirage_lab.optimize.cost import proxy_cost
from mirage_lab.optimize.estimate import KernelCost
from mirage_lab.optimize.floor import dram_floor_s
from mirage_lab.optimize.hardware import HARDWARE, Hardware, get_hardware
from mirage_lab.optimize.occupancy import WARP, BlockResources, occupancy

if TYPE_CHECKING:
    from mirage_lab.codegen.kernel_table import KernelTable

__all__ = ["analyze_kernel", "analyze_source", "kernel_sass"]


def analyze_source(source: str, arch: str = "sm_90") -> KernelTable:
    """One row per kernel of a CUDA ``source`` compiled for ``arch``: ptxas's figures and the SASS instruction mix."""
    from mirage_lab.codegen.kernel_table import KernelTable

    dis = compile_sass(source, check_arch(arch))
    frame = KernelTable([{"kernel": name, "arch": arch, **_resources(dis, name), **InstructionMix.of(text).row()}
                          for name, text in dis.sass.items()])
    frame.attrs["sass"] = dict(dis.sass)
    return frame


def kernel_sass(graph: KernelGraph | KernelGraphBuilder, arch: str = "sm_90",
                options: CodegenOptions | None = None) -> dict[str, str]:
    """Kernel name (``mirage_k<node>``) → its SASS for ``arch``, as cuobjdump prints it."""
    return dict(_disassemble(prepare(graph), arch, codegen_options(options, {})).sass)


def analyze_kernel(graph: KernelGraph | KernelGraphBuilder, arch: str = "sm_90", *,
                   hardware: str | Hardware | None = None, options: CodegenOptions | None = None) -> KernelTable:
    """One row per kernel of ``graph``'s generated CUDA compiled for ``arch`` (module docstring). ``hardware``: the
    GPU whose limits and peaks apply (default: the first preset of that architecture, H100 for sm_90)."""
    from mirage_lab.codegen.kernel_table import KernelTable

    opts = codegen_options(options, {})
    g = prepare(graph)
    hw = hardware_for(arch, hardware)
    dis = _disassemble(g, arch, opts)
    costs = {k.node: k for k in proxy_cost(g, hw, occupancy=False).per_kernel}
    floor_us = dram_floor_s(g, hw) * 1e6
    rows = []
    for launch in plan_cuda(g, opts).launches:
        bg = g.nodes[launch.node].body
        assert bg is not None  # every launch is a customized op's
        text = dis.sass.get(launch.name, "")
        mix = InstructionMix.of(text)
        rows.append({"kernel": launch.name, "node": launch.node, "arch": arch, "GPU": hw.name,
                     "grid": "×".join(map(str, launch.grid)), "threads": launch.threads,
                     **_resources(dis, launch.name), "dynamic smem B": launch.smem_bytes,
                     **_occupancy_and_flight(bg, launch, dis, hw, opts),
                     **mix.row(), **_roofline(costs[launch.node], mix, bg, hw),
                     "program DRAM floor µs": round(floor_us, 2)})
    frame = KernelTable(rows)
    frame.attrs["sass"] = dict(dis.sass)
    return frame


def hardware_for(arch: str, hardware: str | Hardware | None = None) -> Hardware:
    """``hardware`` (a preset's name or a ``Hardware`` of ``arch``'s family), or the first preset of that family
    (sm_90a → sm_90: H100)."""
    family = check_arch(arch).rstrip("af")
    if hardware is not None:
        hw = get_hardware(hardware)
        if hw.arch != family:
            raise MirageError(f"{hw.name} is a {hw.arch} GPU, and the kernels are compiled for {arch}; pass a GPU of "
                              f"{family} or leave hardware out for its default")
        return hw
    for hw in HARDWARE.values():
        if hw.arch == family:
            return hw
    known = ", ".join(f"{name} ({hw.arch})" for name, hw in HARDWARE.items())
    raise MirageError(f"no GPU preset has architecture {arch} (presets: {known}); pass hardware=Hardware(...) with "
                      "its figures, or analyse the source's SASS alone with analyze_source(source, arch)")


def _disassemble(g: KernelGraph, arch: str, options: CodegenOptions) -> Disassembly:
    return compile_sass(generate_cuda(g, options), check_arch(arch))


def _resources(dis: Disassembly, name: str) -> dict[str, Any]:
    ptx = dis.ptxas.get(name)
    if ptx is None:
        raise MirageError(f"ptxas reported nothing for kernel {name} ({dis.arch}); its log:\n{dis.log.strip()}")
    return {"registers": ptx.registers, "spill B": ptx.spill_bytes, "static smem B": ptx.static_smem}


def _occupancy_and_flight(bg: BlockGraph, launch: KernelLaunch, dis: Disassembly, hw: Hardware,
                          options: CodegenOptions) -> dict[str, Any]:
    ptx = dis.ptxas[launch.name]
    occ = occupancy(BlockResources(launch.threads, ptx.registers, ptx.static_smem + launch.smem_bytes, "ptxas"), hw)
    warps = occ.blocks_per_sm * occ.resources.warps
    plan = plan_kernel(bg, options)
    stages = int(getattr(plan, "stages", 2 if options.prefetch else 1))  # KernelPlan.stages once the emitter has it
    resident = min(occ.blocks_per_sm, math.ceil(bg.num_blocks / hw.sms))
    return {"blocks/SM": occ.blocks_per_sm, "occupancy %": round(100 * warps * WARP / hw.max_threads_per_sm, 1),
            "limiter": occ.limiter, "stages": stages,
            "in flight B/SM": block_bytes_in_flight(bg, stages) * resident,
            "needed B/SM": round(hw.bytes_in_flight_per_sm)}


def block_bytes_in_flight(bg: BlockGraph, stages: int) -> int:
    """Bytes one block has loading at once: its for-loop tiles × ``max(1, stages − 1)``; with F = 1, its hoisted
    tiles (see the module docstring)."""
    tiles = [(bg.tensors[ld.outputs[0]].nbytes, int(ld.attr("fmap")) >= 0) for ld in bg.loaders]
    if bg.forloop_range == 1:
        return sum(b for b, _ in tiles)
    return sum(b for b, in_loop in tiles if in_loop) * max(1, stages - 1)


def _roofline(cost: KernelCost, mix: InstructionMix, bg: BlockGraph, hw: Hardware) -> dict[str, Any]:
    """The kernel's time at each resource's peak, its bound and its predicted time (module docstring)."""
    busy = bg.num_blocks / (hw.sms * math.ceil(bg.num_blocks / hw.sms))  # share of SM-time with a block
    tensor = mix.count("HMMA", "HGMMA") > 0
    fma_flops = cost.vector_flops + (0 if tensor else cost.tensor_flops)
    seconds = {"DRAM": cost.dram_bytes / hw.dram_bytes_per_s, "L2": cost.l2_bytes / hw.l2_bytes_per_s,
               "shared memory": cost.smem_bytes / hw.smem_bytes_per_s / busy,
               "tensor cores": (cost.tensor_flops if tensor else 0) / hw.flops_per_s / busy,
               "FMA": fma_flops / hw.vector_flops_per_s / busy}
    bound = max(seconds, key=lambda k: seconds[k])
    if seconds[bound] < hw.launch_s:
        bound = "launch"
    return {"DRAM MB": round(cost.dram_bytes / 1e6, 3), "GFLOP": round(cost.flops / 1e9, 4), "bound": bound,
            "predicted µs": round(max(*seconds.values(), hw.launch_s) * 1e6, 2)}
