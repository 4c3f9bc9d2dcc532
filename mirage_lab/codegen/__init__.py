"""Code generation (SPEC §8): μGraphs to CUDA C, compiled by nvcc or CuPy, run and timed with CuPy."""

from mirage_lab.codegen.cuda import PLAIN, CodegenOptions, CudaProgram, generate_cuda, plan_cuda
from mirage_lab.codegen.run import compile

__all__ = ["PLAIN", "CodegenOptions", "CudaProgram", "compile", "generate_cuda", "plan_cuda"]
