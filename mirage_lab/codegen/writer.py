"""The writer of one kernel: its plan, its text (lines, blocks, loops, barriers) and typed access to its tiles.

Every emitter (``codegen.emit.EMIT[op](writer, k)``) writes node k's code through a ``KernelWriter``;
``codegen.kernel`` assembles the kernel around them. Storage is the tensors' dtype (fp16 as ``__half``);
arithmetic is fp32. Every op is an element loop (``idx`` strided by the thread count) computing ``float v``;
ops fused into a producer's epilogue (SPEC §4) are applied to ``v`` in registers before the store.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

from mirage_lab.codegen.expressions import UNARY_EXPR, coords
from mirage_lab.codegen.options import CodegenOptions
from mirage_lab.codegen.plan import loader_strides, plan_kernel
from mirage_lab.errors import UnsupportedOpError
from mirage_lab.ir.dtype import DType
from mirage_lab.ir.graph import BlockGraph
from mirage_lab.ir.ops import Kind, Op
from mirage_lab.ir.tensor import Dims

#: storage type, load conversion, store conversion
CTYPES: dict[DType, tuple[str, str, str]] = {
    DType.FLOAT16: ("__half", "__half2float({})", "__float2half({})"),
    DType.BFLOAT16: ("__nv_bfloat16", "__bfloat162float({})", "__float2bfloat16({})"),
    DType.FLOAT32: ("float", "{}", "{}"),
}


class KernelWriter:
    """Writes the kernel of one block graph: ``EMIT[op](writer, k)`` node k's code, ``codegen.kernel`` the rest."""

    def __init__(self, bg: BlockGraph, name: str, options: CodegenOptions | None = None,
                 input_strides: Sequence[Dims | None] = ()) -> None:
        """``input_strides``: per customized input (loader), its DTensor's declared strides, None for row-major."""
        options = options or CodegenOptions()
        self.bg, self.name, self.split_sums = bg, name, options.split_sums
        self.loader_param = {k: f"in{j}" for j, k in enumerate(n for n, x in enumerate(bg.nodes) if x.op is Op.INPUT)}
        self.saver_param = {k: f"out{j}" for j, k in enumerate(n for n, x in enumerate(bg.nodes) if x.op is Op.OUTPUT)}
        #: loader → its DTensor's declared strides, for the loaders of inputs that are not row-major
        self.strides = loader_strides(bg, input_strides)
        kp = plan_kernel(bg, options, self.strides)
        self.schedule, self.mma, self.layouts, self.plan = kp.schedule, kp.mma, kp.layouts, kp.smem
        self.pipeline, self.barriers, self.held = kp.pipeline, kp.barriers, kp.held
        self.threads = math.prod(bg.block)
        self.lines: list[str] = []
        self.depth = 1
        for t in bg.tensors:
            ctype(t.dtype)  # fail early on an unsupported dtype

    # ----- text
    def line(self, s: str) -> None:
        self.lines.append("  " * self.depth + s)

    @contextmanager
    def block(self, head: str) -> Iterator[None]:
        self.line(f"{head} {{" if head else "{")
        self.depth += 1
        yield
        self.depth -= 1
        self.line("}")

    def for_each(self, n: int, var: str = "idx") -> AbstractContextManager[None]:
        return self.block(f"for (int {var} = threadIdx.x; {var} < {n}; {var} += {self.threads})")

    def barrier(self, why: str) -> None:
        self.line(f"__syncthreads();  // {why}")

    # ----- tensors
    def dims(self, t: int) -> Dims:
        return self.bg.tensors[t].dims

    def offset(self, t: int, idx: str) -> str:
        """Where element ``idx`` (the row-major flat index) of STensor t sits in its tile (rows may be padded)."""
        return self.layouts[t].index(idx)

    def pitch(self, t: int) -> int:
        """Elements from one row of STensor t to the next."""
        return self.layouts[t].pitch

    def ld(self, t: int, idx: str) -> str:
        """fp32 value of element ``idx`` (row-major flat index) of STensor t."""
        return self.ld_at(t, self.offset(t, idx))

    def ld_at(self, t: int, off: str) -> str:
        """fp32 value at offset ``off`` of STensor t's tile (a physical offset: ``row * pitch + column``)."""
        return CTYPES[self.bg.tensors[t].dtype][1].format(f"s{t}[{off}]")

    def st(self, t: int, idx: str, v: str) -> None:
        self.line(f"s{t}[{self.offset(t, idx)}] = {CTYPES[self.bg.tensors[t].dtype][2].format(v)};")

    def elementwise(self, k: int, body: Callable[[list[str]], list[str]]) -> None:
        """Loop over node k's output; ``body(coords)`` defines ``float v``; then its epilogue and the store."""
        node = self.bg.nodes[k]
        out = node.outputs[0]
        with self.for_each(self.bg.tensors[out].numel):
            for s in body(coords(self.dims(out), "idx")):
                self.line(s)
            self.epilogue(k)

    def epilogue_pair(self, k: int) -> None:
        """Node k's fused chain applied to ``v0`` and ``v1`` (output elements ``pair`` and ``pair + 1``, in one row),
        stored as one 32-bit ``__half2`` where the chain ends in an fp16 tile; element by element otherwise."""
        chain = [self.bg.nodes[j] for j in self.schedule.chain(k)]
        out = chain[-1].outputs[0] if chain else self.bg.nodes[k].outputs[0]
        if any(n.kind is Kind.ACCUM for n in chain) or self.bg.tensors[out].dtype is not DType.FLOAT16:
            for v, at in (("v0", "pair"), ("v1", "pair + 1")):
                with self.block(""):
                    self.line(f"const int idx = {at};")
                    self.line(f"float v = {v};")
                    self.epilogue(k)
            return
        for fused in chain:
            for v in ("v0", "v1"):
                self.line(f"{v} = {UNARY_EXPR[fused.op](v, fused)};  // fused {fused.op.value}")
        self.line(f"*reinterpret_cast<__half2*>(&s{out}[{self.offset(out, 'pair')}]) = __floats2half2_rn(v0, v1);")

    def epilogue(self, k: int) -> None:
        """Node k's fused chain applied to ``v`` (its output element ``idx``), then the store."""
        out = self.bg.nodes[k].outputs[0]
        for j in self.schedule.chain(k):
            fused = self.bg.nodes[j]
            if fused.kind is Kind.ACCUM:  # SPEC §4: a NO_RED accumulator at the end of the chain
                self.line(f"acc{j}[idx] += v;  // {fused.op.value}")
                return
            self.line(f"v = {UNARY_EXPR[fused.op]('v', fused)};  // fused {fused.op.value}")
            out = fused.outputs[0]
        self.st(out, "idx", "v")


def ctype(dtype: DType) -> str:
    if dtype not in CTYPES:
        raise UnsupportedOpError(f"dtype {dtype} has no CUDA storage type here; use fp16, bf16 or fp32")
    return CTYPES[dtype][0]
