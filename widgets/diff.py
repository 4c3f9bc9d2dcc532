"""Side-by-side diff of two candidate μGraphs: a structural table and the two listings.

``GraphDiff(left, right, labels=(…, …))`` pairs the kernels of two kernel graphs by their *role*
(``diff_roles``: what each contributes to the outputs, by abstract expression; graph output i meets
output i). Kernels whose groups run the same ops pair one to one and compare field by field: the op,
operand and result types, attributes and, for customized kernels, the grid, block dim, forloop range,
reduction_dimx, shared memory, each loader's DTensor, imap and fmap, the block ops, and each saver's
omap. A group one side fuses (the program's ``rms_norm`` + ``matmul`` against one customized kernel)
shows what each side launches, then one row per op of the less fused side naming the ops of the
other side that compute it (``computes rms_norm``: ``k0 rms_norm`` ↔ ``k0 s2 accum_rms``). Graphs
without abstract expressions fall back to a sequence alignment of op names. ``to_frame()`` gives
one row per compared field (kernel, what, left, right, same). The listings (``format_kernel_graph``)
are aligned by ``difflib`` with changed lines highlighted. Headless state: ``changed_only`` hides
equal rows.
"""

from __future__ import annotations

import difflib
import html
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from mirage_lab.ir import (
    BlockGraph,
    KernelGraph,
    Node,
    TensorType,
    as_graph,
    dim_text,
    format_kernel_graph,
    loader_dtensor,
    map_text,
    saver_dtensor,
    smem_bytes,
    summary,
)
from mirage_lab.widgets.diff_roles import KernelGroup, kernel_groups, roles, units
from mirage_lab.widgets.display import LiveOrStatic

__all__ = ["DiffRow", "GraphDiff", "ListingRow", "align_kernels", "listing_rows", "structural_rows"]

ABSENT = "—"  # the field does not exist on this side (no such kernel, loader or saver)
NONE = "(none)"  # the field exists and is empty
MARK_RATIO = 0.6  # lines less alike than this are shown as changed wholesale, without character marks
COLUMNS = ["kernel", "what", "left", "right", "same"]
CSS = """<style>
.mlw-diff{font-family:system-ui,sans-serif;font-size:13px;line-height:1.35;color:#1f2328;background:#fff}
.mlw-diff table{border-collapse:collapse;margin:4px 0}
.mlw-diff td,.mlw-diff th{border:1px solid #d0d7de;padding:1px 6px;text-align:left;vertical-align:top}
.mlw-diff th{background:#f6f8fa}
.mlw-diff tr.mlw-changed td{background:#fff8c5}
.mlw-diff .mlw-code td{font-family:ui-monospace,monospace;font-size:12px;white-space:pre;border:none}
.mlw-diff .mlw-code td.mlw-no{color:#8c959f;text-align:right;user-select:none}
.mlw-diff .mlw-code tr.mlw-replace td.mlw-text{background:#fff8c5}
.mlw-diff .mlw-code tr.mlw-delete td.mlw-left,.mlw-diff .mlw-code tr.mlw-insert td.mlw-right{background:#ffebe9}
.mlw-diff .mlw-code tr.mlw-insert td.mlw-right{background:#dafbe1}
.mlw-diff .mlw-code mark{background:#ffd33d;color:inherit}
.mlw-diff .mlw-labels{font-weight:bold}
</style>"""


def _graph(x: Any) -> KernelGraph:
    """A kernel graph, its builder, or anything holding one in ``.graph`` (a search ``Candidate``)."""
    inner = getattr(x, "graph", None)
    return inner if isinstance(inner, KernelGraph) else as_graph(x)


def _label(x: Any, fallback: str) -> str:
    """A search candidate is named by its hash; anything else by its side."""
    h = getattr(x, "hash", None)
    return f"candidate {h[:10]}" if isinstance(h, str) else fallback


# --------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class DiffRow:
    """One compared field: which kernel pair, what, and its text on each side (``—`` where absent)."""

    kernel: str
    what: str
    left: str
    right: str

    @property
    def same(self) -> bool:
        return self.left == self.right

    def __repr__(self) -> str:
        mark = "=" if self.same else "≠"
        return f"DiffRow({self.kernel} {self.what}: {self.left!r} {mark} {self.right!r})"


@dataclass(frozen=True)
class ListingRow:
    """One line pair of the aligned listings; ``tag`` is difflib's (equal, replace, delete, insert)."""

    tag: str
    left_no: int | None
    left: str
    right_no: int | None
    right: str

    def __repr__(self) -> str:
        return f"ListingRow({self.tag}: {self.left_no}:{self.left.strip()!r} | {self.right_no}:{self.right.strip()!r})"


# --------------------------------------------------------------------------- facts of one side


def _types(ts: Sequence[TensorType]) -> str:
    return " ".join(str(t) for t in ts) or NONE


def graph_facts(g: KernelGraph) -> dict[str, str]:
    custom = g.block_graphs
    return {"inputs": _types(g.input_types), "outputs": _types(g.output_types),
            "kernels": str(len(g.compute_nodes)), "customized kernels": str(len(custom)),
            "total smem": f"{sum(smem_bytes(b) for b in custom)} B"}


def block_facts(bg: BlockGraph) -> dict[str, str]:
    facts = {"grid": str(bg.grid), "block dim": str(bg.block), "forloop range": str(bg.forloop_range),
             "reduction_dimx": str(bg.reduction_dimx), "smem": f"{smem_bytes(bg)} B"}
    for i, n in enumerate(bg.loaders):
        facts[f"loader {i} reads"] = str(loader_dtensor(n))
        facts[f"loader {i} imap"] = map_text(n.attr("imap"))
        facts[f"loader {i} fmap"] = dim_text(n.attr("fmap"))
        facts[f"loader {i} tile"] = str(bg.tensors[n.outputs[0]])
    facts["block ops"] = ", ".join(n.op.value for n in bg.compute_nodes) or NONE
    for i, n in enumerate(bg.savers):
        facts[f"saver {i} omap"] = map_text(n.attr("omap"))
        facts[f"saver {i} writes"] = str(saver_dtensor(bg, n))
    return facts


def kernel_facts(g: KernelGraph, node: Node) -> dict[str, str]:
    facts = {"op": node.op.value, "operands": _types([g.tensors[i] for i in node.inputs]),
             "results": _types([g.tensors[i] for i in node.outputs]),
             "attrs": ", ".join(f"{k}={v}" for k, v in node.attrs) or NONE}
    return facts | (block_facts(node.body) if node.body is not None else {})


# --------------------------------------------------------------------------- alignment


def align_kernels(left: KernelGraph, right: KernelGraph) -> list[tuple[int | None, int | None]]:
    """Pairs of kernel indices (into ``compute_nodes``); ``None`` where one side has no partner.

    Runs of equal op names pair in order; a replaced run pairs in order too (a customized kernel
    against a library op still compares), the longer side's surplus stays unpaired.
    """
    a = [n.op.value for n in left.compute_nodes]
    b = [n.op.value for n in right.compute_nodes]
    pairs: list[tuple[int | None, int | None]] = []
    for _, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        pairs += itertools.zip_longest(range(i1, i2), range(j1, j2))
    return pairs


def _scope(i: int | None, j: int | None) -> str:
    if i == j:
        return f"k{i}"
    return f"{ABSENT if i is None else f'k{i}'} ↔ {ABSENT if j is None else f'k{j}'}"


def _compare(scope: str, left: dict[str, str], right: dict[str, str]) -> list[DiffRow]:
    keys = list(left) + [k for k in right if k not in left]
    return [DiffRow(scope, k, left.get(k, ABSENT), right.get(k, ABSENT)) for k in keys]


def structural_rows(left: Any, right: Any) -> list[DiffRow]:
    """Graph-level rows, then one block of rows per group of kernels that play the same role."""
    lg, rg = _graph(left), _graph(right)
    rows = _compare("graph", graph_facts(lg), graph_facts(rg))
    groups = kernel_groups(lg, rg)
    if groups is None:  # no abstract expressions: kernels paired by their op names
        return rows + [r for i, j in align_kernels(lg, rg) for r in _pair_rows(lg, rg, i, j)]
    for group in groups:
        lops = [lg.compute_nodes[k].op for k in group.left]
        if lops == [rg.compute_nodes[k].op for k in group.right]:
            rows += [r for i, j in zip(group.left, group.right, strict=True) for r in _pair_rows(lg, rg, i, j)]
        elif not group.left or not group.right:
            rows += [r for i, j in itertools.zip_longest(group.left, group.right) for r in _pair_rows(lg, rg, i, j)]
        else:
            rows += _fusion_rows(lg, rg, group)
    return rows


def _pair_rows(lg: KernelGraph, rg: KernelGraph, i: int | None, j: int | None) -> list[DiffRow]:
    lf = kernel_facts(lg, lg.compute_nodes[i]) if i is not None else {}
    rf = kernel_facts(rg, rg.compute_nodes[j]) if j is not None else {}
    return _compare(_scope(i, j), lf, rf)


def _kernels_text(g: KernelGraph, kernels: Sequence[int]) -> str:
    return ", ".join(f"k{k} {g.compute_nodes[k].op.value}" for k in kernels)


def _launch_facts(g: KernelGraph, k: int) -> dict[str, str]:
    """A customized kernel's launch, loads and saves, one row each (the other side has no such kernel)."""
    node = g.compute_nodes[k]
    bg = node.body
    if bg is None:
        return {}
    launch = (f"grid {bg.grid} block {bg.block} forloop {bg.forloop_range} reduction_dimx {bg.reduction_dimx} "
              f"smem {smem_bytes(bg)} B")
    loads = "; ".join(f"d{d} → s{n.outputs[0]}:{bg.tensors[n.outputs[0]]} imap {map_text(n.attr('imap'))} "
                      f"fmap {dim_text(n.attr('fmap'))}" for d, n in zip(node.inputs, bg.loaders, strict=True))
    saves = "; ".join(f"s{n.inputs[0]} → d{d} omap {map_text(n.attr('omap'))}"
                      for d, n in zip(node.outputs, bg.savers, strict=True))
    return {f"k{k} launch": launch, f"k{k} loads": loads or NONE, f"k{k} saves": saves or NONE}


def _fusion_rows(lg: KernelGraph, rg: KernelGraph, group: KernelGroup) -> list[DiffRow]:
    """Kernels one side fuses differently: what each side launches, then which op computes which role."""
    scope = f"{'+'.join(f'k{k}' for k in group.left)} ↔ {'+'.join(f'k{k}' for k in group.right)}"
    rows = [DiffRow(scope, "kernels", _kernels_text(lg, group.left), _kernels_text(rg, group.right))]
    for k in group.left:
        rows += [DiffRow(scope, what, text, ABSENT) for what, text in _launch_facts(lg, k).items()]
    for k in group.right:
        rows += [DiffRow(scope, what, ABSENT, text) for what, text in _launch_facts(rg, k).items()]
    flip = len(group.right) > len(group.left)  # the roles are the ops of the less fused side
    sides = (units(rg, group.right), units(lg, group.left)) if flip else \
        (units(lg, group.left), units(rg, group.right))
    for role in roles(*sides):
        parts = ", ".join(u.name + (" (= its value)" if u.name in role.whole else "") for u in role.parts) or ABSENT
        mine = role.unit.name if role.unit is not None else ABSENT
        what = f"computes {role.unit.op}" if role.unit is not None else "computes"
        rows.append(DiffRow(scope, what, parts, mine) if flip else DiffRow(scope, what, mine, parts))
    return rows


def listing_rows(left: str, right: str) -> list[ListingRow]:
    """The two listings aligned line by line (difflib); line numbers count from 1."""
    a, b = left.splitlines(), right.splitlines()
    rows = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        for i, j in itertools.zip_longest(range(i1, i2), range(j1, j2)):
            row_tag = tag if tag != "replace" or (i is not None and j is not None) else \
                ("delete" if j is None else "insert")
            rows.append(ListingRow(row_tag, None if i is None else i + 1, "" if i is None else a[i],
                                   None if j is None else j + 1, "" if j is None else b[j]))
    return rows


# --------------------------------------------------------------------------- the state


class GraphDiff(LiveOrStatic):
    """Headless state of the candidate diff: the two graphs, their labels and the changed-only filter."""

    def __init__(self, left: Any, right: Any, *, labels: tuple[str, str] | None = None) -> None:
        self.left, self.right = _graph(left), _graph(right)
        self.labels = labels or (_label(left, "left"), _label(right, "right"))
        self.rows = tuple(structural_rows(self.left, self.right))
        self.listing = tuple(listing_rows(format_kernel_graph(self.left), format_kernel_graph(self.right)))
        self.changed_only = False

    def __repr__(self) -> str:
        changed = len(self.changed_rows)
        state = "identical" if self.identical else f"{changed} of {len(self.rows)} fields differ"
        return f"GraphDiff({self.labels[0]!r} vs {self.labels[1]!r}: {state})"

    @property
    def changed_rows(self) -> tuple[DiffRow, ...]:
        return tuple(r for r in self.rows if not r.same)

    @property
    def identical(self) -> bool:
        """Every compared field and every listing line is equal."""
        return not self.changed_rows and all(r.tag == "equal" for r in self.listing)

    def set_changed_only(self, value: bool) -> None:
        self.changed_only = bool(value)

    @property
    def visible_rows(self) -> tuple[DiffRow, ...]:
        return self.changed_rows if self.changed_only else self.rows

    def to_frame(self) -> pd.DataFrame:
        """One row per shown field: kernel, what, left, right, same (``attrs["labels"]`` names the sides)."""
        df = pd.DataFrame([[r.kernel, r.what, r.left, r.right, r.same] for r in self.visible_rows], columns=COLUMNS)
        df.attrs["labels"] = self.labels
        return df

    # -- views -----------------------------------------------------------------------------------------
    def header_html(self) -> str:
        left, right = (html.escape(x) for x in self.labels)
        state = "identical" if self.identical else f"{len(self.changed_rows)} of {len(self.rows)} fields differ"
        sums = "".join(f"<div><b>{lab}</b>: <code>{html.escape(summary(g))}</code></div>"
                       for lab, g in ((left, self.left), (right, self.right)))
        return f'<div class="mlw-labels">{left} ↔ {right}: {state}</div>{sums}'

    def table_html(self) -> str:
        left, right = (html.escape(x) for x in self.labels)
        head = f"<tr><th>kernel</th><th>what</th><th>{left}</th><th>{right}</th><th>same</th></tr>"
        body = "".join(_row_tr(row) for row in self.visible_rows)
        return f'<table class="mlw-rows">{head}{body}</table>'

    def listing_html(self) -> str:
        left, right = (html.escape(x) for x in self.labels)
        head = f'<tr><th></th><th>{left}</th><th></th><th>{right}</th></tr>'
        return f'<table class="mlw-code">{head}{"".join(_line_tr(row) for row in self.listing)}</table>'

    def to_html(self) -> str:
        """A static, self-contained HTML fragment (inline CSS, no script)."""
        return f'<div class="mlw-diff">{CSS}{self.header_html()}{self.table_html()}{self.listing_html()}</div>'

    def widget(self) -> Any:
        """An ipywidgets view: the header, a changed-only toggle, the field table and the listings."""
        return _build_widget(self)


def _row_tr(row: DiffRow) -> str:
    cells = (row.kernel, row.what, row.left, row.right, "✓" if row.same else "✗")
    tds = "".join(f"<td>{html.escape(c)}</td>" for c in cells)
    return f'<tr class="{"" if row.same else "mlw-changed"}">{tds}</tr>'


def _marked(a: str, b: str) -> tuple[str, str]:
    """Both lines escaped, the characters that differ wrapped in ``<mark>`` (only if the lines are alike)."""
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    if matcher.ratio() < MARK_RATIO:  # unrelated lines paired by position: marking scattered letters is noise
        return html.escape(a), html.escape(b)
    out_a, out_b = [], []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        sa, sb = html.escape(a[i1:i2]), html.escape(b[j1:j2])
        out_a.append(sa if tag == "equal" or not sa else f"<mark>{sa}</mark>")
        out_b.append(sb if tag == "equal" or not sb else f"<mark>{sb}</mark>")
    return "".join(out_a), "".join(out_b)


def _line_tr(row: ListingRow) -> str:
    a, b = _marked(row.left, row.right) if row.tag == "replace" else (html.escape(row.left), html.escape(row.right))
    no_a, no_b = ("" if n is None else str(n) for n in (row.left_no, row.right_no))
    return (f'<tr class="mlw-{row.tag}"><td class="mlw-no">{no_a}</td><td class="mlw-text mlw-left">{a}</td>'
            f'<td class="mlw-no">{no_b}</td><td class="mlw-text mlw-right">{b}</td></tr>')


# --------------------------------------------------------------------------- the ipywidgets view


def _build_widget(diff: GraphDiff) -> Any:
    import ipywidgets as w

    def wrap(fragment: str) -> str:
        return f'<div class="mlw-diff">{CSS}{fragment}</div>'

    toggle = w.Checkbox(value=diff.changed_only, description="changed fields only", indent=False)
    table = w.HTML(wrap(diff.table_html()))

    def on_toggle(change: dict[str, Any]) -> None:
        diff.set_changed_only(change["new"])
        table.value = wrap(diff.table_html())

    toggle.observe(on_toggle, names="value")
    listing = w.HTML(wrap(diff.listing_html()))
    return w.VBox([w.HTML(wrap(diff.header_html())), toggle, table, listing])
