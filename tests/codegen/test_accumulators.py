"""Accumulators are emitted from their ``AccumRule``: every rule an accumulator op declares has CUDA."""

from __future__ import annotations

from mirage_lab.codegen.accumulators import COMBINES, CONTRIBUTIONS, FINAL_EXPR
from mirage_lab.ir.ops import OPS, Kind


def test_every_accumulator_rule_has_cuda() -> None:
    rules = {op: spec.accum for op, spec in OPS.items() if spec.kind is Kind.ACCUM}
    assert rules and all(rule is not None for rule in rules.values())
    missing = {op.value: rule for op, rule in rules.items()
               if rule is None or rule.contrib not in CONTRIBUTIONS or rule.combine not in COMBINES}
    assert not missing, f"accumulator rules without CUDA: {missing}"
    assert {op for op, rule in rules.items() if rule and rule.cuda_finalize} == set(FINAL_EXPR)
