"""Abstract expressions and the subexpression pruning oracle (SPEC §5).

    from mirage_lab.absexpr import Oracle, parse
    oracle = Oracle.for_program(ml.bench.programs.rmsnorm())
    oracle.check(parse("sum(64, mul(v0, v1))")).explain()
"""

from mirage_lab.absexpr.axioms import AXIOMS, BY_NAME, Axiom, axioms_frame, rule_set
from mirage_lab.absexpr.engine import Limits
from mirage_lab.absexpr.of_graph import (
    GraphExpressions,
    block_expressions,
    graph_expressions,
    op_expression,
    program_targets,
)
from mirage_lab.absexpr.oracle import Oracle, Verdict, is_subexpression
from mirage_lab.absexpr.terms import Term, parse

__all__ = [
    "AXIOMS",
    "BY_NAME",
    "Axiom",
    "GraphExpressions",
    "Limits",
    "Oracle",
    "Term",
    "Verdict",
    "axioms_frame",
    "block_expressions",
    "graph_expressions",
    "is_subexpression",
    "op_expression",
    "parse",
    "program_targets",
    "rule_set",
]
