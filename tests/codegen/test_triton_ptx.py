"""What Triton makes of our kernels ahead of time, without a GPU (issue 36): for every fused benchmark μGraph (batch
1 and 8) and every search's best (data/search_best), compiled for sm_80 and sm_90 with their default launch
parameters, the PTX holds tensor-core instructions (mma.sync, or wgmma on sm_90) for every kernel with an fp16
matmul, asynchronous global→shared copies (cp.async, or TMA bulk copies) for every kernel whose matmul inputs are
loaded in a loop, ≥ 90 % of global loads 128-bit where every tile allows it (rows of a multiple of 16 bytes, at
least 16 bytes per thread), and ptxas spills nothing.

Kernels whose loop runs once (LoRA's, the second kernel of split-KV attention, the search's nTrans) have nothing
for Triton's pipeliner to overlap: their loads stay plain 128-bit ld.global (docs/decisions.md, issue 36)."""

from __future__ import annotations

import pytest

from mirage_lab.bench.fused import FUSED
from mirage_lab.codegen.triton.report import ptx_census, triton_report
from mirage_lab.ir.graph import KernelGraph
from tests.codegen.graphs import SEARCH_BEST, search_best

FUSED_POINTS = {f"fused_{n}_b{b}": (n, b) for n in sorted(FUSED) for b in (1, 8)}
GRAPHS = sorted([*FUSED_POINTS, *(f"search_{s}" for s in SEARCH_BEST)])


def graph(name: str) -> KernelGraph:
    if name in FUSED_POINTS:
        program, batch = FUSED_POINTS[name]
        return FUSED[program](batch)
    return search_best(name.removeprefix("search_"))


def test_the_census_reads_triton_ptx() -> None:
    ptx = """
    cp.async.cg.shared.global [ %r16 + 0 ], [ %rd6 + 0 ], 0x10, %r17;
    cp.async.ca.shared.global [ %r18 + 0 ], [ %rd7 + 0 ], 0x8, %r19;
    cp.async.commit_group;
    @%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];
    ld.global.b16 %rs1, [ %rd2 ];
    mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 { %f1 }, { %r1 }, { %r2 }, { %f2 };
    wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 { %f1 }, %rd1, %rd2, 1, 1, 1, 0, 1;
    cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4];
    """
    c = ptx_census(ptx)
    assert (c.cp_async, c.bulk, c.mma, c.wgmma, c.tensor_core) == (2, 1, 1, 1, 2)
    assert c.global_bits == ((16, 1), (64, 1), (128, 2)) and c.share_128 == 0.5


@pytest.mark.parametrize("name", GRAPHS)
def test_async_copies_tensor_cores_and_no_spills(name: str) -> None:
    report = triton_report(graph(name))
    assert set(report["arch"]) == {"sm_80", "sm_90"}
    for row in report.itertuples():
        where = f"{name} {row.kernel} {row.arch}"
        assert row.spill_bytes == 0, f"{where}: ptxas spills {row.spill_bytes} bytes"
        if row.matmuls:
            assert row.mma + row.wgmma > 0, f"{where}: an fp16 matmul without tensor-core instructions"
            if row.loop > 1:
                assert row.cp_async + row.tma > 0, f"{where}: the loop's loads are not asynchronous copies"
        if not row.narrow_tiles:  # a row of 24 bytes can only be read 64 bits at a time, a tiny tile 16 bits
            assert row.share_128 >= 0.9, f"{where}: {row.share_128:.0%} of global loads are 128-bit"
