"""The μGraphs whose generated CUDA is kept as snapshots: FUSED at batch 1 and 8, every unfused benchmark program at
batch 1 (each op lowered to its own kernel), three reference graphs, and the best μGraph each benchmark search found
(``data/search_best``, written by ``benchmarks/search.py --save-best``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import mirage_lab as ml
from mirage_lab.bench.fused import FUSED
from mirage_lab.bench.kernel_graphs import SEARCH_BEST_DIR
from mirage_lab.bench.programs import PROGRAMS
from mirage_lab.ir.graph import KernelGraph

SNAPSHOT_DIR = Path(__file__).parent / "snapshots"
REFERENCE_GRAPHS = ("single_gated_mlp", "single_lora", "single_mqa_bs1")
SEARCH_BEST = tuple(sorted(p.stem for p in SEARCH_BEST_DIR.glob("*.json")))


def search_best(stem: str) -> KernelGraph:
    graph = ml.load(SEARCH_BEST_DIR / f"{stem}.json")
    assert isinstance(graph, KernelGraph), f"{stem}.json should hold one μGraph"
    return graph


def snapshot_graphs(reference_dir: Path | None) -> dict[str, Callable[[], KernelGraph]]:
    """Snapshot name → graph constructor; the reference graphs only when ``reference_dir`` is given."""
    out: dict[str, Callable[[], KernelGraph]] = {}
    for name, make in FUSED.items():
        for b in (1, 8):
            out[f"fused_{name}_bs{b}"] = lambda make=make, b=b: make(b)
    for name, make in PROGRAMS.items():
        out[f"unfused_{name}_bs1"] = lambda make=make: make(1)
    for stem in SEARCH_BEST:
        out[f"search_{stem}"] = lambda stem=stem: search_best(stem)
    if reference_dir is not None:
        for name in REFERENCE_GRAPHS:
            out[f"ref_{name}"] = lambda name=name: ml.load_reference_checkpoint(reference_dir / f"{name}.json")[0]
    return out
