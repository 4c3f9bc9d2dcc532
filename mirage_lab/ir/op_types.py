"""The vocabulary of an op declaration: levels, kinds, what rules receive, and the records an op declares.

``ir/ops.py`` declares every op with these; the rule modules (``shape_rules``, ``op_rules``) are written
against them, so nothing here knows any particular op.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Dims = tuple[int, ...]
AttrValue = int | float | str | tuple[int, ...]


class Level(enum.Enum):
    KERNEL = "kernel"
    BLOCK = "block"
    THREAD = "thread"


class Kind(enum.Enum):
    """Families of ops; passes dispatch on these rather than on individual ops."""

    IO = "io"
    UNARY = "unary"
    BINARY = "binary"
    MATMUL = "matmul"
    REDUCTION = "reduction"
    NORM = "norm"
    CONCAT = "concat"
    ACCUM = "accum"
    CUSTOMIZED = "customized"


@dataclass(frozen=True)
class ShapeContext:
    """What a shape rule may need beyond its inputs: the level and the block graph's X."""

    level: Level
    reduction_dimx: int = 64


@dataclass(frozen=True)
class EvalArgs:
    """What an evaluation rule may need besides its input values."""

    attrs: Mapping[str, Any]
    in_dims: tuple[Dims, ...]
    reduction_dimx: int = 64
    forloop_range: int = 1  # only abstract rules read it (accumulators)

    def axis(self, dim: int, operand: int = 0) -> int:
        """The negative axis of tensor dim ``dim`` (values may carry leading batch axes)."""
        return dim - len(self.in_dims[operand])


ShapeRule = Callable[[ShapeContext, Sequence[Dims], Mapping[str, Any]], list[Dims]]
EvalRule = Callable[..., Any]
# (algebra, args, *input terms) -> output term, or a tuple of terms for multi-output ops (SPEC §5.2)
AbstractRule = Callable[..., Any]
#: the degree bound of an op's output from its inputs' bounds (``verify/degree.py``, SPEC §6.5)
DegreeRule = Callable[[Sequence[int]], int]


@dataclass(frozen=True)
class AccumRule:
    """How a for-loop accumulator combines iterations (SPEC §3.3).

    ``contrib`` reduces one iteration's tile; ``combine`` is "sum", "max" or "rescale";
    ``finalize`` post-processes the combined value given ``count`` = F · (reduced last dim), and
    ``cuda_finalize`` and ``triton_finalize`` are the same in CUDA and Triton: templates of ``{v}`` (the combined
    value) and ``{count}``. ``linear``: ``contrib`` is linear in the tile, so a "sum" accumulator is a function
    of the tiles' sum over the loop (``search/folds.py``).
    """

    contrib: Callable[[Any, Any, int], Any]
    combine: str = "sum"
    linear: bool = True
    finalize: Callable[[Any, Any, int], Any] | None = None
    cuda_finalize: str | None = None
    triton_finalize: str | None = None


Standing = Literal["exact", "conjecture", "heuristic", "unsupported"]


@dataclass(frozen=True)
class FieldRule:
    """An op's standing in the finite-field verifier (SPEC §6.2).

    * ``exact``: its field rule is a ring identity, so the Schwartz–Zippel bound holds;
    * ``conjecture`` / ``heuristic``: it has a deterministic field rule that is no identity (``reason`` says
      what it computes); a verification using it reports its error bound as heuristic;
    * ``unsupported``: no field rule at all; graphs using it are decided by the float64 check alone.
    """

    standing: Standing
    reason: str = ""

    def __post_init__(self) -> None:
        if self.standing not in ("exact", "conjecture", "heuristic", "unsupported"):
            raise ValueError(f"unknown field standing {self.standing!r}")
        if self.standing != "exact" and not self.reason:
            raise ValueError(f"a {self.standing} field rule must say why it is not exact")

    @property
    def heuristic(self) -> bool:
        """Whether using the op makes a verification's error bound heuristic."""
        return self.standing != "exact"


EXACT = FieldRule("exact")



@dataclass(frozen=True)
class SearchUse:
    """Whether, and at which levels, the search applies an op (SPEC §7.1; ``search/space.py`` reads it).

    * ``default``: the levels where the default op lists offer it;
    * ``when_used``: the further levels where it is offered whenever the program uses it (with the program's
      attributes, as ``mul_scalar``'s factors), so the space holds every program (issue 37);
    * ``presets``: the presets that add it to their block lists (``attention``: accum_sum_todimx);
    * ``via``: the block ops the search writes it with instead, for an op it never applies itself (a kernel
      reduction is an accumulator over a for-loop): the space holds the op when one of them is offered.
    """

    default: frozenset[Level] = frozenset()
    when_used: frozenset[Level] = frozenset()
    presets: tuple[str, ...] = ()
    via: tuple[str, ...] = ()

    def offered(self, level: Level, used: bool) -> bool:
        """Whether the search offers the op at ``level`` by default, or because the program uses it."""
        return level in self.default or (used and level in self.when_used)


#: an op the search never applies and writes no other way (loaders, savers: the walk's own structure)
NOT_SEARCHED = SearchUse()

@dataclass(frozen=True)
class BuilderRule:
    """An op's builder method, under the reference's name and signature (``A``, ``B`` for tensors).

    ``generated``: the method is made from this row (``ir/builder_methods.py``): its tensors, then its float
    ``scalars`` as (parameter, attribute) pairs, each checked finite, then ``check`` on the attributes. Ops whose
    methods do more (loaders, reductions with their dims, accumulators) are written in ``ir/builder.py`` under
    ``name`` (``kernel_name`` where the kernel level's differs), and a test holds them to it.
    """

    name: str
    tensors: tuple[str, ...] = ()
    scalars: tuple[tuple[str, str], ...] = ()
    generated: bool = True
    kernel_name: str | None = None
    check: Callable[[dict[str, float]], None] | None = None

    @property
    def attributes(self) -> tuple[str, ...]:
        """The attributes the scalars set, in parameter order (how JSON replay and ``to_python`` call the method)."""
        return tuple(attr for _, attr in self.scalars)

    def method_name(self, level: Level) -> str:
        return self.kernel_name if level is Level.KERNEL and self.kernel_name else self.name
