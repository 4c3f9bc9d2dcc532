"""Loading, compiling and emulating generated Triton modules.

* ``load_module``: a generated module is written to the per-user private store (``mirage_lab.cache``) under
  its hash and imported from there only when the file still matches the hash recorded when we wrote it
  (Triton's ``@jit`` needs a real file: it reads the kernel's source back).
* ``compile_ptx``: ahead-of-time PTX for an sm_XX target with no GPU present (``triton.compile`` with an
  explicit ``GPUTarget``), as nvcc --ptx does for the CUDA backend, with each kernel's launch parameters (the
  module's ``LAUNCH``) and its pointers marked 16-byte aligned, as Triton's JIT marks the torch tensors it is
  launched with: without that, no access is wider than the alignment Triton can prove and no load becomes an
  asynchronous copy. ``resources=True`` also assembles each kernel with Triton's ptxas (``-v``): registers and
  spills.
* ``emulate``: the module run on the CPU by Triton's interpreter (``TRITON_INTERPRET=1``). The variable must be
  set before Triton is first imported, so the run happens in a child process; arrays cross as ``.npy`` files
  (bf16 as float32).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import numpy as np

from mirage_lab.cache import HashedStore
from mirage_lab.codegen.arch import check_arch
from mirage_lab.codegen.compile import KernelResources, parse_ptxas
from mirage_lab.errors import InputError, MirageError
from mirage_lab.ir.node import plural

__all__ = ["PtxKernels", "compile_ptx", "emulate", "load_module", "module_path", "ptxas_resources",
           "triton_available"]

STORE = HashedStore("triton")
_LOADED: dict[str, ModuleType] = {}
EMULATE_TIMEOUT_S = 600
#: the register-allocation flag Triton 3.9 passes to ptxas when it builds a kernel's cubin (a ptxas 13 workaround):
#: passed here too, so that the registers and spills reported are those of the cubin Triton loads on a device
PTXAS_FLAGS = ("--regAllocOptLevel=2",)


def triton_available() -> bool:
    return importlib.util.find_spec("triton") is not None


def _need(what: str) -> None:
    if not triton_available():
        raise MirageError(f"{what} needs Triton: pip install 'mirage-lab[triton]' (or pip install triton)")


def module_path(source: str) -> Path:
    """The stored file of ``source``: written (and its hash recorded) on first use, re-checked on every use."""
    key = hashlib.sha256(source.encode()).hexdigest()[:24]
    name = f"mugraph_{key}.py"
    path = STORE.load(name)
    if path is None:
        with STORE.scratch() as tmp:
            (tmp / name).write_text(source)
            path = STORE.save(name, tmp / name)
    return path


def load_module(source: str) -> ModuleType:
    """The generated module ``source``, imported from the private store."""
    _need("loading a Triton module")
    path = module_path(source)
    if path.stem not in _LOADED:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _LOADED[path.stem] = module
    return _LOADED[path.stem]


@dataclass(frozen=True)
class PtxKernels:
    """Each kernel's PTX for one target, the launch options it was compiled with, the shared memory Triton
    allocates (dynamic, so ptxas does not count it), ptxas's registers and spills (with ``resources=True``), and
    how long it all took."""

    arch: str
    ptx: dict[str, str]
    seconds: float
    options: dict[str, dict[str, int]] = field(default_factory=dict)
    shared: dict[str, int] = field(default_factory=dict)
    resources: dict[str, KernelResources] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"PtxKernels({self.arch}: {plural(len(self.ptx), 'kernel')}, {sum(map(len, self.ptx.values()))} chars)"


def compile_ptx(source: str, arch: str = "sm_80", *, resources: bool = False) -> PtxKernels:
    """Compile every kernel of the generated module ``source`` to PTX for ``arch`` (sm_80, sm_90, …); no GPU needed.
    With ``resources``, also each kernel's registers and spill bytes from ptxas -v."""
    if not check_arch(arch)[3:].isdigit():  # Triton's GPUTarget takes the capability as a number
        raise InputError(f"Triton compiles for a plain sm_XX target, not {arch!r}; use e.g. sm_80 or sm_90")
    _need("compiling Triton kernels")
    import triton
    from triton.backends.compiler import GPUTarget

    module = load_module(source)
    launch = getattr(module, "LAUNCH", {})
    start = time.perf_counter()
    out, shared, used = {}, {}, {}
    for name, signature in module.KERNELS.items():
        aligned = {(i,): [["tt.divisibility", 16]] for i, kind in enumerate(signature.values()) if kind[0] == "*"}
        src = triton.compiler.ASTSource(fn=getattr(module, name), signature=signature, constexprs={}, attrs=aligned)
        try:
            with warnings.catch_warnings():  # Triton 3.9 warns, once, that its fp-fusion default will change
                warnings.simplefilter("ignore", UserWarning)
                compiled = triton.compile(src, target=GPUTarget("cuda", int(arch[3:]), 32),
                                          options=dict(launch.get(name, {})))
        except Exception as e:  # Triton's compile errors are of many types; name the kernel and the target
            raise MirageError(f"Triton could not compile {name} for {arch}: {type(e).__name__}: {e}") from None
        out[name], shared[name] = compiled.asm["ptx"], int(compiled.metadata.shared)
        if resources:
            used[name] = ptxas_resources(out[name], int(arch[3:]))[name]
    return PtxKernels(arch, out, time.perf_counter() - start, dict(launch), shared, used)


def ptxas_resources(ptx: str, capability: int) -> dict[str, KernelResources]:
    """Registers, static shared memory and spill bytes of each entry of Triton's ``ptx``, from the ptxas Triton
    ships (the one its PTX is written for), assembling for the architecture Triton targets (sm_90a on sm_90)."""
    from triton.backends.nvidia.compiler import get_ptxas, sm_arch_from_capability

    ptxas = get_ptxas(capability).path
    with STORE.scratch() as tmp:
        (tmp / "kernel.ptx").write_text(ptx)
        proc = subprocess.run([ptxas, "-v", *PTXAS_FLAGS, f"--gpu-name={sm_arch_from_capability(capability)}",
                               str(tmp / "kernel.ptx"), "-o", str(tmp / "kernel.cubin")],
                              capture_output=True, text=True, timeout=EMULATE_TIMEOUT_S, check=False)
    if proc.returncode != 0:
        raise MirageError(f"ptxas ({ptxas}) rejected Triton's PTX for sm_{capability}:\n{_tail(proc.stderr)}")
    found = parse_ptxas(proc.stdout + proc.stderr)
    if not found:
        raise MirageError(f"ptxas -v printed no resource usage for sm_{capability}; its output was:\n"
                          f"{_tail(proc.stdout + proc.stderr)}")
    return found


_CHILD = """
import json, sys
import numpy as np, torch
import importlib.util
spec = importlib.util.spec_from_file_location("emulated", sys.argv[1])
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
folder, dtypes = sys.argv[2], json.loads(sys.argv[3])
inputs = [torch.from_numpy(np.load(f"{folder}/in{i}.npy")).to(getattr(torch, d)) for i, d in enumerate(dtypes)]
for i, out in enumerate(module.run(*inputs)):
    np.save(f"{folder}/out{i}.npy", out.float().numpy())
"""


def emulate(source: str, inputs: Sequence[np.ndarray], dtype: str) -> list[np.ndarray]:
    """Run the generated module on the CPU with Triton's interpreter; outputs as float32 numpy arrays."""
    _need("emulating Triton kernels")
    path = module_path(source)
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    with STORE.scratch() as tmp:
        for i, a in enumerate(inputs):
            np.save(tmp / f"in{i}.npy", np.ascontiguousarray(a, dtype=np.float32))
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(tmp), json.dumps([dtype] * len(inputs))],
                              env=env, capture_output=True, text=True, timeout=EMULATE_TIMEOUT_S, check=False)
        if proc.returncode != 0:
            raise MirageError(f"Triton's interpreter failed on {path.name}:\n{_tail(proc.stderr)}")
        outs: list[np.ndarray] = []
        while (tmp / f"out{len(outs)}.npy").exists():
            outs.append(np.load(tmp / f"out{len(outs)}.npy"))
    return outs


def _tail(text: str, lines: int = 25) -> str:
    kept = [ln for ln in text.splitlines() if "Warning" not in ln and "warn_once" not in ln]
    return "\n".join(kept[-lines:])

