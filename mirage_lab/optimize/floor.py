"""The DRAM floor of a program: the time to move its inputs and outputs once at the GPU's DRAM bandwidth. No
kernel computing it can be faster; the analysis (``codegen.analysis``) and the timing tables (``bench``) show it."""

from __future__ import annotations

from mirage_lab.ir.graph import KernelGraph
from mirage_lab.optimize.hardware import Hardware, get_hardware


def io_bytes(graph: KernelGraph) -> int:
    """Bytes of ``graph``'s inputs and outputs: what a kernel computing it must move to and from DRAM at least."""
    return sum(t.nbytes for t in graph.input_types) + sum(t.nbytes for t in graph.output_types)


def dram_floor_s(graph: KernelGraph, hardware: str | Hardware) -> float:
    """Seconds to move ``io_bytes(graph)`` at ``hardware``'s DRAM bandwidth."""
    return io_bytes(graph) / get_hardware(hardware).dram_bytes_per_s
