"""imap / fmap / omap drawn as tilings on a tensor's shape (SPEC §3.2).

Each card shows a DTensor as a rectangle (its last two dims; leading dims are listed), with the
grid's partitions as solid lines coloured by grid axis (x red, y green, z blue) and the for-loop's
partitions as dashed lines. Block (0,0,0)'s tile at iteration 0 is filled; the tiles it visits over
the loop are shaded, so a reader sees at once which part of the tensor one block reads or writes.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from mirage_lab.ir import BlockGraph, Node, Op, loader_dtensor, saver_dtensor

AXIS_COLOURS = ("#dc2626", "#16a34a", "#2563eb")
MAX_LINES = 16  # more partitions than this are drawn as every k-th line
BOX = 150  # px: the longer side of the drawn tensor


@dataclass(frozen=True)
class Split:
    """How one tensor dim is cut: by grid axis ``axis`` into ``parts`` (axis -1: the for-loop)."""

    dim: int
    axis: int
    parts: int


def splits(bg: BlockGraph, node: Node) -> tuple[tuple[int, ...], list[Split]]:
    """The DTensor dims a loader reads or a saver writes, and how the grid and the for-loop cut them."""
    if node.op is Op.INPUT:
        dims, m, fmap = loader_dtensor(node).dims, node.attr("imap"), node.attr("fmap")
    else:
        dims, m, fmap = saver_dtensor(bg, node).dims, node.attr("omap"), -1
    out = [Split(d, a, bg.grid[a]) for a, d in enumerate(m) if d >= 0 and bg.grid[a] > 1]
    if fmap is not None and fmap >= 0 and bg.forloop_range > 1:
        out.append(Split(fmap, -1, bg.forloop_range))
    return tuple(dims), out


def _lines(n: int) -> range:
    step = max(1, -(-n // MAX_LINES))
    return range(step, n, step)


def tiling_svg(bg: BlockGraph, node: Node, caption: str = "") -> str:
    """One card: the tensor, its cuts, and block 0's tiles."""
    dims, cuts = splits(bg, node)
    rows_dim, cols_dim = (len(dims) - 2, len(dims) - 1) if len(dims) >= 2 else (-1, 0)
    rows = dims[rows_dim] if rows_dim >= 0 else 1
    cols = dims[cols_dim]
    scale = BOX / max(rows, cols)
    w, h = max(cols * scale, 24), max(rows * scale, 12)
    parts = {d: 1 for d in range(len(dims))}
    for c in cuts:
        parts[c.dim] *= c.parts
    # block 0's tile at iteration 0, and the strip it sweeps over the loop (fmap)
    tw = w / parts.get(cols_dim, 1)
    th = h / parts.get(rows_dim, 1) if rows_dim >= 0 else h
    loop = next((c for c in cuts if c.axis < 0), None)
    sweep_w = tw * (loop.parts if loop and loop.dim == cols_dim else 1)
    sweep_h = th * (loop.parts if loop and loop.dim == rows_dim else 1)
    body = [f'<rect x="0" y="0" width="{w:.1f}" height="{h:.1f}" fill="#f9fafb" stroke="#111827"/>',
            f'<rect x="0" y="0" width="{sweep_w:.1f}" height="{sweep_h:.1f}" fill="#bfdbfe"/>',
            f'<rect x="0" y="0" width="{max(tw, 3):.1f}" height="{max(th, 3):.1f}" fill="#2563eb" opacity="0.85"/>']
    body += _cut_lines(cuts, dims, rows_dim, cols_dim, w, h)
    lead = [f"dim {d}={dims[d]}" + "".join(f" ÷{c.parts}{'xyz'[c.axis] if c.axis >= 0 else ' loop'}"
                                            for c in cuts if c.dim == d) for d in range(len(dims) - 2)]
    legend = ", ".join(lead)
    text = html.escape(caption)
    height = h + 44
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="mirage-tiling" width="{max(w + 10, 240):.0f}" '
            f'height="{height:.0f}"><text x="0" y="12" font-size="11" font-family="Helvetica">{text}</text>'
            f'<g transform="translate(1,18)">{"".join(body)}</g>'
            f'<text x="0" y="{h + 32:.0f}" font-size="9" font-family="Helvetica" fill="#4b5563">'
            f"{html.escape(_dims_text(dims, cuts))}{'; ' + html.escape(legend) if legend else ''}</text></svg>")


def _cut_lines(cuts: Sequence[Split], dims: Sequence[int], rows_dim: int, cols_dim: int, w: float,
               h: float) -> list[str]:
    grid_parts: dict[int, int] = {}
    for c in cuts:
        if c.axis >= 0:
            grid_parts[c.dim] = grid_parts.get(c.dim, 1) * c.parts
    out = []
    for c in cuts:
        if c.dim not in (rows_dim, cols_dim):
            continue
        colour = AXIS_COLOURS[c.axis] if c.axis >= 0 else "#6b7280"
        dash = ' stroke-dasharray="3,2"' if c.axis < 0 else ""
        # the loop cuts inside each grid tile of its dim
        total = grid_parts.get(c.dim, 1) * c.parts if c.axis < 0 else c.parts
        span = w if c.dim == cols_dim else h
        for i in _lines(total):
            p = span * i / total
            x1, y1, x2, y2 = (p, 0.0, p, h) if c.dim == cols_dim else (0.0, p, w, p)
            out.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{colour}" '
                       f'stroke-width="0.8"{dash}/>')
    return out


def _dims_text(dims: Sequence[int], cuts: Sequence[Split]) -> str:
    shown = "×".join(map(str, dims[-2:]))
    by = ", ".join(f"dim {c.dim} ÷{c.parts} by {'grid ' + 'xyz'[c.axis] if c.axis >= 0 else 'for-loop'}"
                   for c in cuts)
    return f"{shown}: {by or 'whole tensor in every block'}"


def block_tilings_html(bg: BlockGraph, inputs: Sequence[str] = (), outputs: Sequence[str] = ()) -> str:
    """Cards for every loader and saver of a block graph, side by side."""
    cards = []
    for i, n in enumerate(bg.loaders):
        name = inputs[i] if i < len(inputs) else f"in{i}"
        cards.append(tiling_svg(bg, n, f"load {name} → s{n.outputs[0]}"))
    for i, n in enumerate(bg.savers):
        name = outputs[i] if i < len(outputs) else f"out{i}"
        cards.append(tiling_svg(bg, n, f"save s{n.inputs[0]} → {name}"))
    legend = ('<div style="font-size:11px;color:#4b5563">lines: <span style="color:#dc2626">grid x</span>, '
              '<span style="color:#16a34a">grid y</span>, <span style="color:#2563eb">grid z</span>, '
              'dashed = for-loop; dark = block (0,0,0) at iteration 0, light = what it sweeps over the loop</div>')
    row = "".join(f'<div style="display:inline-block;margin:4px 10px 4px 0;vertical-align:top">{c}</div>'
                  for c in cards)
    return f'<div class="mirage-tilings">{legend}{row}</div>'
