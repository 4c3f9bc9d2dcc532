"""One kernel: its signature, shared-memory tiles, prologue, for-loop and epilogue around the emitters.

A generated kernel follows the interpreter's §3.4 semantics exactly: ``blockIdx`` picks the
tiles by imap, loaders without a for-loop dim are hoisted before ``for (i < F)``, the others
read tile ``c·F + i`` along their fmap, copied ahead into their rings (``codegen.pipeline``);
accumulators live in fp32 shared memory (zeroed before the loop, or seeded at i = 0 for max /
rescale; a tensor-core matmul's sums may stay in registers until the last iteration), are
finalised after it, and post-loop ops and savers run once at the end (storage and arithmetic:
``codegen.writer``; stages, barriers and offsets: ``codegen.plan``).
"""

from __future__ import annotations

import math

from mirage_lab.codegen.accumulators import finalize, zero_accumulators
from mirage_lab.codegen.emit import EMIT, UNSUPPORTED
from mirage_lab.codegen.matmul import declare_held
from mirage_lab.codegen.tiles import emit_ring_copy, ring_slot_elements
from mirage_lab.codegen.writer import KernelWriter, ctype
from mirage_lab.errors import UnsupportedOpError
from mirage_lab.ir.graph import loader_dtensor, saver_dtensor
from mirage_lab.ir.ops import Kind
from mirage_lab.optimize.hardware import HARDWARE
from mirage_lab.optimize.memory import ALIGN
from mirage_lab.optimize.occupancy import BlockResources, occupancy

#: the GPU whose waves ``__launch_bounds__`` sizes for: the most SMs (H100 / H200: 132)
WAVE_TARGET = max(HARDWARE.values(), key=lambda hw: hw.sms)
#: the fewest registers per thread ``__launch_bounds__`` may ask ptxas to fit in
MIN_REGISTERS = 64


def kernel_source(w: KernelWriter) -> str:
    """The kernel's whole source: signature, shared-memory tiles, prologue, the for-loop and the epilogue."""
    bg, sched, plan = w.bg, w.schedule, w.plan
    params = [f"const {ctype(loader_dtensor(bg.nodes[k]).dtype)}* __restrict__ {p}"
              for k, p in w.loader_param.items()]
    params += [f"{ctype(saver_dtensor(bg, bg.nodes[k]).dtype)}* __restrict__ {p}"
               for k, p in w.saver_param.items()]
    pipe = w.pipeline
    w.line(f"// grid {bg.grid}, {w.threads} threads, F = {bg.forloop_range}, "
           f"{plan.peak} B shared ({plan.strategy}; {plan.naive} B without reuse), {w.barriers} barriers"
           + (f", loop tiles copied {pipe.stages - 1} iteration(s) ahead" if pipe.ring else ""))
    w.line(f"extern __shared__ __align__({ALIGN}) char smem[];")
    rings = pipe.ring_tensors(bg)
    for b in plan.buffers:
        ty = ctype(bg.tensors[int(b.key[1:])].dtype) if b.key.startswith("s") else "float"
        name = f"{b.key}_ring" if b.key.startswith("s") and int(b.key[1:]) in rings else b.key
        w.line(f"{ty}* {name} = reinterpret_cast<{ty}*>(smem + {plan.offsets[b.key]});")
    _prologue(w)
    zero_accumulators(w)
    declare_held(w)
    if sched.prologue and not pipe.ring:
        w.barrier("hoisted tiles are read by every thread")
    with w.block(f"for (int i = 0; i < {bg.forloop_range}; ++i)"):
        _loop_body(w)
    for s, st in enumerate(sched.epilogue):
        if s:
            w.barrier("next stage reads this one")
        for k in st.nodes:
            (finalize if bg.nodes[k].kind is Kind.ACCUM else emit_node)(w, k)
    body = "\n".join(w.lines)
    return f'extern "C" __global__ void {launch_bounds(w)} {w.name}(\n    ' \
           + ",\n    ".join(params) + ") {\n" + body + "\n}\n"


def _prologue(w: KernelWriter) -> None:
    """The hoisted loaders, then the ring's first ``stages − 1`` tiles, one commit group per iteration (the
    hoisted copies ride in iteration 0's); without a ring, the hoisted copies are waited for here."""
    pipe = w.pipeline
    hoisted = [k for st in w.schedule.prologue for k in st.nodes]
    for k in hoisted:
        emit_node(w, k, "hoisted: the same tile every iteration")
    for s in range(pipe.stages - 1 if pipe.ring else 0):
        for k in sorted(pipe.ring):
            emit_node(w, k, f"iteration {s}, into ring slot {s}", fetch=str(s), slot=str(s))
        w.line(f"mirage_cp_async_commit();  // group {s}: iteration {s}'s tiles")
    if not pipe.ring and pipe.asynchronous & set(hoisted):
        w.line("mirage_cp_async_commit();")
        w.line("mirage_cp_async_wait<0>();  // this thread's hoisted copies have landed")


def _loop_body(w: KernelWriter) -> None:
    """One iteration: wait for its tiles (ring) or copy them, then the stages, each ending at a barrier; after
    the first barrier the ring's slot read last iteration is refilled, ``stages − 1`` iterations ahead."""
    bg, pipe = w.bg, w.pipeline
    f, depth = bg.forloop_range, pipe.stages
    if pipe.ring:
        w.line(f"mirage_cp_async_wait<{depth - 2}>();  // this thread's copies of iteration i have landed")
        for k in sorted(pipe.ring):
            t = bg.nodes[k].outputs[0]
            ty = ctype(bg.tensors[t].dtype)
            w.line(f"{ty}* const s{t} = s{t}_ring + (i % {depth}) * {ring_slot_elements(w, t)};")
    for s, st in enumerate(w.schedule.loop):
        copied = [k for k in st.nodes if k not in pipe.ring]
        for k in copied:
            emit_node(w, k)
        if set(copied) & pipe.asynchronous:
            w.line("mirage_cp_async_commit();")
            w.line("mirage_cp_async_wait<0>();  // this thread's copies have landed")
        w.barrier("next stage reads this one" if s + 1 < len(w.schedule.loop)
                  else "the next iteration overwrites tiles still being read")
        if s == 0 and pipe.ring:
            ahead = f"i + {depth - 1}"
            with w.block(f"if ({ahead} < {f})"):
                for k in sorted(pipe.ring):
                    emit_node(w, k, f"iteration {ahead}, into the slot iteration i - 1 read",
                              fetch=ahead, slot=f"({ahead}) % {depth}")
            w.line("mirage_cp_async_commit();  // one group per iteration, even an empty one")


def launch_bounds(w: KernelWriter) -> str:
    """``__launch_bounds__(threads[, blocks per SM])``: asks ptxas to fit the registers of as many blocks per
    SM as put the whole grid in one wave on the largest target (``WAVE_TARGET``), where shared memory
    allows it and it leaves at least ``MIN_REGISTERS`` a thread."""
    hw = WAVE_TARGET
    room = occupancy(BlockResources(w.threads, MIN_REGISTERS, w.plan.peak), hw).blocks_per_sm
    blocks = min(-(-math.prod(w.bg.grid) // hw.sms), room)
    return f"__launch_bounds__({w.threads}, {blocks})" if blocks > 1 else f"__launch_bounds__({w.threads})"


def emit_node(w: KernelWriter, k: int, note: str = "", fetch: str | None = None, slot: str | None = None) -> None:
    """Node k's code; for a ring loader, ``fetch`` (the iteration) is copied into ring slot ``slot``."""
    node = w.bg.nodes[k]
    if node.op not in EMIT:
        raise UnsupportedOpError(f"block op {node.op.value} (node {k}) is not supported by the CUDA backend"
                                 f"{': ' + UNSUPPORTED[node.op] if node.op in UNSUPPORTED else ''}")
    outs = ", ".join(f"s{t}" for t in node.outputs)
    ins = ", ".join(f"s{t}" for t in node.inputs)
    w.line(f"// {outs or 'saver'} = {node.op.value}({ins}){'  // ' + note if note else ''}")
    with w.block(""):
        if fetch is not None and slot is not None:
            emit_ring_copy(w, k, fetch, slot)
        else:
            EMIT[node.op](w, k)
