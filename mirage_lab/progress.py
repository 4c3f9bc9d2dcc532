"""Progress that suits where the output goes: a bar on a terminal or in a notebook, lines in a log.

A tqdm bar redraws itself with carriage returns; written to a file or a CI log, every redraw becomes text
(the ``make demo`` log was mostly bar redraws). So ``progress`` gives tqdm's bar (``tqdm.auto``: a widget in
Jupyter) only when stderr is a terminal or the code runs in a notebook kernel; elsewhere it writes one
plain line every ``LINE_EVERY_S`` seconds, and one when the work ends. ``MIRAGE_LAB_PROGRESS`` overrides
the choice: ``bar``, ``lines`` or ``none``.

In a notebook the bar's output ends as the finished bar in text and HTML too (``NotebookBar``): the widget's
text is the 0 % it started at, which is what a saved or exported notebook would otherwise show.
"""

from __future__ import annotations

import functools
import html
import os
import sys
import time
from collections.abc import Iterable, Iterator, Sized
from typing import Any, TextIO

from tqdm.auto import tqdm

from mirage_lab.errors import InputError

#: seconds between two progress lines when the output is not a terminal
LINE_EVERY_S = 10.0
MODES = ("bar", "lines", "none")
BAR_WORDS = "{percentage:3.0f}% {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"


def in_notebook() -> bool:
    """Is this a Jupyter kernel (where tqdm.auto draws a widget)?"""
    if "IPython" not in sys.modules:
        return False
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def progress_mode(stream: TextIO | None = None) -> str:
    """``bar``, ``lines`` or ``none``: the environment's choice, else a bar where one can be drawn."""
    chosen = os.environ.get("MIRAGE_LAB_PROGRESS", "").strip().lower()
    if chosen:
        if chosen not in MODES:
            raise InputError(f"MIRAGE_LAB_PROGRESS={chosen!r} is not one of {', '.join(MODES)}; unset it for "
                             "the default (a bar on a terminal or in a notebook, else a line every few seconds)")
        return chosen
    out = stream or sys.stderr
    return "bar" if in_notebook() or getattr(out, "isatty", lambda: False)() else "lines"


def progress(iterable: Iterable[Any] | None = None, *, desc: str = "", total: float | None = None,
             unit: str = "it", initial: float = 0, disable: bool = False, **bar_options: Any) -> Any:
    """A tqdm-like progress reporter (``update``, ``close``, ``n``, iteration, ``with``) for this output."""
    mode = "none" if disable else progress_mode()
    if mode == "bar":
        bar = _notebook_bar() if in_notebook() else tqdm
        return bar(iterable, desc=desc, total=total, unit=unit, initial=initial, **bar_options)
    return LineProgress(iterable, desc=desc, total=total, unit=unit, initial=initial, quiet=mode == "none",
                        scale=bool(bar_options.get("unit_scale")))


@functools.cache
def _notebook_bar() -> type:
    """tqdm's notebook bar, shown under a display id so that closing it can replace its output's static part."""
    import IPython.display
    from tqdm.notebook import tqdm as notebook_tqdm

    class NotebookBar(notebook_tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, display=False, **kwargs)
            self._output = None if self.disable else IPython.display.display(self.container, display_id=True)
            self.displayed = True  # a ``delay`` must not display it a second time

        def close(self) -> None:
            super().close()
            output, self._output = getattr(self, "_output", None), None
            if output is not None:
                output.update(FinishedBar(self))

    return NotebookBar


class FinishedBar:
    """A closed notebook bar's output: the widget (when it stays, ``leave=True``) beside its last state as text
    and as a static HTML bar."""

    def __init__(self, bar: Any) -> None:
        self.widget = bar.container if bar.leave else None
        self.text = bar.format_meter(**{**bar.format_dict, "ascii": False})
        self.n, self.total = bar.n, bar.total
        # beside a drawn <progress>, the words without tqdm's text bar
        head = f"{bar.desc}: " if bar.desc else ""
        self.words = head + bar.format_meter(**{**bar.format_dict, "bar_format": BAR_WORDS}) if bar.total else self.text

    def __repr__(self) -> str:
        return self.text

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        if self.widget is None:
            return {"text/plain": ""}
        meter = f'<progress value="{self.n}" max="{self.total}"></progress> ' if self.total else ""
        return {**self.widget._repr_mimebundle_(), "text/plain": self.text,
                "text/html": f'<div class="mirage-progress">{meter}<code>{html.escape(self.words)}</code></div>'}


class LineProgress:
    """Progress as whole lines on stderr, at most one every ``every_s`` seconds, plus a last one at the end."""

    def __init__(self, iterable: Iterable[Any] | None = None, *, desc: str = "", total: float | None = None,
                 unit: str = "it", initial: float = 0, quiet: bool = False, every_s: float = LINE_EVERY_S,
                 stream: TextIO | None = None, scale: bool = False) -> None:
        self.iterable, self.desc, self.unit, self.quiet, self.every_s = iterable, desc, unit, quiet, every_s
        self.scale = scale  # tqdm's unit_scale: counts with k, M, G (a byte count reads 190kB, not 190032 B)
        if total is None and isinstance(iterable, Sized):
            total = len(iterable)
        self.total, self.n = total, initial
        self.stream = stream
        self._start = self._last = time.monotonic()
        self._closed = False

    def __repr__(self) -> str:
        return f"LineProgress({self._text()!r})"

    def __iter__(self) -> Iterator[Any]:
        assert self.iterable is not None, "LineProgress was made without an iterable"
        try:
            for item in self.iterable:
                yield item
                self.update()
        finally:
            self.close()

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, n: float = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self._last >= self.every_s:
            self._last = now
            self._write()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self.n or self.total:
                self._write()

    def _text(self) -> str:
        def count(n: float) -> str:
            return tqdm.format_sizeof(n, self.unit) if self.scale else f"{n:g}"

        done = count(self.n) if self.total is None else f"{count(self.n)}/{count(self.total)}"
        unit = "" if self.scale else f" {self.unit}"
        share = f" ({100 * self.n / self.total:.0f} %)" if self.total else ""
        head = f"{self.desc}: " if self.desc else ""
        return f"{head}{done}{unit}{share}, {time.monotonic() - self._start:.0f} s"

    def _write(self) -> None:
        if not self.quiet:
            print(self._text(), file=self.stream or sys.stderr, flush=True)
