"""Running a μGraph on a GPU: generated kernels through CuPy (library ops as CuPy calls with
``library_calls=True``), inputs laid out in their declared strides, event timing.

Everything here needs CuPy and a CUDA device (``lay_out`` and ``evaluate_library`` also serve the CPU emulator
with numpy); CuPy is imported only when something runs.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mirage_lab.bounds import timed_runs
from mirage_lab.codegen.compile import compile_module
from mirage_lab.codegen.options import CodegenOptions, codegen_options
from mirage_lab.codegen.plan import CudaProgram, KernelLaunch, LibraryCall, plan_cuda, prepare
from mirage_lab.codegen.source import generate_cuda
from mirage_lab.codegen.storage import storage
from mirage_lab.errors import InputError, ResourceError, UnsupportedOpError
from mirage_lab.ir.builder import KernelGraphBuilder
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.node import plural
from mirage_lab.ir.ops import EvalArgs, Op
from mirage_lab.ir.tensor import Dims
from mirage_lab.semantics.backend import cupy_available
from mirage_lab.semantics.interpret import check_inputs

#: the default dynamic shared-memory limit; a kernel above it must opt in
DEFAULT_DYNAMIC_SMEM = 48 * 1024


def evaluate_library(call: LibraryCall, args: Sequence[Any], in_dims: Sequence[tuple[int, ...]], out_dtype: Any,
                     backend: str) -> Any:
    """A kernel-level op by the op table's own evaluation rule in fp32 (``backend`` "cupy" or "numpy"), stored
    as ``out_dtype``: the interpreter's semantics, shared by the GPU runtime and the CPU emulator."""
    from mirage_lab.semantics.arith import FloatArith

    spec = call.op.spec
    assert spec.evaluate is not None
    ns = FloatArith(backend, "float32")
    out = spec.evaluate(ns, EvalArgs(dict(call.attrs), tuple(in_dims)), *[a.astype("float32") for a in args])
    return out.astype(out_dtype)


def lay_out(xp: Any, a: Any, dtype: Any, dims: Dims, strides: Dims | None, what: str) -> Any:
    """``a`` as an array of ``xp`` (numpy or cupy) in ``dtype``: row-major, or, for an input declared with
    ``strides`` (in elements), a view of a buffer laid out in exactly those strides, whose data pointer is what the
    generated loaders address. Where the strides make elements share memory (stride 0, overlaps), ``a`` must agree
    there; otherwise an ``InputError`` names the input."""
    arr = xp.asarray(a, dtype=dtype)
    if strides is None:
        return xp.ascontiguousarray(arr)
    itemsize = xp.dtype(dtype).itemsize
    nbytes = tuple(s * itemsize for s in strides)
    if tuple(arr.strides) == nbytes:
        return arr  # already in the declared layout (a transposed view, np.asfortranarray, …)
    span = 1 + sum((n - 1) * s for n, s in zip(dims, strides, strict=True))
    try:
        buf = xp.empty(span, dtype=dtype)
    except MemoryError:
        raise ResourceError(f"{what} is declared with strides {strides}: laid out that way its {arr.size} elements "
                            f"span {span}, more than memory holds; declare tighter strides") from None
    view = xp.lib.stride_tricks.as_strided(buf, dims, nbytes)
    view[...] = arr
    if not bool(xp.array_equal(view, arr, equal_nan=True)):
        raise InputError(f"{what} is declared with strides {strides}, under which some of its elements share memory, "
                         "but the array differs between them; pass an array that repeats along the stride-0 (or "
                         "overlapping) dims, or declare the input without those strides")
    return view


def run_library(call: LibraryCall, args: Sequence[Any], in_dims: Sequence[tuple[int, ...]], out_dtype: Any) -> Any:
    """One kernel-level op on CuPy: fp16 matmul straight to cuBLAS (fp32 accumulation), everything else by
    ``evaluate_library``."""
    import cupy

    if call.op is Op.MATMUL and all(a.dtype == out_dtype for a in args):
        return cupy.matmul(*args)
    return evaluate_library(call, args, in_dims, out_dtype, "cupy")


def _device_cupy() -> None:
    """An UnsupportedOpError, saying how to get one or what to do without, when CuPy has no usable device."""
    if not cupy_available():
        raise UnsupportedOpError("running generated CUDA needs CuPy and a CUDA device, and this machine has not both: "
                                 "pip install -e '.[gpu]' on a GPU machine. Without one, ml.generate_cuda gives the "
                                 "source and mirage_lab.codegen.emulate.run_cuda_on_cpu (mirage-lab codegen "
                                 "--emulate) runs it on the CPU")


class CompiledGraph:
    """A μGraph ready to run: ``outputs = compiled(*inputs)`` on CuPy arrays, in the graph's input order.

    Every op runs a generated kernel (predefined kernel ops lowered by ``codegen.lower``); with
    ``library_calls=True`` predefined kernel ops run as CuPy calls instead (fp16 matmuls on cuBLAS): the unfused
    timing baseline, ``unfused_cupy``."""

    def __init__(self, graph: KernelGraph | KernelGraphBuilder, options: CodegenOptions | None = None, *,
                 library_calls: bool = False) -> None:
        _device_cupy()
        self.graph = prepare(graph, library_calls)
        self.options = options or CodegenOptions()
        self.library_calls = library_calls
        self.program: CudaProgram = plan_cuda(self.graph, self.options, library_calls=library_calls)
        self.source = generate_cuda(self.graph, self.options, library_calls=library_calls)
        self._kernels: dict[str, Any] = {}
        if self.program.launches:
            import cupy

            limit = cupy.cuda.Device().attributes["MaxSharedMemoryPerBlockOptin"]
            for launch in self.program.launches:
                if launch.smem_bytes > limit:
                    raise ResourceError(f"{launch.name} plans {launch.smem_bytes} B of shared memory, more than "
                                        f"this device's {limit} B per block; pick a graph with smaller tiles")
            module = compile_module(self.source)
            for launch in self.program.launches:
                fn = module.get_function(launch.name)
                if launch.smem_bytes > DEFAULT_DYNAMIC_SMEM:
                    fn.max_dynamic_shared_size_bytes = launch.smem_bytes
                self._kernels[launch.name] = fn

    def __repr__(self) -> str:
        kernels, steps = plural(len(self.program.launches), "kernel"), plural(len(self.program.steps), "step")
        return f"CompiledGraph({kernels}, {steps})"

    def __call__(self, *inputs: Any) -> list[Any]:
        import cupy

        types = self.graph.tensors
        check_inputs(self.graph, inputs)
        env: dict[int, Any] = {}
        for i, (t, a) in enumerate(zip(self.program.inputs, inputs, strict=True)):
            held = storage(types[t].dtype)
            env[t] = lay_out(cupy, held.encode(cupy, a), held.array, types[t].dims, self.program.strides.get(t),
                             f"input {i} (d{t})")
        for step in self.program.steps:
            if isinstance(step, KernelLaunch):
                outs = [cupy.empty(types[t].dims, dtype=storage(types[t].dtype).array)
                        for t in step.args[-self._n_out(step):]]
                args = [env[t] for t in step.args[:len(step.args) - len(outs)]] + outs
                self._kernels[step.name](step.grid, (step.threads, 1, 1), tuple(args), shared_mem=step.smem_bytes)
                env.update(zip(step.args[len(step.args) - len(outs):], outs, strict=True))
            else:  # bf16 operands widened to fp32, the result stored in its dtype
                dims = [types[t].dims for t in step.inputs]
                held = storage(types[step.outputs[0]].dtype)
                out = run_library(step, [storage(types[t].dtype).decode(cupy, env[t]) for t in step.inputs], dims,
                                  cupy.dtype(held.value))
                env[step.outputs[0]] = held.encode(cupy, out)
        return [storage(types[t].dtype).decode(cupy, env[t]) for t in self.program.outputs]

    def _n_out(self, step: KernelLaunch) -> int:
        return len(self.graph.nodes[step.node].outputs)


def compile(graph: KernelGraph | KernelGraphBuilder, options: CodegenOptions | None = None, *,
            library_calls: bool = False, **flags: bool) -> CompiledGraph:
    """Generate, compile (CuPy RawModule) and wrap ``graph`` (a builder or a frozen graph) as a callable on CuPy
    arrays. ``options``, or keyword flags such as ``prefetch=False``: see ``codegen.options.CodegenOptions``;
    ``library_calls=True`` runs predefined kernel ops through CuPy instead of generated kernels."""
    return CompiledGraph(graph, codegen_options(options, flags), library_calls=library_calls)


def unfused_cupy(program: KernelGraph) -> Callable[..., list[Any]]:
    """The timing baseline: ``program`` op by op in CuPy, fp16 matmuls on cuBLAS (customized ops, if any, still
    run generated kernels)."""
    return CompiledGraph(program, library_calls=True)


def unfused_cuda(program: KernelGraph) -> Callable[..., list[Any]]:
    """``program`` op by op as generated kernels (one lowered custom kernel per op): the CUDA of the unfused
    program, for comparing our kernels with the library's."""
    return CompiledGraph(program)


@dataclass(frozen=True)
class Timing:
    """Milliseconds per call: from CUDA events (``time_callable``), or wall time (the reference backend)."""

    median_ms: float
    p10_ms: float
    p90_ms: float
    samples_ms: tuple[float, ...]

    @classmethod
    def from_samples(cls, samples: Sequence[float]) -> Timing:
        """The median and deciles of ``samples`` (milliseconds, at least one)."""
        deciles = statistics.quantiles(samples, n=10) if len(samples) > 1 else list(samples) * 9
        return cls(statistics.median(samples), deciles[0], deciles[-1], tuple(samples))

    def __str__(self) -> str:
        return f"{self.median_ms:.4f} ms (p10 {self.p10_ms:.4f}, p90 {self.p90_ms:.4f}, n={len(self.samples_ms)})"


def time_callable(fn: Callable[..., Any], args: Sequence[Any], warmup: int = 16, repeats: int = 200) -> Timing:
    """Time ``fn(*args)`` with a pair of CUDA events around each call (SPEC §8.1's measurement); counts and the
    projected total are bounded (``bounds.timed_runs``)."""
    import cupy

    start, end = cupy.cuda.Event(), cupy.cuda.Event()

    def once() -> float:
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        return float(cupy.cuda.get_elapsed_time(start, end)) / 1e3

    cupy.cuda.Device().synchronize()
    samples = timed_runs(once, warmup, repeats, getattr(fn, "__name__", "a kernel"))
    return Timing.from_samples([s * 1e3 for s in samples])
