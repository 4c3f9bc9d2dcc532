"""Invalid constructions and inputs: each raises one specific ``MirageError`` subclass whose message
names the problem (op, dim, size, rule) and, where there is one, the fix.

Table-driven: every case is a function registered with ``@case(id, error class, *needles)``; the single
parametrized test runs it, checks the exact error class, and looks for every needle in the message.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.errors import (
    FormatError,
    GraphError,
    InputError,
    MapError,
    MirageError,
    PathError,
    PhaseError,
    ResourceError,
    ShapeError,
    UnsupportedOpError,
)
from mirage_lab.ir import io

Build = Callable[[Path], Any]
CASES: list[Any] = []


def case(case_id: str, error: type[MirageError], *needles: str) -> Callable[[Build], Build]:
    """Register ``fn(tmp_path)``: it must raise exactly ``error`` with every needle in the message."""

    def register(fn: Build) -> Build:
        CASES.append(pytest.param(fn, error, needles, id=case_id))
        return fn

    return register


# --------------------------------------------------------------------------- helpers


def kernel(*dims: tuple[int, ...], dtype: Any = ml.float16) -> tuple[Any, list[Any]]:
    g = ml.new_kernel_graph()
    return g, [g.new_input(d, dtype=dtype) for d in dims]


def block(grid: tuple[int, int, int] = (1, 1, 1), forloop_range: int = 1, **kw: Any) -> Any:
    return ml.new_threadblock_graph(grid_dim=grid, forloop_range=forloop_range, **kw)


def valid_doc() -> dict[str, Any]:
    """A small valid own-format document: a kernel matmul feeding a customized op with one loader."""
    g, (x, w) = kernel((16, 64), (64, 32))
    y = g.matmul(x, w)
    tb = block((2, 1, 1), 4)
    t = tb.new_input(y, (1, -1, -1), 0)
    tb.new_output(tb.forloop_accum(tb.exp(t)), (1, -1, -1))
    (o,) = g.customized([y], tb)
    g.mark_output(o)
    doc: dict[str, Any] = json.loads(io.dumps(g.freeze()))
    return doc


def kernel_nodes(doc: dict[str, Any]) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = doc["graphs"][0]["nodes"]
    return nodes


def body(doc: dict[str, Any]) -> dict[str, Any]:
    node = next(n for n in kernel_nodes(doc) if n["op"] == "customized")
    b: dict[str, Any] = node["body"]
    return b


def load_text(doc: Any) -> Any:
    return io.loads(json.dumps(doc))


def matmul_program() -> Any:
    g, (x, w) = kernel((16, 64), (64, 32))
    g.mark_output(g.matmul(x, w))
    return g


# --------------------------------------------------------------------------- kernel shape rules


@case("kernel-matmul-inner-dim-mismatch", ShapeError, "matmul(d0, d1)", "inner dims differ", "= 16", "= 32",
      "A's last dim must equal B's second-to-last")
def _(tmp: Path) -> Any:
    g, (a, b) = kernel((8, 16), (32, 8))
    return g.matmul(a, b)


@case("kernel-matmul-rank-1", ShapeError, "matmul", "same rank ≥ 2", "(16,)")
def _(tmp: Path) -> Any:
    g, (a, b) = kernel((16,), (16,))
    return g.matmul(a, b)


@case("kernel-matmul-batch-dim-mismatch", ShapeError, "matmul", "batch dims must be equal",
      "no broadcasting", "(2, 8, 16)", "(3, 16, 8)", "same leading dims")
def _(tmp: Path) -> Any:
    g, (a, b) = kernel((2, 8, 16), (3, 16, 8))
    return g.matmul(a, b)


@case("kernel-add-rank-mismatch", ShapeError, "add(d0, d1)", "same rank", "rank 2", "rank 1", "reshape")
def _(tmp: Path) -> Any:
    g, (a, b) = kernel((8, 16), (16,))
    return g.add(a, b)


@case("kernel-add-mixed-dtypes", ShapeError, "add(d0, d1)", "different dtypes", "f16[8, 8]", "f32[8, 8]",
      "one dtype")
def _(tmp: Path) -> Any:
    g = ml.new_kernel_graph()
    a = g.new_input(dims=(8, 8), dtype=ml.float16)
    b = g.new_input(dims=(8, 8), dtype=ml.float32)
    return g.add(a, b)


@case("kernel-mul-not-broadcastable", ShapeError, "mul(d0, d1)", "dim 1 sizes 16 and 4",
      "neither equal nor 1", "broadcast")
def _(tmp: Path) -> Any:
    g, (a, b) = kernel((8, 16), (8, 4))
    return g.mul(a, b)


@case("kernel-reduction-dim-out-of-range", ShapeError, "reduction(d0)", "dim 2 is out of range",
      "rank-2", "0..1")
def _(tmp: Path) -> Any:
    g, (a,) = kernel((8, 16))
    return g.reduction(a, 2)


@case("kernel-reduction-negative-dim-out-of-range", ShapeError, "reduction(d0)", "dim -3 is out of range",
      "rank-2")
def _(tmp: Path) -> Any:
    g, (a,) = kernel((8, 16))
    return g.reduction(a, -3)


@case("kernel-reduction-group-size-not-dividing", ShapeError, "reduction(d0)", "group size 4",
      "divide dim 1 (size 10)")
def _(tmp: Path) -> Any:
    g, (a,) = kernel((8, 10))
    return g.reduction(a, 1, group_size=4)


@case("kernel-reduction-group-size-zero", ShapeError, "group size 0", "must be ≥ 1")
def _(tmp: Path) -> Any:
    g, (a,) = kernel((8, 10))
    return g.reduction(a, 1, group_size=0)


@case("kernel-rms-norm-shape-not-trailing", ShapeError, "rms_norm(d0)", "normalized_shape (16,)",
      "trailing dims of (8, 16, 32)")
def _(tmp: Path) -> Any:
    g, (a,) = kernel((8, 16, 32))
    return g.rms_norm(a, normalized_shape=(16,))


# --------------------------------------------------------------------------- block shape rules


@case("block-matmul-inner-dim-mismatch", ShapeError, "matmul(s0, s1)", "inner dims differ", "= 64", "= 32")
def _(tmp: Path) -> Any:
    _, (x, w) = kernel((16, 64), (32, 8))
    tb = block()
    return tb.matmul(tb.new_input(x), tb.new_input(w))


@case("block-matmul-leading-dim-not-1", ShapeError, "matmul(s0, s1)", "every leading dim must be 1",
      "(2, 8, 16)", "split the batch dim fully across the grid")
def _(tmp: Path) -> Any:
    _, (x, w) = kernel((2, 8, 16), (2, 16, 8))
    tb = block()
    return tb.matmul(tb.new_input(x), tb.new_input(w))


@case("block-add-not-broadcastable", ShapeError, "add(s0, s1)", "dim 0 sizes 16 and 8")
def _(tmp: Path) -> Any:
    _, (x, y) = kernel((16, 64), (8, 64))
    tb = block()
    return tb.add(tb.new_input(x), tb.new_input(y))


@case("block-reduction-dim-out-of-range", ShapeError, "reduction(s0)", "dim 3 is out of range", "rank-2")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    tb = block()
    return tb.reduction(tb.new_input(x), 3)


@case("block-reduction-to-dimx-not-dividing", ShapeError, "reduction_to_dimx(s0)", "size 96",
      "not a multiple of reduction_dimx = 64", "pick a reduction_dimx")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 96))
    tb = block()
    return tb.reduction_to_dimx(tb.new_input(x), 1)


@case("block-accum-sum-todimx-too-small", ShapeError, "accum_sum_todimx(s0)", "size 32",
      "reduction_dimx = 64")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 32))
    tb = block()
    return tb.forloop_accum(tb.new_input(x), "sum_todimx")


# --------------------------------------------------------------------------- loaders: imap, forloop_dim


@case("imap-not-dividing", MapError, "input_map=(1, -1, -1)", "dim 1 (size 100)", "not divisible",
      "grid axis x = 3", "pick a grid size")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 100))
    return block((3, 1, 1)).new_input(x, (1, -1, -1))


@case("imap-dim-beyond-rank", MapError, "input_map=(2, -1, -1)", "grid axis x maps to dim 2",
      "only 2 dims")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    return block((4, 1, 1)).new_input(x, (2, -1, -1))


@case("imap-two-axes-same-dim", MapError, "grid axes x and y both map to dim 0", "at most one axis")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    return block((2, 2, 1)).new_input(x, (0, 0, -1))


@case("imap-entry-below-phi", MapError, "input_map.x = -2", "≥ -1")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    return block((2, 1, 1)).new_input(x, (-2, -1, -1))


@case("imap-wrong-length", MapError, "input_map", "exactly 3 entries", "(0, -1)")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    return block((2, 1, 1)).new_input(x, (0, -1))


@case("forloop-dim-per-block-size-not-dividing", MapError, "forloop_dim=1", "per-block size 32",
      "forloop_range = 64", "pick a forloop_range")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    return block((2, 1, 1), 64).new_input(x, (1, -1, -1), forloop_dim=1)


@case("forloop-dim-out-of-range", MapError, "forloop_dim=2", "out of range", "(16, 64)", "0..1")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    return block((1, 1, 1), 4).new_input(x, (-1, -1, -1), forloop_dim=2)


@case("forloop-dim-below-phi", MapError, "forloop_dim", "≥ -1", "got -2", "use -1")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    return block((1, 1, 1), 4).new_input(x, (-1, -1, -1), forloop_dim=-2)


@case("loader-after-compute-op", GraphError, "new_input", "before the first compute op")
def _(tmp: Path) -> Any:
    _, (x, y) = kernel((16, 64), (16, 64))
    tb = block()
    tb.exp(tb.new_input(x))
    return tb.new_input(y)


@case("loader-of-a-non-tensor", GraphError, "new_input", "must be a DTensor", "(16, 64)")
def _(tmp: Path) -> Any:
    return block().new_input((16, 64))


# --------------------------------------------------------------------------- savers and phases


@case("omap-leaves-grid-axis-unmapped", MapError, "output_map=(-1, -1, -1)", "grid axis x has 4 blocks",
      "maps to no dim", "overwrite")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    tb = block((4, 1, 1))
    return tb.new_output(tb.forloop_accum(tb.new_input(x, (0, -1, -1))), (-1, -1, -1))


@case("omap-dim-beyond-rank", MapError, "output_map=(5, -1, -1)", "maps to dim 5", "only 2 dims")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    tb = block((4, 1, 1))
    return tb.new_output(tb.forloop_accum(tb.new_input(x, (0, -1, -1))), (5, -1, -1))


@case("saver-of-loop-phase-tensor", PhaseError, "new_output", "s0", "loop-phase",
      "only accumulator results can be saved", "forloop_accum")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    tb = block()
    return tb.new_output(tb.new_input(x))


@case("saver-with-forloop-dim", MapError, "new_output", "forloop_dim=0", "not supported")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    tb = block()
    return tb.new_output(tb.forloop_accum(tb.new_input(x)), forloop_dim=0)


@case("mix-loop-phase-and-post-loop", PhaseError, "add(s1, s0)", "mixes loop-phase and post-loop",
      "forloop_accum")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    tb = block((1, 1, 1), 4)
    t = tb.new_input(x, forloop_dim=1)
    return tb.add(tb.forloop_accum(t), t)


@case("accumulator-of-post-loop-tensor", PhaseError, "accum_sum(s1)", "accumulator needs loop-phase",
      "input 0", "is post-loop")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    tb = block((1, 1, 1), 4)
    return tb.forloop_accum(tb.forloop_accum(tb.new_input(x, forloop_dim=1)), "sum")


@case("accumulator-unknown-name", UnsupportedOpError, "unknown accumulator 'avg'", "'sum'", "'rms'")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    tb = block()
    return tb.forloop_accum(tb.new_input(x), "avg")


@case("accumulator-rescale-without-tensor", GraphError, "'nored_rescale'", "needs a rescale= tensor")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    tb = block()
    return tb.forloop_accum(tb.new_input(x), "nored_rescale")


@case("accumulator-rescale-given-to-plain-sum", GraphError, "'sum'", "takes no rescale= tensor")
def _(tmp: Path) -> Any:
    _, (x, s) = kernel((16, 64), (16, 1))
    tb = block()
    t, r = tb.new_input(x), tb.new_input(s)
    return tb.forloop_accum(t, "sum", rescale=r)


@case("accumulator-rescale-wrong-shape", ShapeError, "accum_no_red_rescale(s0, s1)", "one value per row",
      "(16, 1)", "got (16, 64)")
def _(tmp: Path) -> Any:
    _, (x, s) = kernel((16, 64), (16, 64))
    tb = block()
    t, r = tb.new_input(x), tb.new_input(s)
    return tb.forloop_accum(t, "nored_rescale", rescale=r)


# --------------------------------------------------------------------------- graph structure


@case("block-dangling-compute-tensor", GraphError, "s1", "exp result", "never used or saved")
def _(tmp: Path) -> Any:
    g, (x,) = kernel((16, 64))
    tb = block()
    t = tb.new_input(x)
    tb.exp(t)
    tb.new_output(tb.forloop_accum(t))
    return g.customized([x], tb)


@case("block-dangling-loader", GraphError, "s1", "loader output", "never used or saved")
def _(tmp: Path) -> Any:
    _, (x, y) = kernel((16, 64), (16, 64))
    tb = block()
    t = tb.new_input(x)
    tb.new_input(y)
    tb.new_output(tb.forloop_accum(t))
    return tb.freeze()


@case("block-graph-without-outputs", GraphError, "block graph has no outputs", "tb.new_output")
def _(tmp: Path) -> Any:
    g, (x,) = kernel((16, 64))
    tb = block()
    tb.forloop_accum(tb.new_input(x))
    return g.customized([x], tb)


@case("kernel-graph-without-outputs", GraphError, "kernel graph has no outputs", "mark_output")
def _(tmp: Path) -> Any:
    g, (x,) = kernel((16, 64))
    g.exp(x)
    return g.freeze()


@case("kernel-output-marked-twice", GraphError, "mark_output", "d1", "already an output")
def _(tmp: Path) -> Any:
    g, (x,) = kernel((16, 64))
    y = g.exp(x)
    g.mark_output(y)
    return g.mark_output(y)


@case("customized-wrong-number-of-inputs", GraphError, "customized", "2 loaders but 1 inputs",
      "one input per tb.new_input")
def _(tmp: Path) -> Any:
    g, (x, w) = kernel((16, 64), (64, 32))
    tb = block()
    tb.new_output(tb.forloop_accum(tb.matmul(tb.new_input(x), tb.new_input(w))))
    return g.customized([x], tb)


@case("customized-inputs-in-wrong-order", ShapeError, "customized", "input 0 is d1", "f16[64, 32]",
      "loader 0 was built for f16[16, 64]", "in the order of tb.new_input")
def _(tmp: Path) -> Any:
    g, (x, w) = kernel((16, 64), (64, 32))
    tb = block()
    tb.new_output(tb.forloop_accum(tb.matmul(tb.new_input(x), tb.new_input(w))))
    return g.customized([w, x], tb)


@case("customized-input-dtype-mismatch", ShapeError, "customized", "f32[16, 64]", "built for f16[16, 64]")
def _(tmp: Path) -> Any:
    g, (x,) = kernel((16, 64))
    x32 = g.new_input((16, 64), dtype=ml.float32)
    tb = block()
    tb.new_output(tb.forloop_accum(tb.new_input(x)))
    return g.customized([x32], tb)


@case("customized-inputs-not-a-list", GraphError, "customized", "must be a list of DTensors",
      "g.customized([X, ...], tb)")
def _(tmp: Path) -> Any:
    g, (x,) = kernel((16, 64))
    tb = block()
    tb.new_output(tb.forloop_accum(tb.new_input(x)))
    return g.customized(x, tb)


@case("customized-body-not-a-block-graph", GraphError, "customized", "expected a block graph", "NoneType")
def _(tmp: Path) -> Any:
    g, (x,) = kernel((16, 64))
    return g.customized([x], None)


@case("handle-from-another-kernel-graph", GraphError, "exp input 0", "belongs to another graph")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    g2, _ = kernel((16, 64))
    return g2.exp(x)


@case("handle-from-another-block-graph", GraphError, "add input 1", "belongs to another graph")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    tb1, tb2 = block(), block()
    return tb2.add(tb2.new_input(x), tb1.new_input(x))


@case("kernel-tensor-in-block-op", GraphError, "exp input 0", "expected a STensor", "DTensor(d0")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((16, 64))
    return block().exp(x)


@case("kernel-rms-norm-of-a-non-tensor", GraphError, "rms_norm input 0", "expected a DTensor", "None")
def _(tmp: Path) -> Any:
    g, _ = kernel((16, 64))
    return g.rms_norm(None)


# --------------------------------------------------------------------------- resources


@case("grid-over-4096-blocks", ResourceError, "grid_dim (4097, 1, 1)", "4097 blocks", "4096 allowed",
      "smaller grid")
def _(tmp: Path) -> Any:
    return block((4097, 1, 1))


@case("grid-3d-over-4096-blocks", ResourceError, "(64, 64, 2)", "8192 blocks")
def _(tmp: Path) -> Any:
    return block((64, 64, 2))


@case("smem-tile-too-big-for-arch", ResourceError, "new_input(f16[256, 256]", "131072 bytes",
      "101376-byte limit of sm_86", "smaller tiles")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((256, 256))
    return block(arch="sm_86").new_input(x)


@case("smem-sum-over-default-arch", ResourceError, "262144 bytes", "228352-byte limit of sm_90")
def _(tmp: Path) -> Any:
    _, (x, y) = kernel((128, 512), (128, 512))
    tb = block()
    tb.new_input(x)
    return tb.new_input(y)


@case("smem-tiny-limit", ResourceError, "matmul(s0, s1)", "1536 bytes", "over the 1024-byte limit")
def _(tmp: Path) -> Any:
    _, (x, w) = kernel((16, 16), (16, 16))
    tb = block(smem_limit=1024)
    return tb.matmul(tb.new_input(x), tb.new_input(w))


@case("unknown-arch", ResourceError, "unknown architecture 'sm_75'", "sm_80", "sm_90")
def _(tmp: Path) -> Any:
    return block(arch="sm_75")


# --------------------------------------------------------------------------- dims, dtypes, attributes


@case("dims-rank-0", ShapeError, "new_input dims ()", "has 0 dims", "1 to 4 dims")
def _(tmp: Path) -> Any:
    return ml.new_kernel_graph().new_input(())


@case("dims-rank-5", ShapeError, "(1, 2, 3, 4, 5)", "has 5 dims", "1 to 4 dims")
def _(tmp: Path) -> Any:
    return ml.new_kernel_graph().new_input((1, 2, 3, 4, 5))


@case("dims-negative", ShapeError, "new_input dims[1] = -4", "(16, -4)", "positive integer")
def _(tmp: Path) -> Any:
    return ml.new_kernel_graph().new_input((16, -4))


@case("dims-zero", ShapeError, "new_input dims[0] = 0", "positive integer")
def _(tmp: Path) -> Any:
    return ml.new_kernel_graph().new_input((0, 16))


@case("dims-float", ShapeError, "new_input dims[1]", "must be an integer", "got 2.5")
def _(tmp: Path) -> Any:
    return ml.new_kernel_graph().new_input((16, 2.5))  # type: ignore[arg-type]


@case("dims-string-entry", ShapeError, "new_input dims[0]", "must be an integer", "got '16'")
def _(tmp: Path) -> Any:
    return ml.new_kernel_graph().new_input(("16", 4))  # type: ignore[arg-type]


@case("dims-bool-entry", ShapeError, "new_input dims[0]", "must be an integer", "got True")
def _(tmp: Path) -> Any:
    return ml.new_kernel_graph().new_input((True, 4))


@case("dims-not-a-sequence", ShapeError, "new_input dims", "sequence of positive integers", "got 16")
def _(tmp: Path) -> Any:
    return ml.new_kernel_graph().new_input(16)  # type: ignore[arg-type]


@case("dims-huge", ShapeError, "new_input dims[0] = 1099511627776", "exceeds the largest supported size")
def _(tmp: Path) -> Any:
    return ml.new_kernel_graph().new_input((2**40, 4))


@case("strides-count-mismatch", ShapeError, "new_input", "1 strides given for 2 dims")
def _(tmp: Path) -> Any:
    return ml.new_kernel_graph().new_input((4, 4), strides=(4,))


@case("unknown-dtype", UnsupportedOpError, "unknown dtype 'float7'", "ml.float16")
def _(tmp: Path) -> Any:
    return ml.new_kernel_graph().new_input((4, 4), dtype="float7")


@case("reference-only-dtype", UnsupportedOpError, "float8 tensors are not supported", "dtype=ml.float16")
def _(tmp: Path) -> Any:
    return ml.new_kernel_graph().new_input((4, 4), dtype=ml.float8)


@case("dtype-as-strides", ShapeError, "the second argument is strides", "dtype=ml.float32")
def _(tmp: Path) -> Any:
    return ml.new_kernel_graph().new_input((4, 4), ml.float32)


@case("output-strides", UnsupportedOpError, "not row-major", "leave strides out")
def _(tmp: Path) -> Any:
    g, (x,) = kernel((4, 8))
    return g.mark_output(g.exp(x), (1, 4))


@case("rescale-acc", UnsupportedOpError, "acc='max' has no rescaling form", "acc='sum'")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((64, 64))
    tb = block((1, 1, 1), 4)
    s = tb.new_input(x, (-1, -1, -1), forloop_dim=1)
    return tb.forloop_accum_rescale(s, s, "max")


@case("store-in-dmem", UnsupportedOpError, "store_in_dmem=True", "leave it out")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((64, 64))
    return block((1, 1, 1)).new_input(x, (-1, -1, -1), -1, True)


@case("mul-scalar-nan", ShapeError, "mul_scalar scalar", "must be finite", "nan")
def _(tmp: Path) -> Any:
    g, (x,) = kernel((4, 4))
    return g.mul_scalar(x, float("nan"))


@case("mul-scalar-inf", ShapeError, "mul_scalar scalar", "must be finite", "inf")
def _(tmp: Path) -> Any:
    g, (x,) = kernel((4, 4))
    return g.mul_scalar(x, float("-inf"))


@case("mul-scalar-int-too-large-for-float", ShapeError, "mul_scalar scalar", "too large for a float")
def _(tmp: Path) -> Any:
    g, (x,) = kernel((4, 4))
    return g.mul_scalar(x, 10**400)


@case("mul-scalar-string", ShapeError, "mul_scalar scalar", "must be a number", "'2'")
def _(tmp: Path) -> Any:
    g, (x,) = kernel((4, 4))
    return g.mul_scalar(x, "2")


@case("clamp-nan-min", ShapeError, "clamp min_val", "must be finite", "nan")
def _(tmp: Path) -> Any:
    g, (x,) = kernel((4, 4))
    return g.clamp(x, float("nan"), 1.0)


@case("clamp-inf-max", ShapeError, "clamp max_val", "must be finite", "inf")
def _(tmp: Path) -> Any:
    g, (x,) = kernel((4, 4))
    return g.clamp(x, 0.0, float("inf"))


@case("block-clamp-min-greater-than-max", ShapeError, "clamp", "min_val 2.0 is greater than max_val 1.0",
      "swap")
def _(tmp: Path) -> Any:
    _, (x,) = kernel((4, 4))
    tb = block()
    return tb.clamp(tb.new_input(x), 2.0, 1.0)


# --------------------------------------------------------------------------- interpreter inputs


@case("interpret-too-few-arrays", InputError, "the graph has 2 inputs", "1 arrays were given",
      "one array per g.new_input")
def _(tmp: Path) -> Any:
    return ml.interpret(matmul_program(), [np.zeros((16, 64))])


@case("interpret-wrong-shape", InputError, "input 1 must have shape (64, 32)",
      "got an array of shape (32, 64)")
def _(tmp: Path) -> Any:
    return ml.interpret(matmul_program(), [np.zeros((16, 64)), np.zeros((32, 64))])


@case("interpret-ragged-nested-list", InputError, "input 0 is not a rectangular array", "(16, 64)")
def _(tmp: Path) -> Any:
    return ml.interpret(matmul_program(), [[[1.0, 2.0], [3.0]], np.zeros((64, 32))])


@case("interpret-bare-array-instead-of-list", InputError, "inputs must be a list of arrays", "ndarray",
      "ml.interpret(g, [x, ...])")
def _(tmp: Path) -> Any:
    return ml.interpret(matmul_program(), np.zeros((16, 64)))  # type: ignore[arg-type]


@case("interpret-not-a-graph", GraphError, "expected a kernel graph", "dict")
def _(tmp: Path) -> Any:
    return ml.interpret({}, [])


# --------------------------------------------------------------------------- own JSON format


@case("json-unknown-op", FormatError, "graph 0", "node 2", "unknown op 'conv2d'", "known ops")
def _(tmp: Path) -> Any:
    doc = valid_doc()
    kernel_nodes(doc)[2]["op"] = "conv2d"
    return load_text(doc)


@case("json-block-op-at-kernel-level", FormatError, "node 2", "op 'sub' does not exist at the kernel level",
      "block")
def _(tmp: Path) -> Any:
    doc = valid_doc()
    kernel_nodes(doc)[2]["op"] = "sub"
    return load_text(doc)


@case("json-wrong-number-of-op-inputs", FormatError, "block graph node 1", "op 'exp' takes 1 input(s)",
      "2 are listed")
def _(tmp: Path) -> Any:
    doc = valid_doc()
    body(doc)["nodes"][1]["inputs"] = [0, 0]
    return load_text(doc)


@case("json-truncated-text", FormatError, "not valid JSON", "truncated")
def _(tmp: Path) -> Any:
    text = json.dumps(valid_doc())
    return io.loads(text[: len(text) // 2])


@case("json-truncated-file", FormatError, "mugraph.json", "not valid JSON", "truncated")
def _(tmp: Path) -> Any:
    text = json.dumps(valid_doc())
    path = tmp / "mugraph.json"
    path.write_text(text[:-3])
    return ml.load(path)


@case("json-missing-file", PathError, "does not exist", "absent.json")
def _(tmp: Path) -> Any:
    return ml.load(tmp / "absent.json")


@case("json-wrong-format-tag", FormatError, "not a mirage-lab μGraph file", '"format": "mirage-lab/mugraph"')
def _(tmp: Path) -> Any:
    doc = valid_doc()
    doc["format"] = "mirage/checkpoint"
    return load_text(doc)


@case("json-not-an-object", FormatError, "not a mirage-lab μGraph file")
def _(tmp: Path) -> Any:
    return io.loads("5")


@case("json-wrong-version", FormatError, "format version 2", "reads version 1", "Upgrade mirage-lab")
def _(tmp: Path) -> Any:
    doc = valid_doc()
    doc["version"] = 2
    return load_text(doc)


@case("json-tensor-used-before-definition", FormatError, "node 2", "tensor 7 is used before it is defined")
def _(tmp: Path) -> Any:
    doc = valid_doc()
    kernel_nodes(doc)[2]["inputs"] = [0, 7]
    return load_text(doc)


@case("json-tensor-defined-twice", FormatError, "node 1", "tensor id 0 is defined twice")
def _(tmp: Path) -> Any:
    doc = valid_doc()
    kernel_nodes(doc)[1]["outputs"] = [0]
    return load_text(doc)


@case("json-recorded-types-inconsistent", FormatError, "tensor 2 is recorded as", "[16, 33]",
      "the rules derive", "[16, 32]", "edited inconsistently")
def _(tmp: Path) -> Any:
    doc = valid_doc()
    doc["graphs"][0]["tensors"][2]["dims"] = [16, 33]
    return load_text(doc)


@case("json-block-rule-violation", FormatError, "graph 0 breaks a rule", "grid axis x = 3", "not divisible")
def _(tmp: Path) -> Any:
    doc = valid_doc()
    body(doc)["grid"] = [3, 1, 1]
    return load_text(doc)


@case("json-nan-attribute", FormatError, "breaks a rule", "mul_scalar scalar must be finite", "nan")
def _(tmp: Path) -> Any:
    doc = valid_doc()
    nodes = kernel_nodes(doc)
    nodes.insert(3, {"op": "mul_scalar", "inputs": [2], "outputs": [99], "attrs": {"scalar": float("nan")}})
    return load_text(doc)


@case("json-deeply-nested", FormatError, "nested too deeply")
def _(tmp: Path) -> Any:
    return io.loads("[" * 100_000 + "]" * 100_000)


@case("json-deeply-nested-file", FormatError, "deep.json", "nested too deeply")
def _(tmp: Path) -> Any:
    path = tmp / "deep.json"
    path.write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    return ml.load(path)


@case("json-huge-integer-literal", FormatError, "oversized number", "digits")
def _(tmp: Path) -> Any:
    text = json.dumps(valid_doc()).replace('"version": 1', '"version": ' + "9" * 5000)
    return io.loads(text)


@case("json-huge-dim", FormatError, "breaks a rule", "exceeds the largest supported size")
def _(tmp: Path) -> Any:
    doc = valid_doc()
    doc["graphs"][0]["tensors"][0]["dims"] = [10**30, 64]
    return load_text(doc)


@case("json-reference-checkpoint-list", FormatError, "looks like a reference checkpoint",
      "ml.load_reference_checkpoint")
def _(tmp: Path) -> Any:
    path = tmp / "checkpoint.json"
    path.write_text(json.dumps([{"op_type": "kn_input_op", "input_tensors": [], "output_tensors": []}]))
    return ml.load(path)


# --------------------------------------------------------------------------- the tests


@pytest.mark.parametrize(("build", "error", "needles"), CASES)
def test_invalid_input_raises_specific_error(build: Build, error: type[MirageError], needles: tuple[str, ...],
                                             tmp_path: Path) -> None:
    assert issubclass(error, MirageError)
    with pytest.raises(Exception) as info:  # the exact class is checked below
        build(tmp_path)
    err = info.value
    assert isinstance(err, MirageError), f"raised a bare {type(err).__name__}: {err}"
    assert type(err) is error, f"expected {error.__name__}, got {type(err).__name__}: {err}"
    message = str(err)
    missing = [n for n in needles if n not in message]
    assert not missing, f"message {message!r} does not mention {missing}"


def test_table_is_large_and_covers_every_error_class() -> None:
    assert len(CASES) >= 40
    used = {p.values[1] for p in CASES}
    assert used == {ShapeError, MapError, PhaseError, ResourceError, GraphError, UnsupportedOpError,
                    FormatError, InputError, PathError}
    ids = [p.id for p in CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"


def test_valid_document_loads() -> None:
    """The JSON cases mutate this document; unmutated, it must load."""
    (g,) = load_text(valid_doc())
    assert len(g.outputs) == 1
