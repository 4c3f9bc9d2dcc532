"""benchmarks/registers.py: ptxas's registers for the searched RMSNorm kernel, which must fit one wave."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from mirage_lab.codegen.compile import nvcc_available

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "registers.py"


@pytest.mark.skipif(not nvcc_available(), reason="nvcc not installed")
def test_searched_rmsnorm_kernel_fits_four_blocks_per_sm(tmp_path: Path) -> None:
    """512 blocks on 132 SMs take one wave at 4 blocks per SM: the launch bounds ask ptxas for at most 128
    registers, where the first prefetching version needed 250 (2 blocks per SM, two waves)."""
    spec = importlib.util.spec_from_file_location("bench_registers", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "registers.json"
    assert mod.main(["--only", "search rmsnorm_bs1", "--variants", "default", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["launch_bounds"] == "128, 4" and row["registers"] <= 128
    assert row["blocks/SM"] == 4 and row["waves"] < 1
