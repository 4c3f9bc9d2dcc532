"""Block matmuls: on tensor cores (``mma.sync``), on CUDA cores with register blocking (and the K loop split over
idle threads, ``codegen.split_sum``), or element by element.

**Tensor cores** (``tensor_cores=True``, the default): an fp16 matmul that qualifies (``optimize.tensor_cores``)
runs as warp-level ``mma.sync.m16n8k16`` products with fp32 accumulation, through the helpers in
``TENSOR_CORE_HELPERS``: ``ldmatrix`` reads a 16×16 A fragment (rows past the tile's last read that row
again: small M padded in registers) and 16×8 B fragments from the shared-memory tiles. Each warp task is a
16-row band by ``n_tiles`` 8-column tiles, sharing one A fragment per K step; each lane then applies the fused
epilogue to the four outputs per tile it holds, from registers (lane l holds rows l/4 and l/4 + 8, columns
2·(l%4) and the next), storing each row's two as one ``__half2``. The task loop is warp-uniform, as
``mma.sync`` needs every lane of the warp.
"""

from __future__ import annotations

from contextlib import nullcontext

from mirage_lab.codegen.split_sum import add_line, combine_shares, split_block, split_sum
from mirage_lab.codegen.vectors import VECTORS
from mirage_lab.codegen.writer import KernelWriter
from mirage_lab.ir.dtype import DType
from mirage_lab.ir.ops import Op
from mirage_lab.optimize.tensor_cores import TILE_K, TILE_M, TILE_N, WARP, MmaTiling


def _strip_width(w: KernelWriter, parts: list[tuple[int, int]], n: int, rows: int, splits: bool) -> int:
    """Output columns per thread in a CUDA-core matmul: the widest fp16 vector (8, 4, 2) that N and every B
    pitch allow; without a K split, only while that still leaves a strip for every thread."""
    if any(w.bg.tensors[b].dtype is not DType.FLOAT16 for _, b in parts):
        return 1
    for width in (8, 4, 2):
        if n % width == 0 and all(w.pitch(b) % width == 0 for _, b in parts) and (
                splits or rows * n // width >= w.threads):
            return width
    return 1


def _cuda_core_matmul(w: KernelWriter, k: int, parts: list[tuple[int, int]], n: int) -> bool:
    """A matmul on CUDA cores with register blocking: each thread owns a strip of ``width`` consecutive output
    columns, reads A's element once and B's strip as one vector per step of K, and keeps ``width`` fp32 sums.
    When the strips leave at least half the block idle and the matmul feeds a plain sum accumulator, the K
    loop is split over the idle threads (consecutive threads on consecutive terms), whose partial sums
    ``combine_shares`` adds up. False when the parts' split points differ (``concat_then_matmul`` of unequal splits)."""
    if not all(w.dims(a)[-1] == w.dims(b)[-2] for a, b in parts):
        return False
    chain = w.schedule.chain(k)
    into = chain[0] if len(chain) == 1 and w.bg.nodes[chain[0]].op is Op.ACCUM_NO_RED else None
    rows = w.bg.tensors[w.bg.nodes[k].outputs[0]].numel // n
    width = _strip_width(w, parts, n, rows, into is not None and w.split_sums)
    strips, across = rows * n // width, n // width
    share = split_sum(w, strips, min(w.dims(a)[-1] for a, _ in parts)) if into is not None else 1
    total = strips * share
    loop = (split_block(w, total, share, "strip") if share > 1
            else w.block(f"for (int strip = threadIdx.x; strip < {strips}; strip += {w.threads})"))
    with loop:
        w.line(f"const int m = strip / {across}, n0 = strip % {across} * {width};" if across > 1
               else "const int m = strip, n0 = 0;")
        w.line(f"float sum[{width}] = {{}};")
        with w.block(f"if (t < {total})") if share > 1 and total % w.threads else nullcontext():
            for a, b in parts:
                head = (f"for (int kk = part; kk < {w.dims(a)[-1]}; kk += {share})" if share > 1
                        else f"for (int kk = 0; kk < {w.dims(a)[-1]}; ++kk)")
                with w.block(head):
                    w.line(f"const float x = {w.ld_at(a, f'm * {w.pitch(a)} + kk')};")
                    _strip_products(w, b, width)
        guard, how = combine_shares(w, share, "sum", width, total) if share > 1 else ("", "")
        with w.block(f"if ({guard})") if guard else nullcontext():
            w.line("#pragma unroll")
            with w.block(f"for (int j = 0; j < {width}; ++j)"):
                w.line(f"const int idx = m * {n} + n0 + j;")
                if share > 1:
                    note = f"accum_no_red; the K sum split over {share} threads"
                    w.line(add_line(f"acc{into}[idx]", "sum[j]", how, note))
                else:
                    w.line("float v = sum[j];")
                    w.epilogue(k)
    return True


def _strip_products(w: KernelWriter, b: int, width: int) -> None:
    """``sum[j] += x · B[kk][n0 + j]`` for the strip, B's strip read as one vector of ``width`` halves."""
    if width == 1:
        w.line(f"sum[0] += x * {w.ld_at(b, f'kk * {w.pitch(b)} + n0')};")
        return
    vtype = dict(VECTORS)[width * 2]
    w.line(f"const {vtype} y = *reinterpret_cast<const {vtype}*>(&s{b}[kk * {w.pitch(b)} + n0]);")
    w.line("const __half2* h = reinterpret_cast<const __half2*>(&y);")
    w.line("#pragma unroll")
    with w.block(f"for (int j = 0; j < {width // 2}; ++j)"):
        w.line("const float2 f = __half22float2(h[j]);")
        w.line("sum[2 * j] += x * f.x;")
        w.line("sum[2 * j + 1] += x * f.y;")


def declare_held(w: KernelWriter) -> None:
    """Before the loop: the register sums of the matmuls the plan holds (``optimize.tensor_cores.held_sums``)."""
    for k in w.held:
        t = w.mma[k]
        w.line(f"float held{k}[{t.rounds}][{t.n_tiles}][4] = {{}};  // matmul {k}'s sums over the for-loop")


def emit_mma(w: KernelWriter, k: int) -> None:
    """Matmul k on tensor cores (``optimize.tensor_cores``): warps take tasks in turn, accumulate each task's
    tiles in registers over K, then finish each output they hold like any element of the output; or, for a
    matmul whose sums the plan holds, keep adding to the same registers every iteration."""
    t = w.mma[k]
    span = TILE_N * t.n_tiles
    across = t.cols // span  # tasks per band
    held = w.held.get(k)
    w.line(f"// {t.tasks} task(s) of {TILE_M}×{span} outputs over {t.warps} warps; mma.sync.m16n8k16"
           + ("; sums held in registers until the last iteration" if held is not None else ""))
    if held is None:
        loop = w.block(f"for (int task = threadIdx.x / {WARP}; task < {t.tasks}; task += {t.warps})")
    else:  # unrolled, so that each round's sums are registers
        w.line("#pragma unroll")
        loop = w.block(f"for (int round = 0; round < {t.rounds}; ++round)")
    with loop:
        if held is not None:
            w.line(f"const int task = threadIdx.x / {WARP} + round * {t.warps};")
        with w.block(f"if (task < {t.tasks})") if held is not None and t.tasks % t.warps else nullcontext():
            _task(w, t, across, span, held)


def _task(w: KernelWriter, t: MmaTiling, across: int, span: int, held: int | None) -> None:
    """One warp task: its tiles' products over K, then its outputs (or, held, its sums at the last iteration)."""
    w.line(f"const int tm = task / {across} * {TILE_M}, tn = task % {across} * {span};" if across > 1
           else f"const int tm = task * {TILE_M}, tn = 0;")
    w.line(f"float (&c)[{t.n_tiles}][4] = held{t.node}[round];" if held is not None
           else f"float c[{t.n_tiles}][4] = {{}};")
    for a, b, kdim in t.parts:
        pa, pb = w.pitch(a), w.pitch(b)
        rows = f"{t.rows} - tm" if t.padded_rows else str(TILE_M)
        w.line("#pragma unroll 2")
        with w.block(f"for (int kk = 0; kk < {kdim}; kk += {TILE_K})"):
            w.line("mirage_frag_a fa;")
            w.line(f"mirage_load_a(fa, &s{a}[tm * {pa} + kk], {pa}, {rows});")
            w.line("#pragma unroll")
            with w.block(f"for (int j = 0; j < {t.n_tiles}; ++j)"):
                w.line("mirage_frag_b fb;")
                w.line(f"mirage_load_b(fb, &s{b}[kk * {pb} + tn + j * {TILE_N}], {pb});")
                w.line("mirage_mma(c[j], fa, fb);")
    with w.block(f"if (i == {w.bg.forloop_range - 1})") if held is not None else nullcontext():
        w.line(f"const int lane = threadIdx.x % {WARP};")
        w.line("#pragma unroll")
        with w.block(f"for (int j = 0; j < {t.n_tiles}; ++j)"):
            w.line("#pragma unroll")
            with w.block("for (int h = 0; h < 2; ++h)"):  # rows lane / 4 and lane / 4 + 8: two columns each
                w.line("const int row = tm + lane / 4 + h * 8;")
                w.line(f"const int pair = row * {t.cols} + tn + j * {TILE_N} + lane % 4 * 2;")
                with w.block(f"if (row < {t.rows})") if t.padded_rows else nullcontext():
                    if held is not None:
                        w.line(f"acc{held}[pair] = c[j][2 * h];  // the whole for-loop's sums")
                        w.line(f"acc{held}[pair + 1] = c[j][2 * h + 1];")
                    else:
                        w.line("float v0 = c[j][2 * h], v1 = c[j][2 * h + 1];")
                        w.epilogue_pair(t.node)


def emit_matmul(w: KernelWriter, k: int) -> None:
    node = w.bg.nodes[k]
    if k in w.mma:
        emit_mma(w, k)
        return
    parts = list(zip(node.inputs[:len(node.inputs) // 2], node.inputs[len(node.inputs) // 2:], strict=True))
    n = w.dims(node.outputs[0])[-1]
    if _cuda_core_matmul(w, k, parts, n):
        return

    def body(cs: list[str]) -> list[str]:
        lines = [f"const int m = idx / {n}, n = idx % {n};", "float v = 0.f;"]
        (a0, b0), (a1, b1) = parts  # concat_then_matmul whose split points differ: multiply the concatenations
        ka0, kb0 = w.dims(a0)[-1], w.dims(b0)[-2]
        pa0, pa1, pb0, pb1 = (w.pitch(t) for t in (a0, a1, b0, b1))
        lhs = f"(kk < {ka0} ? {w.ld_at(a0, f'm * {pa0} + kk')} : {w.ld_at(a1, f'm * {pa1} + kk - {ka0}')})"
        rhs = f"(kk < {kb0} ? {w.ld_at(b0, f'kk * {pb0} + n')} : {w.ld_at(b1, f'(kk - {kb0}) * {pb1} + n')})"
        return [*lines, f"for (int kk = 0; kk < {ka0 + w.dims(a1)[-1]}; ++kk) v += {lhs} * {rhs};"]

    w.elementwise(k, body)
