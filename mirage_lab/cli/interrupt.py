"""Ctrl-C on the command line: one line on stderr and exit status 130, wherever the command was."""

from __future__ import annotations

from typing import Any

LINE = "mirage-lab: interrupted (a search keeps its finished tasks; run it again to resume)"
STATUS = 130


def stop_if_interrupted(report: Any) -> None:
    """Stop the command when its search was interrupted.

    The library returns an interrupted search's partial result (a notebook's stop button keeps what the search
    found); a command stops as Ctrl-C stops it anywhere else, rather than report and save half a search.
    """
    if report.stop_reason == "interrupted":
        raise KeyboardInterrupt
