"""Registers, spill and blocks per SM of the generated kernels, from ptxas (``nvcc -Xptxas -v``; no GPU needed).

For the hand-fused μGraphs (``mirage_lab.bench.fused``) at batch 1 and 8 and the best μGraph each benchmark
search found (``data/search_best``), compiles the generated CUDA for ``--arch`` with every codegen variant of
``--variants`` (``default``, ``PLAIN`` and one option off at a time) and prints, per kernel: grid blocks,
planned shared memory, the ``__launch_bounds__`` asked for, registers per thread and spill bytes as ptxas
reports them, and the blocks per SM that registers and shared memory then allow (``optimize.occupancy``
arithmetic on the H200 preset) with the waves the grid takes on its 132 SMs.

    .venv/bin/python benchmarks/registers.py [--arch sm_90] [--variants default plain] [--only 'search rmsnorm']
                                             [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

import mirage_lab as ml
from mirage_lab.bench import fused
from mirage_lab.codegen import PLAIN, CodegenOptions, plan_cuda
from mirage_lab.codegen.compile import nvcc_available, nvcc_path, nvcc_ptx
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.optimize.cost import HARDWARE
from mirage_lab.optimize.occupancy import BlockResources, occupancy

ROOT = Path(__file__).resolve().parents[1]
SEARCH_BEST = ROOT / "data" / "search_best"
VARIANTS: dict[str, CodegenOptions] = {
    "default": CodegenOptions(), "plain": PLAIN,
    **{f"no {f.replace('_', ' ')}": replace(CodegenOptions(), **{f: False})
       for f in CodegenOptions.__dataclass_fields__},
}


def graphs() -> dict[str, KernelGraph]:
    out = {f"fused {name} bs{b}": make(b) for name, make in fused.FUSED.items() for b in (1, 8)}
    for path in sorted(SEARCH_BEST.glob("*.json")):
        g = ml.load(path)
        if isinstance(g, KernelGraph):
            out[f"search {path.stem}"] = g
    return out


def rows(arch: str, variants: list[str], only: str = "") -> list[dict[str, Any]]:
    hw = HARDWARE["H200"]
    out = []
    for label, g in graphs().items():
        if only not in label:
            continue
        for variant in variants:
            options = VARIANTS[variant]
            source = ml.generate_cuda(g, options)
            resources = nvcc_ptx(source, arch, resources=True).resources
            for launch in plan_cuda(g, options).launches:
                res = resources[launch.name]
                bounds = re.search(rf"__launch_bounds__\(([\d, ]+)\) {launch.name}\(", source)
                occ = occupancy(BlockResources(launch.threads, res.registers, launch.smem_bytes, "ptxas"), hw)
                blocks = math.prod(launch.grid)
                out.append({"graph": label, "variant": variant, "kernel": launch.name, "blocks": blocks,
                            "smem B": launch.smem_bytes, "launch_bounds": bounds.group(1) if bounds else "",
                            "registers": res.registers, "spill B": res.spill_bytes,
                            "blocks/SM": occ.blocks_per_sm, "limiter": occ.limiter,
                            "waves": round(blocks / (occ.blocks_per_sm * hw.sms), 2) if occ.fits else None})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--variants", nargs="*", default=["default", "plain"], choices=list(VARIANTS))
    ap.add_argument("--only", default="", help="the graphs whose label contains this (e.g. 'search rmsnorm')")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args(argv)
    if not nvcc_available():
        print("skipped: nvcc is not installed (the CUDA toolkit, or the nvidia-cuda-nvcc wheel)")
        return 0
    table = rows(args.arch, args.variants, args.only)
    print(f"ptxas for {args.arch}; blocks/SM and waves on the H200 preset ({HARDWARE['H200'].sms} SMs)\n")
    print(pd.DataFrame(table).to_string(index=False))
    if args.json:
        version = subprocess.run([nvcc_path() or "nvcc", "--version"], capture_output=True, text=True).stdout
        nvcc = version.strip().splitlines()[-1] if version.strip() else "unknown"
        Path(args.json).write_text(json.dumps({"arch": args.arch, "nvcc": nvcc, "rows": table}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
