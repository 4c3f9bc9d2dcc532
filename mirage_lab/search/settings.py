"""What each ``SearchConfig`` setting accepts, as data: its type and range, checked the same way whether the
value comes from Python, from a JSON file or from the command line's ``--set KEY=VALUE``.

A rule checks a value and says what it accepts (``Int(1)`` is "an integer ≥ 1"), so every error names the
setting, the value it got and what would have been accepted. ``parse`` reads the command line's text:
booleans are only ``true`` / ``false`` (any case), so ``--set pruning=False`` means False, never the
truthy string "False"; numbers must be finite; lists are JSON.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from mirage_lab.errors import InputError


class Rule:
    """One setting's accepted values."""

    def describe(self) -> str:
        raise NotImplementedError

    def ok(self, value: Any) -> bool:
        raise NotImplementedError

    def parse(self, text: str) -> Any:
        """The value a command-line text means (JSON, except where a rule reads text its own way)."""
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text


@dataclass(frozen=True)
class Int(Rule):
    low: int
    high: int | None = None

    def describe(self) -> str:
        return f"an integer ≥ {self.low}" + ("" if self.high is None else f" and ≤ {self.high}")

    def ok(self, value: Any) -> bool:
        return (isinstance(value, int) and not isinstance(value, bool) and value >= self.low
                and (self.high is None or value <= self.high))


@dataclass(frozen=True)
class Real(Rule):
    """A finite number; ``positive`` excludes zero."""

    positive: bool = False

    def describe(self) -> str:
        return "a finite number > 0" if self.positive else "a finite number"

    def ok(self, value: Any) -> bool:
        return (isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
                and (not self.positive or value > 0))


class Bool(Rule):
    def describe(self) -> str:
        return "true or false"

    def ok(self, value: Any) -> bool:
        return isinstance(value, bool)

    def parse(self, text: str) -> Any:
        return {"true": True, "false": False}.get(text.strip().lower(), text)


class Text(Rule):
    def describe(self) -> str:
        return "a text"

    def ok(self, value: Any) -> bool:
        return isinstance(value, str)

    def parse(self, text: str) -> Any:
        value = super().parse(text)
        return value if isinstance(value, str) else text


@dataclass(frozen=True)
class Choice(Text):
    values: tuple[str, ...]

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)

    def ok(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.values


@dataclass(frozen=True)
class Many(Rule):
    """A list of values that each satisfy ``item``; ``length`` fixes its length (a pair, a triple)."""

    item: Rule
    length: int | None = None
    nonempty: bool = False

    def describe(self) -> str:
        if self.length is not None:
            return f"a list of {self.length} values, each {self.item.describe()}"
        return f"a{' non-empty' if self.nonempty else ''} list whose entries are each {self.item.describe()}"

    def ok(self, value: Any) -> bool:
        return self.problem(value) is None

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value``, pointing at the first bad entry; None when it is accepted."""
        if not isinstance(value, tuple | list):
            return "it is not a list"
        if self.length is not None and len(value) != self.length:
            return f"it has {len(value)} entries"
        if self.nonempty and not value:
            return "it is empty"
        for v in value:
            inner = self.item.problem(v) if isinstance(self.item, Many) else None
            if inner is not None or not self.item.ok(v):
                return f"its entry {_shown(v)} is not {self.item.describe()}" + (f": {inner}" if inner else "")
        return None


@dataclass(frozen=True)
class Optional(Rule):
    """``None`` (JSON null, or ``none`` / ``null`` on the command line) or a value of ``rule``."""

    rule: Rule

    def describe(self) -> str:
        return f"null or {self.rule.describe()}"

    def ok(self, value: Any) -> bool:
        return value is None or self.rule.ok(value)

    def parse(self, text: str) -> Any:
        return None if text.strip().lower() in ("none", "null") else self.rule.parse(text)


def check(name: str, value: Any, rule: Rule) -> None:
    if not rule.ok(value):
        inner = rule.rule if isinstance(rule, Optional) and value is not None else rule
        why = inner.problem(value) if isinstance(inner, Many) else None
        raise InputError(f"SearchConfig.{name} must be {rule.describe()}, got {_shown(value)}"
                         + (f" ({why})" if why else ""))


def _shown(value: Any) -> str:
    text = repr(value)
    text = text if len(text) <= 80 else text[:77] + "..."
    return f"{text} (a {type(value).__name__})" if isinstance(value, str) else text
