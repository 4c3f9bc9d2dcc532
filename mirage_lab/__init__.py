"""mirage_lab — a Python workbench for the Mirage multi-level tensor-program superoptimizer.

    import mirage_lab as ml
    g = ml.new_kernel_graph()
    X = g.new_input(dims=(16, 4096), dtype=ml.float16)
    ...
    ml.interpret(g, [x])

Mirage's own Python API works unchanged (``import mirage_lab as mi``): ``g.superoptimize(config="mlp")``
returns the best μGraph, callable with ``inputs=[...]`` (``mirage_lab.compat``, docs/compat.md).
"""

from typing import Any

from mirage_lab import absexpr, bench, puzzles, search
from mirage_lab.codegen import compile, generate_cuda, generate_triton
from mirage_lab.codegen.analysis import analyze_kernel
from mirage_lab.compat import (
    MPK,
    CompatNotice,
    DTensor,
    InputNotFoundError,
    KNGraph,
    MirageModelConfig,
    MPKMetadata,
    PersistentKernel,
    STensor,
    TBGraph,
    UnsupportedFeatureError,
    bypass_compile_errors,
    convert_dtype_to_torch_type,
    convert_torch_type_to_dtype,
    cy_from_json,
    cy_to_json,
    dtype,
    float8,
    float8_e4m3,
    generate_cuda_program,
    generate_triton_program,
    get_shared_memory_capacity,
    global_config,
    graph_dataset,
    int8,
    int16,
    int32,
    int64,
    new_kernel_graph,
    set_gpu_device_id,
    spec_decode_class,
    uint8,
    uint16,
    uint32,
    uint64,
)
from mirage_lab.errors import MirageError
from mirage_lab.ir.builder import new_threadblock_graph
from mirage_lab.ir.checkpoint import load_reference_checkpoint
from mirage_lab.ir.dtype import DType, bfloat16, float16, float32, float64
from mirage_lab.ir.graph import BlockGraph, KernelGraph
from mirage_lab.ir.io import load, save
from mirage_lab.ir.nxgraph import to_networkx
from mirage_lab.search import superoptimize
from mirage_lab.semantics.interpret import interpret
from mirage_lab.verify import verify
from mirage_lab.version import __version__ as __version__


def to_graphviz(graph: Any, level: str = "all", title: str = "") -> Any:
    """The μGraph as a ``graphviz.Digraph``, drawn as the viewer draws it (``mirage_lab.widgets.dot_graph``).

    ``level="all"`` nests each custom kernel's block graph, ``"kernel"`` draws the kernel graph alone; it renders
    inline in Jupyter and restyles as any Digraph (``d.graph_attr["rankdir"] = "LR"``). Needs the lab extra.
    """
    try:
        from mirage_lab.widgets.dot_graph import to_graphviz as draw
    except ImportError as e:  # the notebook layer's packages (graphviz, anywidget, ...) are the lab extra's
        raise MirageError(f"ml.to_graphviz needs the lab extra ({e}): pip install 'mirage-lab[lab]'") from None
    return draw(graph, level, title)


__all__ = [
    "BlockGraph",
    "DType",
    "KernelGraph",
    "MirageError",
    "absexpr",
    "analyze_kernel",
    "bench",
    "bfloat16",
    "compile",
    "float16",
    "float32",
    "float64",
    "generate_cuda",
    "generate_triton",
    "interpret",
    "load",
    "load_reference_checkpoint",
    "new_kernel_graph",
    "new_threadblock_graph",
    "puzzles",
    "save",
    "search",
    "superoptimize",
    "to_graphviz",
    "to_networkx",
    "verify",
]
# the reference's names, for scripts that `import mirage_lab as mi` (docs/compat.md)
__all__ += [
    "MPK",
    "CompatNotice",
    "DTensor",
    "InputNotFoundError",
    "KNGraph",
    "MPKMetadata",
    "MirageModelConfig",
    "PersistentKernel",
    "STensor",
    "TBGraph",
    "UnsupportedFeatureError",
    "bypass_compile_errors",
    "convert_dtype_to_torch_type",
    "convert_torch_type_to_dtype",
    "cy_from_json",
    "cy_to_json",
    "dtype",
    "float8",
    "float8_e4m3",
    "generate_cuda_program",
    "generate_triton_program",
    "get_shared_memory_capacity",
    "global_config",
    "graph_dataset",
    "int8",
    "int16",
    "int32",
    "int64",
    "set_gpu_device_id",
    "spec_decode_class",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]
