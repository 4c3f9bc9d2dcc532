"""Loaders and savers: tiles copied between global and shared memory, and the copies of loop tiles ahead of time.

Tiles are copied in the widest vectors (16, 8 or 4 bytes) their rows allow (``codegen.vectors``). A loader in the
pipeline's ``asynchronous`` set (``codegen.pipeline``) copies with ``cp.async`` (``mirage_cp_async<bytes>``),
straight into shared memory; the kernel commits and waits for the copies (``codegen.kernel``). A ring loader's
tile for a later iteration goes into that iteration's slot of its ring (``emit_ring_copy``).

**Strides**: a graph input declared with strides (``g.new_input(dims, strides=...)``, e.g. a column-major
weight) is read in that layout: its loaders address global memory by the strides, in vectors only where the
last dim is contiguous and the other strides keep rows aligned, element by element otherwise.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from mirage_lab.codegen.expressions import coords, flat
from mirage_lab.codegen.vectors import TileCopy, copy_shape, tile_copy
from mirage_lab.codegen.writer import KernelWriter
from mirage_lab.ir.graph import loader_dtensor, saver_dtensor
from mirage_lab.ir.tensor import Dims, contiguous_strides
from mirage_lab.optimize.memory import ring_slot

AXES = "xyz"


def _tile_copy(w: KernelWriter, t: int, full: Dims, base: str, glob: str, load: bool, itemsize: int,
               strides: Dims | None = None, asynchronous: bool = False, tile: str = "") -> None:
    """Copy STensor t's tile between shared memory and a DTensor at offset ``base``: row-major, or laid out in
    ``strides`` (a strided graph input); ``asynchronous``: a load with ``cp.async``; ``tile``: the tile's
    pointer (default ``s<t>``; a ring slot).

    In the widest vectors (16, 8 or 4 bytes) that whole tile rows and DTensor rows allow (``copy_vector``); a
    padded tile's rows are whole vectors too, so each vector stays inside one row."""
    dims, full = copy_shape(w.dims(t), full, itemsize, strides, not w.layouts[t].padded)
    tc = tile_copy(dims, full, itemsize, w.threads, strides)
    w.line(f"const long long base = {base};")
    loop: AbstractContextManager[None]
    if tc.group:
        w.line(f"const int col = threadIdx.x % {tc.per_row}, row0 = threadIdx.x / {tc.per_row};")
        loop = w.block(f"if (row0 < {tc.group}) for (int row = row0; row < {tc.rows}; row += {tc.group})")
    else:
        loop = w.for_each(tc.chunks, "c")
    with loop:
        smem, g = _copy_addresses(w, t, dims, full, tc, strides)
        smem, g = f"{tile or f's{t}'}[{smem}]", f"{glob}[base + {g}]"
        if asynchronous:
            w.line(f"mirage_cp_async<{tc.step * itemsize}>(&{smem}, &{g});")
            return
        src, dst = (g, smem) if load else (smem, g)
        if tc.vtype:
            src, dst = f"*reinterpret_cast<const {tc.vtype}*>(&{src})", f"*reinterpret_cast<{tc.vtype}*>(&{dst})"
        w.line(f"{dst} = {src};")


def _copy_addresses(w: KernelWriter, t: int, tile: Dims, full: Dims, tc: TileCopy, strides: Dims | None = None
                    ) -> tuple[str, str]:
    """(shared-memory offset, DTensor offset from the tile's base) of the current copy: of ``c`` when flat,
    of (``row``, ``col``) by rows. Declares ``idx`` (the flat index) for the flat mapping. ``tile``, ``full``: the
    dims the copy walks (``copy_shape``); ``strides``: the DTensor's declared layout (None: row-major)."""
    if tc.group:
        col = f"col * {tc.step}" if tc.step > 1 else "col"
        pitch = w.pitch(t) if w.layouts[t].padded else tile[-1]  # (a merged copy shape is dense)
        return f"row * {pitch} + {col}", flat(full, [*coords(tile[:-1], "row"), col], strides)
    w.line(f"const int idx = c * {tc.step};" if tc.step > 1 else "const int idx = c;")
    whole = tile == full and strides is None
    return w.offset(t, "idx"), "idx" if whole else flat(full, coords(tile, "idx"), strides)


def emit_ring_copy(w: KernelWriter, k: int, iteration: str, slot: str) -> None:
    """Ring loader k's tile of ``iteration`` copied asynchronously into ring slot ``slot`` (C expressions)."""
    node = w.bg.nodes[k]
    d, t = loader_dtensor(node), node.outputs[0]
    strides = w.strides.get(k)
    base = _block_offset(w, d.dims, w.dims(t), node.attr("imap"), node.attr("fmap", -1), iteration, strides)
    _tile_copy(w, t, d.dims, base, w.loader_param[k], True, d.dtype.itemsize, strides, asynchronous=True,
               tile=f"(s{t}_ring + ({slot}) * {ring_slot_elements(w, t)})")


def ring_slot_elements(w: KernelWriter, t: int) -> int:
    """Elements from one slot of STensor t's ring to the next."""
    return ring_slot(w.layouts[t].nbytes) // w.bg.tensors[t].dtype.itemsize


def _block_offset(w: KernelWriter, full: Dims, tile: Dims, amap: tuple[int, ...], fmap: int,
                  iteration: str = "i", strides: Dims | None = None) -> str:
    """The DTensor offset of this block's (and iteration's) tile: ``c[d]·t[d]`` per SPEC §3.4, in elements of
    a row-major DTensor or of one laid out in ``strides``."""
    strides = strides or contiguous_strides(full)
    terms = []
    for d in range(len(full)):
        unit = tile[d] * strides[d]
        if unit == 0:  # a stride-0 (broadcast) dim: every tile starts at the same place
            continue
        for a in range(3):
            if amap[a] == d and w.bg.grid[a] > 1:
                scale = unit * (w.bg.forloop_range if fmap == d else 1)
                terms.append(f"(long long)blockIdx.{AXES[a]} * {scale}")
        if fmap == d:
            it = iteration if iteration.isidentifier() or iteration.isdigit() else f"({iteration})"
            terms.append(f"(long long){it} * {unit}")
    return " + ".join(terms) or "0"


def emit_loader(w: KernelWriter, k: int) -> None:
    node = w.bg.nodes[k]
    d = loader_dtensor(node)
    t = node.outputs[0]
    strides = w.strides.get(k)
    base = _block_offset(w, d.dims, w.dims(t), node.attr("imap"), node.attr("fmap", -1), strides=strides)
    _tile_copy(w, t, d.dims, base, w.loader_param[k], True, d.dtype.itemsize, strides,
               asynchronous=k in w.pipeline.asynchronous)


def emit_saver(w: KernelWriter, k: int) -> None:
    node = w.bg.nodes[k]
    t = node.inputs[0]
    d = saver_dtensor(w.bg, node)
    base = _block_offset(w, d.dims, w.dims(t), node.attr("omap"), -1)
    _tile_copy(w, t, d.dims, base, w.saver_param[k], False, d.dtype.itemsize)
