"""Launch parameters tuned on a device (``benchmarks/triton_tune.py``), one file per GPU:
``data/timings/triton_tuned_<GPU>.json``, each kernel filed under its ``kernel_key`` (a hash of its block graph
and addressing), so that a kernel tuned in one program is tuned wherever the same kernel appears.

The file records, per kernel, the chosen parameters, the median time with them and with the defaults, how many
candidates were timed and where the kernel was first seen (for a reader; never used to look it up). A checksum over
the entries catches a file that was cut short or edited by hand: the fix is to run the tuner again.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mirage_lab.codegen.triton.launch import TritonLaunch
from mirage_lab.errors import FormatError, InputError, PathError
from mirage_lab.ir.node import plural

__all__ = ["TIMINGS_DIR", "TunedKernel", "TunedTable", "current_gpu", "load_tuned", "tuned_launches", "tuned_path",
           "write_tuned"]

FORMAT = "mirage-lab/triton-tuned"
VERSION = 1
#: where the device tables live in a source checkout (an installed wheel has none: every kernel uses its defaults)
TIMINGS_DIR = Path(__file__).resolve().parents[3] / "data" / "timings"
_KEY = re.compile(r"[0-9a-f]{64}")
_GPU = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class TunedKernel:
    """One kernel's tuned launch: the parameters, the median ms with them and with the defaults, the number of
    candidates timed, and where the tuner met the kernel first ("fused_rmsnorm_b1/kernel_2")."""

    key: str
    launch: TritonLaunch
    median_ms: float
    default_ms: float
    tried: int
    where: str

    def to_json(self) -> dict[str, Any]:
        return {"num_warps": self.launch.num_warps, "num_stages": self.launch.num_stages,
                "min_extent": self.launch.min_extent, "median_ms": self.median_ms, "default_ms": self.default_ms,
                "tried": self.tried, "where": self.where}


@dataclass(frozen=True)
class TunedTable:
    """A GPU's tuned kernels, as written by ``benchmarks/triton_tune.py``."""

    gpu: str
    triton: str  # the Triton version the times were taken with
    kernels: tuple[TunedKernel, ...]

    def launches(self) -> dict[str, TritonLaunch]:
        """kernel_key → launch parameters, each marked as tuned on this GPU."""
        return {k.key: TritonLaunch(k.launch.num_warps, k.launch.num_stages, k.launch.min_extent,
                                    origin=f"tuned on {self.gpu}") for k in self.kernels}

    def __repr__(self) -> str:
        return f"TunedTable({self.gpu}, Triton {self.triton}, {plural(len(self.kernels), 'kernel')})"


def tuned_path(gpu: str, directory: Path = TIMINGS_DIR) -> Path:
    if not _GPU.fullmatch(gpu):
        raise InputError(f"a GPU label is letters, digits, '_', '.' and '-' (as data/timings names files, e.g. "
                         f"NVIDIA_H200), got {gpu!r}")
    return directory / f"triton_tuned_{gpu}.json"


def _checksum(kernels: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(kernels, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def write_tuned(path: Path, table: TunedTable) -> Path:
    kernels = {k.key: k.to_json() for k in sorted(table.kernels, key=lambda k: k.key)}
    doc = {"format": FORMAT, "version": VERSION, "gpu": table.gpu, "triton": table.triton,
           "checksum": _checksum(kernels), "kernels": kernels}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def load_tuned(path: Path, gpu: str | None = None) -> TunedTable:
    """The table in ``path`` (for ``gpu`` when given); a ``FormatError`` naming the file, the problem and the fix
    when it is not one the tuner wrote."""
    rerun = "run benchmarks/triton_tune.py on that GPU again (or delete the file to use the defaults)"
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise PathError(f"{path} does not exist; tune on the device first (benchmarks/triton_tune.py)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise FormatError(f"{path} is not JSON ({e}); {rerun}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise FormatError(f"{path} is not a {FORMAT} file of version {VERSION}; {rerun}")
    kernels, label = doc.get("kernels"), doc.get("gpu")
    if not isinstance(kernels, dict) or not isinstance(label, str) or not isinstance(doc.get("triton"), str):
        raise FormatError(f"{path} lacks its 'kernels' table, 'gpu' or 'triton' field; {rerun}")
    if gpu is not None and label != gpu:
        raise FormatError(f"{path} holds times for {label}, not {gpu}; rename it or {rerun}")
    if doc.get("checksum") != _checksum(kernels):
        raise FormatError(f"{path}: the checksum does not match the kernels (cut short or edited by hand); {rerun}")
    return TunedTable(label, doc["triton"], tuple(_entry(path, key, e, rerun) for key, e in kernels.items()))


def _entry(path: Path, key: str, e: Any, rerun: str) -> TunedKernel:
    if not _KEY.fullmatch(key):
        raise FormatError(f"{path}: {key!r} is not a kernel key (64 hex digits of launch.kernel_key); {rerun}")
    fields = ("num_warps", "num_stages", "min_extent", "median_ms", "default_ms", "tried", "where")
    if not isinstance(e, dict) or set(e) != set(fields):
        raise FormatError(f"{path}: the entry of kernel {key[:12]} must have exactly the fields {', '.join(fields)}; "
                          f"{rerun}")
    try:
        launch = TritonLaunch(e["num_warps"], e["num_stages"], e["min_extent"])
    except InputError as err:
        raise FormatError(f"{path}: kernel {key[:12]}: {err}; {rerun}") from None
    times = (e["median_ms"], e["default_ms"])
    if not all(isinstance(t, int | float) and not isinstance(t, bool) and t > 0 for t in times):
        raise FormatError(f"{path}: kernel {key[:12]}: median_ms and default_ms must be positive numbers; {rerun}")
    return TunedKernel(key, launch, float(times[0]), float(times[1]), int(e["tried"]), str(e["where"]))


def current_gpu() -> str | None:
    """The label of this machine's GPU as data/timings names it (NVIDIA_H200), or None without a device."""
    from mirage_lab.semantics.backend import cupy_available, gpu_name

    if not cupy_available():
        return None
    import cupy

    return gpu_name(cupy)


def tuned_launches(gpu: str | None, directory: Path = TIMINGS_DIR,
                   required: bool = False) -> dict[str, TritonLaunch]:
    """The tuned launches of ``gpu`` (kernel_key → parameters); {} without a GPU, or when no table was recorded
    for it and ``required`` is false."""
    if gpu is None:
        return {}
    path = tuned_path(gpu, directory)
    if not path.exists() and not required:
        return {}
    return load_tuned(path, gpu).launches()

