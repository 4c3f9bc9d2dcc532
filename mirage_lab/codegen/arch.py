"""CUDA architectures as nvcc names them (sm_80, sm_90, sm_90a, …): one check for the command line's ``--ptx``,
the compilers, and the drop-in's ``target_cc`` (the reference's compute capability as an integer, 80 or 90)."""

from __future__ import annotations

import re
from typing import Any

from mirage_lab.errors import InputError

#: the architectures generated code is compiled for by default (and in CI): A100 and H100/H200
ARCHS = ("sm_80", "sm_90")
PATTERN = re.compile(r"sm_\d{2,3}[af]?")


def check_arch(arch: Any) -> str:
    """``arch`` when it names a CUDA architecture the way nvcc does; else an ``InputError`` saying the form."""
    if not isinstance(arch, str) or not PATTERN.fullmatch(arch):
        raise InputError(f"expected a CUDA architecture such as sm_80 or sm_90, got {arch!r}")
    return arch


def arch_of_cc(target_cc: Any) -> str:
    """The architecture of a compute capability given as the reference gives it (80 → sm_80, 90 → sm_90)."""
    if isinstance(target_cc, bool) or not isinstance(target_cc, int) or not PATTERN.fullmatch(f"sm_{target_cc}"):
        raise InputError(f"target_cc must be a compute capability as an integer, such as 80 (sm_80) or 90 (sm_90), "
                         f"got {target_cc!r}")
    return f"sm_{target_cc}"
