"""Input arrays hold real numbers, or they are refused: the interpreter and the verifier compute with reals, and
numpy would bend anything else into them without a word — complex values lose their imaginary part (with only a
``ComplexWarning``), ``None`` becomes NaN, a string "1" becomes 1.0, a datetime its tick count, a masked entry
whatever lies under the mask.

Accepted: booleans, integers and floats of any width (numpy kinds ``b i u f``, and ml_dtypes' bfloat16), CuPy
arrays of those, torch tensors that are not complex, and lists of such numbers.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from mirage_lab.errors import InputError

#: numpy dtype kinds of real numbers: bool, signed and unsigned integers, floats
REAL_KINDS = frozenset("biuf")
#: what other kinds are, for the message, and how to turn each into numbers if that is what was meant
OTHER_KINDS = {
    "c": ("complex values", "pass the real numbers meant (np.real(x), or np.abs(x))"),
    "U": ("strings", "convert them to numbers first (np.asarray(x, dtype=float))"),
    "S": ("byte strings", "convert them to numbers first (np.asarray(x, dtype=float))"),
    "M": ("dates and times", "pass numbers (e.g. x.astype('int64') for the ticks, if that is meant)"),
    "m": ("time spans", "pass numbers (e.g. x / np.timedelta64(1, 's') for seconds)"),
    "V": ("structured records", "pass one numeric field (x['name'])"),
}


def is_real_dtype(dtype: np.dtype) -> bool:
    """Does a numpy dtype hold real numbers? (ml_dtypes' bfloat16 is a numpy dtype of kind "V".)"""
    return dtype.kind in REAL_KINDS or dtype.name == "bfloat16"


def check_real(a: Any, what: str) -> None:
    """Refuse ``a`` (named ``what`` in the message, e.g. "input 0 (f16[8, 64])") unless it holds real numbers."""
    problem = _problem(a)
    if problem is not None:
        held, fix = problem
        raise InputError(f"{what} holds {held}; the interpreter computes with real numbers: {fix}")


def _problem(a: Any) -> tuple[str, str] | None:
    dtype = getattr(a, "dtype", None)
    if dtype is not None and not isinstance(dtype, np.dtype):  # a torch tensor: its own dtypes
        return (f"complex values ({dtype})", "pass the real numbers meant (t.real, or t.abs())") \
            if getattr(dtype, "is_complex", False) else None
    if isinstance(a, np.ma.MaskedArray) and np.ma.is_masked(a):
        return "masked entries (a masked array)", "fill them first (x.filled(value))"
    arr = a if isinstance(a, np.ndarray) or dtype is not None else np.asarray(a, dtype=None)
    if is_real_dtype(arr.dtype):
        return None
    if arr.dtype.kind == "O":
        return _object_problem(np.asarray(arr))
    return OTHER_KINDS.get(arr.dtype.kind, (f"{arr.dtype} values", "pass a float or integer array"))


def _object_problem(arr: np.ndarray) -> tuple[str, str] | None:
    """An object array passes only when every entry is a real number (then numpy converts it exactly)."""
    for index, value in np.ndenumerate(arr):
        if not isinstance(value, numbers.Real):
            shown = "None" if value is None else f"a {type(value).__name__} ({value!r:.40})"
            where = f" at {index}" if index else ""
            fix = ("replace it with a number (np.nan, if a missing value is meant)" if value is None
                   else "pass an array of numbers (np.asarray(x, dtype=float))")
            return f"{shown}{where} (an object array)", fix
    return None
