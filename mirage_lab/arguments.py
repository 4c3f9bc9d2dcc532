"""Arguments of public functions: an unknown or mistyped keyword, a missing or an extra argument is an
``ArgumentError`` (a ``MirageError`` and a ``TypeError``) that names it, suggests the closest parameter and
shows how to call the function, instead of Python's bare ``TypeError``.

The check costs nothing on a good call: the function runs as it is, and only when it raises ``TypeError``
is the call bound against its signature; if that binding fails the function never ran (Python refuses
before entering it), so the error is the caller's arguments, not something inside.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from mirage_lab.errors import ArgumentError

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)


def checked(fn: F) -> F:
    """Wrap a public function (or ``__init__``) so that a bad call raises ``ArgumentError``."""
    sig = inspect.signature(fn)
    name = fn.__qualname__.removesuffix(".__init__")

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            try:
                sig.bind(*args, **kwargs)
            except TypeError:
                raise ArgumentError(explain(name, sig, kwargs, e)) from None
            raise

    return call  # type: ignore[return-value]


def checked_methods(cls: C) -> C:
    """``checked`` on a class's ``__init__`` and every public method it defines."""
    for attr, value in list(vars(cls).items()):
        if inspect.isfunction(value) and (attr == "__init__" or not attr.startswith("_")):
            setattr(cls, attr, checked(value))
        elif isinstance(value, classmethod | staticmethod) and not attr.startswith("_"):
            setattr(cls, attr, type(value)(checked(value.__func__)))
    return cls


def did_you_mean(name: str, names: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for a mistyped ``name`` among ``names``, or ``""``: every unknown-name hint."""
    match = difflib.get_close_matches(name, list(names), n=1)
    return f" (did you mean {match[0]!r}?)" if match else ""


def explain(name: str, sig: inspect.Signature, kwargs: dict[str, Any], error: TypeError) -> str:
    params = [p for p in sig.parameters.values() if p.name not in ("self", "cls")]
    names = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    strange = ", ".join(f"{k!r}{did_you_mean(k, names)}" for k in kwargs if k not in names)
    usage = f"{name}({', '.join(_shown(p) for p in params)})"
    usage = f"call it as {usage}" if len(usage) <= 160 else f"its parameters are {', '.join(names)}"
    if strange and not any(p.kind is p.VAR_KEYWORD for p in params):
        return f"{name}() got unknown keyword argument(s) {strange}; {usage}"
    detail = str(error).split("() ", 1)[-1] if "() " in str(error) else str(error)
    return f"{name}(): {detail}{f'; got {strange}' if strange else ''}; {usage}"


def _shown(p: inspect.Parameter) -> str:
    if p.kind is p.VAR_POSITIONAL:
        return "*" + p.name
    if p.kind is p.VAR_KEYWORD:
        return "**" + p.name
    if p.default is inspect.Parameter.empty:
        return p.name
    default = repr(p.default)
    return f"{p.name}={default if len(default) <= 24 else '…'}"
