"""Code generation (SPEC §8): μGraphs to CUDA C, compiled by nvcc or CuPy, run and timed with CuPy; the
backends (``reference``, ``cuda``) behind one protocol, render → compile → run → time (``codegen.backend``)."""

from mirage_lab.codegen.backend import Backend
from mirage_lab.codegen.compile import CompileError, nvcc_available, nvcc_ptx
from mirage_lab.codegen.cuda import PLAIN, CodegenOptions, CudaProgram, generate_cuda, plan_cuda
from mirage_lab.codegen.registry import BACKENDS
from mirage_lab.codegen.run import compile

__all__ = ["BACKENDS", "PLAIN", "Backend", "CodegenOptions", "CompileError", "CudaProgram", "compile",
           "generate_cuda", "nvcc_available", "nvcc_ptx", "plan_cuda"]
