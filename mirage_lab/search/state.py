"""The lean state a walk mutates on the way down and restores on the way up, and what a walk produces.

A state is plain lists of ``T`` (kernel tensors, and the open ``Block``'s tensors), so a step costs a few list
operations; graphs are built through the validating builders only for candidates (``replay``).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mirage_lab.absexpr.terms import Term, var
from mirage_lab.ir.dtype import DType
from mirage_lab.ir.graph import KernelGraph, saver_dims
from mirage_lab.ir.ops import Kind, Level, Op
from mirage_lab.ir.tensor import Dims
from mirage_lab.search.decision import Attrs, Decision
from mirage_lab.search.events import EventLog
from mirage_lab.search.tiling import Parts

#: an op's canonical key (SPEC §7.4): its operands' positions, then its numeric code
Key = tuple[tuple[int, ...], int]  # (operand indices, the op's ``OpInfo.ident``)
VARIANTS = 1 << 20  # attribute variants of one op code an ``OpInfo.ident`` can tell apart
CUSTOMIZED_CODE = Op.CUSTOMIZED.spec.code(Level.KERNEL) * VARIANTS  # as an ``OpInfo.ident``
#: (``folds.py``) 1 added to program input i at the origin, 1 taken away at position s of dim d: (i, d, s)
Move = tuple[int, int, int]


class StopSearch(Exception):
    """A budget ran out: ``reason`` is "time limit", "state limit" or "result limit"."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(slots=True)
class T:
    """A tensor of a search state."""

    dims: Dims
    dtype: DType
    expr: Term
    post: bool = False  # block level: post-loop (produced by an accumulator)
    source: bool = False  # a program input (kernel) or a loader (block)
    uses: int = 0
    part: Parts | None = None  # block level, ``index_checks``: the axes partitioning each dim (``tiling``)
    sig: int = -1  # block level: one number per (dims, dtype, part, expr), for the walk's block memo
    # ``folded_inputs`` (``folds.py``): the program inputs it reads, the input moves it cannot see, and (a loader
    # of a program input split by the for-loop) the move an accumulator summing its tiles cannot see
    deps: frozenset[int] = frozenset()
    blind: frozenset[Move] = frozenset()
    fold: Move | None = None


#: a viable block op: operand indices, output dims, output expressions, shared-memory bytes it adds, parts
Entry = tuple[tuple[int, ...], list[Dims], tuple[Term, ...], int, tuple[Parts, ...] | None]


def entry_index(e: Entry) -> tuple[int, ...]:
    return e[0]


@dataclass
class Block:
    """The open block graph of a customized op being built."""

    inputs: tuple[int, ...]
    grid: tuple[int, int, int]
    frange: int
    tensors: list[T]
    smem: int
    key: Key  # the customized op's canonical key, checked when it was opened
    last: Key | None = None
    n_ops: int = 0
    free: int = 0  # of ``n_ops``, the norms of loaded tiles the cap does not count (``SearchConfig.free_loader_norms``)
    serial: int = 0  # which opening this is, within one walk (semantic deduplication)
    # the last kernel op the cap allows (the ``goal`` check): how many tensors it must save, and the normal
    # forms of the kernel tensors that stay dangling beside them (all must be the program's outputs)
    need: int | None = None
    left: tuple[int, ...] = ()
    unreachable: str | None = None  # why the last kernel op can never produce the program's outputs
    # per open state on the current path: (tensor count, per block op its viable entries), see ``viable``
    viable: list[tuple[int, list[list[Entry]] | None]] = field(default_factory=list)


class OpInfo:
    """What the hot loops need of an op, looked up once."""

    __slots__ = ("accum", "arity", "attr_items", "attrs", "code", "commutative", "ident", "name", "op", "shape",
                 "smem_counted")

    def __init__(self, op: Op, level: Level, attrs: dict[str, Any] | None = None,
                 clamp: tuple[float, float] = (0.0, 6.0)) -> None:
        spec = op.spec
        self.op, self.name, self.arity, self.code = op, op.value, spec.arity, spec.code(level)
        self.shape, self.smem_counted, self.accum = spec.shape, spec.smem_counted, spec.kind is Kind.ACCUM
        self.commutative = spec.commutative and spec.arity == 2
        self.attrs = attrs if attrs is not None else (
            {"min": float(clamp[0]), "max": float(clamp[1])} if op is Op.CLAMP else {})
        self.attr_items: Attrs = tuple(self.attrs.items())
        # the op with its attributes, as one int for the order keys and memos: mul_scalar by 0.5 and by 0.7 are two
        # ops. It orders as the op codes do; variants of one op by a stable hash of their attributes (the same in
        # every process, so a task replayed elsewhere orders its ops as the walk that made it)
        variant = zlib.crc32(repr(self.attr_items).encode()) % VARIANTS if self.attr_items else 0
        self.ident = self.code * VARIANTS + variant


def op_infos(names: Sequence[str], level: Level, program: KernelGraph,
             clamp: tuple[float, float]) -> list[OpInfo]:
    """The ops the search may apply at ``level``. An op with a constant the search cannot invent is offered once
    per constant the program itself uses: ``mul_scalar`` with each of the program's scale factors (none when the
    program scales nothing); ``clamp`` with the config's bounds and each pair the program clamps to."""
    infos = []
    for name in names:
        op = Op(name)
        if op is Op.MUL_SCALAR:
            infos += [OpInfo(op, level, {"scalar": c}) for (c,) in program_attrs(program, op, ("scalar",))]
        elif op is Op.CLAMP:
            bounds = dict.fromkeys([(float(clamp[0]), float(clamp[1])), *program_attrs(program, op, ("min", "max"))])
            infos += [OpInfo(op, level, {"min": lo, "max": hi}) for lo, hi in bounds]
        else:
            infos.append(OpInfo(op, level, clamp=clamp))
    return infos


def program_attrs(program: KernelGraph, op: Op, names: tuple[str, ...]) -> list[tuple[float, ...]]:
    """The distinct values of ``op``'s attributes ``names`` in ``program`` (at either level), in ascending order."""
    return sorted({tuple(float(n.attr(a)) for a in names) for n in program.every_node() if n.op is op})


@dataclass
class Candidate:
    """A verified μGraph found by the search."""

    graph: KernelGraph
    hash: str
    decisions: list[Decision]
    node: str
    verification: dict[str, Any]
    found_s: float


@dataclass
class Outcome:
    """What one walk produced: its events, verified candidates, tasks (frontier mode), time split. A task is
    (its parent node id, the decisions to its root in their JSON form: tasks cross process boundaries)."""

    events: EventLog = field(default_factory=EventLog)
    candidates: list[Candidate] = field(default_factory=list)
    tasks: list[tuple[str, list[Any]]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=lambda: {"oracle": 0.0, "verification": 0.0,
                                                                "enumeration": 0.0})
    stop_reason: str = "complete"

    @property
    def states(self) -> int:
        return self.events.states


def saved(b: Block, dangling: list[int], omap: tuple[int, ...]) -> list[T]:
    """The kernel tensors a block graph's savers write with ``omap``."""
    return [T(saver_dims(t.dims, omap, b.grid), t.dtype, t.expr, deps=t.deps, blind=t.blind)
            for t in (b.tensors[i] for i in dangling)]


def input_terms(n: int) -> list[Term]:
    return [var(i) for i in range(n)]
