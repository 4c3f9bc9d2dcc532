"""The Triton backend (issue 22): every custom kernel as a ``@triton.jit`` function, a launcher that takes torch
tensors, ahead-of-time PTX for sm_80/sm_90 without a GPU, and Triton's CPU interpreter as the emulator."""

from mirage_lab.codegen.triton.module import TritonModule, generate_triton, triton_module

__all__ = ["TritonModule", "generate_triton", "triton_module"]
