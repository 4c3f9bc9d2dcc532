"""What Triton made of each kernel, read from its PTX and ptxas without a GPU: asynchronous copies, tensor-core
instructions, the width of global accesses, registers, spills and shared memory, beside the kernel's launch
parameters and what its μGraph fixes (matmuls, loop length, contiguous bytes per tile row).

``ptx_census`` counts one kernel's PTX; ``triton_report`` is the table of a whole μGraph (a row per kernel and
architecture), the figures ``tests/codegen/test_triton_ptx.py`` checks and docs/decisions.md quotes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from mirage_lab.codegen.arch import ARCHS
from mirage_lab.codegen.triton.launch import TritonLaunch
from mirage_lab.codegen.triton.module import triton_module
from mirage_lab.codegen.triton.toolchain import compile_ptx
from mirage_lab.ir.builder import KernelGraphBuilder
from mirage_lab.ir.graph import BlockGraph, KernelGraph
from mirage_lab.ir.ops import Op
from mirage_lab.ir.tensor import contiguous_strides

__all__ = ["PtxCensus", "contiguous_row_bytes", "matmul_count", "narrow_tiles", "ptx_census", "triton_report"]

#: cp.async's copy size in bytes is its third operand (Triton writes it in hex: 0x10)
_CP_ASYNC = re.compile(r"cp\.async\.c[ag]\.shared\.global[\w:.]*\s*\[[^\]]*\],\s*\[[^\]]*\],\s*(0x[0-9a-fA-F]+|\d+)")
_LD_GLOBAL = re.compile(r"\bld\.global((?:\.[\w:]+)*)")


@dataclass(frozen=True)
class PtxCensus:
    """Instruction counts of one kernel's PTX (static: an instruction in a loop counts once)."""

    cp_async: int  # cp.async.ca / .cg: asynchronous global→shared copies (sm_80+)
    bulk: int  # cp.async.bulk: TMA copies (sm_90)
    mma: int  # mma.sync: warp-level tensor-core matmuls
    wgmma: int  # wgmma.mma_async: warp-group tensor-core matmuls (sm_90)
    global_bits: tuple[tuple[int, int], ...]  # (access width in bits, count) over ld.global and cp.async

    @property
    def tensor_core(self) -> int:
        return self.mma + self.wgmma

    @property
    def global_loads(self) -> int:
        return sum(n for _, n in self.global_bits)

    @property
    def share_128(self) -> float:
        """The fraction of global load instructions (plain and asynchronous) that move 128 bits."""
        return dict(self.global_bits).get(128, 0) / self.global_loads if self.global_loads else 1.0


def _load_bits(suffixes: str) -> int:
    parts = suffixes.strip(".").split(".")
    lanes = next((int(p[1:]) for p in parts if re.fullmatch(r"v\d", p)), 1)
    bits = next((int(m.group(1)) for p in reversed(parts) if (m := re.fullmatch(r"[bfsu](\d+)", p))), 0)
    return lanes * bits


def ptx_census(ptx: str) -> PtxCensus:
    widths: Counter[int] = Counter(int(m.group(1), 0) * 8 for m in _CP_ASYNC.finditer(ptx))
    widths.update(_load_bits(m.group(1)) for m in _LD_GLOBAL.finditer(ptx))
    return PtxCensus(cp_async=len(_CP_ASYNC.findall(ptx)), bulk=len(re.findall(r"cp\.async\.bulk\.", ptx)),
                     mma=len(re.findall(r"\bmma\.sync\.", ptx)), wgmma=len(re.findall(r"\bwgmma\.mma_async\.", ptx)),
                     global_bits=tuple(sorted(widths.items())))


def matmul_count(bg: BlockGraph) -> int:
    """The tl.dot calls the kernel makes per iteration (concat_then_matmul makes two)."""
    return sum(1 if n.op is Op.MATMUL else 2 if n.op is Op.CONCAT_THEN_MATMUL else 0 for n in bg.nodes)


def contiguous_row_bytes(bg: BlockGraph, in_strides: Sequence[Sequence[int]]) -> list[int]:
    """Per loaded tile, the contiguous bytes one of its rows spans (its extent along the dim of stride 1): fixed
    by the μGraph's tiling, not by launch parameters."""
    runs = []
    for loader, strides in zip(bg.loaders, in_strides, strict=True):
        t = bg.tensors[loader.outputs[0]]
        unit = [d for d, s in enumerate(strides) if s == 1]
        runs.append((t.dims[unit[-1]] if unit else 1) * t.dtype.itemsize)
    return runs


def narrow_tiles(bg: BlockGraph, in_strides: Sequence[Sequence[int]], num_warps: int) -> int:
    """The loaded tiles that cannot be read 128 bits per access: rows not a multiple of 16 bytes, or fewer than 16
    bytes per thread of the program (a (8, 16) fp16 tile over 256 threads gets one 16-bit value each)."""
    threads = 32 * num_warps
    return sum(row % 16 != 0 or bg.tensors[n.outputs[0]].nbytes < 16 * threads
               for n, row in zip(bg.loaders, contiguous_row_bytes(bg, in_strides), strict=True))


def triton_report(graph: KernelGraph | KernelGraphBuilder, archs: Sequence[str] = ARCHS,
                  launches: Mapping[str, TritonLaunch] | None = None, *, resources: bool = True) -> pd.DataFrame:
    """One row per kernel and architecture: launch parameters, what the μGraph fixes, and what the PTX holds
    (with ``resources``, ptxas's registers and spills too)."""
    module = triton_module(graph, launches)
    g = module.graph
    strides = {n.outputs[0]: tuple(n.attr("strides")) for n in g.nodes
               if n.op is Op.INPUT and n.attr("strides") is not None}
    rows = []
    for arch in archs:
        ptx = compile_ptx(module.source, arch, resources=resources)
        for k, kern in module.kernels.items():
            node = g.nodes[k]
            assert node.body is not None
            ins = [strides.get(t, contiguous_strides(g.tensors[t].dims)) for t in node.inputs]
            census = ptx_census(ptx.ptx[kern.name])
            used = ptx.resources.get(kern.name)
            rows.append({
                "kernel": kern.name, "arch": arch, "num_warps": kern.launch.num_warps,
                "num_stages": kern.launch.num_stages, "min_extent": kern.launch.min_extent,
                "launch": kern.launch.origin, "loop": node.body.forloop_range, "matmuls": matmul_count(node.body),
                "row_bytes": min(contiguous_row_bytes(node.body, ins)),
                "narrow_tiles": narrow_tiles(node.body, ins, kern.launch.num_warps),
                "cp_async": census.cp_async, "tma": census.bulk,
                "mma": census.mma, "wgmma": census.wgmma, "global_loads": census.global_loads,
                "share_128": round(census.share_128, 3), "shared_bytes": ptx.shared[kern.name],
                "registers": used.registers if used else None, "spill_bytes": used.spill_bytes if used else None,
                "key": kern.key[:12],
            })
    return pd.DataFrame(rows)
