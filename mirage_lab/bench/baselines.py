"""Baselines a reader trusts (issue 36): each benchmark program as a PyTorch user writes it, and the DRAM floor.

* ``torch eager``: plain torch ops in the program's dtype, exactly the program's formula (``x @ w``,
  ``x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True))``, ``F.silu``, ``torch.softmax``): no fp32 detours a user
  would not write;
* ``torch.compile``: that same function under ``torch.compile`` (default mode; ``dynamic=False``, so that the
  second batch size of a function compiles its own static kernels instead of turning dynamic);
* ``SDPA``: ``F.scaled_dot_product_attention`` for the attention programs, each of the program's heads one
  (batch 1) head of SDPA, ``scale=1`` (the programs' ``exp(Q·K)`` has no 1/√d). The programs take K transposed,
  (heads, d, n); SDPA's fused kernels want (n, d) with unit stride in d, so K is laid out that way once before
  timing, as a user keeping its K cache for SDPA would: a stronger baseline, never a weaker one.

The DRAM floor is the time to read the program's inputs and write its outputs once at the GPU's DRAM bandwidth
(``optimize.hardware``): no kernel computing the program from DRAM can be faster.

torch is imported when a baseline is made, never at import: the engine does not need it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mirage_lab.errors import InputError
from mirage_lab.optimize.floor import dram_floor_s as dram_floor_s
from mirage_lab.optimize.floor import io_bytes as io_bytes

EAGER = "torch eager"
COMPILE = "torch.compile"
SDPA = "SDPA"
#: the baselines' row labels, in the order they are timed
LABELS = (EAGER, COMPILE, SDPA)
#: the programs whose core is softmax attention, with an SDPA baseline
ATTENTION = ("gqa", "mha", "mqa", "qknorm_gqa")


@dataclass(frozen=True)
class Baseline:
    """One baseline of one program: ``fn(*prepare(inputs))`` computes the program's outputs from its inputs
    (torch tensors in the program's order); ``prepare`` runs once, untimed (an input layout a user would keep)."""

    label: str
    program: str
    fn: Callable[..., Any]
    prepare: Callable[[Sequence[Any]], list[Any]] = list

    def __repr__(self) -> str:
        return f"Baseline({self.label!r} of {self.program!r})"


def eager_function(program: str) -> Callable[..., Any]:
    """The program as a PyTorch user writes it (the formula of ``bench.programs``), on torch tensors."""
    import torch
    import torch.nn.functional as F

    def rms_norm(x: Any) -> Any:  # programs' rms_norm: x / sqrt(mean(x²)) over the last dim, no eps, no weight
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True))

    def attention(q: Any, k: Any, v: Any) -> Any:  # K comes transposed, (heads, d, n)
        return torch.softmax(q @ k, dim=-1) @ v

    table: dict[str, Callable[..., Any]] = {
        "rmsnorm": lambda x, w: rms_norm(x) @ w,
        "gated_mlp": lambda x, w1, w2: F.silu(x @ w1) * (x @ w2),
        "lora": lambda x, w, a, b: x @ w + (x @ a) @ b,
        "gqa": attention, "mha": attention, "mqa": attention,
        "qknorm_gqa": lambda q, k, v: attention(rms_norm(q), k, rms_norm(v)),
        "ntrans": lambda h, x, alpha: rms_norm(x + alpha * (rms_norm(h) + x)),
        "moe": lambda x, a, b: torch.exp(x @ a) @ b,
    }
    if program not in table:
        raise InputError(f"no PyTorch baseline for program {program!r}; use one of {', '.join(table)}")
    return table[program]


def sdpa_function(program: str) -> Callable[..., Any]:
    """``F.scaled_dot_product_attention`` computing an attention program from (Q, K laid out (n, d), V)."""
    if program not in ATTENTION:
        raise InputError(f"SDPA is a baseline of the attention programs ({', '.join(ATTENTION)}), not {program!r}")
    import torch
    import torch.nn.functional as F

    def rms_norm(x: Any) -> Any:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True))

    def attention(q: Any, k: Any, v: Any) -> Any:  # (heads, L, d) → one batch of `heads` heads
        return F.scaled_dot_product_attention(q[None], k[None], v[None], scale=1.0)[0]

    if program == "qknorm_gqa":  # SPEC §9: Q and V are normalised, not K
        return lambda q, k, v: attention(rms_norm(q), k, rms_norm(v))
    return attention


def _k_for_sdpa(inputs: Sequence[Any]) -> list[Any]:
    q, k, v = inputs
    return [q, k.transpose(-2, -1).contiguous(), v]


def compiled(program: str) -> Baseline:
    """``torch.compile`` (default mode, static shapes) of the eager function; it compiles at its first call."""
    import torch

    return Baseline(COMPILE, program, torch.compile(eager_function(program), dynamic=False))


def baselines(program: str, *, compile: bool = True) -> list[Baseline]:
    """The baselines of ``program`` in ``LABELS`` order: eager, ``compiled`` (unless ``compile`` is False) and
    SDPA for the attention programs."""
    out = [Baseline(EAGER, program, eager_function(program))]
    if compile:
        out.append(compiled(program))
    if program in ATTENTION:
        out.append(Baseline(SDPA, program, sdpa_function(program), _k_for_sdpa))
    return out


def torch_cuda() -> str | None:
    """None when torch can time a GPU row, else why not (not installed, or a build without CUDA or device)."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    return None if torch.cuda.is_available() else f"torch {torch.__version__} sees no CUDA device"
