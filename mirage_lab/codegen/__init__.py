"""Code generation (SPEC §8): μGraphs to CUDA C (nvcc or CuPy; run and timed with CuPy) and to Triton
(``codegen.triton``); the backends ``reference``, ``cuda`` and ``triton`` behind one protocol, render → compile →
run → time (``codegen.backend``)."""

from mirage_lab.codegen.arch import ARCHS
from mirage_lab.codegen.backend import Backend
from mirage_lab.codegen.compile import CompileError, nvcc_available, nvcc_ptx
from mirage_lab.codegen.cuda import PLAIN, CodegenOptions, CudaProgram, generate_cuda, plan_cuda
from mirage_lab.codegen.registry import BACKENDS
from mirage_lab.codegen.run import compile
from mirage_lab.codegen.triton import generate_triton

__all__ = ["ARCHS", "BACKENDS", "PLAIN", "Backend", "CodegenOptions", "CompileError", "CudaProgram", "compile",
           "generate_cuda", "generate_triton", "nvcc_available", "nvcc_ptx", "plan_cuda"]
