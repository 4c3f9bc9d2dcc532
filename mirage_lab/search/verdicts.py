"""A run's oracle verdicts (``verdicts.json.gz``), tallied as its tasks finish.

Every task returns the verdicts its walk met: per pruned expression the oracle's reason and rules, and how many
prunes named it. The run's file holds them summed over all tasks. Summed and encoded after the last task, they were
half of LoRA b1's tail (56 504 expressions over 10 694 tasks: 0.27 s to merge, 0.19–0.23 s to encode and write), time
in which every worker of a cluster waits; tallied as results arrive, they cost the parent a little per result,
while the workers run, and the tail only joins the text and compresses it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

_SEPARATORS = (",", ":")


class VerdictTally:
    """Verdicts summed over walks (``add``) and written as the JSON object of ``events.merge_verdicts``'s dict, keys
    sorted (tasks finish in any order). An expression's verdict is encoded once, when first seen: its count is the
    only part that changes, and its reason and rules are a few sentences shared by thousands of expressions."""

    def __init__(self) -> None:
        self._head: dict[str, str] = {}  # expression → its JSON member up to the count: '"add(v0, v0)":{...,"n":'
        self._n: dict[str, int] = {}
        self._said: dict[tuple[Any, ...], str] = {}  # a verdict's fields (all but the count) → their JSON text

    def add(self, verdicts: Mapping[str, Mapping[str, Any]]) -> None:
        """Count one walk's verdicts in (a ``Packed`` walk's from its lists, without a dict per verdict)."""
        n = self._n
        if isinstance(verdicts, Packed):
            for expr, count, says in zip(verdicts.exprs, verdicts.counts, verdicts.says, strict=True):
                if expr in n:
                    n[expr] += count
                else:
                    self._head[expr] = f"{json.dumps(expr)}:{{{self._fields(verdicts.said[says])}\"n\":"
                    n[expr] = count
            return
        for expr, v in verdicts.items():
            if expr in n:
                n[expr] += v.get("n", 0)
            else:
                self._head[expr] = f"{json.dumps(expr)}:{{{self._fields(v)}\"n\":"
                n[expr] = v.get("n", 0)

    def _fields(self, v: Mapping[str, Any]) -> str:
        key = _says(v)
        text = self._said.get(key)
        if text is None:
            text = self._said[key] = "".join(f"{json.dumps(k)}:{json.dumps(x, separators=_SEPARATORS)},"
                                            for k, x in v.items() if k != "n")
        return text

    def __len__(self) -> int:
        return len(self._n)

    def __repr__(self) -> str:
        return f"VerdictTally({len(self)} expressions, {sum(self._n.values())} prunes)"

    def json(self) -> str:
        """The verdicts as one JSON object, ``{expression: {reason, rules, n}}``, keys sorted."""
        return "{" + ",".join(f"{self._head[e]}{self._n[e]}}}" for e in sorted(self._n)) + "}"

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """The verdicts as a dict (what ``RunFolder.verdicts`` reads back)."""
        out: dict[str, dict[str, Any]] = json.loads(self.json())
        return out


class Packed(Mapping[str, dict[str, Any]]):
    """A walk's verdicts as its worker returns them: the expressions and their counts as lists, and for each the
    index of what it says (its reason and rules) in a table of what they say. Unpickling one dict per verdict was
    most of what taking a result cost the parent of a cluster: 1 500 of LoRA b1's task results loaded in 254 ms,
    in 127 ms packed, in 10 ms without verdicts. The tally reads the lists (``VerdictTally.add``); anything else
    sees the ``{expression: {reason, rules, n}}`` mapping they stand for."""

    __slots__ = ("_at", "counts", "exprs", "said", "says")

    def __init__(self, verdicts: Mapping[str, Mapping[str, Any]]) -> None:
        table: dict[tuple[Any, ...], int] = {}
        self.exprs: list[str] = list(verdicts)
        self.counts: list[int] = []
        self.says: list[int] = []
        self.said: list[dict[str, Any]] = []
        for v in verdicts.values():
            key = _says(v)
            at = table.get(key)
            if at is None:
                at = table[key] = len(self.said)
                self.said.append({k: x for k, x in v.items() if k != "n"})
            self.counts.append(v.get("n", 0))
            self.says.append(at)
        self._at: dict[str, int] | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        return _packed, (self.exprs, self.counts, self.says, self.said)

    def __getitem__(self, expr: str) -> dict[str, Any]:
        if self._at is None:
            self._at = {e: i for i, e in enumerate(self.exprs)}
        i = self._at[expr]
        return {**self.said[self.says[i]], "n": self.counts[i]}

    def __iter__(self) -> Iterator[str]:
        return iter(self.exprs)

    def __len__(self) -> int:
        return len(self.exprs)

    def __repr__(self) -> str:
        return f"Packed({len(self)} expressions, {len(self.said)} reasons)"


def _packed(exprs: list[str], counts: list[int], says: list[int], said: list[dict[str, Any]]) -> Packed:
    """A ``Packed`` from its lists, as pickle rebuilds one."""
    out = Packed.__new__(Packed)
    out.exprs, out.counts, out.says, out.said, out._at = exprs, counts, says, said, None
    return out


def _says(v: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a verdict says (all its fields but the count), as a key."""
    return tuple((k, _frozen(x)) for k, x in v.items() if k != "n")


def _frozen(x: Any) -> Any:
    """A verdict field as a memo key: its rules (a list of names) as a tuple, anything else unhashable as JSON."""
    if isinstance(x, list) and all(isinstance(i, str) for i in x):
        return tuple(x)
    return json.dumps(x, sort_keys=True) if isinstance(x, list | dict) else x
