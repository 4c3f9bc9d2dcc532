"""``Decision``: the four kinds round-trip through their JSON form (the lists run folders hold), and malformed
lists are refused with a FormatError that names the problem."""

from __future__ import annotations

from typing import Any

import pytest

from mirage_lab.errors import FormatError
from mirage_lab.search.decision import BlockOp, Close, Decision, KernelOp, OpenBlock, decoded, encoded

FORMS: list[list[Any]] = [
    ["k", "matmul", [0, 1], {}],
    ["k", "clamp", [2], {"min": 0.0, "max": 6.0}],
    ["c", [0, 1], [8, 1, 1], [[0, -1, -1], [-1, -1, -1]], [1, -1], 4],
    ["b", "accum_rms", [3], {}],
    ["s", [0, -1, -1]],
]


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f[0])
def test_a_decision_round_trips_through_its_json_form(form: list[Any]) -> None:
    d = Decision.from_json(form)
    assert d.to_json() == form and Decision.from_json(d) is d
    assert d == Decision.from_json(d.to_json()) and hash(d) == hash(Decision.from_json(d.to_json()))
    assert d.kind == form[0]


def test_the_kinds_have_named_fields() -> None:
    k, clamp, c, b, s = decoded(FORMS)
    assert isinstance(k, KernelOp) and k.op == "matmul" and k.inputs == (0, 1) and k.attributes == {}
    assert isinstance(clamp, KernelOp) and clamp.attributes == {"min": 0.0, "max": 6.0}
    assert isinstance(c, OpenBlock) and c.grid == (8, 1, 1) and c.imaps == ((0, -1, -1), (-1, -1, -1))
    assert c.fmaps == (1, -1) and c.frange == 4
    assert isinstance(b, BlockOp) and b.op == "accum_rms"
    assert isinstance(s, Close) and s.omap == (0, -1, -1)
    assert encoded([k, clamp, c, b, s]) == FORMS
    assert KernelOp("mul", (0, 1)) != BlockOp("mul", (0, 1))  # the level is part of the decision


@pytest.mark.parametrize("bad, says", [
    ("k", "a list starting with"),
    (["x", 1], "a list starting with"),
    ([], "a list starting with"),
    (["k", "matmul", [0, 1]], "has 4 entries"),
    (["k", "nosuchop", [0], {}], "unknown op 'nosuchop'"),
    (["k", "matmul", [0, "1"], {}], "inputs must be a list of integers"),
    (["b", "exp", [0], []], "attributes must be an object"),
    (["c", [0, 1], [8, 1], [[0, -1, -1], [-1, -1, -1]], [1, -1], 4], "grid must hold 3 integers"),
    (["c", [0, 1], [8, 1, 1], [[0, -1, -1]], [1, -1], 4], "one imap per input"),
    (["c", [0, 1], [8, 1, 1], [[0, -1, -1], [-1, -1, -1]], [1], 4], "one fmap per input"),
    (["c", [0, 1], [8, 1, 1], [[0, -1, -1], [-1, -1, -1]], [1, -1], 4.5], "for-loop range must be an integer"),
    (["s", [0, True, -1]], "omap must be a list of integers"),
])
def test_a_malformed_decision_is_a_format_error(bad: Any, says: str) -> None:
    with pytest.raises(FormatError, match=says):
        Decision.from_json(bad)
