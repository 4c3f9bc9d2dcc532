"""Alternative subexpression engines, compared by ``benchmarks/absexpr.py``.

The oracle's default is the normal form (``absexpr.normal``); these follow the reference's two
designs and are kept for cross-checking and parity studies: ``"egglog"`` (the current reference's
e-graph, needs the ``egglog`` package) and ``"z3"`` (the paper-era SMT refutation, needs
``z3-solver``). Both come with the ``test`` extra.
"""

from __future__ import annotations

from collections.abc import Sequence

from mirage_lab.absexpr.engine import Engine, Limits
from mirage_lab.absexpr.terms import Term
from mirage_lab.errors import InputError

ENGINES = ("normal", "egglog", "z3")


def make_engine(name: str, targets: Sequence[Term], limits: Limits, *,
                reference_compatible: bool = False) -> Engine | None:
    """The named engine over ``targets``; None for "normal" (the oracle's own normal form)."""
    if name == "normal":
        return None
    try:
        if name == "egglog":
            from mirage_lab.absexpr.engines.egglog_engine import EgglogEngine

            return EgglogEngine(targets, limits, reference_compatible=reference_compatible)
        if name == "z3":
            from mirage_lab.absexpr.engines.z3_engine import Z3Engine

            return Z3Engine(targets, limits, reference_compatible=reference_compatible)
    except ImportError as e:
        package = {"egglog": "'egglog<=13.2'", "z3": "z3-solver"}[name]
        raise InputError(f"the {name} engine needs a package that is not installed ({e.name}); "
                         f"pip install {package}, or use engine='normal'") from None
    raise InputError(f"unknown subexpression engine {name!r}; choose one of {', '.join(ENGINES)}")
