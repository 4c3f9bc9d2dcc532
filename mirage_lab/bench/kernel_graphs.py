"""The μGraphs the kernel checks look at: every hand-fused benchmark graph (``bench.fused``) at batch 1 and 8, and
every μGraph a benchmark search saved (``data/search_best``, written by ``benchmarks/search.py --save-best``)."""

from __future__ import annotations

from pathlib import Path

from mirage_lab.bench.fused import FUSED
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.io import load

SEARCH_BEST_DIR = Path(__file__).resolve().parents[2] / "data" / "search_best"


def search_best_files(directory: Path = SEARCH_BEST_DIR) -> list[Path]:
    return sorted(directory.glob("*.json"))


def kernel_graphs(directory: Path = SEARCH_BEST_DIR) -> dict[str, KernelGraph]:
    """Label → graph: ``fused_<program>_bs<batch>`` for the hand-fused ones, ``search_<stem>`` for the saved bests
    (files holding one μGraph)."""
    out = {f"fused_{name}_bs{b}": make(b) for name, make in sorted(FUSED.items()) for b in (1, 8)}
    for path in search_best_files(directory):
        graph = load(path)
        if isinstance(graph, KernelGraph):
            out[f"search_{path.stem}"] = graph
    return out
