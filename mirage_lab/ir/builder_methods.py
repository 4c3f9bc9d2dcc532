"""The builders' op methods, made from the op table (``OpSpec.builder``): one per op, under the reference's
name and signature (``g.exp(A)``, ``g.add(A, B)``, ``g.clamp(A, min_val, max_val)``,
``tb.mul_scalar(A, scalar)``). A new element-wise op gets its method from its row alone.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from mirage_lab.arguments import checked
from mirage_lab.ir.op_types import BuilderRule, Level
from mirage_lab.ir.ops import OPS, Op
from mirage_lab.ir.validate import check_finite


def op_method(op: Op, rule: BuilderRule, owner: str) -> Callable[..., Any]:
    """``rule.name(self, *tensors, *scalars)``: applies ``op``, each scalar checked finite, then ``rule.check``."""
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [inspect.Parameter(t, inspect.Parameter.POSITIONAL_OR_KEYWORD) for t in rule.tensors]
    params += [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=float) for p, _ in rule.scalars]
    signature = inspect.Signature(params)

    def method(*args: Any, **kwargs: Any) -> Any:
        given = signature.bind(*args, **kwargs).arguments  # a TypeError here is the caller's: ``checked`` says so
        attrs = {attr: check_finite(given[p], f"{rule.name} {p}") for p, attr in rule.scalars}
        if rule.check is not None:
            rule.check(attrs)
        return given["self"]._one(op, *(given[t] for t in rule.tensors), **attrs)

    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__name__, method.__qualname__ = rule.name, f"{owner}.{rule.name}"
    method.__doc__ = f"Apply {op.value} (generated from its op-table row){': ' + OPS[op].doc if OPS[op].doc else ''}."
    return checked(method)


def install(cls: type, levels: frozenset[Level]) -> type:
    """Give ``cls`` the generated method of every op whose levels are exactly ``levels`` (the shared base class
    takes the ops of both levels; each builder the ops of its own level only)."""
    for op, spec in OPS.items():
        rule = spec.builder
        if rule is not None and rule.generated and frozenset(spec.codes) == levels:
            if rule.name in vars(cls):
                raise TypeError(f"{cls.__name__}.{rule.name} is written by hand and generated from {op.value}'s row")
            setattr(cls, rule.name, op_method(op, rule, cls.__name__.lstrip("_")))
    return cls
