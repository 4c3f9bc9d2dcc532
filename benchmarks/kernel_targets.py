"""Issue 36's kernel targets, read from the SASS without a GPU, before and after in one run.

For every hand-fused benchmark μGraph (batch 1 and 8) and every μGraph in data/search_best, compiled for sm_80 and
sm_90 (``codegen.analysis``): spills, asynchronous copies (LDGSTS), the share of global reads (LDG and LDGSTS)
that are 128 bits wide, tensor-core instructions against the kernel's fp16 matmuls, pipeline stages and bytes in
flight per SM. ``--before-tree .before`` (``scripts/prepare_before.sh``) also generates each graph's CUDA with that
older tree, in a subprocess of its own, and analyses it the same way (rows marked "before").

    PYTHONPATH=. .venv/bin/python benchmarks/kernel_targets.py [--before-tree .before] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from mirage_lab.bench.before import check_tree
from mirage_lab.bench.kernel_graphs import SEARCH_BEST_DIR, kernel_graphs
from mirage_lab.codegen.analysis import analyze_kernel, analyze_source
from mirage_lab.codegen.options import CodegenOptions
from mirage_lab.codegen.plan import plan_kernel, prepare
from mirage_lab.ir.dtype import DType
from mirage_lab.ir.graph import BlockGraph, KernelGraph
from mirage_lab.ir.io import write_atomic
from mirage_lab.ir.ops import Op

ARCHS = ("sm_80", "sm_90")
COLUMNS = ["registers", "spill B", "LDGSTS", "% global reads 128-bit", "HMMA", "FFMA", "stages", "in flight B/SM"]
#: what the older tree runs: the CUDA of a graph given as μGraph JSON (a file) or "fused NAME BATCH"
CHILD = ("import json, sys; import mirage_lab as ml; from mirage_lab.bench.fused import FUSED; "
         "kind, *rest = sys.argv[1:]; "
         "g = FUSED[rest[0]](int(rest[1])) if kind == 'fused' else ml.load(rest[0]); "
         "print(ml.generate_cuda(g))")


def older_tree_argv(label: str) -> list[str]:
    """How the older tree makes a labelled graph (``kernel_graphs``): by name and batch, or from its file."""
    if label.startswith("fused_"):
        name, batch = label.removeprefix("fused_").rsplit("_bs", 1)
        return ["fused", name, batch]
    return ["file", str(SEARCH_BEST_DIR / f"{label.removeprefix('search_')}.json")]


def fp16_matmuls(bg: BlockGraph) -> int:
    return sum(n.op in (Op.MATMUL, Op.CONCAT_THEN_MATMUL) and all(bg.tensors[t].dtype is DType.FLOAT16
                                                               for t in n.inputs) for n in bg.nodes)


def after_rows(label: str, graph: KernelGraph, arch: str) -> list[dict[str, Any]]:
    g = prepare(graph)
    rows = []
    for rec in analyze_kernel(g, arch).to_dict("records"):
        bg = g.nodes[int(rec["node"])].body
        assert bg is not None
        rows.append({"graph": label, "arch": arch, "side": "after", "kernel": rec["kernel"],
                     "fp16 matmuls": fp16_matmuls(bg),
                     "on tensor cores": len(plan_kernel(bg, CodegenOptions()).mma), **{c: rec[c] for c in COLUMNS}})
    return rows


def before_rows(tree: Path, label: str, how: list[str], arch: str) -> list[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(tree.resolve())}
    proc = subprocess.run([sys.executable, "-P", "-c", CHILD, *how], capture_output=True, text=True, env=env,
                          cwd=tree, timeout=300, check=False)
    if proc.returncode != 0:
        return [{"graph": label, "arch": arch, "side": "before", "kernel": f"failed: {proc.stderr.strip()[-200:]}"}]
    table = analyze_source(proc.stdout, arch)
    return [{"graph": label, "arch": arch, "side": "before", "kernel": rec["kernel"],
             **{c: rec.get(c) for c in COLUMNS}} for rec in table.to_dict("records")]


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per side: kernels, and how many meet each target (the same kernel's fp16 matmuls on both sides)."""
    matmuls = df[df["side"] == "after"].set_index(["graph", "arch", "kernel"])["fp16 matmuls"]
    out = []
    for side, part in df.groupby("side", sort=False):
        wanted = part.set_index(["graph", "arch", "kernel"]).index.map(matmuls).fillna(0).to_numpy() > 0
        out.append({"side": side, "kernels": len(part), "no spills": int((part["spill B"] == 0).sum()),
                    "async copies": int((part["LDGSTS"] > 0).sum()),
                    "≥ 90 % reads 128-bit": int((part["% global reads 128-bit"] >= 90).sum()),
                    "with fp16 matmuls": int(wanted.sum()),
                    "of those with HMMA": int(((part["HMMA"].to_numpy() > 0) & wanted).sum())})
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before-tree", help="an older tree's export (scripts/prepare_before.sh) to compare with")
    ap.add_argument("--json", help="also write the rows and the summary here")
    args = ap.parse_args(argv)
    tree = check_tree(args.before_tree) if args.before_tree else None
    rows: list[dict[str, Any]] = []
    for label, graph in kernel_graphs().items():
        for arch in ARCHS:
            rows += after_rows(label, graph, arch)
            if tree is not None:
                rows += before_rows(tree, label, older_tree_argv(label), arch)
    df = pd.DataFrame(rows).sort_values(["graph", "arch", "kernel", "side"], kind="stable")
    pd.set_option("display.width", 220)
    pd.set_option("display.max_rows", 1000)
    print(df.to_string(index=False))
    total = summary(df)
    print()
    print(total.to_string(index=False))
    if args.json:
        write_atomic(args.json, json.dumps({"rows": json.loads(df.to_json(orient="records")),
                                            "summary": total.to_dict("records")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
