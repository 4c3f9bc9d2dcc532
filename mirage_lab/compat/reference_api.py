"""The module-level names of Mirage's Python package (``mirage``), as mirage-lab provides them.

Devices, code generation, dtypes and the parts out of scope (the persistent-kernel runtime, nvshmem,
multi-GPU), which raise an error naming the alternative when used.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mirage_lab.codegen import generate_cuda, generate_triton, plan_cuda
from mirage_lab.codegen.arch import arch_of_cc
from mirage_lab.compat.arrays import TORCH_DTYPES
from mirage_lab.compat.notices import notice, unsupported
from mirage_lab.errors import InputError, UnsupportedOpError
from mirage_lab.ir.builder import as_graph
from mirage_lab.ir.dtype import DType
from mirage_lab.ir.ops import Op
from mirage_lab.ir.smem import capacity
from mirage_lab.ir.tensor import contiguous_strides
from mirage_lab.semantics.backend import cupy_available

__all__ = [
    "MPK",
    "MPK_ALTERNATIVE",
    "InputNotFoundError",
    "MPKMetadata",
    "MirageModelConfig",
    "PersistentKernel",
    "bypass_compile_errors",
    "compile_notices",
    "convert_dtype_to_torch_type",
    "convert_torch_type_to_dtype",
    "generate_cuda_program",
    "generate_triton_program",
    "get_shared_memory_capacity",
    "global_config",
    "graph_dataset",
    "out_of_scope",
    "set_gpu_device_id",
]


class GlobalConfig:
    """The reference's ``mi.global_config``: the device id, verbosity, and whether compile errors are skipped."""

    def __init__(self) -> None:
        self.verbose = False
        self.gpu_device_id = 0
        self.bypass_compile_errors = False

    def __repr__(self) -> str:
        return (f"GlobalConfig(gpu_device_id={self.gpu_device_id}, verbose={self.verbose}, "
                f"bypass_compile_errors={self.bypass_compile_errors})")


global_config = GlobalConfig()


class InputNotFoundError(Exception):
    """The reference's error for missing input tensors (kept for scripts that catch it)."""


def set_gpu_device_id(device_id: int) -> None:
    """Use CUDA device ``device_id`` for what runs next; without a device, a notice and nothing else."""
    if isinstance(device_id, bool) or not isinstance(device_id, int) or device_id < 0:
        raise InputError(f"set_gpu_device_id: expected a device number ≥ 0, got {device_id!r}")
    global_config.gpu_device_id = device_id
    if not cupy_available():
        notice(f"set_gpu_device_id({device_id}): no CUDA device here; kernels run on the CPU interpreter")
        return
    import cupy

    cupy.cuda.Device(device_id).use()


def bypass_compile_errors(value: bool = True) -> None:
    """Recorded for scripts that set it; mirage-lab never hides a compile error (it names the kernel)."""
    global_config.bypass_compile_errors = bool(value)
    if value:
        notice("bypass_compile_errors: mirage-lab reports every compile error with the kernel that caused it; the "
               "setting is recorded and changes nothing")


def get_shared_memory_capacity(target_cc: int) -> int:
    """Bytes of shared memory a block may use on compute capability ``target_cc`` (80 → sm_80, 90 → sm_90)."""
    return capacity(arch_of_cc(target_cc))


def _strides_match(graph: Any, input_strides: Sequence[Sequence[int]] | None) -> None:
    if input_strides is None:
        return
    g = as_graph(graph)
    declared = [tuple(n.attr("strides")) for n in g.nodes if n.op is Op.INPUT]
    if len(input_strides) != len(declared):
        raise InputError(f"generate_cuda_program: {len(input_strides)} input_strides for {len(declared)} inputs")
    for i, (given, want) in enumerate(zip(input_strides, declared, strict=True)):
        if tuple(given) != want:
            raise InputError(f"generate_cuda_program: input {i} has strides {tuple(given)} but the graph declares "
                             f"{want}; declare them in new_input(dims, strides=...)")


def compile_notices(*, target_cc: int | None = None, num_warp_groups: int = -1, pipeline_stages: int = -1,
                    profiling: bool = False, enable_online_softmax: bool = False) -> None:
    """A notice for each code-generation setting of the reference that mirage-lab does not act on."""
    if target_cc is not None:
        arch_of_cc(target_cc)  # refused as --ptx refuses a malformed architecture
        notice(f"target_cc={target_cc}: kernels are compiled for the device they run on")
    if num_warp_groups != -1 or pipeline_stages != -1:
        notice("num_warp_groups and pipeline_stages (Hopper warp specialisation) are not generated; the kernels "
               "use mirage-lab's schedule on every target")
    if profiling:
        notice("profiling=True: no in-kernel profiler; time kernels with ml.bench or benchmarks/kernels.py")
    if enable_online_softmax:
        notice("enable_online_softmax: μGraphs are generated as written; write online softmax with "
               "forloop_accum_max and forloop_accum_rescale")


def generate_cuda_program(input_graph: Any, *, target_cc: int = 80,
                          input_strides: Sequence[Sequence[int]] | None = None, num_warp_groups: int = -1,
                          pipeline_stages: int = -1, profiling: bool = False,
                          enable_online_softmax: bool = False) -> dict[str, Any]:
    """The CUDA program of ``input_graph``, as the reference's dict: ``code``, ``buf_size``, ``max_smem_size``,
    ``profiler_buf_size`` and ``output_directives`` (shape, strides and size of each output)."""
    arch_of_cc(target_cc)
    _strides_match(input_graph, input_strides)
    compile_notices(num_warp_groups=num_warp_groups, pipeline_stages=pipeline_stages, profiling=profiling,
                    enable_online_softmax=enable_online_softmax)
    g = as_graph(input_graph)
    program = plan_cuda(g)
    inner = {t for n in g.compute_nodes for t in n.outputs} - set(g.outputs)
    return {
        "code": generate_cuda(g),
        "buf_size": sum(g.tensors[t].nbytes for t in inner),
        "max_smem_size": max((launch.smem_bytes for launch in program.launches), default=0),
        "profiler_buf_size": 0,
        "output_directives": [{"alloc_size": g.tensors[t].numel, "shape": list(g.tensors[t].dims),
                               "strides": list(contiguous_strides(g.tensors[t].dims))} for t in g.outputs],
        "target_cc": int(target_cc),
    }


def generate_triton_program(input_graph: Any, *, target_cc: int = 80) -> dict[str, Any]:
    """The Triton program of ``input_graph``, as the reference's dict: ``code`` (a module whose ``run(*inputs)``
    takes torch tensors) and ``output_shapes``; one source serves every target (``target_cc`` is recorded)."""
    arch_of_cc(target_cc)
    g = as_graph(input_graph)
    return {"code": generate_triton(g), "output_shapes": [list(t.dims) for t in g.output_types],
            "target_cc": int(target_cc)}


def convert_dtype_to_torch_type(type: Any) -> Any:
    """The torch dtype of a graph dtype (``mi.float16`` → ``torch.float16``)."""
    import torch

    return getattr(torch, TORCH_DTYPES[DType.parse(type)])


def convert_torch_type_to_dtype(type: Any) -> DType:
    """The graph dtype of a torch dtype (``torch.bfloat16`` → ``mi.bfloat16``)."""
    name = str(type).removeprefix("torch.")
    for dt, tname in TORCH_DTYPES.items():
        if tname == name:
            return dt
    raise UnsupportedOpError(f"no mirage-lab dtype for {type}; use float16, bfloat16, float32 or float64")


class _OutOfScope:
    """A name of the reference's package for a part mirage-lab does not provide: calling it, or using one of its
    attributes, raises. As a class attribute it stands for a method too (it binds no ``self``)."""

    def __init__(self, name: str, instead: str) -> None:
        self.name, self.instead = name, instead

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise unsupported(self.name, self.instead)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):  # (introspection probes private names)
            raise AttributeError(attr)
        raise unsupported(f"{self.name}.{attr}", self.instead)

    def __repr__(self) -> str:
        return f"<{self.name}: not supported by mirage-lab>"


#: what to do instead of the persistent-kernel runtime (every MPK, nvshmem and multi-GPU name says it)
MPK_ALTERNATIVE = ("the persistent-kernel runtime (MPK), nvshmem and multi-GPU execution are out of scope; "
                   "superoptimize a kernel graph per layer with graph.superoptimize() and call the result")


def out_of_scope(name: str, instead: str = MPK_ALTERNATIVE) -> _OutOfScope:
    """A reference name (a function, class or method) that raises, naming ``instead``, when used."""
    return _OutOfScope(name, instead)


PersistentKernel = out_of_scope("PersistentKernel")
MPK = out_of_scope("MPK")
MPKMetadata = out_of_scope("MPKMetadata")
MirageModelConfig = out_of_scope("MirageModelConfig")
spec_decode_class = out_of_scope("spec_decode_class")
graph_dataset = out_of_scope("graph_dataset", "there is no shipped graph dataset; each search is cached in its run "
                            "folder (runs/) and answered from there when asked again")
