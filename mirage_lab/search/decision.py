"""One step of the search: a ``Decision``, frozen, with its JSON form encoded and decoded here only.

Every search state is reached from its parent by one decision, and every node can be rebuilt by replaying the
decisions on its path (``replay``). There are four kinds; their JSON form (a list, as in every run folder's
events, task prefixes and candidate files) is:

* ``KernelOp``  ``["k", op, [inputs], {attrs}]`` — a kernel op on kernel tensors;
* ``OpenBlock`` ``["c", [inputs], grid, [imaps], [fmaps], F]`` — open a customized op: its loaders;
* ``BlockOp``   ``["b", op, [inputs], {attrs}]`` — a block op on block tensors;
* ``Close``     ``["s", omap]`` — close the block graph: save every dangling block tensor, in order.

Within a walk decisions are these objects; where they cross a boundary (events, task prefixes, candidate
files, resume points) they are their JSON form, and every function that takes decisions takes either
(``decoded``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from mirage_lab.errors import FormatError
from mirage_lab.ir.ops import Op

Triple = tuple[int, int, int]
#: an op's attributes as (name, value) pairs, in the order the JSON form lists them (so decisions hash)
Attrs = tuple[tuple[str, Any], ...]
_OPS = frozenset(op.value for op in Op)


@dataclass(frozen=True, slots=True)
class Decision:
    """One step from a search state to a child (the base of the four kinds)."""

    kind: ClassVar[str]

    def to_json(self) -> list[Any]:
        raise NotImplementedError

    @staticmethod
    def from_json(data: Any) -> Decision:
        """The decision a JSON list encodes; a ``FormatError`` naming what is wrong when it encodes none."""
        if isinstance(data, Decision):
            return data
        if not isinstance(data, list | tuple) or not data or data[0] not in _KINDS:
            raise FormatError(f"a search decision is a list starting with one of {', '.join(map(repr, _KINDS))}, "
                              f"got {_shown(data)}")
        return _KINDS[data[0]].decode(data)

    @classmethod
    def decode(cls, data: Sequence[Any]) -> Decision:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class _OpDecision(Decision):
    op: str
    inputs: tuple[int, ...]
    attrs: Attrs = ()

    @property
    def attributes(self) -> dict[str, Any]:
        return dict(self.attrs)

    def to_json(self) -> list[Any]:
        return [self.kind, self.op, list(self.inputs), dict(self.attrs)]

    @classmethod
    def decode(cls, data: Sequence[Any]) -> Decision:
        _length(data, 4)
        _, op, inputs, attrs = data
        if op not in _OPS:
            raise FormatError(f"search decision {_shown(data)}: unknown op {op!r}")
        if not isinstance(attrs, dict):
            raise FormatError(f"search decision {_shown(data)}: its attributes must be an object")
        return cls(op, _ints(data, inputs, "inputs"), tuple(attrs.items()))


@dataclass(frozen=True, slots=True)
class KernelOp(_OpDecision):
    """A kernel op on kernel tensors (their indices in creation order)."""

    kind: ClassVar[str] = "k"


@dataclass(frozen=True, slots=True)
class BlockOp(_OpDecision):
    """A block op on the open block graph's tensors (their indices in creation order)."""

    kind: ClassVar[str] = "b"


@dataclass(frozen=True, slots=True)
class OpenBlock(Decision):
    """Open a customized op on kernel tensors ``inputs``: its grid, one imap and fmap per input, the for-loop
    range; its loaders are the block graph's first tensors."""

    inputs: tuple[int, ...]
    grid: Triple
    imaps: tuple[Triple, ...]
    fmaps: tuple[int, ...]
    frange: int
    kind: ClassVar[str] = "c"

    def to_json(self) -> list[Any]:
        return [self.kind, list(self.inputs), list(self.grid), [list(m) for m in self.imaps], list(self.fmaps),
                self.frange]

    @classmethod
    def decode(cls, data: Sequence[Any]) -> Decision:
        _length(data, 6)
        _, inputs, grid, imaps, fmaps, frange = data
        ins = _ints(data, inputs, "inputs")
        if not isinstance(imaps, list | tuple) or len(imaps) != len(ins):
            raise FormatError(f"search decision {_shown(data)}: it needs one imap per input")
        maps = tuple(_triple(data, m, "imap") for m in imaps)
        fm = _ints(data, fmaps, "fmaps")
        if len(fm) != len(ins):
            raise FormatError(f"search decision {_shown(data)}: it needs one fmap per input")
        if not _is_int(frange):
            raise FormatError(f"search decision {_shown(data)}: its for-loop range must be an integer")
        return cls(ins, _triple(data, grid, "grid"), maps, fm, frange)


@dataclass(frozen=True, slots=True)
class Close(Decision):
    """Close the open block graph: a saver with ``omap`` for every block tensor no op reads, in order."""

    omap: Triple
    kind: ClassVar[str] = "s"

    def to_json(self) -> list[Any]:
        return [self.kind, list(self.omap)]

    @classmethod
    def decode(cls, data: Sequence[Any]) -> Decision:
        _length(data, 2)
        return cls(_triple(data, data[1], "omap"))


_KINDS: dict[str, type[Decision]] = {c.kind: c for c in (KernelOp, OpenBlock, BlockOp, Close)}


def decoded(decisions: Iterable[Decision | Sequence[Any]]) -> list[Decision]:
    """Decisions given as objects or in their JSON form, as objects."""
    return [d if isinstance(d, Decision) else Decision.from_json(d) for d in decisions]


def encoded(decisions: Iterable[Decision]) -> list[list[Any]]:
    """Decisions in their JSON form."""
    return [d.to_json() for d in decisions]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _ints(data: Any, v: Any, what: str) -> tuple[int, ...]:
    if not isinstance(v, list | tuple) or not all(_is_int(x) for x in v):
        raise FormatError(f"search decision {_shown(data)}: its {what} must be a list of integers")
    return tuple(v)


def _triple(data: Any, v: Any, what: str) -> Triple:
    t = _ints(data, v, what)
    if len(t) != 3:
        raise FormatError(f"search decision {_shown(data)}: its {what} must hold 3 integers")
    return t


def _length(data: Sequence[Any], n: int) -> None:
    if len(data) != n:
        raise FormatError(f"search decision {_shown(data)}: a {data[0]!r} decision has {n} entries, not {len(data)}")


def _shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 120 else text[:117] + "..."
