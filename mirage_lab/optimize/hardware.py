"""Per-architecture figures the proxy cost model uses (SPEC §8.1 [lab]): throughput and occupancy limits.

Throughput figures are vendor datasheet / whitepaper figures for the SXM parts. Occupancy limits are
the CUDA C++ Programming Guide's "Technical Specifications per Compute Capability" table (compute
capability 8.0 for A100, 9.0 for H100/H200). Each preset's ``source`` cites them; every figure that
is an estimate rather than a datasheet number is marked [uncertain] there.
"""

from __future__ import annotations

from dataclasses import dataclass

from mirage_lab.errors import MirageError

__all__ = ["HARDWARE", "Hardware", "get_hardware"]

KIB = 1024
MB = 1 << 20
LAUNCH_S = 3e-6  # [uncertain] back-to-back launch gap on one stream, a lab estimate (typically 2–5 µs)
DRAM_LATENCY_S = 500e-9  # [uncertain] loaded global-memory latency; microbenchmarks report ~450–650 ns


@dataclass(frozen=True)
class Hardware:
    """Throughput figures and occupancy limits of one GPU.

    Throughput: ``dram_bytes_per_s``: peak HBM bandwidth. ``flops_per_s``: dense fp16 tensor-core peak
    (no sparsity). ``vector_flops_per_s``: fp32 CUDA-core peak. ``launch_s``: per-kernel launch
    overhead. ``l2_bytes``: L2 capacity. ``l2_bytes_per_s``: aggregate L2 → SM bandwidth. ``sms``: SM
    count. ``arch``: the compute capability, as SPEC §3.6 names it.

    Occupancy (keyword fields, defaults = compute capability 8.0): ``smem_per_sm`` / ``smem_per_block``:
    the largest shared-memory carve-out per SM / usable by one block (opt-in maximum);
    ``smem_reserved_per_block``: what the CUDA driver reserves per resident block (1 KiB on cc ≥ 8.0);
    ``regs_per_sm``: 32-bit registers per SM; ``max_regs_per_thread``; ``reg_alloc_unit``: registers
    are allocated per warp in units of this many; ``max_threads_per_sm``, ``max_blocks_per_sm``;
    ``smem_bytes_per_s``: aggregate shared-memory bandwidth (128 B/clock/SM × SMs × boost clock);
    ``dram_latency_s``: the latency Little's law uses to say how many bytes must be in flight per SM
    to reach ``dram_bytes_per_s``; ``pipeline_depth``: how many iterations' tiles a forloop loader keeps
    in flight (asynchronous-copy pipelining, SPEC §8.2 step 5; [lab] 2 = double buffering).
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
    smem_per_sm: int = 164 * KIB
    smem_per_block: int = 163 * KIB
    smem_reserved_per_block: int = 1 * KIB
    regs_per_sm: int = 65536
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    smem_bytes_per_s: float = float("inf")
    dram_latency_s: float = DRAM_LATENCY_S
    pipeline_depth: int = 2

    def __post_init__(self) -> None:
        for f in ("dram_bytes_per_s", "flops_per_s", "vector_flops_per_s", "l2_bytes_per_s", "sms",
                  "smem_per_sm", "smem_per_block", "regs_per_sm", "max_regs_per_thread", "reg_alloc_unit",
                  "max_threads_per_sm", "max_blocks_per_sm", "smem_bytes_per_s", "pipeline_depth"):
            if not getattr(self, f) > 0:
                raise MirageError(f"Hardware {self.name!r}: {f} must be positive, got {getattr(self, f)!r}")
        if self.launch_s < 0 or self.l2_bytes < 0 or self.smem_reserved_per_block < 0 or self.dram_latency_s < 0:
            raise MirageError(f"Hardware {self.name!r}: launch_s, l2_bytes, smem_reserved_per_block and "
                              "dram_latency_s must be ≥ 0")

    @property
    def bytes_in_flight_per_sm(self) -> float:
        """Little's law: the DRAM bytes each SM must keep in flight for the GPU to reach its bandwidth."""
        return self.dram_bytes_per_s * self.dram_latency_s / self.sms


_CC80 = ("CUDA C++ Programming Guide, Technical Specifications per Compute Capability, cc 8.0: 32 blocks, "
         "64 warps = 2048 threads and 64 K 32-bit registers per SM, 255 registers per thread, 164 KB shared "
         "memory per SM and 163 KB per block, 1 KB reserved per block by the driver")
_CC90 = ("CUDA C++ Programming Guide, cc 9.0: 32 blocks, 2048 threads, 64 K registers per SM, 255 per "
         "thread, 228 KB shared memory per SM and 227 KB per block, 1 KB reserved per block")

HARDWARE: dict[str, Hardware] = {
    "A100": Hardware(
        "A100", "sm_80", dram_bytes_per_s=2.039e12, flops_per_s=312e12, vector_flops_per_s=19.5e12,
        launch_s=LAUNCH_S, l2_bytes=40 * MB, l2_bytes_per_s=5.0e12, sms=108,
        smem_per_sm=164 * KIB, smem_per_block=163 * KIB, smem_bytes_per_s=128 * 108 * 1.41e9,
        source="NVIDIA A100 datasheet (SXM4 80GB: 2,039 GB/s HBM2e, FP16 tensor 312 TFLOPS dense, FP32 19.5 "
               "TFLOPS); A100 whitepaper (108 SMs, 40 MB L2, 1,410 MHz boost, 128 B/clk/SM shared memory). "
               "L2 bandwidth [uncertain]: the whitepaper's '2.3x V100 L2 read bandwidth' applied to V100's "
               "~2.1 TB/s measured by Jia et al. (2018). " + _CC80 + ". DRAM latency 500 ns [uncertain]."),
    "H100": Hardware(
        "H100", "sm_90", dram_bytes_per_s=3.35e12, flops_per_s=989.4e12, vector_flops_per_s=66.9e12,
        launch_s=LAUNCH_S, l2_bytes=50 * MB, l2_bytes_per_s=7.0e12, sms=132,
        smem_per_sm=228 * KIB, smem_per_block=227 * KIB, smem_bytes_per_s=128 * 132 * 1.98e9,
        source="NVIDIA H100 datasheet / Hopper whitepaper (SXM5: 3.35 TB/s HBM3, FP16 tensor 989.4 TFLOPS "
               "dense (1,979 with sparsity), FP32 66.9 TFLOPS, 132 SMs, 50 MB L2, 1,980 MHz max boost, "
               "128 B/clk/SM shared memory). L2 bandwidth [uncertain]: microbenchmarks report ~5.5 TB/s "
               "(H100 PCIe, Chips and Cheese 2023) to ~10 TB/s. " + _CC90 + ". DRAM latency 500 ns "
               "[uncertain]."),
    "H200": Hardware(
        "H200", "sm_90", dram_bytes_per_s=4.8e12, flops_per_s=989.4e12, vector_flops_per_s=66.9e12,
        launch_s=LAUNCH_S, l2_bytes=50 * MB, l2_bytes_per_s=7.0e12, sms=132,
        smem_per_sm=228 * KIB, smem_per_block=227 * KIB, smem_bytes_per_s=128 * 132 * 1.98e9,
        source="NVIDIA H200 datasheet (SXM: 4.8 TB/s HBM3e, FP16 tensor 1,979 TFLOPS with sparsity = 989 "
               "dense, FP32 67 TFLOPS); same GH100 die as H100 SXM (132 SMs, 50 MB L2, same clocks, same L2 "
               "estimate). " + _CC90 + ". DRAM latency 500 ns [uncertain]."),
}


def get_hardware(hardware: str | Hardware) -> Hardware:
    """A preset by name (case-insensitive) or a ``Hardware`` as is."""
    if isinstance(hardware, Hardware):
        return hardware
    for name, hw in HARDWARE.items():
        if name.lower() == str(hardware).lower():
            return hw
    raise MirageError(f"unknown hardware {hardware!r}; use one of {', '.join(HARDWARE)} or pass a Hardware(...)")
