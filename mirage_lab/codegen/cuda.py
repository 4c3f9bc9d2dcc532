"""μGraph → standalone CUDA C (SPEC §8.2), one ``extern "C" __global__`` kernel per customized op: the entry point.

``generate_cuda`` gives the source and ``plan_cuda`` what runs (``CudaProgram``). The generator, by concept:

* ``options``: ``CodegenOptions`` (prefetch, split sums, tensor cores, padding; ``PLAIN`` turns all off);
* ``plan``: each kernel's plan (stages, tensor-core matmuls, tile layouts and padding, shared memory) and the
  kernel-graph plan (lowered kernel ops, or library calls);
* ``source`` and ``kernel``: the whole source, and one kernel around its emitters (hoisted loads, the for-loop,
  the epilogue);
* ``writer``: ``KernelWriter``, the text and the typed tile access every emitter writes through;
* ``expressions``: C literals and indices, and each elementwise op's expression from the op table;
* ``emit``: the ``EMIT`` table, each block op's emitter by its lowering family: ``tiles`` (loaders, savers,
  prefetch, strided inputs; copy widths in ``vectors``), ``elementwise``, ``reduction``, ``matmul`` (tensor
  cores), ``accumulators`` (from each op's ``AccumRule``), with ``split_sum`` (sums over idle threads).

The names that code outside ``codegen`` imports from this module (the entry points, the plans and the op
tables) are re-exported here from the modules that define them.
"""

from __future__ import annotations

from mirage_lab.codegen.accumulators import FINAL_EXPR
from mirage_lab.codegen.emit import EMIT, UNSUPPORTED
from mirage_lab.codegen.expressions import BINARY_EXPR, UNARY_EXPR
from mirage_lab.codegen.options import ENTRY_KEYWORDS, PLAIN, CodegenOptions, codegen_options
from mirage_lab.codegen.plan import (
    KERNEL_PREFIX,
    PADDING_LIMIT,
    CudaProgram,
    KernelLaunch,
    KernelPlan,
    LibraryCall,
    Step,
    input_strides,
    plan_cuda,
    plan_kernel,
    prepare,
)
from mirage_lab.codegen.source import HELPERS, generate_cuda
from mirage_lab.codegen.writer import KernelWriter

__all__ = [
    "BINARY_EXPR", "EMIT", "ENTRY_KEYWORDS", "FINAL_EXPR", "HELPERS", "KERNEL_PREFIX", "PADDING_LIMIT", "PLAIN",
    "UNARY_EXPR", "UNSUPPORTED", "CodegenOptions", "CudaProgram", "KernelLaunch",
    "KernelPlan", "KernelWriter", "LibraryCall", "Step", "codegen_options", "generate_cuda", "input_strides",
    "plan_cuda", "plan_kernel", "prepare",
]
