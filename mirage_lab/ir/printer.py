"""Readable listings of μGraphs (jaxpr-like), builder code that rebuilds them, and HTML for notebooks.

A kernel graph prints as one equation per op, inputs in the header, outputs at the end::

    { lambda d0:f16[16,4096] d1:f16[4096,6144] . let
        d2:f16[16,6144] = customized d0 d1
          { block grid=(256,1,1) forloop_range=4 reduction_dimx=64 smem=81.5KiB
              s0:f16[16,1024] = load[imap=(x→φ, y→φ, z→φ), fmap=1] d0
              s1:f16[1024,24] = load[imap=(x→1, y→φ, z→φ), fmap=0] d1
              s2:f16[16,1]ᵖ = accum_rms s0
              s3:f16[16,24] = matmul s0 s1
              s4:f16[16,24]ᵖ = accum_no_red s3
              s5:f16[16,24]ᵖ = div s4 s2
              d2 = save[omap=(x→1, y→φ, z→φ)] s5
          }
      in ( d2 ) }

Notation:

* ``d0, d1, …`` are kernel tensors (DTensors) and ``s0, s1, …`` block tensors (STensors), numbered
  by creation order, exactly as the builder handles print them.
* ``f16[16,4096]`` is the dtype and dims; a trailing ``ᵖ`` marks a **post-loop** STensor (the
  result of an accumulator, or computed from one); unmarked STensors are recomputed every iteration.
* Op attributes are in brackets: ``reduction[dim=2]``, ``mul_scalar[scalar=0.5]``.
* Maps name the grid axis and the data dim it partitions: ``imap=(x→1, y→φ, z→φ)`` reads "grid axis
  x splits dim 1; y and z replicate (φ)". ``fmap=0`` is the dim the for-loop walks; ``fmap=φ`` means
  the same tile every iteration. ``omap`` says along which dim the blocks' results are concatenated.
* The block header shows the grid, the for-loop range, ``reduction_dimx`` (X), ``block_dim`` when
  it is not the default (128,1,1), and ``smem``: the search-time shared-memory heuristic (SPEC §3.6,
  the sum of all counted block-op outputs; no reuse, not the planned peak).

``to_python(g)`` returns builder code: executing it defines ``g``, the frozen ``KernelGraph``, equal
(``==``) to the original (for a ``BlockGraph``: ``bg``). ``to_html(g)`` is the notebook view.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mirage_lab.ir.canonical import canonical_hash
from mirage_lab.ir.dtype import DType
from mirage_lab.ir.node import PHI, Node, loader_dtensor, saver_dtensor
from mirage_lab.ir.ops import ACCUM_KEY, Kind, Level, Op
from mirage_lab.ir.smem import DEFAULT_ARCH, capacity, heuristic_usage
from mirage_lab.ir.tensor import TensorType, contiguous_strides

__all__ = ["format_block_graph", "format_graph", "format_kernel_graph", "smem_bytes", "to_html", "to_python"]

AXES = "xyz"
WIDTH = 100  # wrap the header's input list beyond this many characters
DEFAULT_BLOCK = (128, 1, 1)
KERNEL_INDENT = "    "
BLOCK_INDENT = "    "  # block ops, relative to their braces
PHI_SIGN = "φ"
POST_LOOP_SIGN = "ᵖ"

if TYPE_CHECKING:  # ir.graph formats itself with this module, so the classes are only named here
    from typing import TypeAlias

    from typing_extensions import TypeIs

    from mirage_lab.ir.graph import BlockGraph, KernelGraph

    Graph: TypeAlias = KernelGraph | BlockGraph


def _freeze(g: Any) -> Graph:
    """Accept frozen graphs and builders (which are frozen on the fly)."""
    freeze = getattr(g, "freeze", None)  # builders have it, frozen graphs do not
    out = freeze() if callable(freeze) else g
    if getattr(out, "level", None) in (Level.KERNEL, Level.BLOCK) and hasattr(out, "nodes"):
        return out
    raise TypeError(f"expected a KernelGraph or BlockGraph (or a builder of one), got {type(g).__name__}")


def _is_kernel(g: Graph) -> TypeIs[KernelGraph]:
    return g.level is Level.KERNEL


# --------------------------------------------------------------------------- small formatters


def _tuple(v: Sequence[Any]) -> str:
    """``(4096,)``, ``(256,1,1)``: Python tuple syntax without spaces."""
    items = ",".join(map(_value, v))
    return f"({items},)" if len(v) == 1 else f"({items})"


def _value(v: Any) -> str:
    if isinstance(v, tuple | list):
        return _tuple(v)
    if isinstance(v, DType):
        return v.short
    return repr(v)


def _type(t: TensorType) -> str:
    """``f16[16,4096]``; post-loop STensors get a trailing ``ᵖ``."""
    return f"{t.dtype.short}[{','.join(map(str, t.dims))}]" + (POST_LOOP_SIGN if t.post_loop else "")


def dim_text(d: int) -> str:
    return PHI_SIGN if d == PHI else str(d)


def map_text(m: Sequence[int]) -> str:
    """``(x→1, y→φ, z→φ)``: grid axis → data dim, φ for replicate / no dim."""
    return "(" + ", ".join(f"{AXES[a]}→{dim_text(d)}" for a, d in enumerate(m)) + ")"


def _kib(n: int) -> str:
    if n < 1024:
        return f"{n}B"
    k = n / 1024
    text = f"{k:.1f}"
    return f"{text.removesuffix('.0')}KiB"


def _params(items: Sequence[tuple[str, str]]) -> str:
    return "[" + ", ".join(f"{k}={v}" for k, v in items) + "]" if items else ""


def _attr_items(node: Node) -> list[tuple[str, str]]:
    """Attributes worth printing, in the op table's order (then alphabetical); defaults dropped."""
    attrs = dict(node.attrs)
    if node.op is Op.REDUCTION and attrs.get("group_size") == 1:
        del attrs["group_size"]
    order = [*node.op.spec.attrs, *sorted(k for k in attrs if k not in node.op.spec.attrs)]
    return [(k, _value(attrs[k])) for k in order if k in attrs]


def _wrap(head: str, tokens: Sequence[str], tail: str, cont: str, width: int = WIDTH) -> list[str]:
    """``head tok tok … tail``, broken before a token that would pass ``width`` (room kept for ``tail``)."""
    width -= len(tail) + 1
    lines, line = [], head
    for tok in tokens:
        if len(line) + 1 + len(tok) > width and line != head:
            lines.append(line)
            line = cont + tok
        else:
            line = f"{line} {tok}" if line else tok
    lines.append(f"{line} {tail}" if tail else line)
    return lines


def smem_bytes(bg: BlockGraph) -> int:
    """The §3.6 search-time heuristic: the bytes of every counted block-op output (savers add 0)."""
    return heuristic_usage((n.op, [bg.tensors[i] for i in n.outputs]) for n in bg.nodes)


# --------------------------------------------------------------------------- listings


def format_graph(g: Any) -> str:
    """The listing of a kernel or block graph (or of a builder's current graph)."""
    graph = _freeze(g)
    return format_kernel_graph(graph) if _is_kernel(graph) else format_block_graph(graph)


def format_kernel_graph(g: Any) -> str:
    """A jaxpr-like listing of a kernel graph; customized ops show their block graphs nested."""
    graph = _freeze(g)
    if not _is_kernel(graph):
        return format_block_graph(graph)
    inputs = []
    for n in graph.nodes:
        if n.op is Op.INPUT:
            tid = n.outputs[0]
            t = graph.tensors[tid]
            strides = n.attr("strides")
            extra = "" if strides is None or tuple(strides) == contiguous_strides(t.dims) else \
                f"{{strides={_tuple(strides)}}}"
            inputs.append(f"d{tid}:{_type(t)}{extra}")
    lines = _wrap("{ lambda", inputs, ". let", cont=" " * len("{ lambda "))
    for n in graph.compute_nodes:
        lhs = " ".join(f"d{i}:{_type(graph.tensors[i])}" for i in n.outputs)
        rhs = " ".join(f"d{i}" for i in n.inputs)
        lines.append(f"{KERNEL_INDENT}{lhs} = {n.op.value}{_params(_attr_items(n))} {rhs}".rstrip())
        if n.body is not None:
            lines.append(format_block_graph(n.body, KERNEL_INDENT + "  ", inputs=[f"d{i}" for i in n.inputs],
                                            outputs=[f"d{i}" for i in n.outputs]))
    outs = ", ".join(f"d{i}" for i in graph.outputs)
    lines.append(f"  in ( {outs} ) }}")
    return "\n".join(lines)


def block_header(bg: BlockGraph) -> str:
    """``grid=(256,1,1) forloop_range=4 reduction_dimx=64 smem=81.5KiB`` (block_dim only if not default)."""
    parts = [f"grid={_tuple(bg.grid)}"]
    if tuple(bg.block) != DEFAULT_BLOCK:
        parts.append(f"block_dim={_tuple(bg.block)}")
    parts += [f"forloop_range={bg.forloop_range}", f"reduction_dimx={bg.reduction_dimx}",
              f"smem={_kib(smem_bytes(bg))}"]
    return " ".join(parts)


def format_block_graph(bg: Any, indent: str = "", *, inputs: Sequence[str] | None = None,
                       outputs: Sequence[str] | None = None) -> str:
    """A listing of a block graph, every line prefixed by ``indent``.

    ``inputs`` / ``outputs`` name the DTensors the loaders read and the savers write (the enclosing
    customized op's operands and results). Without them a standalone graph shows ``in0:f16[…]`` and
    ``out0:f16[…]`` with their DTensor types.
    """
    graph = _freeze(bg)
    if _is_kernel(graph):
        return "\n".join(indent + line for line in format_kernel_graph(graph).splitlines())
    lines = [f"{indent}{{ block {block_header(graph)}"]
    body = indent + BLOCK_INDENT
    k_in = k_out = 0
    for n in graph.nodes:
        if n.op is Op.INPUT:
            src = inputs[k_in] if inputs is not None else f"in{k_in}:{_type(loader_dtensor(n))}"
            k_in += 1
            params = [("imap", map_text(n.attr("imap"))), ("fmap", dim_text(n.attr("fmap")))]
            t = graph.tensors[n.outputs[0]]
            lines.append(f"{body}s{n.outputs[0]}:{_type(t)} = load{_params(params)} {src}")
        elif n.op is Op.OUTPUT:
            dst = outputs[k_out] if outputs is not None else f"out{k_out}:{_type(saver_dtensor(graph, n))}"
            k_out += 1
            lines.append(f"{body}{dst} = save{_params([('omap', map_text(n.attr('omap')))])} s{n.inputs[0]}")
        else:
            lhs = " ".join(f"s{i}:{_type(graph.tensors[i])}" for i in n.outputs)
            rhs = " ".join(f"s{i}" for i in n.inputs)
            lines.append(f"{body}{lhs} = {n.op.value}{_params(_attr_items(n))} {rhs}")
    lines.append(f"{indent}}}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- HTML


def summary(g: Any) -> str:
    """One line: sizes, kernels, block graphs and (kernel graphs) a short canonical hash."""
    graph = _freeze(g)
    if not _is_kernel(graph):
        return (f"BlockGraph: {len(graph.loaders)} in, {len(graph.compute_nodes)} ops, {len(graph.savers)} out"
                f" · {block_header(graph)} · {POST_LOOP_SIGN} = post-loop")
    ops = graph.compute_nodes
    custom = graph.block_graphs
    parts = [f"KernelGraph: {_plural(len(graph.inputs), 'input')}", _plural(len(ops), "op"),
             _plural(len(graph.outputs), "output")]
    if custom:
        blocks = sum(len(b.compute_nodes) for b in custom)
        parts.append(f"{_plural(len(custom), 'customized op')} ({_plural(blocks, 'block op')})")
    parts.append(f"hash {canonical_hash(graph)[:12]}")
    if custom:
        parts.append(f"{POST_LOOP_SIGN} = post-loop")
    return ", ".join(parts[:3]) + " · " + " · ".join(parts[3:])


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def to_html(g: Any) -> str:
    """A notebook view: a one-line summary over the escaped listing in a ``<pre>`` block."""
    graph = _freeze(g)
    head = html.escape(summary(graph))
    body = html.escape(format_graph(graph))
    return ('<div class="mirage-lab-graph">'
            f'<div style="font-family:monospace;font-size:90%;opacity:0.75">{head}</div>'
            f'<pre style="margin:0.25em 0;line-height:1.3">{body}</pre></div>')


# --------------------------------------------------------------------------- builder code

def _py(v: Any) -> str:
    """Python source for an attribute value (tuples keep their one-element comma)."""
    if isinstance(v, tuple | list):
        items = ", ".join(map(_py, v))
        return f"({items},)" if len(v) == 1 else f"({items})"
    return repr(v)


def _call(b: str, node: Node, args: list[str], kernel: bool) -> str:
    """The builder call that re-creates ``node`` (not loaders, savers or customized ops)."""
    op, a = node.op, node.attr_map
    if op.spec.kind is Kind.ACCUM:
        if op is Op.ACCUM_NO_RED:
            return f"{b}.forloop_accum({args[0]})"
        extra = f", rescale={args[1]}" if len(args) > 1 else ""
        return f'{b}.forloop_accum({args[0]}, "{ACCUM_KEY[op]}"{extra})'
    rule = op.spec.builder
    if rule is not None and rule.generated:  # the row's method: its tensors, then its scalars in order
        return f"{b}.{rule.name}({', '.join([*args, *(repr(a[attr]) for attr in rule.attributes)])})"
    if op is Op.RMS_NORM and kernel:
        return f"{b}.rms_norm({args[0]}, normalized_shape={_py(a['normalized_shape'])})"
    if op is Op.REDUCTION and kernel and a.get("group_size", 1) != 1:
        return f"{b}.reduction({args[0]}, dim={a['dim']}, group_size={a['group_size']})"
    if op in (Op.REDUCTION, Op.REDUCTION_TO_DIMX, Op.REDUCTION_MAX):
        return f"{b}.{op.value}({args[0]}, dim={a['dim']})"
    if op is Op.CONCAT:
        return f"{b}.concat({args[0]}, {args[1]}, dim={a['dim']})"
    known = op.spec.kind in (Kind.UNARY, Kind.BINARY, Kind.MATMUL, Kind.NORM) and not node.attrs
    if not known:
        raise NotImplementedError(f"to_python: no builder call known for {op.value} with attrs {node.attrs}")
    return f"{b}.{op.value}({', '.join(args)})"


def _assign(names: list[str], expr: str) -> str:
    if len(names) == 1:
        return f"{names[0]} = {expr}"
    return f"{', '.join(names)} = {expr}" if names else expr


def _block_code(bg: BlockGraph, inputs: list[str]) -> list[str]:
    grid, block = _py(bg.grid), _py(bg.block)
    extra = ""
    usage = smem_bytes(bg)
    if usage > capacity(DEFAULT_ARCH):  # built with a larger smem_limit: rebuild with one as well
        extra = f", smem_limit={usage}"
    lines = [f"tb = ml.new_threadblock_graph(grid_dim={grid}, block_dim={block},",
             f"{' ' * 30}forloop_range={bg.forloop_range}, reduction_dimx={bg.reduction_dimx}{extra})"]
    k = 0
    for n in bg.nodes:
        if n.op is Op.INPUT:
            lines.append(f"s{n.outputs[0]} = tb.new_input(dtensor={inputs[k]}, "
                         f"input_map={_py(n.attr('imap'))}, forloop_dim={n.attr('fmap')})")
            k += 1
        elif n.op is Op.OUTPUT:
            lines.append(f"tb.new_output(stensor=s{n.inputs[0]}, output_map={_py(n.attr('omap'))})")
        else:
            call = _call("tb", n, [f"s{i}" for i in n.inputs], kernel=False)
            lines.append(_assign([f"s{i}" for i in n.outputs], call))
    return lines


def _input_code(name: str, t: TensorType, strides: Sequence[int] | None) -> str:
    st = "" if strides is None or tuple(strides) == contiguous_strides(t.dims) else \
        f", strides={_py(tuple(strides))}"
    return f"{name} = g.new_input(dims={_py(t.dims)}, dtype={t.dtype!r}{st})"


def to_python(g: Any) -> str:
    """Builder code that rebuilds ``g``.

    Executing the code (``ns = {}; exec(code, ns)``) defines ``g``: the frozen ``KernelGraph``, equal
    to the original (the builder is frozen by the last line). For a ``BlockGraph`` the code builds
    the kernel inputs the loaders read and defines ``bg``, the frozen block graph.
    """
    graph = _freeze(g)
    lines = ["import mirage_lab as ml", "", "g = ml.new_kernel_graph()"]
    if not _is_kernel(graph):
        names = []
        for k, n in enumerate(graph.loaders):
            names.append(f"d{k}")
            lines.append(_input_code(f"d{k}", loader_dtensor(n), None))
        lines += ["", *_block_code(graph, names), "bg = tb.freeze()"]
        return "\n".join(lines) + "\n"
    for n in graph.nodes:
        outs = [f"d{i}" for i in n.outputs]
        ins = [f"d{i}" for i in n.inputs]
        if n.op is Op.INPUT:
            lines.append(_input_code(outs[0], graph.tensors[n.outputs[0]], n.attr("strides")))
        elif n.body is not None:
            lines += ["", *_block_code(n.body, ins)]
            target = f"({outs[0]},)" if len(outs) == 1 else ", ".join(outs)
            lines += [f"{target} = g.customized([{', '.join(ins)}], tb)", ""]
        else:
            lines.append(_assign(outs, _call("g", n, ins, kernel=True)))
    lines += [f"g.mark_output(d{i})" for i in graph.outputs]
    lines.append("g = g.freeze()")
    text = "\n".join(lines) + "\n"
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text
