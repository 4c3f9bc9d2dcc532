"""Predefined kernel ops lowered to one-op custom kernels (codegen/lower.py): the lowered graph computes what the
program computes (interpreter and finite-field verifier), every op gets a kernel, and the kernels, run by the CPU
emulation, match the interpreter on every benchmark program at batch 1."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.bench.harness import input_scale, random_inputs, relative_error
from mirage_lab.bench.programs import PROGRAMS
from mirage_lab.codegen import emulate, lower
from mirage_lab.codegen.cuda import KernelLaunch, LibraryCall, plan_cuda, prepare
from mirage_lab.codegen.emulate import run_cuda_on_cpu
from mirage_lab.errors import ResourceError, UnsupportedOpError
from mirage_lab.ir.graph import Node
from mirage_lab.ir.ops import Kind, Level, Op, ops_at

needs_gxx = pytest.mark.skipif(not emulate.gxx_available(), reason="g++ not installed")
FP16_TOL = 2e-2  # fp16 storage of every intermediate, fp32 arithmetic
#: MoE at the paper's shape is 2 G multiply-adds and two 268 M-element weights: too much for the CPU emulation, the
#: float64 interpreter and the verifier (a minute); its replica keeps the structure (batched exp(X·A)·B) at a smaller
#: K and N. The others run at the paper's shapes.
REPLICAS = {"moe": lambda: moe_replica()}


def moe_replica() -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 8, 512), dtype=ml.float16)
    a = g.new_input(dims=(8, 512, 512), dtype=ml.float16)
    b = g.new_input(dims=(8, 512, 512), dtype=ml.float16)
    g.mark_output(g.matmul(g.exp(g.matmul(x, a)), b))
    return g.freeze()


def program(name: str) -> ml.KernelGraph:
    """Benchmark program ``name`` at batch 1, or its replica."""
    return REPLICAS[name]() if name in REPLICAS else PROGRAMS[name](1)


def every_op() -> ml.KernelGraph:
    """Every kernel-level op, small: batched matmuls of rank 3 and 4, each unary op, broadcasting binary ops,
    reductions over dims 0, 1, 2 with group sizes, rms_norm over one and two trailing dims."""
    g = ml.new_kernel_graph()
    a = g.new_input(dims=(2, 16, 32), dtype=ml.float16)
    b = g.new_input(dims=(2, 32, 48), dtype=ml.float16)
    c = g.new_input(dims=(1, 16, 1), dtype=ml.float16)
    p = g.new_input(dims=(2, 2, 8, 16), dtype=ml.float16)
    q = g.new_input(dims=(2, 2, 16, 24), dtype=ml.float16)
    y = g.div(g.mul_scalar(g.matmul(a, b), 0.25), g.add(g.sigmoid(c), g.exp(c)))  # c broadcasts on dims 0, 2
    outs = [y, g.matmul(p, q), g.reduction(y, 0), g.reduction(y, 1, group_size=4), g.reduction(y, 2, group_size=8),
            g.reduction(y, 2), g.rms_norm(y), g.rms_norm(y, normalized_shape=(16, 48))]
    outs += [g.mul(g.clamp(y, -0.5, 0.5), g.relu(y)), g.pow(g.sigmoid(y), g.square(y)), g.gelu(g.silu(y)),
             g.log(g.sqrt(g.add(g.exp(y), g.exp(y))))]
    for t in outs:
        g.mark_output(t)
    return g.freeze()


def _inputs(graph: ml.KernelGraph, name: str) -> list[np.ndarray]:
    # half the harness's attention scale: exp(Q·K) then stays well inside fp16
    return [a.astype(np.float16) for a in random_inputs(graph, seed=5, scale=input_scale(name) / 2)]


def test_every_kernel_op_is_lowered_or_listed() -> None:
    ops = [op for op in ops_at(Level.KERNEL) if op.spec.kind not in (Kind.IO, Kind.CUSTOMIZED)]
    missing = [op for op in ops if op not in lower.LOWER and op not in lower.UNLOWERED]
    assert ops and not missing, f"kernel ops without a lowering: {missing}"


def test_an_op_without_lowering_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(lower.LOWER, Op.SILU)
    monkeypatch.setitem(lower.UNLOWERED, Op.SILU, "for this test")
    with pytest.raises(UnsupportedOpError, match=r"kernel op silu \(node 4: f16\[8, 4096\] → f16\[8, 4096\]\) "
                                                 r"has no CUDA kernel: for this test\. Write it as a customized op"):
        ml.generate_cuda(PROGRAMS["gated_mlp"](1))
    # nothing is emitted silently either way: the library path still lists it
    assert any(isinstance(s, LibraryCall) and s.op is Op.SILU
               for s in plan_cuda(PROGRAMS["gated_mlp"](1), library_calls=True).steps)


def test_an_op_too_big_for_one_kernel_is_a_clear_error() -> None:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(2, 131072), dtype=ml.float16)  # one row is 256 KiB: over any shared memory
    g.mark_output(g.rms_norm(x))
    with pytest.raises(ResourceError, match=r"kernel op rms_norm \(node 1: .*\) does not fit one generated kernel: "
                                            r".*Split the op into smaller ones, or run it as a library call"):
        ml.generate_cuda(g)
    g = ml.new_kernel_graph()
    g.mark_output(g.exp(g.new_input(dims=(4096, 4096, 64), dtype=ml.float16)))  # 1 G elements
    with pytest.raises(ResourceError, match=r"kernel op exp .* does not fit one generated kernel: no grid of at most "
                                            r"4096 blocks over dims \[0, 1, 2\] of \(4096, 4096, 64\)"):
        plan_cuda(g)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_unfused_programs_get_one_kernel_per_op(name: str) -> None:
    program = PROGRAMS[name](1)
    source = ml.generate_cuda(program)
    steps = plan_cuda(program).steps
    assert len(steps) == len(program.compute_nodes) == source.count("__global__")
    assert all(isinstance(s, KernelLaunch) for s in steps)
    # the library path (the timing baseline on CuPy / cuBLAS) has no kernel to generate
    library = plan_cuda(program, library_calls=True)
    assert not library.launches and [s.op for s in library.steps] == [n.op for n in program.compute_nodes]
    assert "__global__" not in ml.generate_cuda(program, library_calls=True)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_lowering_preserves_the_program(name: str) -> None:
    """The finite-field verifier (exact) and the float64 interpreter."""
    prog = program(name)
    lowered = prepare(prog)
    assert not any(n.body is None for n in lowered.compute_nodes)
    assert [n.inputs + n.outputs for n in lowered.nodes] == [n.inputs + n.outputs for n in prog.nodes]
    assert ml.verify(lowered, prog, trials=1).equivalent
    ins = random_inputs(prog, seed=3, scale=input_scale(name))
    got, want = ml.interpret(lowered, ins), ml.interpret(prog, ins)
    assert all(relative_error(a, b) < 1e-12 for a, b in zip(got, want, strict=True))


def test_the_verifier_catches_a_wrong_lowering(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: exp lowered as square is not the program."""
    wrong = lower.LOWER[Op.SQUARE]
    monkeypatch.setitem(lower.LOWER, Op.EXP, lambda node, ins, out: wrong(Node(Op.SQUARE, node.inputs, node.outputs),
                                                                           ins, out))
    prog = PROGRAMS["gqa"](1)
    assert not ml.verify(prepare(prog), prog, trials=1).equivalent


def test_every_op_lowers_to_the_same_values() -> None:
    graph = every_op()
    ins = random_inputs(graph, seed=2)
    got, want = ml.interpret(prepare(graph), ins), ml.interpret(graph, ins)
    assert all(relative_error(a, b) < 1e-12 for a, b in zip(got, want, strict=True))
    # (not ml.verify: it finds even a graph with a kernel log different from itself, and takes minutes here)


@functools.cache
def _every_op_case() -> tuple[list[np.ndarray], list[np.ndarray]]:
    graph = every_op()
    ins = [a.astype(np.float16) for a in random_inputs(graph, seed=2)]
    return ins, ml.interpret(graph, [a.astype(np.float64) for a in ins])


@needs_gxx
@pytest.mark.parametrize("schedule", ["forward", "reverse", "threads"])
def test_every_op_runs_as_cuda(schedule: str) -> None:
    """Both fiber orders (a missing barrier shows in one of them) and OS threads."""
    ins, want = _every_op_case()
    got = run_cuda_on_cpu(every_op(), ins, schedule=schedule)  # type: ignore[arg-type]
    errors = [relative_error(g.astype(np.float64), w) for g, w in zip(got, want, strict=True)]
    assert all(e < FP16_TOL for e in errors), errors


@needs_gxx
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_unfused_benchmark_programs_run_as_cuda(name: str) -> None:
    """Every benchmark program at batch 1, op by op as generated kernels, against the float64 interpreter (at the
    paper's shapes; MoE as its replica)."""
    prog = program(name)
    ins = _inputs(prog, name)
    want = ml.interpret(prog, [a.astype(np.float64) for a in ins])
    got = run_cuda_on_cpu(prog, ins)
    errors = [relative_error(g.astype(np.float64), w) for g, w in zip(got, want, strict=True)]
    assert all(e < FP16_TOL for e in errors), errors


@needs_gxx
def test_a_wrong_lowered_kernel_is_caught() -> None:
    """The emulation check can fail: nTrans's first rms_norm kernel loading its neighbouring block's row."""
    program = PROGRAMS["ntrans"](1)
    source = ml.generate_cuda(program)
    old = "const long long base = (long long)blockIdx.x * 4096;"
    assert old in source, "the generated source changed; update this test"
    ins = _inputs(program, "ntrans")
    want = ml.interpret(program, [a.astype(np.float64) for a in ins])
    (got,) = run_cuda_on_cpu(program, ins, source=source.replace(old, old.replace("blockIdx.x", "(blockIdx.x ^ 1)"), 1))
    assert not relative_error(got.astype(np.float64), want[0]) < FP16_TOL
