"""Fixtures of the drop-in API's tests."""

from __future__ import annotations

import pytest

from mirage_lab.compat import notices, running


@pytest.fixture
def interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls run the interpreter, as on a machine without a GPU, so outputs equal ``mi.interpret``'s exactly."""
    monkeypatch.setattr(running, "cupy_available", lambda: False)


@pytest.fixture
def fresh_notices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Notices said once per process are said again, once, in this test."""
    monkeypatch.setattr(notices, "_SAID", set())
