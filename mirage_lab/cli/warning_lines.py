"""The command line's warnings: one line each, ``mirage-lab: warning: <message> (<Category>)``.

Python prints a warning as ``/path/to/module.py:123: Category: message`` followed by the source line that
raised it: paths and code that someone running a command cannot act on. ``main`` swaps in this format for as
long as it runs and puts Python's back afterwards, so scripts, notebooks and tests calling the library see
their warnings as usual. Only the format changes (``warnings.formatwarning``): which warnings show, and
``catch_warnings`` / ``pytest.warns`` recording them, stay Python's. Pool workers started meanwhile format
theirs the same way (``mirage_lab.search.pool``).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

PREFIX = "mirage-lab: warning: "


def one_line(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             line: str | None = None) -> str:
    """A ``warnings.formatwarning``: the message folded onto one line, and its category; no place, no code."""
    return f"{PREFIX}{' '.join(str(message).split())} ({category.__name__})\n"


@contextlib.contextmanager
def one_line_warnings() -> Iterator[None]:
    saved = warnings.formatwarning
    warnings.formatwarning = one_line
    try:
        yield
    finally:
        warnings.formatwarning = saved
