"""Issue 36's targets for the generated kernels, read from the SASS without a GPU (``codegen.analysis``).

For every hand-fused benchmark μGraph (batch 1 and 8) and every μGraph a benchmark search chose
(``data/search_best``), compiled for sm_80 and sm_90, each kernel must have: no spills; asynchronous
global → shared copies (LDGSTS); at least 90 % of its global reads (LDG and LDGSTS) 128 bits wide; and every
fp16 matmul on tensor cores (its plan lowers it to mma.sync, and the SASS holds HMMA).
"""

from __future__ import annotations

import pytest

from mirage_lab.bench.fused import FUSED
from mirage_lab.codegen.analysis import analyze_kernel
from mirage_lab.codegen.compile import nvcc_available
from mirage_lab.codegen.options import CodegenOptions
from mirage_lab.codegen.plan import plan_kernel, prepare
from mirage_lab.codegen.sass import toolchain_missing
from mirage_lab.ir.dtype import DType
from mirage_lab.ir.graph import BlockGraph, KernelGraph
from mirage_lab.ir.ops import Op
from tests.codegen.graphs import SEARCH_BEST, search_best

pytestmark = pytest.mark.skipif(not nvcc_available() or toolchain_missing() is not None,
                                reason="needs nvcc and cuobjdump (pip install -e '.[analyze]')")

GRAPHS = [*(f"fused_{name}_bs{b}" for name in sorted(FUSED) for b in (1, 8)), *(f"search_{s}" for s in SEARCH_BEST)]
MIN_128_BIT = 90.0  # percent of global reads


def _graph(name: str) -> KernelGraph:
    if name.startswith("fused_"):
        program, batch = name.removeprefix("fused_").rsplit("_bs", 1)
        return FUSED[program](int(batch))
    return search_best(name.removeprefix("search_"))


def _fp16_matmuls(bg: BlockGraph) -> list[int]:
    return [k for k, n in enumerate(bg.nodes) if n.op in (Op.MATMUL, Op.CONCAT_THEN_MATMUL)
            and all(bg.tensors[t].dtype is DType.FLOAT16 for t in n.inputs)]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", GRAPHS)
def test_kernels_meet_the_hardware_targets(name: str, arch: str) -> None:
    graph = prepare(_graph(name))
    table = analyze_kernel(graph, arch)
    assert len(table) == len(graph.block_graphs)
    for _, row in table.iterrows():
        bg = graph.nodes[int(row["node"])].body
        assert bg is not None
        where = f"{name} {row['kernel']} on {arch}"
        assert row["spill B"] == 0, f"{where} spills {row['spill B']} B"
        assert row["LDGSTS"] > 0, f"{where} has no asynchronous global → shared copies"
        share = row["% global reads 128-bit"]
        assert share >= MIN_128_BIT, \
            f"{where}: {share} % of global reads 128-bit (LDGSTS {row['LDGSTS widths']}, LDG {row['LDG widths']})"
        matmuls = _fp16_matmuls(bg)
        lowered = plan_kernel(bg, CodegenOptions()).mma
        assert all(k in lowered for k in matmuls), f"{where}: fp16 matmuls {sorted(set(matmuls) - set(lowered))} " \
                                                   "not on tensor cores"
        assert (row["HMMA"] > 0) == bool(matmuls), f"{where}: {row['HMMA']} HMMA for {len(matmuls)} fp16 matmuls"


def test_the_targets_can_fail() -> None:
    """The same checks on the plain loops (no cp.async, CUDA-core matmuls) find what is missing."""
    from mirage_lab.codegen.options import PLAIN

    table = analyze_kernel(FUSED["gated_mlp"](1), "sm_90", options=PLAIN)
    (row,) = (r for _, r in table.iterrows())
    assert row["LDGSTS"] == 0 and row["HMMA"] == 0
