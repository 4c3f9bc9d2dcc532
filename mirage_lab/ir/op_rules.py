"""Evaluation, accumulator, abstract-expression and degree rules of the op table.

Evaluation rules are written once against a number system (``mirage_lab.semantics.arith``: floats, or the
verifier's finite field), so the interpreter and the verifier share them. They receive values whose *trailing*
axes are the tensor's dims; any leading axes (grid blocks, loop iterations) are batch axes, so rules address
tensor dims with negative axes only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mirage_lab.errors import ShapeError
from mirage_lab.ir.op_types import AbstractRule, EvalArgs, EvalRule


def unary_rule(method: str) -> EvalRule:
    return lambda ns, args, x: getattr(ns, method)(x)


def binary_rule(method: str) -> EvalRule:
    return lambda ns, args, a, b: getattr(ns, method)(a, b)


def eval_reduction(ns: Any, args: EvalArgs, x: Any) -> Any:
    """Strided grouping: ``out[j] = Σ_k x[j + k·s]`` over dim d (SPEC §2)."""
    return ns.sum_strided(x, args.axis(int(args.attrs["dim"])), int(args.attrs.get("group_size", 1)))


def eval_reduction_to_dimx(ns: Any, args: EvalArgs, x: Any) -> Any:
    return ns.sum_strided(x, args.axis(int(args.attrs["dim"])), args.reduction_dimx)


def eval_reduction_max(ns: Any, args: EvalArgs, x: Any) -> Any:
    """[lab decision] per-iteration max over dim d; the running part is done by the interpreter."""
    return ns.amax(x, args.axis(int(args.attrs["dim"])))


def eval_rms_norm(ns: Any, args: EvalArgs, x: Any) -> Any:
    norm = tuple(args.attrs.get("normalized_shape", args.in_dims[0][-1:]))
    axes = tuple(range(-len(norm), 0))
    return ns.div(x, ns.rms(x, axes, math.prod(norm)))


def eval_concat(ns: Any, args: EvalArgs, a: Any, b: Any) -> Any:
    return ns.concat([a, b], args.axis(int(args.attrs["dim"])))


def eval_concat_then_matmul(ns: Any, args: EvalArgs, a0: Any, a1: Any, b0: Any, b1: Any) -> Any:
    """``[A0 A1] @ [B0; B1]``: A0·B0 + A1·B1 when the split points agree (A0's columns = B0's rows); the
    shape rule only asks the concatenations to match, so otherwise the concatenations are multiplied."""
    if args.in_dims[0][-1] == args.in_dims[2][-2]:
        return ns.add(ns.matmul(a0, b0), ns.matmul(a1, b1))
    left = ns.concat([a0, a1], args.axis(len(args.in_dims[0]) - 1, 0))
    right = ns.concat([b0, b1], args.axis(len(args.in_dims[2]) - 2, 2))
    return ns.matmul(left, right)


def eval_mul_scalar(ns: Any, args: EvalArgs, x: Any) -> Any:
    return ns.mul_scalar(x, float(args.attrs["scalar"]))


def eval_clamp(ns: Any, args: EvalArgs, x: Any) -> Any:
    return ns.clamp(x, float(args.attrs["min"]), float(args.attrs["max"]))


def contrib_identity(ns: Any, x: Any, dimx: int) -> Any:
    return x


def contrib_row_sum(ns: Any, x: Any, dimx: int) -> Any:
    return ns.sum(x, -1)


def contrib_row_sumsq(ns: Any, x: Any, dimx: int) -> Any:
    return ns.sum(ns.square(x), -1)


def contrib_todimx(ns: Any, x: Any, dimx: int) -> Any:
    return ns.sum_strided(x, -1, dimx)


def final_mean(ns: Any, acc: Any, count: int) -> Any:
    return ns.div_int(acc, count)


def final_rms(ns: Any, acc: Any, count: int) -> Any:
    return ns.sqrt(ns.div_int(acc, count))




# SPEC §5.2. ``alg`` is a term algebra (absexpr.terms.TermAlgebra); partitioning is invisible,
# only reduction degrees appear. Block-level in_dims are tile dims, so a block matmul sums over
# its *local* k. [lab] decisions for ops outside §5.2 are in docs/decisions.md.


def abs_unary(name: str) -> AbstractRule:
    return lambda alg, args, x: alg.unary(name, x)


def abs_binary(method: str) -> AbstractRule:
    return lambda alg, args, a, b: getattr(alg, method)(a, b)


def abs_matmul(alg: Any, args: EvalArgs, a: Any, b: Any) -> Any:
    return alg.reduce("sum", args.in_dims[0][-1], alg.mul(a, b))


def abs_reduction(alg: Any, args: EvalArgs, x: Any) -> Any:
    """The full dim, whatever the group size (SPEC §5.2 [ref])."""
    return alg.reduce("sum", args.in_dims[0][int(args.attrs["dim"])], x)


def abs_reduction_to_dimx(alg: Any, args: EvalArgs, x: Any) -> Any:
    return alg.reduce("sum", args.in_dims[0][int(args.attrs["dim"])] // args.reduction_dimx, x)


def abs_reduction_max(alg: Any, args: EvalArgs, x: Any) -> Any:
    m = alg.reduce("max", args.in_dims[0][int(args.attrs["dim"])], x)
    return (m, m)


def abs_rms_norm(alg: Any, args: EvalArgs, x: Any) -> Any:
    norm = tuple(args.attrs.get("normalized_shape", args.in_dims[0][-1:]))
    return alg.div(x, alg.reduce("rms", math.prod(norm), x))


def abs_concat_then_matmul(alg: Any, args: EvalArgs, a0: Any, a1: Any, b0: Any, b1: Any) -> Any:
    k0, k1 = args.in_dims[0][-1], args.in_dims[1][-1]
    return alg.add(alg.reduce("sum", k0, alg.mul(a0, b0)), alg.reduce("sum", k1, alg.mul(a1, b1)))


def abs_clamp(alg: Any, args: EvalArgs, x: Any) -> Any:
    return alg.unary("clamp", x, (float(args.attrs["min"]), float(args.attrs["max"])))


def check_clamp_bounds(attrs: dict[str, float]) -> None:
    if attrs["min"] > attrs["max"]:
        raise ShapeError(f"clamp: min_val {attrs['min']} is greater than max_val {attrs['max']}; swap them")


def abs_scale(alg: Any, args: EvalArgs, x: Any) -> Any:
    return alg.unary("scale", x, (float(args.attrs["scalar"]),))


def abs_accum(name: str, per_row: bool = True, todimx: bool = False) -> AbstractRule:
    """An accumulator reduces over F iterations times what each iteration reduces of its tile."""

    def rule(alg: Any, args: EvalArgs, x: Any, *rescale: Any) -> Any:
        last = args.in_dims[0][-1]
        n = args.forloop_range * ((last // args.reduction_dimx if todimx else last) if per_row else 1)
        return alg.reduce(name, n, x)

    return rule



# --------------------------------------------------------------------------- degree rules
# SPEC §6.5: numerator + denominator degree of an op's output from its inputs'. Products add, sums keep the
# maximum, a quotient adds numerator and denominator; an op with no inputs (a program input) has degree 1.


def deg_keep(ins: Sequence[int]) -> int:
    return max(ins) if ins else 1


def deg_product(ins: Sequence[int]) -> int:
    return ins[0] + ins[1]


def deg_square(ins: Sequence[int]) -> int:
    return 2 * ins[0]


def deg_double(ins: Sequence[int]) -> int:
    """x / rms(x), and acc·s + x of the rescaling accumulators."""
    return 2 * max(ins)


def deg_concat_matmul(ins: Sequence[int]) -> int:
    """[A0 A1]·[B0; B1] = A0·B0 + A1·B1."""
    return max(ins[0] + ins[2], ins[1] + ins[3])
