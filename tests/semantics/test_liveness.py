"""Component liveness (semantics/liveness.py): dropping the components it calls dead changes no output.

The verifier feeds each graph its trial inputs with the dead components replaced by free zeros, so an
unsound rule here would change verdicts. The property is checked on random graphs (every op, map and
accumulator) and on the benchmark programs and fused graphs; the attention inputs must lose their p-part.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.errors import UnsupportedOpError
from mirage_lab.ir.ops import OPS, Op
from mirage_lab.semantics.centered_field import CenteredFieldArith
from mirage_lab.semantics.field import DEFAULT_FIELD, REFERENCE_FIELD, FieldSpec
from mirage_lab.semantics.liveness import BOTH, COMPONENTWISE, Q_TO_P, live_inputs, needs
from tests.strategies import kernel_graphs


def _outputs_agree(g: ml.KernelGraph, field: FieldSpec, seed: int,
                   live: list[frozenset[str]] | None = None) -> bool | None:
    """Do ``g``'s outputs stay the same when its inputs lose the components outside ``live`` (default: what
    the analysis says)? None when the field has no rule for one of its ops."""
    ns = CenteredFieldArith(field, "numpy")
    rng = np.random.default_rng(seed)
    ins = [ns.random(t.dims, rng) for t in g.input_types]
    live = live_inputs(g) if live is None else live
    try:
        full = [ns.to_host(v) for v in ml.interpret(g, ins, ns=ns, to_host=False)]
    except UnsupportedOpError:
        return None
    kept = [ns.to_host(v) for v in ml.interpret(g, [ns.restrict(v, k) for v, k in zip(ins, live, strict=True)],
                                                ns=ns, to_host=False)]
    return all(a.equals(b) for a, b in zip(full, kept, strict=True))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernel_graphs(), st.sampled_from([DEFAULT_FIELD, REFERENCE_FIELD]), st.integers(0, 2**16))
def test_dropping_dead_components_changes_no_output(g: ml.KernelGraph, field: FieldSpec, seed: int) -> None:
    note(f"{g}\nlive inputs: {live_inputs(g)}")
    assert _outputs_agree(g, field, seed) is not False


GRAPHS = {**{f"program:{n}": functools.partial(f, 1) for n, f in programs.PROGRAMS.items() if n != "moe"},
          **{f"fused:{n}": functools.partial(f, 1) for n, f in fused.FUSED.items()}}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_benchmark_graphs_keep_their_outputs(name: str) -> None:
    assert _outputs_agree(GRAPHS[name](), DEFAULT_FIELD, seed=5) is True


@pytest.mark.parametrize("name", ["gqa", "mha", "mqa"])
def test_attention_reads_only_the_q_part_of_q_and_k(name: str) -> None:
    """exp(Q·Kᵀ) reads Q·Kᵀ's q-part alone, so Q and K lose their p-part; V keeps both."""
    want = [frozenset({"q"}), frozenset({"q"}), BOTH]
    assert live_inputs(programs.PROGRAMS[name](1)) == want
    if name in fused.FUSED:
        assert live_inputs(fused.FUSED[name](1)) == want


def test_the_check_can_fail() -> None:
    """Dropping a component that is read does change the outputs: the property above is not vacuous."""
    g = programs.rmsnorm(1)
    assert _outputs_agree(g, DEFAULT_FIELD, 0, live=[frozenset({"q"}), BOTH]) is False


def test_the_rules() -> None:
    assert needs(Op.MATMUL, frozenset({"q"})) == frozenset({"q"})
    assert needs(Op.EXP, frozenset({"p"})) == frozenset({"q"}) and needs(Op.EXP, frozenset({"q"})) == frozenset()
    assert needs(Op.SQRT, frozenset({"p"})) == BOTH  # not listed: conservative
    assert needs(Op.ADD, frozenset()) == frozenset()
    assert not COMPONENTWISE & Q_TO_P and set(OPS) >= (COMPONENTWISE | Q_TO_P)
