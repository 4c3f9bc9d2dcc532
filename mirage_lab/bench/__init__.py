"""The paper's benchmark programs (``ml.bench.programs``) and hand-written fused μGraphs."""

from mirage_lab.bench import fused, programs

__all__ = ["fused", "programs"]
