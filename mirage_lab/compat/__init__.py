"""Mirage's Python API on mirage-lab: scripts written for ``import mirage as mi`` run with
``import mirage_lab as mi`` (docs/compat.md lists every name: same, mapped, or not supported).

    graph = mi.new_kernel_graph()                       # a KNGraph: builder, search, call, save
    tb = mi.new_threadblock_graph((64, 1, 1), (128, 1, 1), 4, 64)
    optimized = graph.superoptimize(config="mlp", griddims=[(64, 1, 1)])
    outputs = optimized(inputs=[x, w])                  # numpy, CuPy or torch; compiled on a GPU
"""

from mirage_lab.compat.graph import KNGraph, TBGraph, cy_from_json, cy_to_json, new_kernel_graph
from mirage_lab.compat.keywords import KEYWORDS
from mirage_lab.compat.notices import CompatNotice, UnsupportedFeatureError
from mirage_lab.compat.reference_api import (
    MPK,
    GlobalConfig,
    InputNotFoundError,
    MirageModelConfig,
    MPKMetadata,
    PersistentKernel,
    bypass_compile_errors,
    convert_dtype_to_torch_type,
    convert_torch_type_to_dtype,
    generate_cuda_program,
    generate_triton_program,
    get_shared_memory_capacity,
    global_config,
    graph_dataset,
    set_gpu_device_id,
    spec_decode_class,
)
from mirage_lab.compat.running import GraphRunner
from mirage_lab.ir.dtype import REFERENCE_ONLY, DType
from mirage_lab.ir.tensor import DTensor, STensor

#: the reference's dtype class (``mi.dtype("fp16")`` is ``mi.float16``)
dtype = DType


class ReferenceDType:
    """A dtype name the reference exports (``mi.int32``, ``mi.float8``) that mirage-lab does not compute in:
    declaring a tensor with it raises an error naming the dtypes to use."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"mi.{self.name} (not supported)"


int8 = DType.INT8
uint16 = DType.UINT16
int16, int32, int64 = ReferenceDType("int16"), ReferenceDType("int32"), ReferenceDType("int64")
uint8, uint32, uint64 = ReferenceDType("uint8"), ReferenceDType("uint32"), ReferenceDType("uint64")
float8, float8_e4m3 = ReferenceDType("float8"), ReferenceDType("float8_e4m3")
assert {d.name for d in (int16, int32, int64, uint8, uint32, uint64, float8, float8_e4m3)} <= set(REFERENCE_ONLY)

__all__ = [
    "KEYWORDS",
    "MPK",
    "CompatNotice",
    "DTensor",
    "GlobalConfig",
    "GraphRunner",
    "InputNotFoundError",
    "KNGraph",
    "MPKMetadata",
    "MirageModelConfig",
    "PersistentKernel",
    "ReferenceDType",
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
    "generate_cuda_program", "generate_triton_program",
    "get_shared_memory_capacity",
    "global_config",
    "graph_dataset",
    "int8",
    "int16",
    "int32",
    "int64",
    "new_kernel_graph",
    "set_gpu_device_id",
    "spec_decode_class",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]
