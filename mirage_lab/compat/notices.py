"""One-line notices for Mirage calls that mean something else, or nothing, in mirage-lab.

They are warnings of their own category, so a script sees each once per place it is raised and a user can
silence them (``warnings.simplefilter("ignore", ml.CompatNotice)``) or make them errors in tests.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from types import FrameType

from mirage_lab.errors import MirageError, UnsupportedOpError

__all__ = ["CompatNotice", "UnsupportedFeatureError", "notice", "notice_once"]


class CompatNotice(UserWarning):
    """A keyword or call of the reference's API that mirage-lab accepts but honours differently."""


class UnsupportedFeatureError(UnsupportedOpError):
    """A part of the reference's API that mirage-lab does not provide; the message names the alternative."""


_SAID: set[str] = set()


_PACKAGE = str(Path(__file__).resolve().parents[1])


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside mirage_lab: the notice points at the user's line."""
    frame: FrameType | None = sys._getframe(2)
    level = 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def notice(message: str) -> None:
    warnings.warn(message, CompatNotice, stacklevel=_caller_level())


def notice_once(key: str, message: str) -> None:
    """``notice`` the first time ``key`` comes up in this process."""
    if key not in _SAID:
        _SAID.add(key)
        notice(message)


def unsupported(what: str, instead: str) -> MirageError:
    return UnsupportedFeatureError(f"{what} is not supported by mirage-lab; {instead}")
