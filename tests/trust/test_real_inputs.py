"""Inputs refused, not bent (issue 35, item 3): arrays that do not hold real numbers get an ``InputError`` naming the
input and the fix, where numpy would silently drop imaginary parts, turn None into NaN or "1" into 1.0; and ``ns``
is a number system, or a name of one."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.errors import InputError
from mirage_lab.semantics.arith import FloatArith
from mirage_lab.semantics.field import FieldArith, FieldValue


def _exp() -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    g.mark_output(g.exp(g.new_input(dims=(2, 4), dtype=ml.float32)))
    return g.freeze()


ONES = np.ones((2, 4))

REFUSED: dict[str, tuple[Any, str]] = {
    "complex": (ONES * (1 + 2j), "holds complex values"),
    "complex, imaginary part zero": (ONES.astype(np.complex128), "holds complex values"),
    "object holding None": (np.array([[1.0, 2.0, None, 3.0]] * 2, dtype=object), "holds None at (0, 2)"),
    "object holding a string": (np.array([[1.0, 2.0, 3.0, "4"]] * 2, dtype=object), "holds a str ('4') at (0, 3)"),
    "object holding a dict": (np.array([[1.0, 2.0, 3.0, {}]] * 2, dtype=object), "holds a dict ({}) at (0, 3)"),
    "list of None": ([[None] * 4] * 2, "holds None"),
    "list of strings": ([["1"] * 4] * 2, "holds strings"),
    "strings": (np.full((2, 4), "1.5"), "holds strings"),
    "bytes": (np.full((2, 4), b"1"), "holds byte strings"),
    "datetime": (np.zeros((2, 4), dtype="datetime64[s]"), "dates and times"),
    "timedelta": (np.zeros((2, 4), dtype="timedelta64[ms]"), "time spans"),
    "structured": (np.zeros((2, 4), dtype=[("a", "f4"), ("b", "i4")]), "structured records"),
    "masked entries": (np.ma.masked_array(ONES, mask=[[True, False, False, False]] * 2), "masked entries"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_values_that_are_not_real_numbers_are_refused(case: str) -> None:
    value, says = REFUSED[case]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning on the way: refused before numpy converts anything
        with pytest.raises(InputError, match=r"input 0 \(f32\[2, 4\]\) ") as e:
            ml.interpret(_exp(), [value])
    assert says in str(e.value)


@pytest.mark.parametrize("case", ["complex", "object holding None", "strings"])
def test_the_field_refuses_them_too(case: str) -> None:
    with pytest.raises(InputError, match="input 0"):
        ml.interpret(_exp(), [REFUSED[case][0]], ns="field")


ACCEPTED: dict[str, Any] = {
    "float64": ONES, "float16": ONES.astype(np.float16), "int": ONES.astype(np.int32), "uint": ONES.astype(np.uint8),
    "bool": ONES.astype(bool), "object of numbers": ONES.astype(object), "list of numbers": ONES.tolist(),
    "masked array, nothing masked": np.ma.masked_array(ONES, mask=False), "longdouble": ONES.astype(np.longdouble),
}


@pytest.mark.parametrize("case", ACCEPTED)
def test_real_numbers_of_every_kind_are_taken(case: str) -> None:
    (out,) = ml.interpret(_exp(), [ACCEPTED[case]])
    np.testing.assert_allclose(out, np.exp(ONES))


def test_number_systems_by_instance_or_name() -> None:
    g, x = _exp(), [ONES]
    np.testing.assert_allclose(ml.interpret(g, x, ns="float")[0], np.exp(ONES))
    np.testing.assert_allclose(ml.interpret(g, x, ns=FloatArith(dtype="float32"))[0], np.exp(ONES), rtol=1e-6)
    by_name, by_instance = ml.interpret(g, x, ns="field")[0], ml.interpret(g, x, ns=FieldArith())[0]
    assert isinstance(by_name, FieldValue)
    assert (by_name.p == by_instance.p).all() and (by_name.q == by_instance.q).all()


@pytest.mark.parametrize(("ns", "says"), [
    ("fild", "ns='fild' names no number system (did you mean 'field'?)"),
    ("complex", "ns='complex' names no number system"),
    (FieldArith, "ns=FieldArith is a class; pass an instance: ns=FieldArith()"),
    (5, "ns must be a number system"),
    (np, "ns must be a number system"),
])
def test_anything_else_as_ns_is_refused(ns: Any, says: str) -> None:
    with pytest.raises(InputError) as e:
        ml.interpret(_exp(), [ONES], ns=ns)
    assert says in str(e.value)
