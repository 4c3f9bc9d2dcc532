"""The CUDA backend's ``EMIT`` table: each block-level op's emitter, by its lowering family in the op table."""

from __future__ import annotations

from collections.abc import Callable

from mirage_lab.codegen.accumulators import emit_accumulate
from mirage_lab.codegen.elementwise import emit_binary, emit_concat, emit_unary
from mirage_lab.codegen.expressions import UNARY_EXPR
from mirage_lab.codegen.matmul import emit_matmul
from mirage_lab.codegen.reduction import emit_reduction, emit_reduction_max, emit_rms_norm
from mirage_lab.codegen.tiles import emit_loader, emit_saver
from mirage_lab.codegen.writer import KernelWriter
from mirage_lab.ir.ops import Level, Op, ops_at

#: the emitter of each lowering family (``ir.ops.LOWERINGS``) but "kernel" (customized ops are whole kernels)
FAMILIES: dict[str, Callable[[KernelWriter, int], None]] = {
    "load": emit_loader, "save": emit_saver, "matmul": emit_matmul, "reduction": emit_reduction,
    "reduction_max": emit_reduction_max, "rms_norm": emit_rms_norm, "concat": emit_concat,
    "accumulate": emit_accumulate,
}
#: each block-level op's emitter, by its lowering family in the op table
EMIT: dict[Op, Callable[[KernelWriter, int], None]] = {
    op: (emit_unary if op in UNARY_EXPR else emit_binary) if op.spec.lowering == "elementwise"
    else FAMILIES[str(op.spec.lowering)] for op in ops_at(Level.BLOCK)
}
#: block-level ops the CUDA backend does not lower, with the reason (every block op is in EMIT or here)
UNSUPPORTED: dict[Op, str] = {}
