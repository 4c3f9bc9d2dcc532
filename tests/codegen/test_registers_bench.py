"""benchmarks/registers.py: ptxas's registers for the searched RMSNorm kernel, which must fit one wave."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mirage_lab.codegen.compile import nvcc_available
from tests.conftest import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "registers.py"


@pytest.mark.skipif(not nvcc_available(), reason="nvcc not installed")
def test_searched_rmsnorm_kernel_fits_in_one_wave(tmp_path: Path) -> None:
    """The search's RMSNorm kernel (256 blocks on 132 SMs) takes one wave at 2 blocks per SM: the launch bounds
    ask ptxas for that many, and it fits them without spilling (the first prefetching version of a 512-block
    kernel needed 250 registers: 2 blocks per SM, two waves)."""
    mod = load_script(SCRIPT, "bench_registers")
    out = tmp_path / "registers.json"
    assert mod.main(["--only", "search rmsnorm_bs1", "--variants", "default", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["launch_bounds"] == "128, 2" and row["registers"] <= 255
    assert row["blocks/SM"] >= 2 and row["waves"] <= 1
