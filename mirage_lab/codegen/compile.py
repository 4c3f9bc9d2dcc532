"""Compiling generated CUDA: ``nvcc --ptx`` as a check that needs no GPU, CuPy's RawModule on one.

``nvcc --ptx`` stops before ptxas, so ``-Xptxas -v`` usually reports nothing; pass
``resources=True`` to also assemble a cubin (``--cubin --keep``, one nvcc run) and read
registers and shared memory per kernel from ptxas.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mirage_lab.codegen.arch import ARCHS as ARCHS  # (the default architectures; imported from here too)
from mirage_lab.codegen.arch import check_arch
from mirage_lab.errors import MirageError

NVCC_CANDIDATES = ("nvcc", "/usr/local/bin/nvcc", "/usr/local/cuda/bin/nvcc")


class CompileError(MirageError, RuntimeError):
    """nvcc or NVRTC rejected a generated source."""


@dataclass(frozen=True)
class KernelResources:
    registers: int
    smem_bytes: int  # static shared memory; the dynamic part is the plan's peak
    spill_bytes: int = 0


@dataclass(frozen=True)
class PtxResult:
    arch: str
    ptx: str
    seconds: float
    log: str
    resources: dict[str, KernelResources] = field(default_factory=dict)

    @property
    def kernels(self) -> list[str]:
        return re.findall(r"\.entry\s+(\w+)", self.ptx)


def nvcc_path() -> str | None:
    return next((p for p in (shutil.which(c) for c in NVCC_CANDIDATES) if p), None)


def nvcc_available() -> bool:
    return nvcc_path() is not None


def nvcc_ptx(source: str, arch: str = "sm_80", *, resources: bool = False, timeout: float = 300) -> PtxResult:
    """Compile ``source`` to PTX for ``arch`` ("sm_80", "sm_90", …); raises CompileError on failure."""
    check_arch(arch)
    nvcc = nvcc_path()
    if nvcc is None:
        raise CompileError("nvcc not found on PATH (nor /usr/local/bin, /usr/local/cuda/bin); install the CUDA "
                           "toolkit or the nvidia-cuda-nvcc wheel")
    with tempfile.TemporaryDirectory(prefix="mirage_nvcc_") as tmp:
        src = Path(tmp) / "mugraph.cu"
        src.write_text(source)
        mode = ["--cubin", "--keep", f"--keep-dir={tmp}"] if resources else ["--ptx"]
        out = Path(tmp) / ("mugraph.cubin" if resources else "mugraph.ptx")
        cmd = [nvcc, *mode, f"-arch={arch}", "-Xptxas", "-v", "-o", str(out), str(src)]
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        seconds = time.perf_counter() - start
        log = proc.stdout + proc.stderr
        if proc.returncode != 0:
            raise CompileError(f"nvcc failed for {arch} in {_kernels_named(source, log)}:\n{log.strip()}")
        ptx_file = out if not resources else next(Path(tmp).glob("*.ptx"))
        return PtxResult(arch, ptx_file.read_text(), seconds, log, parse_ptxas(log))


def _kernels_named(source: str, log: str) -> str:
    """The kernel(s) an nvcc error points into (by line number), else every kernel of the source."""
    names = re.findall(r"__global__ void(?: __launch_bounds__\(\d+(?:, \d+)?\))? (\w+)\(", source)
    starts = [i + 1 for i, ln in enumerate(source.splitlines()) if "__global__" in ln]
    hit = set()
    for m in re.finditer(r"mugraph\.cu\((\d+)\)", log):
        line = int(m.group(1))
        before = [n for n, s in zip(names, starts, strict=False) if s <= line]
        if before:
            hit.add(before[-1])
    chosen = sorted(hit) or names
    return "kernel " + ", ".join(chosen) if chosen else "the source"


def parse_ptxas(log: str) -> dict[str, KernelResources]:
    """Registers / shared memory per kernel from ``ptxas -v`` output (empty when ptxas did not run)."""
    out: dict[str, KernelResources] = {}
    current = None
    spill = 0
    for line in log.splitlines():
        if m := re.search(r"Compiling entry function '(\w+)'", line):
            current, spill = m.group(1), 0
        elif (m := re.search(r"(\d+) bytes spill stores", line)) and current:
            spill = int(m.group(1))
        elif (m := re.search(r"Used (\d+) registers", line)) and current:
            smem = re.search(r"(\d+) bytes smem", line)
            out[current] = KernelResources(int(m.group(1)), int(smem.group(1)) if smem else 0, spill)
    return out


#: NVRTC's words for a header it cannot find (cuda_fp16.h, mma.h): then nvcc, whose include path is the toolkit's
MISSING_HEADER = re.compile(r"cannot open source file|No such file or directory")


def compile_module(source: str, options: tuple[str, ...] = ("--std=c++17",)) -> Any:
    """A ``cupy.RawModule`` of ``source`` (needs CuPy and a GPU); kernels come from ``get_function``.

    NVRTC first; if it cannot find a CUDA header (a CuPy wheel without the toolkit's headers beside it), nvcc
    (CuPy's ``backend="nvcc"``) when one is installed."""
    import cupy

    try:
        return _raw_module(cupy, source, options, "nvrtc")
    except cupy.cuda.compiler.CompileException as e:
        if not (MISSING_HEADER.search(str(e)) and nvcc_available()):
            raise CompileError(f"NVRTC failed in {_kernels_named(source, str(e))}:\n{e}") from None
    try:
        return _raw_module(cupy, source, options, "nvcc")
    except cupy.cuda.compiler.CompileException as e:
        raise CompileError(f"NVRTC could not find a CUDA header, and nvcc failed in "
                           f"{_kernels_named(source, str(e))}:\n{e}") from None


def _raw_module(cupy: Any, source: str, options: tuple[str, ...], backend: str) -> Any:
    module = cupy.RawModule(code=source, options=options, backend=backend)
    module.compile()
    return module
