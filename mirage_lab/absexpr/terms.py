"""Abstract expressions (SPEC §5.1): hash-consed terms.

A term is an input ``v_i``, an op applied to terms, or a reduction ``sum(n, a)``,
``rms(n, a)``, ``max(n, a)`` over n elements. Partitioning is invisible: only
reduction *degrees* appear. Terms are interned, so structurally equal terms are one
object; ``==`` is identity and hashing is O(1), which is what makes memoised oracles
cheap. ``sum(1, a)`` is ``a`` by definition of the language.

    >>> t = parse("sum(64, mul(v0, v1))")
    >>> t is sum_(64, mul(var(0), var(1)))
    True
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any, Final

from mirage_lab.errors import InputError
from mirage_lab.ir.ops import OPS, Kind

#: the language's unary and binary functions: the heads the op table's ops add (``OpSpec.term``)
UNARY: Final = frozenset(spec.term for spec in OPS.values() if spec.term and spec.kind is Kind.UNARY)
BINARY: Final = frozenset(spec.term for spec in OPS.values() if spec.term and spec.kind is Kind.BINARY)
#: unary heads whose op's attributes are the term's parameters: ``clamp(lo, hi, x)``, ``scale(c, x)``; each
#: parameter value is a different (opaque) function
PARAMETRISED: Final = {spec.term: len(spec.attrs) for spec in OPS.values()
                       if spec.term and spec.kind is Kind.UNARY and spec.attrs}
#: reductions over n elements; the parameter is n
REDUCE: Final = frozenset({"sum", "rms", "max"})
HEADS: Final = UNARY | BINARY | REDUCE | {"input"}

Param = tuple[int | float, ...]


class Term:
    """One interned abstract expression. Build terms with the functions of this module."""

    __slots__ = ("_hash", "_inputs", "_text", "args", "head", "param", "serial")

    head: str
    args: tuple[Term, ...]
    param: Param
    serial: int  # creation order: a cheap total order for canonical sorting
    _hash: int
    _text: str | None
    _inputs: frozenset[int] | None

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        if self._text is None:
            self._text = _format(self)
        return self._text

    def __repr__(self) -> str:
        return f"Term({self})"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    @property
    def degree(self) -> int:
        """n of a reduction ``sum/rms/max(n, ·)``; 1 otherwise."""
        return int(self.param[0]) if self.head in REDUCE else 1

    def subterms(self) -> Iterator[Term]:
        """This term and every term inside it, each once, parents before children."""
        seen: set[Term] = set()
        stack = [self]
        while stack:
            t = stack.pop()
            if t in seen:
                continue
            seen.add(t)
            yield t
            stack.extend(reversed(t.args))

    def inputs(self) -> frozenset[int]:
        """The program inputs this term reads (worked out once: a search asks for a kernel tensor's inputs each time
        it opens a later kernel on it, tens of thousands of times in an attention task)."""
        if self._inputs is None:
            self._inputs = frozenset(int(t.param[0]) for t in self.subterms() if t.head == "input")
        return self._inputs

    @property
    def size(self) -> int:
        """Number of distinct subterms (the DAG size)."""
        return sum(1 for _ in self.subterms())


_TABLE: dict[tuple[str, tuple[Term, ...], Param], Term] = {}
_SERIAL = itertools.count()


def make(head: str, args: tuple[Term, ...] = (), param: Param = ()) -> Term:
    """The unique term ``head(param…, args…)``."""
    key = (head, args, param)
    t = _TABLE.get(key)
    if t is None:
        if head not in HEADS:
            raise InputError(f"unknown abstract-expression head {head!r}; use one of {sorted(HEADS)}")
        t = object.__new__(Term)
        t.head, t.args, t.param = head, args, param
        t.serial = next(_SERIAL)
        t._hash = hash(key)
        t._text = None
        t._inputs = None
        _TABLE[key] = t
    return t


def var(i: int) -> Term:
    """``v_i``, the i-th program input."""
    return make("input", (), (int(i),))


def add(a: Term, b: Term) -> Term:
    return make("add", (a, b))


def mul(a: Term, b: Term) -> Term:
    return make("mul", (a, b))


def div(a: Term, b: Term) -> Term:
    return make("div", (a, b))


def pow_(a: Term, b: Term) -> Term:
    return make("pow", (a, b))


def unary(name: str, a: Term, param: Param = ()) -> Term:
    if name not in UNARY:
        raise InputError(f"{name!r} is not a unary function of the language; use one of {sorted(UNARY)}")
    return make(name, (a,), tuple(param))


def reduce(name: str, n: int, a: Term) -> Term:
    """``name(n, a)``: a reduction over n elements; ``sum(1, a)`` is ``a``."""
    n = int(n)
    if n < 1:
        raise InputError(f"a reduction degree must be ≥ 1, got {name}({n}, …)")
    if n == 1 and name == "sum":
        return a
    return make(name, (a,), (n,))


def sum_(n: int, a: Term) -> Term:
    return reduce("sum", n, a)


def rms(n: int, a: Term) -> Term:
    return reduce("rms", n, a)


def max_(n: int, a: Term) -> Term:
    return reduce("max", n, a)


class TermAlgebra:
    """The algebra the op table's abstract rules are written against (``OpSpec.abstract``)."""

    var = staticmethod(var)
    add = staticmethod(add)
    mul = staticmethod(mul)
    div = staticmethod(div)
    pow = staticmethod(pow_)
    unary = staticmethod(unary)
    reduce = staticmethod(reduce)


ALGEBRA: Final = TermAlgebra()


# --------------------------------------------------------------------------- text form


def _num(x: int | float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _format(t: Term) -> str:
    if t.head == "input":  # v-1 stands for the constant 1, which normal forms can need when printed
        return f"v{t.param[0]}" if t.param[0] >= 0 else "1"
    parts = [_num(p) for p in t.param] + [str(a) for a in t.args]
    return f"{t.head}({', '.join(parts)})"


_TOKEN = re.compile(r"\s*(?:(v\d+)|([a-z_]+)|(-?\d+(?:\.\d*)?(?:e-?\d+)?)|([(),]))")
MAX_TEXT = 100_000


def parse(text: str) -> Term:
    """Read a term from its text form, e.g. ``"div(v0, rms(4096, v0))"``."""
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise InputError(f"expected an expression string of at most {MAX_TEXT} characters")
    tokens = _tokens(text)
    pos, term = _parse_at(tokens, 0, text)
    if pos != len(tokens):
        raise InputError(f"unexpected {tokens[pos]!r} after a complete expression in {text!r}")
    return term


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise InputError(f"cannot read {text[pos:pos + 12]!r} in {text!r}; write terms like "
                             "sum(64, mul(v0, v1))")
        out.append(m.group().strip())
        pos = m.end()
    return out


def _parse_at(tokens: list[str], pos: int, text: str) -> tuple[int, Term]:
    if pos >= len(tokens):
        raise InputError(f"expression {text!r} ends too early")
    tok = tokens[pos]
    if tok.startswith("v") and tok[1:].isdigit():
        return pos + 1, var(int(tok[1:]))
    if tok not in HEADS or tok == "input":
        raise InputError(f"unknown function {tok!r} in {text!r}; use one of {sorted(HEADS - {'input'})}")
    if pos + 1 >= len(tokens) or tokens[pos + 1] != "(":
        raise InputError(f"{tok} must be followed by '(' in {text!r}")
    pos += 2
    params: list[int | float] = []
    args: list[Term] = []
    while True:
        if pos < len(tokens) and re.fullmatch(r"-?\d+(?:\.\d*)?(?:e-?\d+)?", tokens[pos]):
            v = float(tokens[pos])
            params.append(int(v) if v.is_integer() and "." not in tokens[pos] else v)
            pos += 1
        else:
            pos, a = _parse_at(tokens, pos, text)
            args.append(a)
        if pos >= len(tokens):
            raise InputError(f"missing ')' in {text!r}")
        if tokens[pos] == ")":
            pos += 1
            break
        if tokens[pos] != ",":
            raise InputError(f"expected ',' or ')' but found {tokens[pos]!r} in {text!r}")
        pos += 1
    return pos, _build(tok, tuple(params), tuple(args), text)


def _build(head: str, params: Param, args: tuple[Term, ...], text: str) -> Term:
    want_args = 2 if head in BINARY else 1
    want_params = 1 if head in REDUCE else PARAMETRISED.get(head, 0)
    if len(args) != want_args or len(params) != want_params:
        raise InputError(f"{head} takes {want_params} number(s) and {want_args} expression(s), got "
                         f"{len(params)} and {len(args)} in {text!r}")
    if head in REDUCE:
        return reduce(head, int(params[0]), args[0])
    if head in UNARY:
        return unary(head, args[0], params)
    return make(head, args)
