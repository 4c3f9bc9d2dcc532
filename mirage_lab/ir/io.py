"""mirage_lab's own versioned JSON format for μGraphs.

A file is ``{"format": "mirage-lab/mugraph", "version": 1, "graphs": [graph, ...]}``.
Loading *replays* every op through the builders, so a file can only ever produce a
graph that satisfies every rule, and hostile input meets the same validation as user
code. Nothing is ``eval``-ed or unpickled; sizes and nesting are bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mirage_lab.arguments import checked
from mirage_lab.errors import FormatError, MirageError, PathError
from mirage_lab.ir.builder import BlockGraphBuilder, KernelGraphBuilder, as_graph
from mirage_lab.ir.canonical import graph_to_dict, tensor_dict
from mirage_lab.ir.dtype import DType
from mirage_lab.ir.graph import BlockGraph, KernelGraph
from mirage_lab.ir.ops import ACCUM_KEY, Kind, Level, Op
from mirage_lab.ir.smem import UNCHECKED
from mirage_lab.ir.tensor import TensorType
from mirage_lab.ir.validate import check_dims
from mirage_lab.paths import input_file, reading, replaceable, writing

FORMAT = "mirage-lab/mugraph"
VERSION = 1
MAX_FILE_BYTES = 256 * 1024 * 1024


# --------------------------------------------------------------------------- writing


def dumps(graphs: KernelGraph | Sequence[KernelGraph], indent: int | None = 1) -> str:
    gs = [graphs] if isinstance(graphs, KernelGraph | KernelGraphBuilder) else list(graphs)
    doc = {"format": FORMAT, "version": VERSION, "graphs": [graph_to_dict(as_graph(g)) for g in gs]}
    return json.dumps(doc, indent=indent)


@checked
def save(graphs: Any, path: str | os.PathLike[str]) -> Path:
    """Write one graph (or a list) atomically: a crash mid-write never leaves a truncated file."""
    return write_atomic(path, dumps(graphs))


def write_atomic(path: str | os.PathLike[str], text: str | bytes | Iterable[str] | Iterable[bytes]) -> Path:
    """Write ``text`` (a string or bytes, or pieces of either streamed one by one) to a temporary file beside
    ``path``, then rename it into place."""
    p = Path(path)
    if p.is_dir():
        raise PathError(f"{p} is a directory; name a file to write (e.g. {p / 'graph.json'})")
    p = replaceable(p)
    # unique per writer: two processes may write the same file (e.g. one candidate found twice)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        pieces = [text] if isinstance(text, str | bytes) else text
        with writing(p), open(tmp, "wb") as f:
            for piece in pieces:
                f.write(piece.encode() if isinstance(piece, str) else piece)
        with writing(p):
            replaceable(p)  # again: something may have been put there while we wrote
            os.replace(tmp, p)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
    return p


# --------------------------------------------------------------------------- reading


def read_json(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file with bounded size; every failure is a FormatError naming the file."""
    p = input_file(path, "JSON file")
    try:
        size = p.stat().st_size
    except OSError as e:
        raise PathError(f"cannot read {p}: {e.strerror}") from None
    if size > MAX_FILE_BYTES:
        raise FormatError(f"{p} is {size} bytes, over the {MAX_FILE_BYTES}-byte limit for μGraph files")
    try:
        with reading(p):
            return json.loads(p.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise FormatError(f"{p} is not valid JSON ({e}); was the file truncated? Re-save it") from None
    except (RecursionError, ValueError) as e:
        raise FormatError(f"{p} is nested too deeply or holds an oversized number ({e})") from None


@checked
def load(path: str | os.PathLike[str]) -> KernelGraph | list[KernelGraph]:
    """Load a file written by ``ml.save``: one graph, or a list if several were saved."""
    graphs = loads_doc(read_json(path), str(path))
    return graphs[0] if len(graphs) == 1 else graphs


@checked
def loads(text: str) -> list[KernelGraph]:
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise FormatError(f"not valid JSON ({e}); was the text truncated?") from None
    except (RecursionError, ValueError) as e:
        raise FormatError(f"the JSON is nested too deeply or holds an oversized number ({e})") from None
    except TypeError as e:
        raise FormatError(f"expected JSON text (str or bytes), got {type(text).__name__} ({e})") from None
    return loads_doc(doc, "<string>")


def loads_doc(doc: Any, where: str) -> list[KernelGraph]:
    if isinstance(doc, list):
        raise FormatError(f"{where} looks like a reference checkpoint (a bare list); "
                          "use ml.load_reference_checkpoint(path)")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise FormatError(f"{where} is not a mirage-lab μGraph file (missing \"format\": \"{FORMAT}\")")
    if doc.get("version") != VERSION:
        raise FormatError(f"{where} has format version {doc.get('version')!r}; this mirage-lab reads "
                          f"version {VERSION}. Upgrade mirage-lab or re-save the file")
    graphs = _field(doc, "graphs", list, where)
    out = []
    for i, gd in enumerate(graphs):
        try:
            out.append(graph_from_dict(gd))
        except FormatError as e:
            raise FormatError(f"{where}, graph {i}: {e}") from None
        except MirageError as e:
            raise FormatError(f"{where}, graph {i} breaks a rule: {e}") from None
        except (TypeError, KeyError, AttributeError, IndexError) as e:
            raise FormatError(f"{where}, graph {i} is malformed ({type(e).__name__}: {e})") from None
    return out


def _field(d: Any, key: str, typ: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(d, dict):
        raise FormatError(f"{where}: expected an object, got {type(d).__name__}")
    if key not in d:
        raise FormatError(f"{where}: missing field {key!r}")
    v = d[key]
    if not isinstance(v, typ) or (isinstance(v, bool) and typ is not bool):
        raise FormatError(f"{where}: field {key!r} has the wrong type ({type(v).__name__})")
    return v


def _op(name: Any, where: str) -> Op:
    try:
        return Op(name)
    except ValueError:
        known = ", ".join(o.value for o in Op)
        raise FormatError(f"{where}: unknown op {name!r}; known ops: {known}") from None


# Replays an op through the builder's public method, so loading validates exactly like user code.
Replay = Callable[[Any, list[Any], Mapping[str, Any]], list[Any]]


def _method(name: str, *attr_names: str) -> Replay:
    def replay(b: Any, ins: list[Any], attrs: Mapping[str, Any]) -> list[Any]:
        missing = [a for a in attr_names if a not in attrs]
        if missing:
            raise FormatError(f"{name}: missing attribute(s) {', '.join(missing)}")
        out = getattr(b, name)(*ins, *(attrs[a] for a in attr_names))
        return out if isinstance(out, list) else [out]

    return replay




def _check_op(op: Op, ins: list[Any], kernel: bool, where: str) -> None:
    """The op exists at this level and gets as many inputs as it takes."""
    level = Level.KERNEL if kernel else Level.BLOCK
    if level not in op.spec.codes:
        levels = ", ".join(sorted(lv.value for lv in op.spec.levels))
        raise FormatError(f"{where}: op {op.value!r} does not exist at the {level.value} level "
                          f"(it exists at: {levels})")
    if op.spec.arity >= 0 and len(ins) != op.spec.arity:
        raise FormatError(f"{where}: op {op.value!r} takes {op.spec.arity} input(s), "
                          f"but {len(ins)} are listed")


def _replay_for(op: Op, kernel: bool) -> Replay:
    rule = op.spec.builder
    if rule is not None and rule.generated:  # the row's method: its tensors, then its scalars in order
        return _method(rule.name, *rule.attributes)
    if op.spec.kind is Kind.ACCUM:
        key = ACCUM_KEY[op]
        return lambda b, ins, attrs: [b.forloop_accum(ins[0], key, *ins[1:])]
    table: dict[Op, Replay] = {
        Op.REDUCTION_TO_DIMX: _method("reduction_to_dimx", "dim"),
        Op.REDUCTION_MAX: _method("reduction_max", "dim"),
        Op.CONCAT: _method("concat", "dim"),
        Op.RMS_NORM: _method("rms_norm", "normalized_shape") if kernel else _method("rms_norm"),
        Op.REDUCTION: (lambda b, ins, a: [b.reduction(ins[0], _need(a, "dim"), a.get("group_size", 1))])
        if kernel else _method("reduction", "dim"),
    }
    if op not in table:
        raise FormatError(f"op {op.value!r} cannot appear here")
    return table[op]


def _need(attrs: Mapping[str, Any], key: str) -> Any:
    if key not in attrs:
        raise FormatError(f"missing attribute {key!r}")
    return attrs[key]


def _ids(v: Any, where: str) -> list[int]:
    if not isinstance(v, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in v):
        raise FormatError(f"{where}: expected a list of tensor ids, got {v!r}")
    return v


def _lookup(env: dict[int, Any], ids: list[int], where: str) -> list[Any]:
    try:
        return [env[i] for i in ids]
    except KeyError as e:
        raise FormatError(f"{where}: tensor {e} is used before it is defined") from None


def _bind(env: dict[int, Any], ids: list[int], handles: list[Any], where: str) -> None:
    if len(ids) != len(handles):
        raise FormatError(f"{where}: lists {len(ids)} outputs but the op makes {len(handles)}")
    for i, h in zip(ids, handles, strict=True):
        if i in env:
            raise FormatError(f"{where}: tensor id {i} is defined twice")
        env[i] = h


def _expect_types(built: Sequence[TensorType], recorded: Any, where: str, block: bool) -> None:
    """Recorded tensor types are informative; they must agree with what the rules derive."""
    if recorded is None:
        return
    if not isinstance(recorded, list) or len(recorded) != len(built):
        raise FormatError(f"{where}: 'tensors' lists {len(recorded) if isinstance(recorded, list) else '?'} "
                          f"entries but the ops define {len(built)}")
    for i, (t, r) in enumerate(zip(built, recorded, strict=True)):
        want = tensor_dict(t, block)
        if r != want:
            raise FormatError(f"{where}: tensor {i} is recorded as {r} but the rules derive {want}; "
                              "the file was edited inconsistently")


def _read_node(env: dict[int, Any], nd: Any, where: str, kernel: bool) -> tuple[Op, list[Any], dict[str, Any]]:
    """The op, input handles and attributes of one node record, checked."""
    op = _op(_field(nd, "op", str, where), where)
    ins = _lookup(env, _ids(nd.get("inputs", []), where), where)
    _check_op(op, ins, kernel, where)
    attrs = nd.get("attrs", {})
    if not isinstance(attrs, dict):
        raise FormatError(f"{where}: 'attrs' must be an object")
    return op, ins, attrs


def graph_from_dict(d: Any) -> KernelGraph:
    b = KernelGraphBuilder()
    env: dict[int, Any] = {}
    for k, nd in enumerate(_field(d, "nodes", list, "graph")):
        where = f"node {k}"
        op, ins, attrs = _read_node(env, nd, where, kernel=True)
        if op is Op.INPUT:
            dims, dtype = _input_type(d, nd, where)
            outs = [b.new_input(dims, attrs.get("strides"), dtype)]
        elif op is Op.CUSTOMIZED:
            outs = b.customized(ins, block_graph_from_dict(_field(nd, "body", dict, where)))
        else:
            outs = _replay_for(op, kernel=True)(b, ins, attrs)
        _bind(env, _ids(nd.get("outputs", []), where), outs, where)
    for o in _ids(_field(d, "outputs", list, "graph"), "outputs"):
        b.mark_output(_lookup(env, [o], "outputs")[0])
    g = b.freeze()
    _expect_types(g.tensors, d.get("tensors"), "graph", block=False)
    return g


def _input_type(d: dict[str, Any], nd: dict[str, Any], where: str) -> tuple[Any, DType]:
    """A kernel input's dims and dtype, from the graph's ``tensors`` table."""
    out = _ids(nd.get("outputs", []), where)
    tensors = d.get("tensors")
    if len(out) != 1 or not isinstance(tensors, list) or not 0 <= out[0] < len(tensors):
        raise FormatError(f"{where}: an input's dims and dtype must be listed in the graph's 'tensors'")
    t = tensors[out[0]]
    return _field(t, "dims", list, where), DType.parse(_field(t, "dtype", str, where))


def block_graph_from_dict(d: Any) -> BlockGraph:
    where = "block graph"
    tb = BlockGraphBuilder(_field(d, "grid", list, where), d.get("block", [128, 1, 1]),
                           _field(d, "forloop_range", int, where), d.get("reduction_dimx", 64),
                           smem_limit=UNCHECKED)
    env: dict[int, Any] = {}
    for k, nd in enumerate(_field(d, "nodes", list, where)):
        w = f"{where} node {k}"
        op, ins, attrs = _read_node(env, nd, w, kernel=False)
        if op is Op.INPUT:
            dt = TensorType(check_dims(_need(attrs, "dims"), f"{w} dims"), DType.parse(_need(attrs, "dtype")))
            outs = [tb.new_input(dt, _need(attrs, "imap"), _need(attrs, "fmap"))]
        elif op is Op.OUTPUT:
            tb.new_output(ins[0], _need(attrs, "omap"))
            outs = []
        elif op is Op.CUSTOMIZED:
            raise FormatError(f"{w}: customized ops cannot nest inside a block graph")
        else:
            outs = _replay_for(op, kernel=False)(tb, ins, attrs)
        _bind(env, _ids(nd.get("outputs", []), w), outs, w)
    bg = tb.freeze()
    _expect_types(bg.tensors, d.get("tensors"), where, block=True)
    return bg

