"""The command line's argument types: numbers are checked for range where they are parsed, and argparse's
refusals become one line (``mirage-lab: error: …``) like every other bad input, with exit status 2."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from typing import Any, NoReturn

from mirage_lab.codegen.arch import check_arch
from mirage_lab.errors import InputError


class UsageError(Exception):
    """A command line argparse refused: reported as one line, like every other bad input."""


class Parser(argparse.ArgumentParser):
    """argparse, with its refusals raised as one-line ``UsageError``s instead of usage text and exit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def _number(parse: Callable[[str], float], ok: Callable[[float], bool], expected: str) -> Callable[[str], Any]:
    """An argparse type: ``parse`` the text, then check it (finite numbers only: NaN fails every ``ok``)."""

    def convert(text: str) -> Any:
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not (math.isfinite(value) and ok(value)):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    convert.__name__ = expected
    return convert


positive_int = _number(int, lambda v: v >= 1, "a positive integer")
count = _number(int, lambda v: v >= 0, "an integer ≥ 0")
positive_seconds = _number(float, lambda v: v > 0, "a finite number of seconds > 0")
tolerance = _number(float, lambda v: v >= 0, "a finite number ≥ 0")


def cuda_arch(text: str) -> str:
    """A CUDA architecture as nvcc names it: sm_80, sm_90, sm_90a, sm_100… (``codegen.arch.check_arch``)"""
    try:
        return check_arch(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


#: seconds per unit of an age: minutes, hours, days, weeks
AGE_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def age(text: str) -> float:
    """An age such as 30m, 12h, 7d or 2w (a bare number is days), in seconds."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([mhdw]?)", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"expected an age such as 30m, 12h, 7d or 2w, got {text!r}")
    return float(m.group(1)) * AGE_UNITS[m.group(2) or "d"]


#: the static figure formats ``mirage-lab report --figures`` writes (``mirage_lab.widgets.save_figure``)
FIGURE_FORMATS = ("pdf", "svg", "png")


def figure_formats(text: str) -> tuple[str, ...]:
    """A comma-separated list of figure formats: pdf, svg, png (e.g. ``pdf,svg``)."""
    names = tuple(dict.fromkeys(t.strip().lower().lstrip(".") for t in text.split(",") if t.strip()))
    bad = [n for n in names if n not in FIGURE_FORMATS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"expected one or more of {', '.join(FIGURE_FORMATS)} separated by commas "
                                         f"(e.g. pdf,svg), got {text!r}")
    return names
