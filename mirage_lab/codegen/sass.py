"""Generated CUDA to SASS, needing no GPU: ``nvcc --cubin`` (with ``ptxas -v``), then ``cuobjdump -sass``
(``nvdisasm`` where cuobjdump is missing), split per kernel, and each kernel's static instruction mix.

The disassemblers come from NVIDIA's wheels ``nvidia-cuda-cuobjdump`` and ``nvidia-cuda-nvdisasm`` (the
``analyze`` extra), found on PATH or in the wheels' ``nvidia/cu*/bin``. Counts are of instructions in the
code, not of instructions executed: a load in an unrolled loop counts once per copy the compiler made.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mirage_lab.codegen.arch import check_arch
from mirage_lab.codegen.compile import CompileError, nvcc_path, parse_ptxas
from mirage_lab.errors import MirageError

#: how to install what is missing, named in every error about it
INSTALL = "pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm (or pip install -e '.[analyze]')"
DISASSEMBLERS = ("cuobjdump", "nvdisasm")

#: ``/*0290*/  @P4 LDG.E.128.CONSTANT R12, ...``: the mnemonic after the address and an optional predicate
INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[0-9T]\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)")
#: a kernel's section: cuobjdump's ``Function : name``, nvdisasm's ``.text.name:`` label
FUNCTION = re.compile(r"^\s*(?:Function : (\S+)|\.text\.(\S+):)\s*$", re.MULTILINE)
#: modifiers that give an access's width in bits (no modifier: 32 bits)
WIDTH_MODIFIERS = {"U8": 8, "S8": 8, "U16": 16, "S16": 16, "64": 64, "128": 128, "256": 256}
#: the accesses whose widths are reported: global and shared loads and stores, asynchronous global→shared copies
ACCESSES = ("LDG", "STG", "LDS", "STS", "LDGSTS")


class ToolMissingError(MirageError, RuntimeError):
    """A CUDA binary tool (cuobjdump, nvdisasm) that the analysis needs is not installed."""


def tool_path(name: str) -> str | None:
    """``name`` (cuobjdump, nvdisasm) on PATH, else in an NVIDIA wheel's ``nvidia/<cuda>/bin``; None when absent."""
    found = shutil.which(name)
    if found:
        return found
    spec = importlib.util.find_spec("nvidia")
    for root in spec.submodule_search_locations or () if spec else ():
        for candidate in sorted(Path(root).glob(f"*/bin/{name}"), reverse=True):  # cu13 before cu12
            if candidate.is_file():
                return str(candidate)
    return None


def disassembler() -> tuple[str, str]:
    """(name, path) of the first disassembler found, cuobjdump preferred; a ``ToolMissingError`` otherwise."""
    for name in DISASSEMBLERS:
        path = tool_path(name)
        if path:
            return name, path
    raise ToolMissingError(f"reading SASS needs cuobjdump or nvdisasm, and neither is on PATH or in an NVIDIA wheel "
                           f"(nvidia/cu*/bin); install them with: {INSTALL}")


def toolchain_missing() -> str | None:
    """Why SASS cannot be produced here (nvcc or both disassemblers missing), or None when it can."""
    if nvcc_path() is None:
        return "nvcc is not installed (the CUDA toolkit, or pip install nvidia-cuda-nvcc)"
    if not any(tool_path(n) for n in DISASSEMBLERS):
        return f"neither cuobjdump nor nvdisasm is installed ({INSTALL})"
    return None


@dataclass(frozen=True)
class PtxasFigures:
    """What ``ptxas -v`` reports for one kernel. ``static_smem``: ``__shared__`` arrays only (dynamic shared memory
    is the launch's to give)."""

    registers: int
    static_smem: int
    spill_stores: int
    spill_loads: int
    stack_frame: int

    @property
    def spill_bytes(self) -> int:
        return self.spill_stores + self.spill_loads


@dataclass(frozen=True)
class Disassembly:
    """A CUDA source compiled for ``arch``: each kernel's SASS text and ptxas figures, and ptxas's log."""

    arch: str
    sass: Mapping[str, str]
    ptxas: Mapping[str, PtxasFigures]
    log: str

    def __repr__(self) -> str:
        return f"Disassembly({self.arch}: {', '.join(self.sass)})"


def parse_ptxas_figures(log: str) -> dict[str, PtxasFigures]:
    """Per kernel: registers and static shared memory (``compile.parse_ptxas``), spill stores and loads and the
    stack frame from its "Function properties" line."""
    frames: dict[str, tuple[int, int, int]] = {}
    current = None
    for line in log.splitlines():
        if m := re.search(r"Function properties for (\w+)", line):
            current = m.group(1)
        elif current and (m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill "
                                         r"loads", line)):
            frame, stores, loads = map(int, m.groups())
            frames[current] = (stores, loads, frame)
            current = None
    return {name: PtxasFigures(r.registers, r.smem_bytes, *frames.get(name, (r.spill_bytes, 0, 0)))
            for name, r in parse_ptxas(log).items()}


def split_functions(text: str) -> dict[str, str]:
    """Disassembler output (cuobjdump or nvdisasm) → kernel name → its SASS (internal subroutines included)."""
    heads = list(FUNCTION.finditer(text))
    return {(m.group(1) or m.group(2)): text[m.end(): nxt.start() if nxt else len(text)]
            for m, nxt in zip(heads, [*heads[1:], None], strict=True)}


def compile_sass(source: str, arch: str = "sm_90", timeout: float = 300) -> Disassembly:
    """``source`` compiled to a cubin for ``arch`` and disassembled; kept in memory for the same source and arch."""
    check_arch(arch)
    return _compile_sass(source, arch, timeout)


@functools.lru_cache(maxsize=16)
def _compile_sass(source: str, arch: str, timeout: float) -> Disassembly:
    nvcc = nvcc_path()
    if nvcc is None:
        raise CompileError("nvcc not found on PATH (nor /usr/local/bin, /usr/local/cuda/bin); reading SASS needs it: "
                           "install the CUDA toolkit or the nvidia-cuda-nvcc wheel")
    name, tool = disassembler()
    with tempfile.TemporaryDirectory(prefix="mirage_sass_") as tmp:
        src, cubin = Path(tmp) / "mugraph.cu", Path(tmp) / "mugraph.cubin"
        src.write_text(source)
        proc = subprocess.run([nvcc, "--cubin", f"-arch={arch}", "-Xptxas", "-v", "-o", str(cubin), str(src)],
                              capture_output=True, text=True, timeout=timeout, check=False)
        log = proc.stdout + proc.stderr
        if proc.returncode != 0:
            raise CompileError(f"nvcc --cubin failed for {arch}:\n{log.strip()}")
        args = [tool, "-sass", str(cubin)] if name == "cuobjdump" else [tool, str(cubin)]
        dis = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
        if dis.returncode != 0:
            raise MirageError(f"{name} could not disassemble the cubin nvcc built for {arch}:\n"
                              f"{(dis.stdout + dis.stderr).strip()}")
    return Disassembly(arch, split_functions(dis.stdout), parse_ptxas_figures(log), log)


# --------------------------------------------------------------------------- the instruction mix


def mnemonics(sass: str) -> Counter[str]:
    """Each full mnemonic (``LDG.E.128.CONSTANT``, ``HMMA.16816.F32``) of the SASS text and how often it occurs."""
    return Counter(INSTRUCTION.findall(sass))


def access_width(mnemonic: str) -> int:
    """Bits one thread moves with a load or store mnemonic: ``LDG.E.128`` → 128, ``STS.U16`` → 16, ``LDS`` → 32."""
    bits = [WIDTH_MODIFIERS[m] for m in mnemonic.split(".")[1:] if m in WIDTH_MODIFIERS]
    return bits[-1] if bits else 32


@dataclass(frozen=True)
class InstructionMix:
    """A kernel's static instruction counts by full mnemonic, and the groups a kernel engineer reads first."""

    counts: Mapping[str, int]

    @classmethod
    def of(cls, sass: str) -> InstructionMix:
        return cls(dict(mnemonics(sass)))

    def __repr__(self) -> str:
        top = sorted(self.counts.items(), key=lambda kv: -kv[1])[:6]
        return f"InstructionMix({sum(self.counts.values())} instructions; {', '.join(f'{k}×{v}' for k, v in top)})"

    def count(self, *opcodes: str) -> int:
        """Instructions whose opcode (the mnemonic before its first dot) is one of ``opcodes``."""
        return sum(n for m, n in self.counts.items() if m.split(".")[0] in opcodes)

    def widths(self, opcode: str) -> dict[int, int]:
        """Bits per access → instructions, of one load/store opcode (LDG, STG, LDS, STS, LDGSTS), widest first."""
        out: Counter[int] = Counter()
        for m, n in self.counts.items():
            if m.split(".")[0] == opcode:
                out[access_width(m)] += n
        return dict(sorted(out.items(), reverse=True))

    def share_128(self, *opcodes: str) -> float:
        """Percent of the instructions of ``opcodes`` (default LDG) that move 128 bits (NaN when there are none)."""
        widths: Counter[int] = Counter()
        for opcode in opcodes or ("LDG",):
            widths.update(self.widths(opcode))
        total = sum(widths.values())
        return 100.0 * widths.get(128, 0) / total if total else float("nan")

    def row(self) -> dict[str, object]:
        """The analysis table's SASS columns."""
        def shown(opcode: str) -> str:
            return ", ".join(f"{bits}b×{n}" for bits, n in self.widths(opcode).items()) or "-"

        return {
            "LDG": self.count("LDG"), "LDG widths": shown("LDG"), "% LDG 128-bit": round(self.share_128("LDG"), 1),
            "STG": self.count("STG"), "STG widths": shown("STG"),
            "LDS widths": shown("LDS"), "STS widths": shown("STS"), "LDSM": self.count("LDSM"),
            "LDGSTS": self.count("LDGSTS"), "LDGSTS widths": shown("LDGSTS"),
            # every global read, through registers (LDG) or straight to shared memory (LDGSTS)
            "% global reads 128-bit": round(self.share_128("LDG", "LDGSTS"), 1),
            "DEPBAR": self.count("LDGDEPBAR", "DEPBAR"), "TMA": self.count("UTMALDG", "UBLKCP"),
            "HMMA": self.count("HMMA"), "HGMMA": self.count("HGMMA"),
            "FFMA": self.count("FFMA"), "HFMA2": self.count("HFMA2"),
        }
