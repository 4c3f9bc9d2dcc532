"""The backends by name: ``backend("reference")``, ``backend("cuda")``, ``backend("triton")``
(``codegen.backend`` is the protocol)."""

from __future__ import annotations

from mirage_lab.arguments import did_you_mean
from mirage_lab.codegen.backend import Backend
from mirage_lab.codegen.cuda import CudaBackend
from mirage_lab.codegen.reference import ReferenceBackend
from mirage_lab.codegen.triton.backend import TritonBackend
from mirage_lab.errors import ArgumentError

#: each backend, with its default settings, by name
BACKENDS: dict[str, Backend] = {b.name: b for b in (ReferenceBackend(), CudaBackend(), TritonBackend())}


def backend(name: str) -> Backend:
    """The backend called ``name``; an ``ArgumentError`` naming the known ones for any other name."""
    if not isinstance(name, str) or name not in BACKENDS:
        hint = did_you_mean(name, list(BACKENDS)) if isinstance(name, str) else ""
        raise ArgumentError(f"unknown backend {name!r}{hint}; the backends are {', '.join(sorted(BACKENDS))}")
    return BACKENDS[name]
