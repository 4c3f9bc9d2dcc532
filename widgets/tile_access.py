"""What one block of a custom kernel reads and writes: the tile-access view (issue 39).

``TileAccess(graph, kernel=0, block=(x, y, z), iteration=i)`` lists, for every loader, the index ranges of
its DTensor that the block reads at that iteration, and for every saver what the block writes after the
for-loop. The ranges come from the interpreter (``mirage_lab.semantics.loader_ranges`` runs its
``load_tiles`` on index tensors), so this view cannot drift from the semantics of SPEC §3.2.

*Contiguous bytes* is the length of one run of consecutive addresses the tile covers in device memory: the
tile's extent along the unit-stride dim, times the next dims' extents while the tile spans the whole of the
dims below and the strides are dense. ``segments`` is how many such runs the tile is (rows of a 2-D tile
whose width is less than the tensor's). A tensor with no unit-stride dim has runs of one element.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

import mirage_lab as ml
from mirage_lab.errors import InputError
from mirage_lab.ir import BlockGraph, KernelGraph, Node, Op, as_graph, loader_dtensor, saver_dtensor, smem_bytes
from mirage_lab.semantics import check_block, loader_ranges, saver_ranges

CSS = (Path(__file__).parent / "static" / "tile_access.css").read_text()
BOX = 260  # px: the longer side of a drawn tensor
MIN_SIDE = 18  # px: a skinny tensor (2 × 4096) is drawn at least this thick
PAD = 8  # px left of the drawing: room for the ring around a tile at the edge
MAX_LINES = 24  # tile lines drawn per side; more are drawn as every k-th
READ, WRITE, SWEEP = "#2563eb", "#ea580c", "#dbeafe"


@dataclass(frozen=True)
class Access:
    """One tensor a block touches: ``ranges`` per dim of the DTensor ``dims``; ``loop_ranges`` per iteration."""

    role: str  # "read" or "write"
    tensor: str  # the kernel graph's name for the DTensor (d3)
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str  # short name (f16)
    itemsize: int
    ranges: tuple[range, ...]
    loop_ranges: tuple[tuple[range, ...], ...]  # a loader's tile at every iteration (one entry if fmap is φ)
    when: str

    @property
    def tile(self) -> tuple[int, ...]:
        return tuple(len(r) for r in self.ranges)

    @property
    def nbytes(self) -> int:
        return math.prod(self.tile) * self.itemsize

    @property
    def run_elements(self) -> int:
        """Elements in one contiguous run (see the module docstring)."""
        order = sorted((s, d) for d, s in enumerate(self.strides) if self.dims[d] > 1)
        if not order or order[0][0] != 1:
            return 1
        run, span = 1, 1
        for stride, d in order:
            if stride != span:
                break
            run *= self.tile[d]
            if self.tile[d] != self.dims[d]:
                break
            span *= self.dims[d]
        return run

    @property
    def contiguous_bytes(self) -> int:
        return self.run_elements * self.itemsize

    @property
    def segments(self) -> int:
        return math.prod(self.tile) // self.run_elements

    def ranges_text(self) -> str:
        return ", ".join(f"{r.start}:{r.stop}" for r in self.ranges)


class TileAccess:
    """Block ``block`` of custom kernel ``kernel`` (0-based among the graph's custom kernels) at ``iteration``."""

    def __init__(self, graph: Any, kernel: int = 0, block: tuple[int, int, int] = (0, 0, 0), iteration: int = 0,
                 arch: str = "sm_90") -> None:
        self.graph: KernelGraph = as_graph(graph)
        customs = [k for k, n in enumerate(self.graph.nodes) if n.body is not None]
        if not customs:
            raise InputError("this graph has no custom kernels (graph_def_blocks), so no block reads tiles; "
                             "pass a fused graph, e.g. ml.bench.fused.rmsnorm(1) or a search result's best")
        if not 0 <= kernel < len(customs):
            raise InputError(f"kernel={kernel} is out of range: the graph has {len(customs)} custom kernel(s); "
                             f"pick 0 … {len(customs) - 1}")
        self.kernel, self.node_index = kernel, customs[kernel]
        self.node: Node = self.graph.nodes[self.node_index]
        body = self.node.body
        assert body is not None
        self.bg: BlockGraph = body
        block = tuple(int(b) for b in block)  # type: ignore[assignment]
        check_block(self.bg, block, iteration)
        self.block, self.iteration, self.arch = block, int(iteration), arch

    def __repr__(self) -> str:
        bg = self.bg
        return (f"TileAccess(custom kernel {self.kernel} (node n{self.node_index}), grid {bg.grid}, "
                f"for-loop {bg.forloop_range}; block {self.block}, iteration {self.iteration}; "
                f"{len(bg.loaders)} read, {len(bg.savers)} written, smem {self.smem_bytes} B)")

    # ---- the numbers
    @property
    def smem_bytes(self) -> int:
        """The block's shared memory by the library's §3.6 accounting (``ml.ir.smem_bytes``)."""
        return smem_bytes(self.bg)

    @property
    def smem_capacity(self) -> int:
        return int(ml.get_shared_memory_capacity(int(self.arch.removeprefix("sm_"))))

    def accesses(self) -> list[Access]:
        bg, F = self.bg, self.bg.forloop_range
        out = []
        for k, n in enumerate(bg.loaders):
            tid = self.node.inputs[k]
            every = [loader_ranges(bg, n, self.block, i) for i in range(F)] if n.attr("fmap", -1) >= 0 else []
            ranges = loader_ranges(bg, n, self.block, self.iteration)
            when = f"iteration {self.iteration} of {F}" if every else "every iteration (fmap φ)"
            out.append(self._access("read", tid, loader_dtensor(n).dims, ranges, tuple(every) or (ranges,), when))
        for k, n in enumerate(bg.savers):
            tid = self.node.outputs[k]
            ranges = saver_ranges(bg, n, self.block)
            when = "after the for-loop" if F > 1 else "at the end"
            out.append(self._access("write", tid, saver_dtensor(bg, n).dims, ranges, (ranges,), when))
        return out

    def _access(self, role: str, tid: int, dims: tuple[int, ...], ranges: tuple[range, ...],
                loop: tuple[tuple[range, ...], ...], when: str) -> Access:
        t = self.graph.tensors[tid]
        return Access(role, f"d{tid}", tuple(dims), self._strides(tid, dims), t.dtype.short,
                      t.dtype.itemsize, ranges, loop, when)

    def _strides(self, tid: int, dims: tuple[int, ...]) -> tuple[int, ...]:
        """A program input's strides as declared (``new_input(dims, strides)``); other tensors are dense."""
        for n in self.graph.nodes:
            if n.op is Op.INPUT and n.outputs[0] == tid and n.attr("strides") is not None:
                return tuple(n.attr("strides"))
        return tuple(math.prod(dims[d + 1:]) for d in range(len(dims)))

    def to_frame(self) -> pd.DataFrame:
        """One row per tensor the block touches: what, when, which indices, and the bytes."""
        rows = [{"tensor": a.tensor, "access": a.role, "when": a.when, "dims": "×".join(map(str, a.dims)),
                 "indices": a.ranges_text(), "tile": "×".join(map(str, a.tile)), "bytes": a.nbytes,
                 "contiguous bytes": a.contiguous_bytes, "segments": a.segments} for a in self.accesses()]
        return pd.DataFrame(rows)

    # ---- the drawing
    def to_html(self) -> str:
        """The current state, static: a heading, one card per tensor, the numbers."""
        return (f'<div class="mirage-tile-access mirage-static"><style>{CSS}</style>{self.heading_html()}'
                f"{self.cards_html()}{self.table_html()}</div>")

    def heading_html(self) -> str:
        bg = self.bg
        smem, cap = self.smem_bytes, self.smem_capacity
        return (f'<div class="mta-heading"><b>custom kernel {self.kernel}</b> (node n{self.node_index}): grid '
                f"{bg.grid}, for-loop {bg.forloop_range} — <b>block {self.block}</b>, <b>iteration "
                f"{self.iteration}</b><br>shared memory: {_kib(smem)} of {_kib(cap)} ({self.arch}; the §3.6 sum of "
                f"the block's op outputs)</div>")

    def cards_html(self) -> str:
        cards = "".join(f'<div class="mta-card">{tensor_svg(a, self.iteration)}</div>' for a in self.accesses())
        legend = (f'<div class="mta-legend"><span style="color:{READ}">■</span> read at this iteration '
                  f'<span style="color:#93c5fd">■</span> read at other iterations '
                  f'<span style="color:{WRITE}">■</span> written; grey lines: tile boundaries (every k-th where '
                  "dense); a ring and dotted guides mark a tile too small to see</div>")
        return f'<div class="mta-cards">{cards}</div>{legend}'

    def table_html(self) -> str:
        return self.to_frame().to_html(index=False, classes="mta-table", border=0)


def tensor_svg(a: Access, iteration: int) -> str:
    """The whole tensor (its last two dims) as a grid of tiles; the block's tile filled. A loader's SVG holds its
    tile at every iteration (``data-iteration``), only ``iteration``'s shown, so a front end can step the loop."""
    rows_dim, cols_dim = (len(a.dims) - 2, len(a.dims) - 1) if len(a.dims) >= 2 else (-1, 0)
    rows = a.dims[rows_dim] if rows_dim >= 0 else 1
    cols = a.dims[cols_dim]
    scale = BOX / max(rows, cols)
    w, h = max(cols * scale, MIN_SIDE), max(rows * scale, MIN_SIDE)

    def box(r: tuple[range, ...]) -> tuple[float, float, float, float]:
        ry = r[rows_dim] if rows_dim >= 0 else range(0, 1)
        x0, x1 = r[cols_dim].start / cols * w, r[cols_dim].stop / cols * w
        y0, y1 = ry.start / rows * h, ry.stop / rows * h
        return x0, y0, max(x1 - x0, 2.5), max(y1 - y0, 2.5)

    body = [f'<rect x="0" y="0" width="{w:.1f}" height="{h:.1f}" fill="#f9fafb"/>']
    body += _tile_lines(a, rows_dim, cols_dim, w, h)
    colour = READ if a.role == "read" else WRITE
    many = len(a.loop_ranges) > 1
    if many:  # what the block reads over the whole loop, under the current iteration's tile
        body += ['<rect class="mta-swept" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="#93c5fd" '
                 'opacity="0.55"/>'.format(*box(r)) for r in a.loop_ranges]
    for i, r in enumerate(a.loop_ranges if many else (a.ranges,)):
        shown = "" if (i == iteration or not many) else ' style="display:none"'
        x, y, bw, bh = box(r)
        guides = "" if min(bw, bh) >= 6 else (  # a tile a few pixels wide: dotted lines lead the eye to it
            f'<line x1="0" y1="{y + bh / 2:.1f}" x2="{x:.1f}" y2="{y + bh / 2:.1f}" class="mta-guide"/>'
            f'<line x1="{x + bw / 2:.1f}" y1="0" x2="{x + bw / 2:.1f}" y2="{y:.1f}" class="mta-guide"/>'
            f'<circle cx="{x + bw / 2:.1f}" cy="{y + bh / 2:.1f}" r="7" fill="none" stroke="{colour}" '
            'stroke-width="1.5"/>')
        body.append(f'<g class="mta-tile" data-iteration="{i if many else "all"}"{shown}>{guides}<rect x="{x:.1f}" '
                    f'y="{y:.1f}" width="{bw:.1f}" height="{bh:.1f}" fill="{colour}" stroke="#111827" '
                    'stroke-width="0.6"/></g>')
    body.append(f'<rect x="0" y="0" width="{w:.1f}" height="{h:.1f}" fill="none" stroke="#111827"/>')
    lead = "; ".join(f"dim {d}: {a.ranges[d].start}:{a.ranges[d].stop} of {a.dims[d]}"
                     for d in range(len(a.dims) - 2))
    verb = "reads" if a.role == "read" else "writes"
    lines = [f"{verb} [{a.ranges_text()}] {'at ' if a.role == 'read' and many else ''}{a.when}",
             f"tile {'×'.join(map(str, a.tile))} = {_bytes(a.nbytes)}: {a.segments} × {_bytes(a.contiguous_bytes)} "
             "contiguous", *([lead] if lead else [])]
    title = f"{a.tensor}  {'×'.join(map(str, a.dims))}  {a.dtype}"
    text = "".join(f'<text x="{PAD}" y="{h + 48 + 13 * k:.0f}" class="mta-note">{html.escape(t)}</text>'
                   for k, t in enumerate(lines))
    width = max(w + PAD + 48, 6.2 * max(map(len, lines)), 7 * len(title))
    axes = (f'<text x="{w + 4:.0f}" y="{h:.0f}" class="mta-note">dim {cols_dim} →</text>'
            + (f'<text x="0" y="{h + 12:.0f}" class="mta-note">↓ dim {rows_dim}</text>' if rows_dim >= 0 else ""))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="mta-tensor" data-tensor="{a.tensor}" '
            f'width="{width:.0f}" height="{h + 42 + 13 * len(lines):.0f}">'
            f'<text x="{PAD}" y="12" class="mta-title">{html.escape(title)}</text>'
            f'<g transform="translate({PAD},18)">{"".join(body)}{axes}</g>{text}</svg>')


def _tile_lines(a: Access, rows_dim: int, cols_dim: int, w: float, h: float) -> list[str]:
    out = []
    for d, span, vertical in ((cols_dim, w, True), (rows_dim, h, False)):
        if d < 0:
            continue
        n = a.dims[d] // a.tile[d]
        step = max(1, -(-n // MAX_LINES))
        for i in range(step, n, step):
            p = span * i / n
            x1, y1, x2, y2 = (p, 0.0, p, h) if vertical else (0.0, p, w, p)
            out.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="#9ca3af" '
                       'stroke-width="0.5"/>')
    return out


def _bytes(n: int) -> str:
    return f"{n} B" if n < 1024 else _kib(n)


def _kib(n: int) -> str:
    return f"{n / 1024:.4g} KiB"
