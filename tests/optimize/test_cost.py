"""The proxy cost model (SPEC §8.1 [lab]): hand-computed figures, launch counts, labelling, fused < unfused."""

from __future__ import annotations

import dataclasses
import json

import pytest

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.errors import MirageError
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.optimize.cost import HARDWARE, CostEstimate, Hardware, get_hardware, proxy_cost

PHI = -1
H100 = HARDWARE["H100"]


def one_matmul(m: int = 64, k: int = 128, n: int = 256, batch: tuple[int, ...] = ()) -> KernelGraph:
    g = ml.new_kernel_graph()
    a = g.new_input(dims=(*batch, m, k), dtype=ml.float16)
    b = g.new_input(dims=(*batch, k, n), dtype=ml.float16)
    g.mark_output(g.matmul(a, b))
    return g.freeze()


# --------------------------------------------------------------------------- hand-computed figures


def test_one_matmul_exact_bytes_flops_and_seconds() -> None:
    c = proxy_cost(one_matmul(), "H100")
    want_bytes = (64 * 128 + 128 * 256 + 64 * 256) * 2  # A + B read, C written, fp16
    want_flops = 2 * 64 * 256 * 128
    assert (c.bytes_moved, c.flops, c.launches) == (want_bytes, want_flops, 1) == (114_688, 4_194_304, 1)
    (k,) = c.per_kernel
    assert (k.op, k.tensor_flops, k.vector_flops, k.l2_bytes, k.blocks, k.utilisation) == \
        ("matmul", want_flops, 0, 0, None, 1.0)
    roofline = max(want_bytes / H100.dram_bytes_per_s, want_flops / H100.flops_per_s)
    assert c.seconds == pytest.approx(roofline + H100.launch_s, rel=1e-12)


def test_batched_kernel_matmul_counts_the_batch_dims() -> None:
    c = proxy_cost(one_matmul(16, 32, 8, batch=(3,)))
    assert c.flops == 2 * 3 * 16 * 8 * 32
    assert c.bytes_moved == 3 * (16 * 32 + 32 * 8 + 16 * 8) * 2


def test_fp32_doubles_the_bytes() -> None:
    g = ml.new_kernel_graph()
    a = g.new_input(dims=(64, 128), dtype=ml.float32)
    b = g.new_input(dims=(128, 256), dtype=ml.float32)
    g.mark_output(g.matmul(a, b))
    assert proxy_cost(g.freeze()).bytes_moved == 2 * proxy_cost(one_matmul()).bytes_moved


def test_elementwise_reads_a_repeated_operand_once() -> None:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 1024), dtype=ml.float16)
    g.mark_output(g.mul(x, x))
    c = proxy_cost(g.freeze())
    assert c.bytes_moved == 2 * 8 * 1024 * 2
    assert c.flops == 8 * 1024


def test_fused_lora_hand_computed() -> None:
    """X and A are replicated over 64 blocks (re-reads from L2); W and B are partitioned; F = 1."""
    c = proxy_cost(fused.lora(1), "H100")
    (k,) = c.per_kernel
    x, w, a, b, out = 16 * 256 * 2, 256 * 4096 * 2, 256 * 16 * 2, 16 * 4096 * 2, 16 * 4096 * 2
    assert k.blocks == 64 and k.utilisation == pytest.approx(64 / 132)
    assert k.dram_bytes == x + w + a + b + out == 2_375_680
    assert k.l2_bytes == 63 * x + 63 * a == 1_032_192
    per_block_mm = 2 * 16 * 64 * 256 + 2 * 16 * 16 * 256 + 2 * 16 * 64 * 16  # XW, XA, (XA)B
    assert k.tensor_flops == 64 * per_block_mm == 44_040_192
    assert k.vector_flops == 64 * (16 * 64 + 16 * 64)  # add + NO_RED accumulator, one iteration
    tiles = {"x": 16 * 256 * 2, "w": 256 * 64 * 2, "a": 256 * 16 * 2, "b": 16 * 64 * 2, "o": 16 * 64 * 2,
             "xa": 16 * 16 * 2}
    loads = 64 * tiles["x"] + w + 64 * tiles["a"] + b  # each loader writes what it reads into shared memory
    # matmuls and add write shared memory; the accumulator (registers) reads add's output; the saver reads registers
    ops = ((tiles["x"] + tiles["w"] + tiles["o"]) + (tiles["x"] + tiles["a"] + tiles["xa"])
           + (tiles["xa"] + tiles["b"] + tiles["o"]) + 3 * tiles["o"] + tiles["o"])  # XW, XA, ·B, add, acc
    assert k.smem_bytes == loads + 64 * ops
    # 64 blocks, one per SM: 64 × 51,200 B in flight ≥ 3.35 TB/s × 500 ns, so e_mem = 1; 4 warps: e_comp = 1
    assert (k.blocks_per_sm, k.waves, k.memory_efficiency, k.compute_efficiency) == (k.blocks_per_sm, 1, 1.0, 1.0)
    u = 64 / 132
    memory = max(k.dram_bytes / H100.dram_bytes_per_s, k.l2_bytes / H100.l2_bytes_per_s,
                 k.smem_bytes / H100.smem_bytes_per_s / u)
    compute = (k.tensor_flops / H100.flops_per_s + k.vector_flops / H100.vector_flops_per_s) / u
    assert c.seconds == pytest.approx(max(memory, compute) + H100.launch_s, rel=1e-12)


def test_fused_rmsnorm_loop_and_post_loop_flops() -> None:
    """bs 1: 256 blocks, F = 32, tiles X[2,128], W[128,24]; the div after the loop runs once per block."""
    (k,) = proxy_cost(fused.rmsnorm(1)).per_kernel
    n, f = 256, 32
    assert k.tensor_flops == 2 * 2 * 24 * 128 * f * n
    accum_rms, accum_mm, div = 2 * (2 * 128) * f * n, (2 * 24) * f * n, (2 * 24) * n
    assert k.vector_flops == accum_rms + accum_mm + div
    x, w, out = 2 * 4096 * 2, 4096 * 6144 * 2, 2 * 6144 * 2
    assert k.dram_bytes == x + w + out
    assert k.l2_bytes == 255 * x  # X is replicated over the 256 blocks; W is split, walked by the loop


def test_replicated_reads_fall_back_to_dram_when_they_do_not_fit_l2() -> None:
    tiny = dataclasses.replace(H100, name="H100-noL2", l2_bytes=0)
    big, small = proxy_cost(fused.lora(1), H100), proxy_cost(fused.lora(1), tiny)
    assert small.l2_bytes_moved == 0
    assert small.bytes_moved == big.bytes_moved + big.l2_bytes_moved
    assert small.hardware == "H100-noL2"


def test_occupancy_factor_and_its_switch() -> None:
    on, off = proxy_cost(fused.lora(1)), proxy_cost(fused.lora(1), occupancy=False)
    assert on.per_kernel[0].utilisation == pytest.approx(64 / 132)
    assert off.per_kernel[0].utilisation == 1.0
    assert (off.per_kernel[0].memory_efficiency, off.per_kernel[0].compute_efficiency) == (1.0, 1.0)
    assert off.seconds <= on.seconds
    assert (off.bytes_moved, off.flops) == (on.bytes_moved, on.flops)
    small = proxy_cost(fused.gated_mlp(1), "H200")  # 128 blocks × 2 × 10.25 KiB tiles in flight < 2.4 MB
    (k,) = small.per_kernel
    assert 0 < k.memory_efficiency < 1
    assert proxy_cost(fused.gated_mlp(1), "H200", occupancy=False).seconds < small.seconds


def test_a_block_graph_costs_like_its_single_kernel_graph() -> None:
    g = fused.gated_mlp(1)
    (bg,) = g.block_graphs
    a, b = proxy_cost(bg), proxy_cost(g)
    assert (a.seconds, a.bytes_moved, a.flops, a.l2_bytes_moved) == (b.seconds, b.bytes_moved, b.flops,
                                                                      b.l2_bytes_moved)


# --------------------------------------------------------------------------- launches


@pytest.mark.parametrize(("graph", "launches"), [
    (one_matmul(), 1),
    (programs.rmsnorm(1), 2),      # rms_norm, matmul
    (programs.gated_mlp(1), 4),    # matmul, silu, matmul, mul
    (programs.gqa(1), 5),          # matmul, exp, reduction, div, matmul
    (programs.qknorm_gqa(1), 7),   # + two rms_norms
    (fused.rmsnorm(1), 1),
    (fused.gqa(1), 2),
])
def test_every_non_input_kernel_op_is_one_launch(graph: KernelGraph, launches: int) -> None:
    c = proxy_cost(graph)
    assert c.launches == len(c.per_kernel) == len(graph.compute_nodes) == launches
    assert c.seconds == pytest.approx(sum(k.seconds for k in c.per_kernel))
    assert sum(k.launch_s for k in c.per_kernel) == pytest.approx(launches * H100.launch_s)


# --------------------------------------------------------------------------- labelling and output


def test_every_estimate_is_labelled_proxy() -> None:
    c = proxy_cost(fused.gqa(1))
    assert c.kind == "proxy"
    assert "proxy" in repr(c) and "proxy" in str(c) and "proxy" in c._repr_html_()
    d = c.to_dict()
    assert d["kind"] == "proxy" and d["hardware"] == "H100"
    assert len(d["per_kernel"]) == 2
    json.dumps(d)  # JSON-serialisable
    assert isinstance(c, CostEstimate)


def test_hardware_lookup() -> None:
    assert get_hardware("h200") is HARDWARE["H200"]
    assert get_hardware(H100) is H100
    assert proxy_cost(one_matmul(), "a100").hardware == "A100"
    with pytest.raises(MirageError, match="unknown hardware"):
        get_hardware("V100")
    with pytest.raises(MirageError, match="positive"):
        Hardware("bad", "sm_0", 0.0, 1.0, 1.0, 0.0, 0, 1.0, 1)


def test_faster_memory_is_cheaper_for_a_memory_bound_program() -> None:
    g = programs.gqa(8)
    a100, h100, h200 = (proxy_cost(g, hw).seconds for hw in ("A100", "H100", "H200"))
    assert a100 > h100 > h200


# --------------------------------------------------------------------------- fused beats unfused

FUSED_CASES = [(name, batch) for name in ("rmsnorm", "gated_mlp", "lora", "gqa") for batch in (1, 8)]


@pytest.mark.parametrize("hardware", list(HARDWARE))
@pytest.mark.parametrize(("name", "batch"), FUSED_CASES)
def test_hand_fused_graph_is_cheaper_than_its_program(name: str, batch: int, hardware: str) -> None:
    unfused = proxy_cost(programs.PROGRAMS[name](batch), hardware)
    fused_cost = proxy_cost(fused.FUSED[name](batch), hardware)
    assert fused_cost.seconds < unfused.seconds
    assert fused_cost.launches < unfused.launches
    assert fused_cost.bytes_moved <= unfused.bytes_moved


