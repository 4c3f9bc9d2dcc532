"""The paper's benchmark programs (``ml.bench.programs``) and hand-written fused μGraphs."""

from mirage_lab.bench import fused, programs, tolerance
from mirage_lab.bench.harness import CHECKPOINTS, find_reference_dir

__all__ = ["CHECKPOINTS", "find_reference_dir", "fused", "programs", "tolerance"]
