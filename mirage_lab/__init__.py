"""mirage_lab — a Python workbench for the Mirage multi-level tensor-program superoptimizer.

    import mirage_lab as ml
    g = ml.new_kernel_graph()
    X = g.new_input(dims=(16, 4096), dtype=ml.float16)
    ...
    ml.interpret(g, [x])
"""

from mirage_lab import absexpr, bench, search
from mirage_lab.codegen import compile, generate_cuda
from mirage_lab.errors import MirageError
from mirage_lab.ir.builder import new_kernel_graph, new_threadblock_graph
from mirage_lab.ir.checkpoint import load_reference_checkpoint
from mirage_lab.ir.dtype import DType, bfloat16, float16, float32, float64
from mirage_lab.ir.graph import BlockGraph, KernelGraph
from mirage_lab.ir.io import load, save
from mirage_lab.search import superoptimize
from mirage_lab.semantics.interpret import interpret
from mirage_lab.verify import verify

__version__ = "0.1.0"

__all__ = [
    "BlockGraph",
    "DType",
    "KernelGraph",
    "MirageError",
    "absexpr",
    "bench",
    "bfloat16",
    "compile",
    "float16",
    "float32",
    "float64",
    "generate_cuda",
    "interpret",
    "load",
    "load_reference_checkpoint",
    "new_kernel_graph",
    "new_threadblock_graph",
    "save",
    "search",
    "superoptimize",
    "verify",
]
