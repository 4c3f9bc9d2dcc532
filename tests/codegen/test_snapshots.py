"""Generated CUDA for the benchmark μGraphs, kept as snapshot files so that changes show up in review.

Regenerate after an intended change with

    MIRAGE_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/codegen/test_snapshots.py

and review the diff of ``tests/codegen/snapshots/*.cu``. Every snapshot must also compile with
``nvcc --ptx`` for sm_80 and sm_90 (skipped without nvcc); all snapshots go into one source per
architecture, kernels renamed apart, so nvcc runs only twice (about 4 s each here).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import mirage_lab as ml
from mirage_lab.codegen.compile import ARCHS, nvcc_available, nvcc_ptx
from mirage_lab.codegen.cuda import KERNEL_PREFIX
from tests.codegen.graphs import FUSED, PROGRAMS, REFERENCE_GRAPHS, SEARCH_BEST, SNAPSHOT_DIR, snapshot_graphs

UPDATE = os.environ.get("MIRAGE_UPDATE_SNAPSHOTS") == "1"
FUSED_NAMES = [f"fused_{n}_bs{b}" for n in FUSED for b in (1, 8)]
REF_NAMES = [f"ref_{n}" for n in REFERENCE_GRAPHS]
SEARCH_NAMES = [f"search_{n}" for n in SEARCH_BEST]
UNFUSED_NAMES = [f"unfused_{n}_bs1" for n in PROGRAMS]


def _source(name: str, reference_dir: Path | None) -> str:
    return ml.generate_cuda(snapshot_graphs(reference_dir)[name]())


def _check(name: str, source: str) -> None:
    path = SNAPSHOT_DIR / f"{name}.cu"
    if UPDATE:
        path.write_text(source)
    assert path.exists(), f"no snapshot {path.name}; run with MIRAGE_UPDATE_SNAPSHOTS=1 to create it"
    assert source == path.read_text(), f"{path.name} changed; if intended, regenerate (see the module docstring)"


@pytest.mark.parametrize("name", FUSED_NAMES)
def test_fused_snapshot(name: str) -> None:
    _check(name, _source(name, None))


@pytest.mark.parametrize("name", UNFUSED_NAMES)
def test_unfused_snapshot(name: str) -> None:
    """The unfused programs: one lowered kernel per op (codegen/lower.py), the CUDA baseline of each benchmark."""
    _check(name, _source(name, None))


@pytest.mark.parametrize("name", REF_NAMES)
def test_reference_snapshot(name: str, reference_dir: Path) -> None:
    _check(name, _source(name, reference_dir))


@pytest.mark.parametrize("name", SEARCH_NAMES)
def test_search_best_snapshot(name: str) -> None:
    """The best μGraph of each recorded benchmark search (a graph the engine discovered, not one we wrote)."""
    _check(name, _source(name, None))


def test_every_benchmark_search_has_a_recorded_best() -> None:
    assert len(SEARCH_NAMES) >= 9, "run benchmarks/search.py --save-best data/search_best"


@pytest.mark.skipif(not nvcc_available(), reason="nvcc not installed")
@pytest.mark.parametrize("arch", ARCHS)
def test_every_snapshot_compiles(arch: str) -> None:
    paths = sorted(SNAPSHOT_DIR.glob("*.cu"))
    assert len(paths) >= len(FUSED_NAMES) + len(SEARCH_NAMES) + len(UNFUSED_NAMES)
    combined = "".join(p.read_text().replace(KERNEL_PREFIX, f"{p.stem}_k") for p in paths)
    result = nvcc_ptx(combined, arch)
    want = sum(p.read_text().count("__global__") for p in paths)
    assert len(result.kernels) == want
    assert result.seconds < 60


@pytest.mark.skipif(not nvcc_available(), reason="nvcc not installed")
def test_nvcc_error_names_the_kernel() -> None:
    source = ml.generate_cuda(FUSED["lora"](1)).replace("__syncthreads();", "__syncthreads()", 1)
    with pytest.raises(ml.MirageError, match=r"(?s)kernel mirage_k4.*error"):
        nvcc_ptx(source, "sm_80")


@pytest.mark.skipif(not nvcc_available(), reason="nvcc not installed")
def test_ptxas_resources_are_parsed() -> None:
    result = nvcc_ptx(ml.generate_cuda(FUSED["lora"](1)), "sm_90", resources=True)
    assert result.kernels == ["mirage_k4"]
    assert 0 < result.resources["mirage_k4"].registers <= 255
