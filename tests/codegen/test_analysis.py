"""Kernel analysis from ptxas and the SASS (issue 36, item 3): parsing on fixtures, real compiles of generated and
hand-written CUDA for sm_80 and sm_90, the CLI's --analyze, and the error when a tool is missing."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

import mirage_lab as ml
from mirage_lab.bench import fused
from mirage_lab.codegen import analysis, sass
from mirage_lab.codegen.analysis import analyze_kernel, analyze_source, block_bytes_in_flight, kernel_sass
from mirage_lab.codegen.plan import plan_cuda, prepare
from mirage_lab.codegen.sass import InstructionMix, ToolMissingError, access_width, parse_ptxas_figures
from mirage_lab.errors import MirageError
from mirage_lab.optimize.hardware import HARDWARE

needs_sass = pytest.mark.skipif(sass.toolchain_missing() is not None,
                                reason=f"no SASS here: {sass.toolchain_missing()}")

#: cuobjdump's layout, two kernels; predicated and unpredicated lines, what today's emitter and the rewrite emit
CUOBJDUMP = """
\tcode for sm_90
\t\tFunction : first
\t.headerflags\t@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                      /* 0x00000a00ff017b82 */
                                                                               /* 0x000fe20000000800 */
        /*0010*/               @P4 LDG.E.128.CONSTANT R12, desc[UR4][R8.64] ;  /* 0x00000004080c4981 */
        /*0020*/              @!P0 LDG.E.128 R16, desc[UR4][R8.64+0x10] ;      /* 0x0000000408108981 */
        /*0030*/                   LDG.E.U16 R2, desc[UR4][R4.64] ;            /* 0x0000000404027981 */
        /*0040*/                   LDG.E R3, desc[UR4][R4.64+0x4] ;            /* 0x0000000404037981 */
        /*0050*/                   STS.U16 [R6], R0 ;                          /* 0x0000000006007388 */
        /*0060*/                   STS.128 [R6+0x10], R12 ;                    /* 0x0000100006007388 */
        /*0070*/                   LDS R7, [R6] ;                              /* 0x0000000006077984 */
        /*0080*/                   FFMA R8, R7, R7, R8 ;                       /* 0x0000000707087223 */
        /*0090*/                   HFMA2.MMA R9, -RZ, RZ, 0, 0 ;               /* 0x00000000ff097435 */
        /*00a0*/                   HMMA.16816.F32 R20, R12, R16, R20 ;         /* 0x000000100c14723c */
        /*00b0*/                   STG.E.64 desc[UR4][R2.64], R8 ;             /* 0x0000000802007986 */
        /*00c0*/                   EXIT ;                                      /* 0x000000000000794d */
\t\t..........

\t\tFunction : second
        /*0000*/                   LDGSTS.E.BYPASS.LTC128B.128 [R3], desc[UR4][R4.64] ;  /* 0x0000000004037fae */
        /*0010*/                   LDGSTS.E.64 [R3+0x10], desc[UR4][R4.64+0x10] ;      /* 0x0000100004037fae */
        /*0020*/                   LDGDEPBAR ;                                          /* 0x00000000000079af */
        /*0030*/                   DEPBAR.LE SB0, 0x1 ;                                 /* 0x000080400000791a */
        /*0040*/                   LDSM.16.M88.4 R8, [R3] ;                             /* 0x000000000308783b */
        /*0050*/                   LDSM.16.MT88.2 R12, [R3+0x200] ;                     /* 0x000200000312783b */
        /*0060*/                   HGMMA.64x128x16.F32 R24, gdesc[UR4], RZ, !UPT ;      /* 0x00e00000041879f0 */
        /*0070*/              @!UP0 UTMALDG.2D [UR8], [UR4] ;                           /* 0x00000008040075b4 */
        /*0080*/                   UBLKCP.S.G [UR4], [UR6], UR8 ;                       /* 0x00000004060073ba */
        /*0090*/                   EXIT ;                                               /* 0x000000000000794d */
"""

PTXAS = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'first' for 'sm_90'
ptxas info    : Function properties for first
    16 bytes stack frame, 12 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 512 bytes smem
ptxas info    : Compiling entry function 'second' for 'sm_90'
ptxas info    : Function properties for second
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers
"""


def test_widths_and_instruction_mix_from_a_cuobjdump_fixture() -> None:
    assert [access_width(m) for m in ("LDG.E.128.CONSTANT", "LDG.E.U16", "LDG.E", "STS.U8", "STG.E.64",
                                      "LDGSTS.E.BYPASS.LTC128B.128")] == [128, 16, 32, 8, 64, 128]
    functions = sass.split_functions(CUOBJDUMP)
    assert list(functions) == ["first", "second"]
    first, second = InstructionMix.of(functions["first"]), InstructionMix.of(functions["second"])
    assert first.widths("LDG") == {128: 2, 32: 1, 16: 1} and first.share_128("LDG") == 50.0
    row = first.row()
    assert row["LDG"] == 4 and row["LDG widths"] == "128b×2, 32b×1, 16b×1" and row["% LDG 128-bit"] == 50.0
    assert (row["STG widths"], row["STS widths"], row["LDS widths"]) == ("64b×1", "128b×1, 16b×1", "32b×1")
    assert (row["FFMA"], row["HFMA2"], row["HMMA"], row["HGMMA"], row["LDGSTS"]) == (1, 1, 1, 0, 0)
    row = second.row()
    assert row["LDGSTS"] == 2 and row["LDGSTS widths"] == "128b×1, 64b×1" and row["DEPBAR"] == 2
    assert (row["LDSM"], row["HGMMA"], row["TMA"], row["LDG"]) == (2, 1, 2, 0)
    assert math.isnan(row["% LDG 128-bit"]) and row["LDG widths"] == "-"
    assert repr(first).startswith("InstructionMix(13 instructions; ")


def test_nvdisasm_layout_splits_the_same_way() -> None:
    text = ("\t.section\t.text.k0,\"ax\",@progbits\n.text.k0:\n"
            "        /*0000*/  LDG.E.64 R2, desc[UR4][R4.64] ;\n"
            "\t.section\t.text.k1,\"ax\",@progbits\n.text.k1:\n"
            "        /*0000*/  @P0 STG.E.128 desc[UR4][R2.64], R4 ;\n")
    functions = sass.split_functions(text)
    assert set(functions) == {"k0", "k1"}
    assert InstructionMix.of(functions["k0"]).widths("LDG") == {64: 1}
    assert InstructionMix.of(functions["k1"]).widths("STG") == {128: 1}


def test_ptxas_figures_add_spill_loads_and_the_stack_frame() -> None:
    figures = parse_ptxas_figures(PTXAS)
    first = figures["first"]
    assert (first.registers, first.static_smem, first.spill_bytes, first.stack_frame) == (255, 512, 20, 16)
    assert figures["second"].spill_bytes == 0 and figures["second"].static_smem == 0


def test_a_missing_disassembler_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sass, "tool_path", lambda name: None)
    with pytest.raises(ToolMissingError, match=r"pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm"):
        sass.disassembler()
    assert sass.toolchain_missing() is not None and issubclass(ToolMissingError, MirageError)
    if sass.nvcc_path() is not None:  # the compile path says it too (a new source: nothing cached)
        with pytest.raises(ToolMissingError, match="analyze"):
            analyze_source('extern "C" __global__ void missing_tool() {}\n', "sm_80")


def test_the_wheels_binaries_are_found_without_path(monkeypatch: pytest.MonkeyPatch) -> None:
    found = sass.tool_path("cuobjdump")
    if found is None:
        pytest.skip("nvidia-cuda-cuobjdump is not installed")
    monkeypatch.setenv("PATH", "")
    assert sass.tool_path("cuobjdump") is not None


@needs_sass
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_hand_written_async_copy_ldmatrix_and_mma_are_read(arch: str) -> None:
    """cp.async, ldmatrix and mma.sync m16n8k16 (what the emitter rewrite emits) come out as LDGSTS, LDSM, HMMA;
    on sm_90 a bulk copy is TMA."""
    frame = analyze_source(ASYNC_MMA, arch).set_index("kernel")
    k = frame.loc["async_mma"]
    assert (k["LDGSTS"], k["LDGSTS widths"], k["LDSM"], k["HMMA"]) == (1, "128b×1", 1, 1)
    assert k["DEPBAR"] >= 2 and k["spill B"] == 0 and k["registers"] > 0 and k["static smem B"] == 512
    assert frame.loc["bulk_copy", "TMA"] == (1 if arch == "sm_90" else 0)
    assert "HMMA.16816.F32" in frame.attrs["sass"]["async_mma"]


def _small_graph() -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(16, 64), dtype=ml.float16)
    w = g.new_input(dims=(64, 256), dtype=ml.float16)
    g.mark_output(g.exp(g.matmul(x, w)))
    return g.freeze()


@needs_sass
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_a_small_graph_has_one_row_per_kernel(arch: str) -> None:
    g = _small_graph()
    frame = analyze_kernel(g, arch)
    hw = analysis.hardware_for(arch)
    launches = plan_cuda(g).launches
    assert list(frame["kernel"]) == [launch.name for launch in launches] and len(frame) == 2
    assert list(frame["dynamic smem B"]) == [launch.smem_bytes for launch in launches]
    assert (frame["spill B"] == 0).all() and (frame["registers"] > 0).all() and (frame["LDGSTS"] > 0).all()
    assert set(frame["GPU"]) == {hw.name} and set(frame["arch"]) == {arch}
    floor = (16 * 64 + 64 * 256 + 16 * 256) * 2 / hw.dram_bytes_per_s * 1e6
    assert frame["program DRAM floor µs"].iloc[0] == pytest.approx(floor, abs=0.01)
    assert set(frame["bound"]) <= {"DRAM", "L2", "shared memory", "tensor cores", "FMA", "launch"}
    assert (frame["occupancy %"] > 0).all() and (frame["occupancy %"] <= 100).all()
    assert set(kernel_sass(g, arch)) == set(frame["kernel"])
    assert "registers" in repr(frame)


@needs_sass
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_fused_benchmark_kernels(arch: str) -> None:
    """RMSNorm+Linear's one kernel, and GQA's matmul kernel on tensor cores: figures that follow from the plan."""
    g = prepare(fused.rmsnorm(1))
    (row,) = analyze_kernel(g, arch).to_dict("records")
    hw = analysis.hardware_for(arch)
    bg = g.nodes[row["node"]].body
    assert bg is not None
    resident = min(row["blocks/SM"], math.ceil(bg.num_blocks / hw.sms))
    assert row["in flight B/SM"] == block_bytes_in_flight(bg, row["stages"]) * resident > 0
    assert row["needed B/SM"] == round(hw.dram_bytes_per_s * hw.dram_latency_s / hw.sms)
    assert row["spill B"] == 0 and row["LDGSTS"] > 0 and row["% global reads 128-bit"] == 100
    assert row["HMMA"] > 0 and row["stages"] > 2  # the 2-row matmul on tensor cores; W copied iterations ahead
    # 50 MB of weights: the bound is DRAM, and the kernel's prediction is the program's floor
    assert row["bound"] == "DRAM" and row["DRAM MB"] > 50
    assert row["predicted µs"] == pytest.approx(row["program DRAM floor µs"], rel=0.01)
    gqa = analyze_kernel(fused.gqa(1), arch, hardware="H200" if arch == "sm_90" else None)
    assert (gqa["HMMA"] + gqa["HGMMA"]).iloc[0] > 0  # Q·K and its product with V on tensor cores
    assert set(gqa["GPU"]) == {"H200" if arch == "sm_90" else "A100"}


def test_hardware_follows_the_architecture() -> None:
    assert analysis.hardware_for("sm_80").name == "A100" and analysis.hardware_for("sm_90a").name == "H100"
    assert analysis.hardware_for("sm_90", "h200") is HARDWARE["H200"]
    with pytest.raises(MirageError, match="sm_80 GPU"):
        analysis.hardware_for("sm_90", "A100")
    with pytest.raises(MirageError, match="analyze_source"):
        analysis.hardware_for("sm_100")


def test_bytes_in_flight_of_a_loop_and_of_hoisted_tiles() -> None:
    bg = fused.rmsnorm(1).block_graphs[0]
    per_iteration = sum(bg.tensors[ld.outputs[0]].nbytes for ld in bg.loaders)  # both loaders walk the loop
    assert block_bytes_in_flight(bg, 1) == block_bytes_in_flight(bg, 2) == per_iteration
    assert block_bytes_in_flight(bg, 4) == 3 * per_iteration
    lora = fused.lora(1).block_graphs[0]  # F = 1: everything is hoisted
    assert block_bytes_in_flight(lora, 3) == sum(lora.tensors[ld.outputs[0]].nbytes for ld in lora.loaders)


@needs_sass
def test_cli_analyze(capsys: pytest.CaptureFixture[str]) -> None:
    from mirage_lab.cli import main

    assert main(["codegen", "fused:lora", "--analyze", "--arch", "sm_80", "sm_90", "--hardware", "H200"]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("Kernel analysis of fused_lora_bs1") == 2 and "extern \"C\"" not in captured.out
    assert "for sm_90 on H200" in captured.out and "for sm_80 on A100" in captured.out
    assert "% LDG 128-bit" in captured.out and "--hardware H200 is not an sm_80 GPU" in captured.err


def test_cli_analyze_refuses_triton() -> None:
    proc = subprocess.run([sys.executable, "-m", "mirage_lab", "codegen", "fused:lora", "--backend", "triton",
                           "--analyze"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "leave out --backend triton" in proc.stderr


ASYNC_MMA = r"""
#include <cuda_fp16.h>
extern "C" __global__ void async_mma(const half* __restrict__ a, const half* __restrict__ b, float* __restrict__ c) {
  __shared__ __align__(16) half tile[16 * 16];
  const int t = threadIdx.x;
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(tile + t * 8));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(a + t * 8));
  asm volatile("cp.async.commit_group;\n" ::);
  asm volatile("cp.async.wait_group 0;\n" ::);
  __syncthreads();
  unsigned r0, r1, r2, r3;
  const unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(tile + (t % 16) * 16 + (t / 16) * 8));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(at));
  const unsigned b0 = reinterpret_cast<const unsigned*>(b)[t], b1 = reinterpret_cast<const unsigned*>(b)[t + 32];
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n" : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
               : "r"(r0), "r"(r1), "r"(r2), "r"(r3), "r"(b0), "r"(b1));
  c[t] = d0 + d1 + d2 + d3;
}

extern "C" __global__ void bulk_copy(const float* __restrict__ src, float* __restrict__ out) {
#if __CUDA_ARCH__ >= 900
  __shared__ __align__(128) float buf[256];
  __shared__ __align__(8) unsigned long long bar;
  const unsigned sbuf = static_cast<unsigned>(__cvta_generic_to_shared(buf));
  const unsigned sbar = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared.b64 [%0], 1;\n" :: "r"(sbar));
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], 1024;\n" :: "r"(sbar));
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 1024, [%2];\n"
                 :: "r"(sbuf), "l"(src), "r"(sbar) : "memory");
  }
  asm volatile("{\n.reg .pred p;\nwait: mbarrier.try_wait.parity.shared.b64 p, [%0], 0;\n@!p bra wait;\n}\n"
               :: "r"(sbar));
  out[threadIdx.x] = buf[threadIdx.x];
#endif
}
"""
