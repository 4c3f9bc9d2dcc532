"""One custom kernel (a block graph) as one ``@triton.jit`` function: a program per block of the grid, the
for-loop as a loop, each tile a Triton tensor.

* **Tiles** are fp32 tensors whose every dim is padded to a power of two (Triton's rule), at least the launch's
  ``min_extent`` (16: ``tl.dot``'s rule) unless the dim is 1 (size-1 dims stay 1 so that broadcasting keeps its
  meaning). Padding is loaded as 0 and never stored; before anything sums, multiplies across or maxes over a
  padded dim, the padding is set to the neutral value (``_neutral``), so an op that turned 0 into something else
  (``exp``) cannot leak into a result.
* **Loaders and savers** address DTensors exactly as the interpreter cuts them (``semantics.interpret``):
  along each dim, the grid axes that map to it, then the for-loop (fmap), then the tile, as mixed-radix digits.
* **Accumulators** are loop-carried values: reset before the loop, combined each iteration (sum, max, or the
  rescaled sum of online softmax), finalised after it with the op table's ``triton_finalize``.
* **Loads** stay in the storage type (``h{tid}``, padding 0) and are widened to fp32 (``s{tid}``) for the other
  ops. A loaded tile enters ``tl.dot`` as loaded, so that the loads feeding the dots of the loop are what Triton's
  pipeliner turns into asynchronous copies (cp.async) into a ring of ``num_stages`` shared buffers.
* Elementwise ops use the op table's ``triton`` expression; matmuls ``tl.dot`` on operands in the graph's storage
  type (fp32 graphs: ``input_precision="ieee"``), accumulating in fp32.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from mirage_lab.codegen.triton.launch import TritonLaunch, default_launch, kernel_key, padded
from mirage_lab.errors import UnsupportedOpError
from mirage_lab.ir.graph import BlockGraph, Node
from mirage_lab.ir.ops import Kind, Op
from mirage_lab.ir.tensor import Dims

__all__ = ["TritonKernel", "emit_kernel", "padded"]

#: the storage dtype of each graph dtype, as Triton names it
TL_DTYPES = {"float16": "tl.float16", "bfloat16": "tl.bfloat16", "float32": "tl.float32"}
AXES = "xyz"
NEG_INF = 'float("-inf")'


@dataclass
class TritonKernel:
    """A generated kernel: its name, its pointer parameters (loaders' DTensors, then savers'), its source, its
    launch parameters and the key a tuned launch is filed under (``launch.kernel_key``)."""

    name: str
    params: list[str]
    source: str
    launch: TritonLaunch
    key: str


@dataclass
class _Tile:
    var: str
    dims: Dims  # the logical tile dims
    pad: tuple[int, ...]  # the Triton extents
    raw: str | None = None  # a loaded tile in its storage type, padding 0 (what tl.dot takes as it is)


@dataclass
class _Emitter:
    bg: BlockGraph
    name: str
    in_strides: list[Dims]
    out_strides: list[Dims]
    dtype: str
    min_extent: int
    lines: list[str] = field(default_factory=list)
    tiles: dict[int, _Tile] = field(default_factory=dict)
    carried: list[str] = field(default_factory=list)  # loop-carried values' resets, emitted before the loop
    ranges: set[int] = field(default_factory=set)  # the extents of the aranges used (r16 = tl.arange(0, 16), …)

    # -- addressing -----------------------------------------------------------------------------------------
    def _aranges(self, dims: Dims) -> list[str]:
        """Per dim, an arange broadcast to the tile's rank (``r[:, None]``…)."""
        rank = len(dims)
        out = []
        for d, n in enumerate(dims):
            index = ", ".join(":" if e == d else "None" for e in range(rank))
            self.ranges.add(self._pad(n))
            out.append(f"r{self._pad(n)}[{index}]")
        return out

    def _mask(self, dims: Dims) -> str | None:
        parts = [f"({r} < {n})" for r, n in zip(self._aranges(dims), dims, strict=True) if self._pad(n) != n]
        return " & ".join(parts) if parts else None

    def _offsets(self, dims: Dims, strides: Dims, digits: list[list[tuple[str, int]]]) -> str:
        """Σ_d index_d · stride_d, index_d the mixed-radix number of ``digits[d]`` (outermost first) and the tile."""
        terms = []
        for d, (r, n, s) in enumerate(zip(self._aranges(dims), dims, strides, strict=True)):
            index = ""
            for coord, size in digits[d]:
                index = coord if not index else f"({index}) * {size} + {coord}"
            index = r if not index else f"({index}) * {n} + {r}"
            terms.append(index if s == 1 else f"({index}) * {s}")
        return " + ".join(terms)

    def _load(self, node: Node) -> None:
        bg, tile = self.bg, self.bg.tensors[node.outputs[0]].dims
        imap, fmap = node.attr("imap"), node.attr("fmap")
        digits: list[list[tuple[str, int]]] = []
        for d in range(len(tile)):
            ds = [(f"b{AXES[a]}", bg.grid[a]) for a in range(3) if imap[a] == d and bg.grid[a] > 1]
            if fmap == d:
                ds.append(("i", bg.forloop_range))
            digits.append(ds)
        i = bg.loaders.index(node)
        off = self._offsets(tile, self.in_strides[i], digits)
        mask = self._mask(tile)
        raw = f"h{node.outputs[0]}"
        self.lines.append(f"        {raw} = tl.load(in{i} + {off}" + (f", mask={mask}, other=0.0)" if mask else ")"))
        self._define(node.outputs[0], f"{raw}.to(tl.float32)", indent=2).raw = raw

    def _store(self, node: Node) -> None:
        bg = self.bg
        tile = self.tiles[node.inputs[0]]
        omap = node.attr("omap")
        digits = [[(f"b{AXES[a]}", bg.grid[a]) for a in range(3) if omap[a] == d and bg.grid[a] > 1]
                  for d in range(len(tile.dims))]
        i = bg.savers.index(node)
        off = self._offsets(tile.dims, self.out_strides[i], digits)
        mask = self._mask(tile.dims)
        value = f"{tile.var}.to(out{i}.dtype.element_ty)"
        self.lines.append(f"    tl.store(out{i} + {off}, {value}" + (f", mask={mask})" if mask else ")"))

    # -- values ------------------------------------------------------------------------------------------------
    def _pad(self, n: int) -> int:
        return padded(n, self.min_extent)

    def _tile(self, var: str, tid: int) -> _Tile:
        dims = self.bg.tensors[tid].dims
        return _Tile(var, dims, tuple(self._pad(n) for n in dims))

    def _define(self, tid: int, expr: str, indent: int) -> _Tile:
        tile = self._tile(f"s{tid}", tid)
        self.tiles[tid] = tile
        self.lines.append("    " * indent + f"{tile.var} = {expr}")
        return tile

    def _neutral(self, tile: _Tile, value: str = "0.0") -> str:
        """``tile``'s variable with its padding set to ``value`` (itself when nothing is padded)."""
        mask = self._mask(tile.dims)
        if mask is None or (tile.raw is not None and value == "0.0"):  # a load's padding is already 0
            return tile.var
        return f"tl.where({mask}, {tile.var}, {value})"

    def _operand(self, tile: _Tile) -> str:
        """``tile`` in the storage type with its padding 0: a load as loaded, any other tile masked and cast."""
        if tile.raw is not None:
            return tile.raw
        return self._neutral(tile) if self.dtype == "float32" else f"{self._neutral(tile)}.to({TL_DTYPES[self.dtype]})"

    def _dot(self, a: _Tile, b: _Tile) -> str:
        ieee = ", input_precision=\"ieee\"" if self.dtype == "float32" else ""
        return f"tl.dot({self._operand(a)}, {self._operand(b)}{ieee})"

    def _compute(self, node: Node, indent: int) -> None:
        ins = [self.tiles[t] for t in node.inputs]
        spec, op = node.op.spec, node.op
        if spec.triton is not None:
            names = {"x": ins[0].var} if len(ins) == 1 else {"a": ins[0].var, "b": ins[1].var}
            attrs = {k: _literal(v) for k, v in node.attr_map.items() if isinstance(v, int | float)}
            expr = spec.triton.format(**names, **attrs)
        elif op is Op.MATMUL:
            expr = self._dot(ins[0], ins[1])
        elif op is Op.CONCAT_THEN_MATMUL:
            expr = f"{self._dot(ins[0], ins[2])} + {self._dot(ins[1], ins[3])}"
        elif op is Op.REDUCTION:
            d, group = node.attr("dim"), int(node.attr("group_size", 1))
            expr = (f"tl.sum({self._neutral(ins[0])}, axis={d}, keep_dims=True)" if group == 1
                    else self._strided_sum(ins[0], d, group))
        elif op is Op.REDUCTION_TO_DIMX:
            expr = self._strided_sum(ins[0], node.attr("dim"))
        elif op is Op.REDUCTION_MAX:
            self._running_max(node, indent)
            return
        elif op is Op.CONCAT:
            expr = self._concat(ins[0], ins[1], node.attr("dim"))
        elif op is Op.RMS_NORM:
            n = ins[0].dims[-1]
            expr = (f"{ins[0].var} / tl.sqrt(tl.sum({self._neutral(ins[0])} * {self._neutral(ins[0])}, axis=-1, "
                    f"keep_dims=True) / {n})")
        else:
            raise UnsupportedOpError(f"the Triton backend cannot express {op.value} yet (in kernel {self.name}); "
                                     "use the CUDA backend for this graph")
        self._define(node.outputs[0], expr, indent)

    def _strided_sum(self, tile: _Tile, dim: int, groups: int | None = None) -> str:
        """out[j] = Σ_k x[j + k·g] along ``dim`` (g: reduction_dimx, or a reduction's group size): reshape, sum."""
        g = self.bg.reduction_dimx if groups is None else groups
        d = dim % len(tile.dims)
        n, p = tile.dims[d], tile.pad[d]
        if n % g or p % g or g & (g - 1) or self._pad(g) != g:
            raise UnsupportedOpError(f"the Triton backend sums {n} entries to {g} groups only when both are powers "
                                     f"of two, at least the padding's {self.min_extent} (Triton's reshape keeps "
                                     "powers of two); use the CUDA backend for this graph")
        shape = [*tile.pad[:d], p // g, g, *tile.pad[d + 1:]]
        return f"tl.sum(tl.reshape({self._neutral(tile)}, {tuple(shape)}), axis={d})"

    def _running_max(self, node: Node, indent: int) -> None:
        """[lab] reduction_max: the running max over ``dim`` and the loop, and diff = previous max − new max (0 at
        i = 0, and after the loop), as the interpreter defines it; the running max is loop-carried."""
        x = self.tiles[node.inputs[0]]
        big, diff = node.outputs
        d = node.attr("dim")
        now = f"tl.max({self._neutral(x, NEG_INF)}, axis={d}, keep_dims=True)"
        pad = " " * 4 * indent
        if self.bg.tensors[node.inputs[0]].post_loop:
            self._define(big, now, indent)
            self._define(diff, f"s{big} - s{big}", indent)
            return
        self.carried.append(f"    run{big} = tl.full({self._padded(big)}, {NEG_INF}, tl.float32)")
        self.lines.append(f"{pad}prev{big} = run{big}")
        self.lines.append(f"{pad}run{big} = tl.maximum(prev{big}, {now})")
        self._define(big, f"run{big}", indent)
        self._define(diff, f"tl.where(i == 0, 0.0, prev{big} - run{big})", indent)

    def _concat(self, a: _Tile, b: _Tile, dim: int) -> str:
        """a ‖ b along ``dim``: joined on a new last axis, that axis moved before ``dim``, the two merged. Triton
        reshapes powers of two only, so both halves must be unpadded (a power of two, at least 16)."""
        d = dim % len(a.dims)
        if a.dims != b.dims or a.pad[d] != a.dims[d]:
            raise UnsupportedOpError(f"the Triton backend concatenates two tiles of one shape whose dim {d} is a "
                                     f"power of two ≥ 16, not {a.dims} ‖ {b.dims}; use the CUDA backend for this "
                                     "graph")
        r = len(a.dims)
        order = (*range(d), r, *range(d, r))  # the new axis (r) goes just before dim d
        shape = (*a.pad[:d], 2 * a.pad[d], *a.pad[d + 1:])
        return f"tl.reshape(tl.permute(tl.join({a.var}, {b.var}), {order}), {shape})"

    def _padded(self, tid: int) -> tuple[int, ...]:
        return tuple(self._pad(n) for n in self.bg.tensors[tid].dims)

    # -- accumulators ------------------------------------------------------------------------------------------
    def _contribution(self, node: Node) -> str:
        tile = self.tiles[node.inputs[0]]
        op = node.op
        if op in (Op.ACCUM_NO_RED, Op.ACCUM_NO_RED_RESCALE, Op.ACCUM_MAX):
            return tile.var
        if op in (Op.ACCUM_SUM, Op.ACCUM_MEAN, Op.ACCUM_SUM_RESCALE):
            return f"tl.sum({self._neutral(tile)}, axis=-1, keep_dims=True)"
        if op is Op.ACCUM_RMS:
            v = self._neutral(tile)
            return f"tl.sum({v} * {v}, axis=-1, keep_dims=True)"
        if op is Op.ACCUM_SUM_TODIMX:
            return self._strided_sum(tile, -1)
        raise UnsupportedOpError(f"the Triton backend has no accumulator {op.value}")

    def _accumulate(self, node: Node) -> None:
        var = f"s{node.outputs[0]}"
        rule = node.op.spec.accum
        assert rule is not None
        contrib = self._contribution(node)
        if rule.combine == "sum":
            self.lines.append(f"        {var} += {contrib}")
        elif rule.combine == "max":
            self.lines.append(f"        {var} = tl.maximum({var}, {contrib})")
        else:  # rescale: acc ← acc·s_i + x_i
            self.lines.append(f"        {var} = {var} * {self.tiles[node.inputs[1]].var} + {contrib}")
        self.tiles[node.outputs[0]] = self._tile(var, node.outputs[0])

    def _reset(self, node: Node) -> str:
        pad = self._padded(node.outputs[0])
        if node.op.spec.accum is not None and node.op.spec.accum.combine == "max":
            return f"    s{node.outputs[0]} = tl.full({pad}, {NEG_INF}, tl.float32)"
        return f"    s{node.outputs[0]} = tl.zeros({pad}, dtype=tl.float32)"

    def _finalize(self, node: Node) -> None:
        rule = node.op.spec.accum
        assert rule is not None
        if rule.triton_finalize is None:
            return
        count = self.bg.forloop_range * self.bg.tensors[node.inputs[0]].dims[-1]
        var = f"s{node.outputs[0]}"
        self.lines.append(f"    {var} = {rule.triton_finalize.format(v=var, count=count)}")

    # -- the kernel ----------------------------------------------------------------------------------------------
    def emit(self, launch: TritonLaunch, key: str) -> TritonKernel:
        bg = self.bg
        ins = [f"in{i}" for i in range(len(bg.loaders))]
        outs = [f"out{i}" for i in range(len(bg.savers))]
        self.lines = ["@triton.jit", f"def {self.name}({', '.join(ins + outs)}):"]
        self.lines += [f"    b{AXES[a]} = tl.program_id({a})" for a in range(3) if bg.grid[a] > 1]
        loop = [n for n in bg.nodes if n.op is Op.INPUT or (n.op is not Op.OUTPUT and not self._post(n))]
        after = [n for n in bg.nodes if n.op is not Op.INPUT and n.op is not Op.OUTPUT and self._post(n)]
        accums = [n for n in after if n.kind is Kind.ACCUM]
        head = len(self.lines)
        self.lines.append(f"    for i in range(0, {bg.forloop_range}):")
        for node in loop:
            if node.op is Op.INPUT:
                self._load(node)
            else:
                self._compute(node, indent=2)
        self.lines[head:head] = [self._reset(n) for n in accums] + self.carried
        for node in accums:
            self._accumulate(node)
        for node in after:
            if node.kind is Kind.ACCUM:
                self._finalize(node)
            else:
                self._compute(node, indent=1)
        for node in bg.savers:
            self._store(node)
        first = 2 + sum(bg.grid[a] > 1 for a in range(3))  # after the signature and the program ids
        self.lines[first:first] = [f"    r{n} = tl.arange(0, {n})" for n in sorted(self.ranges)]
        return TritonKernel(self.name, ins + outs, "\n".join(self.lines), launch, key)

    def _post(self, node: Node) -> bool:
        return any(self.bg.tensors[t].post_loop for t in node.outputs)


def _literal(v: float) -> str:
    """A Python float literal Triton reads (``float("inf")`` for the infinities)."""
    f = float(v)
    return repr(f) if math.isfinite(f) else f'float("{f}")'


def emit_kernel(bg: BlockGraph, name: str, in_strides: list[Dims], out_strides: list[Dims], dtype: str,
                launches: Mapping[str, TritonLaunch] | None = None) -> TritonKernel:
    """``bg`` as a Triton kernel ``name``: loader i reads ``in{i}`` laid out with ``in_strides[i]``, saver i
    writes ``out{i}`` with ``out_strides[i]``; ``dtype`` is the graph's storage type ("float16", …). Its launch
    parameters (which set the padding, and are recorded on the kernel) are ``launches[key]`` when given for its
    ``kernel_key``, else ``default_launch(bg)``."""
    key = kernel_key(bg, in_strides, out_strides)
    launch = (launches or {}).get(key) or default_launch(bg)
    return _Emitter(bg, name, in_strides, out_strides, dtype, launch.min_extent).emit(launch, key)
