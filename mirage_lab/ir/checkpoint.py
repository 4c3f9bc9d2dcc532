"""Import and export of the reference implementation's checkpoint JSON (SPEC §10).

A checkpoint is a JSON list of kernel graphs; a kernel graph is a list of op records
(``op_type``, ``input_tensors``, ``output_tensors`` and per-op extras). Loading
*replays* every record through the builders (``KernelGraphBuilder`` and
``BlockGraphBuilder``), so a checkpoint can only produce graphs that satisfy every
rule of SPEC §2–§3, and every stored fact (dims, dtypes, ``after_accum``, the
loader/saver bindings) is checked against what the builders derive.

* **Op names.** ``ALIASES`` maps every reference ``op_type`` string to ``(level, Op,
  dim)``. It is derived from the op table (``OPS``): ``<kn|tb>_<op>_op`` for plain
  ops, ``<kn|tb>_<head>_<d>[_<tail>]_op`` for dim-indexed ops (``tb_reduction_1_to_dimx_op``,
  ``tb_concat_0_op``, ``kn_reduction_0_op``), and for accumulators both the older
  ``tb_accum_<kind>_op`` and the current ``tb_forloop_accum_<kind>_op`` spellings.
* **Eras.** Data types are bare integers whose meaning changed between reference
  builds (``DTYPE_CODES``). The era is detected as SPEC §10 says (``detect_era``);
  pass ``era=`` when a file is ambiguous.
* **Errors.** Every problem — malformed or hostile JSON, an unknown op, a broken
  invariant, a builder rule — is a ``FormatError`` naming the file, the graph index,
  the op index (and the block-op index) and the rule broken.

``save_reference_checkpoint`` writes the current era's format; load → save → load is
the identity on graphs. The export reproduces the 17 reference files record for record
(``smem_offset`` included: the reference's scratch bump allocator, 16-byte aligned, with
unary ops in place) up to guid numbering and the era's data_type codes and accumulator
names. Extensions the reference format lacks: ``scalar`` on mul_scalar, ``min``/``max`` on
clamp; ``normalized_size`` on kn_rms_norm_op is the reference's own field.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from mirage_lab.arguments import checked
from mirage_lab.errors import FormatError, MirageError
from mirage_lab.ir.builder import BlockGraphBuilder, KernelGraphBuilder
from mirage_lab.ir.dtype import DType
from mirage_lab.ir.graph import PHI, BlockGraph, KernelGraph
from mirage_lab.ir.io import read_json
from mirage_lab.ir.ops import ACCUM_KEY, Kind, Level, Op
from mirage_lab.ir.refformat import (
    ALIASES,
    DMEM_LAYOUTS,
    DTYPE_BY_NAME,
    DTYPE_CODES,
    INT32_MAX,
    INT64_MAX,
    SMEM_LAYOUTS,
    UNSUPPORTED_OPS,
    Era,
    OpName,
    resolve_era,
)
from mirage_lab.ir.smem import UNCHECKED
from mirage_lab.ir.tensor import MAX_RANK, Dims, DTensor, STensor, TensorType, contiguous_strides

# --------------------------------------------------------------------------- loading


def _fail(where: str, rule: str, msg: str) -> NoReturn:
    raise FormatError(f"{where}: {rule}: {msg}")


def _obj(v: Any, where: str, what: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        _fail(where, "malformed record", f"{what} must be a JSON object, got {_kind(v)}")
    return v


def _list(v: Any, where: str, what: str) -> list[Any]:
    if not isinstance(v, list):
        _fail(where, "malformed record", f"{what} must be a JSON list, got {_kind(v)}")
    return v


def _kind(v: Any) -> str:
    if isinstance(v, float) and not math.isfinite(v):
        return f"the non-finite number {v}"
    text = json.dumps(v) if isinstance(v, int | float | str | bool) or v is None else type(v).__name__
    return text if len(text) < 60 else text[:57] + "..."


def _get(d: dict[str, Any], key: str, where: str, what: str) -> Any:
    if key not in d:
        _fail(where, "malformed record", f"{what} lacks the field {key!r}")
    return d[key]


def _int(v: Any, where: str, what: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        _fail(where, "malformed record", f"{what} must be an integer, got {_kind(v)}")
    if not lo <= v <= hi:
        digits = len(str(abs(v))) if v.bit_length() < 4000 else int(v.bit_length() * math.log10(2)) + 1
        shown = str(v) if digits <= 30 else f"a {digits}-digit number"
        _fail(where, "value out of range", f"{what} = {shown} is outside [{lo}, {hi}]")
    return v


def _triple(v: Any, where: str, what: str, lo: int) -> tuple[int, int, int]:
    d = _obj(v, where, what)
    x, y, z = (_int(_get(d, k, where, what), where, f"{what}.{k}", lo, INT32_MAX) for k in "xyz")
    return (x, y, z)


@dataclass(frozen=True)
class _Rec:
    """A parsed tensor record."""

    guid: int
    dims: Dims
    dtype: DType
    after_accum: bool | None  # None for DTensor records


class _Loader:
    """Replays one checkpoint document; holds the era and the shared-memory limits."""

    def __init__(self, era: Era, smem: dict[str, Any]) -> None:
        self.era = era
        self.smem = smem

    # -- tensors --------------------------------------------------------------------
    def tensor(self, v: Any, where: str, what: str, block: bool) -> _Rec:
        d = _obj(v, where, what)
        code = _int(_get(d, "data_type", where, what), where, f"{what}.data_type", 0, INT32_MAX)
        name = DTYPE_CODES[self.era].get(code)
        if name is None:
            _fail(where, "unknown data_type", f"{what}.data_type = {code} means nothing in the {self.era.value} "
                  f"era (known: {sorted(DTYPE_CODES[self.era])})")
        if name not in DTYPE_BY_NAME:
            _fail(where, "unsupported data_type", f"{what}.data_type = {code} is {name} in the {self.era.value} "
                  f"era, which mirage_lab does not support (supported: {', '.join(DTYPE_BY_NAME)})")
        layout = _get(d, "layout", where, what)
        table = SMEM_LAYOUTS if block else DMEM_LAYOUTS
        if not isinstance(layout, str) or layout not in table:
            _fail(where, "unknown layout", f"{what}.layout = {_kind(layout)} is not a "
                  f"{'shared' if block else 'device'}-memory layout ({', '.join(table)})")
        if not table[layout]:
            _fail(where, "unsupported layout", f"{what}.layout = {layout!r}: mirage_lab tensors are row-major "
                  "(the reference files use only DmemRowMajor and SmemRowMajor)")
        n = _int(_get(d, "num_dims", where, what), where, f"{what}.num_dims", 1, MAX_RANK)
        raw = _list(_get(d, "dim", where, what), where, f"{what}.dim")
        if not n <= len(raw) <= MAX_RANK:
            _fail(where, "wrong num_dims", f"{what}.num_dims = {n} but its dim list has {len(raw)} entries "
                  f"(expected {MAX_RANK}, zero-padded after num_dims)")
        zeros = [i for i, x in enumerate(raw[:n]) if type(x) is int and x == 0]
        if zeros:
            _fail(where, "wrong num_dims", f"{what}.num_dims = {n}, but {what}.dim = {_kind(raw)} has a zero "
                  f"(padding) entry at index {zeros[0]}; only the first num_dims entries are dims")
        dims = tuple(_int(x, where, f"{what}.dim[{i}]", 1, INT32_MAX) for i, x in enumerate(raw[:n]))
        guid = _int(_get(d, "guid", where, what), where, f"{what}.guid", -INT64_MAX - 1, INT64_MAX)
        after = None
        if block:
            after = _get(d, "after_accum", where, what)
            if not isinstance(after, bool):
                _fail(where, "malformed record", f"{what}.after_accum must be true or false, got {_kind(after)}")
        return _Rec(guid, dims, DTYPE_BY_NAME[name], after)

    def records(self, rec: dict[str, Any], key: str, where: str, block: bool, count: int | None) -> list[_Rec]:
        raw = _list(_get(rec, key, where, "the op record"), where, key)
        if count is not None and len(raw) != count:
            _fail(where, "wrong tensor count", f"{key} lists {len(raw)} tensors, but this op has {count}")
        return [self.tensor(t, where, f"{key}[{i}]", block) for i, t in enumerate(raw)]

    @staticmethod
    def check_type(rec: _Rec, t: TensorType, where: str, what: str, block: bool) -> None:
        """SPEC §10 invariant: a stored tensor equals the one the builders derive."""
        if rec.dims != t.dims:
            _fail(where, "stored dims differ from the derived dims",
                  f"{what} (guid {rec.guid}) is stored with dims {list(rec.dims)}, but the rules of SPEC §2–§3 "
                  f"derive {list(t.dims)}")
        if rec.dtype is not t.dtype:
            _fail(where, "stored data_type differs", f"{what} (guid {rec.guid}) is stored as {rec.dtype}, but "
                  f"the op produces {t.dtype}")
        if block and rec.after_accum != t.post_loop:
            _fail(where, "after_accum flag disagrees",
                  f"{what} (guid {rec.guid}) is stored with after_accum={str(rec.after_accum).lower()}, but it "
                  f"is {'a post-loop' if t.post_loop else 'a loop-phase'} tensor (after_accum="
                  f"{str(t.post_loop).lower()})")

    def use(self, env: dict[int, Any], recs: list[_Rec], where: str, key: str, block: bool) -> list[Any]:
        out = []
        for i, r in enumerate(recs):
            if r.guid not in env:
                _fail(where, "guid used before its definition",
                      f"{key}[{i}] refers to guid {r.guid}, which no earlier op of this "
                      f"{'block graph' if block else 'kernel graph'} defines")
            h = env[r.guid]
            self.check_type(r, h.type, where, f"{key}[{i}]", block)
            out.append(h)
        return out

    @staticmethod
    def define(env: dict[int, Any], recs: list[_Rec], handles: Sequence[Any], where: str) -> None:
        for i, (r, h) in enumerate(zip(recs, handles, strict=True)):
            if r.guid in env:
                _fail(where, "guid defined twice", f"output_tensors[{i}] redefines guid {r.guid}")
            env[r.guid] = h

    # -- op names ----------------------------------------------------------------------
    def op_name(self, rec: dict[str, Any], where: str, level: Level) -> tuple[str, OpName]:
        t = _get(rec, "op_type", where, "the op record")
        if not isinstance(t, str):
            _fail(where, "malformed record", f"op_type must be a string, got {_kind(t)}")
        name = ALIASES.get(t)
        if name is None:
            if t.startswith(UNSUPPORTED_OPS):
                _fail(where, "unsupported op_type", f"{t!r} is a reference op outside the searched method "
                      "(SPEC §2); mirage_lab cannot represent it")
            _fail(where, "unknown op_type", f"{_kind(t)} is not a reference op type (known: kn_*_op / tb_*_op "
                  "names of SPEC §10, e.g. kn_matmul_op, tb_accum_nored_op, tb_forloop_accum_nored_op)")
        if name.level is not level:
            _fail(where, "op at the wrong level", f"{t!r} is a {name.level.value}-level op, but it appears in a "
                  f"{level.value} graph")
        if name.era is not None and name.era is not self.era:
            _fail(where, "op name of the other era", f"{t!r} is a {name.era.value}-era name in a "
                  f"{self.era.value}-era file")
        return t, name

    # -- kernel graphs ------------------------------------------------------------------
    def kernel_graph(self, ops: Any, where0: str) -> KernelGraph:
        ops = _list(ops, where0, "a kernel graph")
        g = KernelGraphBuilder()
        env: dict[int, DTensor] = {}
        stage = 0  # 0: inputs, 1: compute ops, 2: outputs (SPEC §10: inputs first, outputs last)
        for k, raw in enumerate(ops):
            where = f"{where0}, op {k}"
            rec = _obj(raw, where, "an op record")
            t, name = self.op_name(rec, where, Level.KERNEL)
            where = f"{where} ({t})"
            op = name.op
            if op is Op.INPUT:
                if stage > 0:
                    _fail(where, "inputs come first", "a kn_input_op follows a compute or output op")
                self.records(rec, "input_tensors", where, False, 0)
                (out,) = self.records(rec, "output_tensors", where, False, 1)
                strides = self.strides(rec, "input_strides", out.dims, where, required=False)
                self.no_device_map(rec, "input_map", where)
                h = _builder_call(where, g.new_input, out.dims, strides, out.dtype)
                self.define(env, [out], [h], where)
            elif op is Op.OUTPUT:
                stage = 2
                ins = self.use(env, self.records(rec, "input_tensors", where, False, 1), where, "input_tensors",
                               False)
                self.records(rec, "output_tensors", where, False, 0)
                self.strides(rec, "output_strides", ins[0].dims, where, required=False, contiguous=True)
                self.no_device_map(rec, "output_map", where)
                _builder_call(where, g.mark_output, ins[0])
            else:
                if stage == 2:
                    _fail(where, "outputs come last", "a compute op follows a kn_output_op")
                stage = 1
                self.kernel_op(g, env, rec, name, where)
        frozen: KernelGraph = _builder_call(where0, g.freeze)
        return frozen

    def kernel_op(self, g: KernelGraphBuilder, env: dict[int, DTensor], rec: dict[str, Any], name: OpName,
                  where: str) -> None:
        op = name.op
        arity = None if op is Op.CUSTOMIZED else op.spec.arity
        in_recs = self.records(rec, "input_tensors", where, False, arity)
        ins = self.use(env, in_recs, where, "input_tensors", False)
        outs = self.records(rec, "output_tensors", where, False, None if op is Op.CUSTOMIZED else op.spec.n_outputs)
        handles: list[DTensor]
        if op is Op.CUSTOMIZED:
            ids = [r.guid for r in in_recs]
            tb = self.block_graph(_get(rec, "bgraph", where, "a kn_customized_op"), ins, ids, outs, where)
            handles = _builder_call(where, g.customized, ins, tb)
        elif op is Op.REDUCTION:
            d = name.dim
            assert d is not None
            size = outs[0].dims[d] if d < len(outs[0].dims) else 1  # the group size is the stored dim[d]
            handles = [_builder_call(where, g.reduction, ins[0], d, size)]
        elif op is Op.RMS_NORM:
            norm = self.normalized_shape(rec, ins[0].dims, where)
            handles = [_builder_call(where, g.rms_norm, ins[0], norm)]
        else:
            handles = _builder_call(where, _replay, g, name, ins, rec, where)
        if len(handles) != len(outs):
            _fail(where, "wrong tensor count", f"output_tensors lists {len(outs)} tensors, but the op makes "
                  f"{len(handles)}")
        for i, (r, h) in enumerate(zip(outs, handles, strict=True)):
            self.check_type(r, h.type, where, f"output_tensors[{i}]", False)
        self.define(env, outs, handles, where)

    def strides(self, rec: dict[str, Any], key: str, dims: Dims, where: str, required: bool,
                contiguous: bool = False) -> Dims | None:
        if key not in rec and not required:
            return None
        raw = _list(rec[key], where, key)
        if len(raw) != len(dims):
            _fail(where, "wrong stride count", f"{key} has {len(raw)} entries for a {len(dims)}-dim tensor")
        st = tuple(_int(s, where, f"{key}[{i}]", 0, INT64_MAX) for i, s in enumerate(raw))
        if contiguous and st != contiguous_strides(dims):
            _fail(where, "unsupported output strides", f"{key} = {list(st)}; mirage_lab writes outputs "
                  f"contiguously ({list(contiguous_strides(dims))})")
        return st

    @staticmethod
    def no_device_map(rec: dict[str, Any], key: str, where: str) -> None:
        """``input_map``/``output_map`` of kernel inputs/outputs is a multi-device field, always −1."""
        if key in rec and _triple_any(rec[key], where, key) != (PHI, PHI, PHI):
            _fail(where, "unsupported multi-device map", f"{key} = {rec[key]} (mirage_lab is single-device; "
                  "the reference files always store -1)")

    @staticmethod
    def normalized_shape(rec: dict[str, Any], dims: Dims, where: str) -> Dims:
        """kn_rms_norm_op: the shortest trailing dims whose product is ``normalized_size`` (default: last dim)."""
        if "normalized_size" not in rec:
            return dims[-1:]
        size = _int(rec["normalized_size"], where, "normalized_size", 1, INT64_MAX)
        for n in range(1, len(dims) + 1):
            if math.prod(dims[-n:]) == size:
                return dims[-n:]
        _fail(where, "bad normalized_size", f"normalized_size = {size} is not the product of trailing dims of "
              f"{list(dims)}")

    # -- block graphs ---------------------------------------------------------------------
    def block_graph(self, raw: Any, inputs: list[DTensor], input_ids: list[int], outputs: list[_Rec],
                    where0: str) -> BlockGraph:
        bg = _obj(raw, where0, "bgraph")
        level = bg.get("graph_level", "thread_block_graph")
        if level != "thread_block_graph":
            _fail(where0, "malformed record", f"bgraph.graph_level = {_kind(level)}, expected "
                  "'thread_block_graph'")
        grid = _triple(_get(bg, "grid_dim", where0, "bgraph"), where0, "bgraph.grid_dim", 1)
        block = _triple(bg.get("block_dim", {"x": 128, "y": 1, "z": 1}), where0, "bgraph.block_dim", 1)
        F = _int(_get(bg, "forloop_range", where0, "bgraph"), where0, "bgraph.forloop_range", 1, INT32_MAX)
        X = _int(bg.get("reduction_dimx", 64), where0, "bgraph.reduction_dimx", 1, INT32_MAX)
        operators = _list(_get(bg, "operators", where0, "bgraph"), where0, "bgraph.operators")
        tb = _builder_call(where0, BlockGraphBuilder, grid, block, F, X, **self.smem)
        env: dict[int, STensor] = {}
        n_in = n_out = 0
        stage = 0  # 0: loaders, 1: compute ops, 2: savers (SPEC §3.1, §10)
        saver_recs: list[_Rec] = []
        for j, rawop in enumerate(operators):
            where = f"{where0}, block op {j}"
            rec = _obj(rawop, where, "an op record")
            t, name = self.op_name(rec, where, Level.BLOCK)
            where = f"{where} ({t})"
            op = name.op
            if op is Op.INPUT:
                if stage > 0:
                    _fail(where, "loaders come first", "a tb_input_op follows a compute op or a saver")
                self.records(rec, "input_tensors", where, True, 0)
                (out,) = self.records(rec, "output_tensors", where, True, 1)
                dt = self.tensor(_get(rec, "dtensor", where, "a tb_input_op"), where, "dtensor", False)
                if n_in >= len(inputs):
                    _fail(where, "loader/input binding", f"loader {n_in} has no matching input: the "
                          f"kn_customized_op has only {len(inputs)} input(s)")
                if dt.guid != input_ids[n_in]:
                    _fail(where, "loader/input binding", f"loader {n_in} loads dtensor guid {dt.guid}, but the "
                          f"kn_customized_op's input {n_in} is guid {input_ids[n_in]} (loaders bind to the "
                          "customized inputs by position)")
                self.check_type(dt, inputs[n_in].type, where, "dtensor", False)
                imap = _triple_any(_get(rec, "input_map", where, "a tb_input_op"), where, "input_map")
                fmap = _int(_get(rec, "forloop_dim", where, "a tb_input_op"), where, "forloop_dim", PHI, MAX_RANK)
                s = _builder_call(where, tb.new_input, inputs[n_in], imap, fmap)
                self.check_type(out, s.type, where, "output_tensors[0]", True)
                self.define(env, [out], [s], where)
                n_in += 1
            elif op is Op.OUTPUT:
                stage = 2
                ins = self.use(env, self.records(rec, "input_tensors", where, True, 1), where, "input_tensors",
                               True)
                self.records(rec, "output_tensors", where, True, 0)
                dt = self.tensor(_get(rec, "dtensor", where, "a tb_output_op"), where, "dtensor", False)
                if n_out >= len(outputs):
                    _fail(where, "saver/output binding", f"saver {n_out} has no matching output: the "
                          f"kn_customized_op lists only {len(outputs)} output(s)")
                if dt.guid != outputs[n_out].guid:
                    _fail(where, "saver/output binding", f"saver {n_out} writes dtensor guid {dt.guid}, but the "
                          f"kn_customized_op's output {n_out} is guid {outputs[n_out].guid}")
                omap = _triple_any(_get(rec, "output_map", where, "a tb_output_op"), where, "output_map")
                fdim = _int(rec.get("forloop_dim", PHI), where, "forloop_dim", PHI, MAX_RANK)
                _builder_call(where, tb.new_output, ins[0], omap, fdim)
                saver_recs.append(dt)
                n_out += 1
            else:
                if stage == 2:
                    _fail(where, "savers come last", "a compute op follows a tb_output_op")
                stage = 1
                self.block_op(tb, env, rec, name, where)
        if n_in != len(inputs):
            _fail(where0, "loader/input binding", f"the block graph has {n_in} loader(s), but the "
                  f"kn_customized_op has {len(inputs)} input(s)")
        if n_out != len(outputs):
            _fail(where0, "saver/output binding", f"the block graph has {n_out} saver(s), but the "
                  f"kn_customized_op lists {len(outputs)} output(s)")
        frozen: BlockGraph = _builder_call(where0, tb.freeze)
        for i, (dt, derived) in enumerate(zip(saver_recs, frozen.output_types, strict=True)):
            saver_where = f"{where0}, saver {i}"
            self.check_type(dt, derived, saver_where, "dtensor", False)
        return frozen

    def block_op(self, tb: BlockGraphBuilder, env: dict[int, STensor], rec: dict[str, Any], name: OpName,
                 where: str) -> None:
        op = name.op
        ins = self.use(env, self.records(rec, "input_tensors", where, True, op.spec.arity), where,
                       "input_tensors", True)
        outs = self.records(rec, "output_tensors", where, True, op.spec.n_outputs)
        handles = _builder_call(where, _replay, tb, name, ins, rec, where)
        for i, (r, h) in enumerate(zip(outs, handles, strict=True)):
            self.check_type(r, h.type, where, f"output_tensors[{i}]", True)
        self.define(env, outs, handles, where)


def _triple_any(v: Any, where: str, what: str) -> tuple[int, int, int]:
    """An imap/omap ``{x, y, z}`` whose entries are a dim index or −1."""
    d = _obj(v, where, what)
    x, y, z = (_int(_get(d, k, where, what), where, f"{what}.{k}", PHI, MAX_RANK - 1) for k in "xyz")
    return (x, y, z)


def _replay(b: Any, name: OpName, ins: list[Any], rec: dict[str, Any], where: str) -> list[Any]:
    """Apply one compute op through the builder's public method (the same call user code makes)."""
    op = name.op
    kind = op.spec.kind
    out: Any
    if kind is Kind.ACCUM:
        out = b.forloop_accum(ins[0], ACCUM_KEY[op], *ins[1:])
    elif op is Op.MUL_SCALAR:
        out = b.mul_scalar(ins[0], _number(rec, "scalar", where))
    elif op is Op.CLAMP:
        out = b.clamp(ins[0], _number(rec, "min", where), _number(rec, "max", where))
    elif op.spec.code_adds_dim:  # block reductions, reduction_to_dimx, reduction_max, concat
        out = getattr(b, op.value)(*ins, name.dim)
    elif kind in (Kind.UNARY, Kind.BINARY, Kind.MATMUL, Kind.NORM):
        out = getattr(b, op.value)(*ins)
    else:
        _fail(where, "unsupported op_type", f"{op.value} cannot be replayed here")
    return out if isinstance(out, list) else [out]


def _number(rec: dict[str, Any], key: str, where: str) -> float:
    v = _get(rec, key, where, "the op record")
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        _fail(where, "malformed record", f"{key} must be a finite number, got {_kind(v)}")
    return float(v)


def _builder_call(where: str, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """Run a builder call; a rule it rejects becomes a FormatError naming the place and the rule."""
    try:
        return fn(*args, **kw)
    except FormatError:
        raise
    except MirageError as e:
        raise FormatError(f"{where}: breaks a builder rule ({type(e).__name__}): {e}") from None


def loads_reference_checkpoint(doc: Any, where: str = "<checkpoint>", era: Era | str | None = None,
                               **smem: Any) -> list[KernelGraph]:
    """Build the kernel graphs of an already-parsed checkpoint document ``doc``."""
    if not isinstance(doc, list):
        raise FormatError(f"{where}: a reference checkpoint's top level must be a JSON list of kernel graphs, "
                          f"got {_kind(doc)}")
    loader = _Loader(resolve_era(doc, era, where), smem)
    out = []
    for gi, graph in enumerate(doc):
        gw = f"{where}: graph {gi}"
        try:
            out.append(loader.kernel_graph(graph, gw))
        except FormatError:
            raise
        except (TypeError, KeyError, AttributeError, IndexError, ValueError, OverflowError,
                RecursionError) as e:  # a shape no check anticipated: still the file's fault
            raise FormatError(f"{gw}: malformed record ({type(e).__name__}: {e})") from None
    return out


@checked
def load_reference_checkpoint(path: str | os.PathLike[str], era: Era | str | None = None, *,
                              arch: str | None = None, smem_limit: int | None = None) -> list[KernelGraph]:
    """Import a reference checkpoint (SPEC §10): one kernel graph per saved μGraph, in file order.

    ``era`` ("older" / "current") is needed only when the file does not reveal it (SPEC §10).
    ``arch`` / ``smem_limit`` make the block-graph builders check a shared-memory capacity; by
    default none is checked, as for ``ml.load``: a file is reproduced as written, and whether it
    fits a device is decided when it is compiled for one. Every problem raises ``FormatError``.
    """
    smem: dict[str, Any] = {}
    if arch is not None:
        smem["arch"] = arch
    if smem_limit is not None or arch is None:
        smem["smem_limit"] = UNCHECKED if smem_limit is None else smem_limit
    return loads_reference_checkpoint(read_json(path), str(path), era, **smem)


