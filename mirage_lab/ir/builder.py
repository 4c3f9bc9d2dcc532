"""Builders: the only mutable IR objects. They validate every rule and freeze into graphs.

The API follows the reference implementation's Python builder::

    g = ml.new_kernel_graph()
    X = g.new_input(dims=(16, 4096), dtype=ml.float16)
    tb = ml.new_threadblock_graph(grid_dim=(64, 1, 1), forloop_range=4)
    tx = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)
    ...
    (O,) = g.customized([X, W], tb)
    g.mark_output(O)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from mirage_lab.arguments import checked, checked_methods
from mirage_lab.errors import (
    GraphError,
    MapError,
    PhaseError,
    ResourceError,
    ShapeError,
    UnsupportedOpError,
)
from mirage_lab.ir.builder_methods import install
from mirage_lab.ir.dtype import DType
from mirage_lab.ir.graph import (
    PHI,
    BlockGraph,
    Grid,
    KernelGraph,
    Node,
    loader_tile,
    make_attrs,
    plural,
    saver_dims,
)
from mirage_lab.ir.ops import ACCUM_NAMES, Kind, Level, Op, ShapeContext
from mirage_lab.ir.smem import DEFAULT_ARCH, MAX_BLOCKS, capacity, counted_bytes
from mirage_lab.ir.tensor import Dims, DTensor, STensor, TensorType, _Handle, contiguous_strides
from mirage_lab.ir.validate import check_dims, check_int, check_triple


@checked_methods
class _GraphBuilder:
    """Shared machinery: tensor table, node list, op application with shape checks. The op methods (``exp``,
    ``add``, ``matmul``, ``clamp``, …) are made from the op table (``ir/builder_methods.py``)."""

    level: Level
    handle_type: type[_Handle]

    if TYPE_CHECKING:  # the generated op methods, for the type checker
        def __getattr__(self, name: str) -> Callable[..., Any]: ...

    def __init__(self) -> None:
        self._tensors: list[TensorType] = []
        self._nodes: list[Node] = []

    # -- tensors -----------------------------------------------------------
    def tensor_type(self, tensor_id: int) -> TensorType:
        return self._tensors[tensor_id]

    def _new_tensor(self, t: TensorType) -> int:
        self._tensors.append(t)
        return len(self._tensors) - 1

    def _resolve(self, t: Any, what: str) -> int:
        if not isinstance(t, self.handle_type):
            raise GraphError(f"{what}: expected a {self.handle_type.__name__} of this graph, got {t!r}")
        if t.builder is not self:
            raise GraphError(f"{what}: {t!r} belongs to another graph; build each op from tensors of the "
                             "graph it is added to")
        return t.id

    def _context(self) -> ShapeContext:
        return ShapeContext(self.level)

    # -- ops ----------------------------------------------------------------
    def _apply(self, op: Op, inputs: Sequence[Any], **attrs: Any) -> list[Any]:
        spec = op.spec
        if self.level not in spec.codes:
            raise GraphError(f"{op.value} does not exist at the {self.level.value} level; "
                             f"it exists at: {', '.join(lv.value for lv in spec.levels)}")
        ids = [self._resolve(t, f"{op.value} input {i}") for i, t in enumerate(inputs)]
        types = [self._tensors[i] for i in ids]
        label = f"{op.value}({', '.join(f'{self.handle_type.prefix}{i}' for i in ids)})"
        if len({t.dtype for t in types}) > 1:
            raise ShapeError(f"{label}: operands have different dtypes ({', '.join(map(str, types))}); "
                             "declare the inputs with one dtype")
        post = self._phase(op, types, label)
        try:
            out_dims = spec.shape(self._context(), [t.dims for t in types], attrs)
        except ShapeError as e:
            raise ShapeError(f"{label}: {e}") from None
        outs = [TensorType(d, types[0].dtype, post) for d in out_dims]
        self._before_add(op, outs, label)
        out_ids = tuple(self._new_tensor(t) for t in outs)
        self._nodes.append(Node(op, tuple(ids), out_ids, make_attrs(attrs)))
        return [self.handle_type(self, i) for i in out_ids]

    def _phase(self, op: Op, types: Sequence[TensorType], label: str) -> bool:
        return False

    def _before_add(self, op: Op, outs: list[TensorType], label: str) -> None:
        pass

    def _one(self, op: Op, *inputs: Any, **attrs: Any) -> Any:
        return self._apply(op, inputs, **attrs)[0]

    def _dim(self, x: Any, dim: int) -> int:
        d = check_int(dim, "dim")
        rank = self._tensors[self._resolve(x, "dim")].rank
        return d + rank if -rank <= d < 0 else d


@checked_methods
class KernelGraphBuilder(_GraphBuilder):
    """Builds a kernel graph (SPEC §2). Freeze with ``.freeze()`` or the ``.graph`` property."""

    level = Level.KERNEL
    handle_type = DTensor

    def __init__(self) -> None:
        super().__init__()
        self._outputs: list[int] = []

    def new_input(self, dims: Sequence[int], strides: Sequence[int] | None = None,
                  dtype: Any = DType.FLOAT16) -> DTensor:
        """A program input; the argument order is the reference's (``dims, strides, dtype``)."""
        shape = check_dims(dims, "new_input dims")
        if strides is not None and _dtype_like(strides):
            raise ShapeError(f"new_input: the second argument is strides (as in Mirage), got the dtype {strides!r}; "
                             f"write new_input({shape}, dtype={strides!r})")
        dt = DType.parse(dtype)
        st = contiguous_strides(shape) if strides is None else check_dims(strides, "new_input strides",
                                                                          allow_zero=True, maximum=2**63 - 1)
        if len(st) != len(shape):
            raise ShapeError(f"new_input: {len(st)} strides given for {len(shape)} dims {shape}")
        tid = self._new_tensor(TensorType(shape, dt))
        self._nodes.append(Node(Op.INPUT, (), (tid,), make_attrs({"strides": st})))
        return DTensor(self, tid)

    def reduction(self, A: DTensor, dim: int, group_size: int = 1) -> DTensor:
        """Strided sum over ``dim`` down to ``group_size`` entries (SPEC §2)."""
        return self._one(Op.REDUCTION, A, dim=self._dim(A, dim),
                         group_size=check_int(group_size, "group_size"))

    def rms_norm(self, A: DTensor, normalized_shape: Sequence[int] | None = None) -> DTensor:
        """``A / sqrt(mean(A²))`` over the trailing ``normalized_shape`` dims (no learnable weight)."""
        dims = self._tensors[self._resolve(A, "rms_norm input 0")].dims
        norm = dims[-1:] if normalized_shape is None else check_dims(normalized_shape, "normalized_shape")
        return self._one(Op.RMS_NORM, A, normalized_shape=norm)

    def customized(self, inputs: Sequence[DTensor], bgraph: BlockGraphBuilder | BlockGraph) -> list[DTensor]:
        """A graph-defined kernel: run ``bgraph`` over ``inputs``; one output per saver, in saver order."""
        if isinstance(inputs, str | bytes) or not isinstance(inputs, Sequence):
            raise GraphError(f"customized: inputs must be a list of DTensors, got {inputs!r}; "
                             "write g.customized([X, ...], tb)")
        if not isinstance(bgraph, BlockGraphBuilder | BlockGraph):
            raise GraphError(f"customized: expected a block graph (ml.new_threadblock_graph(...)), "
                             f"got {type(bgraph).__name__}")
        bg = bgraph.freeze() if isinstance(bgraph, BlockGraphBuilder) else bgraph
        ids = [self._resolve(t, f"customized input {i}") for i, t in enumerate(inputs)]
        expected = bg.input_types
        if len(ids) != len(expected):
            raise GraphError(f"customized: the block graph has {len(expected)} loaders but {len(ids)} inputs "
                             "were given; pass one input per tb.new_input, in the same order")
        for i, (tid, want) in enumerate(zip(ids, expected, strict=True)):
            got = self._tensors[tid]
            if (got.dims, got.dtype) != (want.dims, want.dtype):
                raise ShapeError(f"customized: input {i} is d{tid}: {got}, but loader {i} was built for "
                                 f"{want}; pass the inputs in the order of tb.new_input")
        out_ids = tuple(self._new_tensor(t) for t in bg.output_types)
        self._nodes.append(Node(Op.CUSTOMIZED, tuple(ids), out_ids, (), bg))
        return [DTensor(self, i) for i in out_ids]

    def mark_output(self, A: DTensor, strides: Sequence[int] | None = None) -> None:
        """Make ``A`` a program output. ``strides`` (the reference's output layout) must be row-major: the
        interpreter, the search and the generated kernels write outputs contiguously."""
        tid = self._resolve(A, "mark_output")
        if strides is not None:
            dims = self._tensors[tid].dims
            if check_dims(strides, "mark_output strides", allow_zero=True, maximum=2**63 - 1) != \
                    contiguous_strides(dims):
                raise UnsupportedOpError(f"mark_output: strides {tuple(strides)} for d{tid} {dims} are not row-major "
                                         f"{contiguous_strides(dims)}; mirage-lab writes outputs contiguously, so "
                                         "leave strides out and transpose the result afterwards")
        if tid in self._outputs:
            raise GraphError(f"mark_output: d{tid} is already an output")
        self._outputs.append(tid)

    def freeze(self) -> KernelGraph:
        if not self._outputs:
            raise GraphError("the kernel graph has no outputs; call g.mark_output(tensor) on its result(s)")
        return KernelGraph(tuple(self._tensors), tuple(self._nodes), tuple(self._outputs))

    @property
    def graph(self) -> KernelGraph:
        return self.freeze()

    def __repr__(self) -> str:
        return (f"KernelGraphBuilder({plural(len(self._tensors), 'tensor')}, {plural(len(self._nodes), 'op')}, "
                f"{plural(len(self._outputs), 'output')})")


@checked_methods
class BlockGraphBuilder(_GraphBuilder):
    """Builds a thread-block graph (SPEC §3) for ``KernelGraphBuilder.customized``."""

    level = Level.BLOCK
    handle_type = STensor

    def __init__(self, grid_dim: Sequence[int], block_dim: Sequence[int] = (128, 1, 1),
                 forloop_range: int = 1, reduction_dimx: int = 64, arch: str = DEFAULT_ARCH,
                 smem_limit: int | None = None) -> None:
        super().__init__()
        self.grid: Grid = check_triple(grid_dim, "grid_dim")
        self.block: Grid = check_triple(block_dim, "block_dim")
        self.forloop_range = check_int(forloop_range, "forloop_range", minimum=1)
        self.reduction_dimx = check_int(reduction_dimx, "reduction_dimx", minimum=1)
        blocks = math.prod(self.grid)
        if blocks > MAX_BLOCKS:
            raise ResourceError(f"grid_dim {self.grid} has {blocks} blocks, more than the {MAX_BLOCKS} "
                                "allowed per kernel; use a smaller grid and a larger tile or forloop_range")
        self.smem_limit = capacity(arch) if smem_limit is None else check_int(smem_limit, "smem_limit")
        self.arch = arch
        self._smem = 0
        self._savers: list[Node] = []

    def _context(self) -> ShapeContext:
        return ShapeContext(Level.BLOCK, self.reduction_dimx)

    @property
    def smem_usage(self) -> int:
        """The §3.6 heuristic shared-memory sum so far, in bytes."""
        return self._smem

    def _before_add(self, op: Op, outs: list[TensorType], label: str) -> None:
        add = counted_bytes(op, outs)
        if self._smem + add > self.smem_limit:
            raise ResourceError(
                f"{label}: shared memory would reach {self._smem + add} bytes (the §3.6 sum of block-op "
                f"outputs), over the {self.smem_limit}-byte limit of {self.arch}; use smaller tiles "
                "(a larger grid or forloop_range) or fewer intermediate tensors")
        self._smem += add

    def _phase(self, op: Op, types: Sequence[TensorType], label: str) -> bool:
        phases = {t.post_loop for t in types}
        if op.spec.kind is Kind.ACCUM:
            late = [i for i, t in enumerate(types) if t.post_loop]
            if late:
                raise PhaseError(f"{label}: an accumulator needs loop-phase inputs, but input {late[0]} "
                                 f"({types[late[0]]}) is post-loop (already accumulated); accumulate "
                                 "before the post-loop ops")
            return True
        if len(phases) > 1:
            raise PhaseError(f"{label}: mixes loop-phase and post-loop inputs "
                             f"({', '.join(map(str, types))}); "
                             "pass the loop-phase operand through tb.forloop_accum first")
        return phases.pop() if phases else False

    # -- loaders and savers ---------------------------------------------------
    @property
    def grid_dim(self) -> dict[str, int]:
        """The grid as the reference gives it, ``{"x": 64, "y": 1, "z": 1}`` (``grid`` is the tuple)."""
        return dict(zip("xyz", self.grid, strict=True))

    @property
    def cygraph(self) -> BlockGraphBuilder:
        """The reference's handle to its C++ block graph; here the builder itself (``tb.cygraph.grid_dim``)."""
        return self

    def new_input(self, dtensor: DTensor | TensorType, input_map: Sequence[int] = (PHI, PHI, PHI),
                  forloop_dim: int = PHI, store_in_dmem: bool = False) -> STensor:
        """A loader: tile ``dtensor`` over the grid (``input_map``) and the for-loop (``forloop_dim``).
        ``store_in_dmem`` (the reference's device-memory staging) is not modelled: only False is accepted."""
        if store_in_dmem is not False:
            raise UnsupportedOpError("new_input: store_in_dmem=True (staging a tile in device memory) is not "
                                     "supported; loaders stage tiles in shared memory, so leave it out")
        if self._nodes and self._nodes[-1].op is not Op.INPUT:
            raise GraphError("new_input: add every input loader before the first compute op "
                             "(loaders come first, in the order of the customized op's inputs)")
        dt = dtensor.type if isinstance(dtensor, DTensor) else dtensor
        if not isinstance(dt, TensorType):
            raise GraphError(f"new_input: dtensor must be a DTensor of the kernel graph, got {dtensor!r}")
        imap = self._check_map(input_map, dt.dims, "input_map")
        try:
            fmap = check_int(forloop_dim, "forloop_dim", minimum=PHI)
        except ShapeError as e:
            raise MapError(f"new_input: {e}; use -1 (no loop dim) or a dim index of the tensor") from None
        tile = self._loader_tile(dt.dims, imap, fmap)
        out = TensorType(tile, dt.dtype, False)
        label = f"new_input({dt}, input_map={imap}, forloop_dim={fmap})"
        self._before_add(Op.INPUT, [out], label)
        tid = self._new_tensor(out)
        attrs = {"imap": imap, "fmap": fmap, "dims": dt.dims, "dtype": dt.dtype.value}
        self._nodes.append(Node(Op.INPUT, (), (tid,), make_attrs(attrs)))
        return STensor(self, tid)

    def _check_map(self, m: Sequence[int], dims: Dims, what: str) -> tuple[int, int, int]:
        raw = check_triple(m, what, minimum=PHI)
        seen: dict[int, int] = {}
        norm = []
        for axis, d in enumerate(raw):
            if self.grid[axis] == 1:
                d = PHI  # SPEC §3.2: normalise entries on size-1 axes
            elif d != PHI:
                if d >= len(dims):
                    raise MapError(f"{what}={tuple(m)}: grid axis {'xyz'[axis]} maps to dim {d}, but the "
                                   f"tensor {dims} has only {len(dims)} dims")
                if d in seen:
                    raise MapError(f"{what}={tuple(m)}: grid axes {'xyz'[seen[d]]} and {'xyz'[axis]} both "
                                   f"map to dim {d}; map each dim from at most one axis")
                seen[d] = axis
            norm.append(d)
        return (norm[0], norm[1], norm[2])

    def _loader_tile(self, dims: Dims, imap: tuple[int, int, int], fmap: int) -> Dims:
        for axis, d in enumerate(imap):
            if d >= 0 and dims[d] % self.grid[axis]:
                raise MapError(f"input_map={imap}: dim {d} (size {dims[d]}) of {dims} is not divisible by "
                               f"grid axis {'xyz'[axis]} = {self.grid[axis]}; pick a grid size that "
                               "divides it")
        if fmap >= 0:
            if fmap >= len(dims):
                raise MapError(f"forloop_dim={fmap} is out of range for a tensor with dims {dims}; "
                               f"use -1 or a dim in 0..{len(dims) - 1}")
            per_block = dims[fmap] // math.prod(g for g, d in zip(self.grid, imap, strict=True) if d == fmap)
            if per_block % self.forloop_range:
                raise MapError(f"forloop_dim={fmap}: the per-block size {per_block} of dim {fmap} is not "
                               f"divisible by forloop_range = {self.forloop_range}; pick a forloop_range "
                               "that divides it (or a smaller grid on that dim)")
        return loader_tile(dims, imap, fmap, self.grid, self.forloop_range)

    def new_output(self, stensor: STensor, output_map: Sequence[int] = (PHI, PHI, PHI),
                   forloop_dim: int = PHI) -> None:
        """A saver: write a post-loop tile; blocks' results are concatenated along ``output_map``."""
        tid = self._resolve(stensor, "new_output")
        t = self._tensors[tid]
        if forloop_dim != PHI:
            raise MapError(f"new_output: forloop_dim={forloop_dim} is not supported; savers always "
                           "accumulate (forloop_dim=-1)")
        if not t.post_loop:
            raise PhaseError(f"new_output: s{tid}: {t} is loop-phase; only accumulator results can be saved. "
                             "Wrap it in tb.forloop_accum(...) first")
        omap = self._check_map(output_map, t.dims, "output_map")
        for axis, d in enumerate(omap):
            if self.grid[axis] > 1 and d == PHI:
                raise MapError(f"output_map={tuple(output_map)}: grid axis {'xyz'[axis]} has "
                               f"{self.grid[axis]} blocks but maps to no dim, so blocks would overwrite each "
                               "other; map it to a dim of the output")
        self._savers.append(Node(Op.OUTPUT, (tid,), (), make_attrs({"omap": omap})))

    # -- block-only ops --------------------------------------------------------
    def reduction(self, A: STensor, dim: int) -> STensor:
        return self._one(Op.REDUCTION, A, dim=self._dim(A, dim))

    def reduction_to_dimx(self, A: STensor, dim: int) -> STensor:
        return self._one(Op.REDUCTION_TO_DIMX, A, dim=self._dim(A, dim))

    def reduction_max(self, A: STensor, dim: int) -> list[STensor]:
        return self._apply(Op.REDUCTION_MAX, [A], dim=self._dim(A, dim))

    def rms_norm(self, A: STensor) -> STensor:
        return self._one(Op.RMS_NORM, A)

    def concat(self, A: STensor, B: STensor, dim: int) -> STensor:
        return self._one(Op.CONCAT, A, B, dim=self._dim(A, dim))

    def forloop_accum(self, A: STensor, acc: str | None = None, rescale: STensor | None = None) -> STensor:
        """Combine ``A`` over the for-loop: acc ∈ None|"sum"|"mean"|"rms"|"sum_todimx"|"max"|… (SPEC §3.3)."""
        if not (acc is None or isinstance(acc, str)) or acc not in ACCUM_NAMES:
            names = ", ".join(repr(k) for k in ACCUM_NAMES)
            raise UnsupportedOpError(f"forloop_accum: unknown accumulator {acc!r}; use one of {names}")
        op = ACCUM_NAMES[acc]
        inputs = [A] if rescale is None else [A, rescale]
        if len(inputs) != op.spec.arity:
            need = "needs a rescale= tensor" if op.spec.arity == 2 else "takes no rescale= tensor"
            raise GraphError(f"forloop_accum: accumulator {acc!r} {need}")
        return self._one(op, *inputs)

    def forloop_accum_rescale(self, A: STensor, B: STensor, acc: str | None = None) -> STensor:
        """The reference's spelling of ``forloop_accum(A, acc, rescale=B)`` (online softmax)."""
        return self.forloop_accum(A, _rescaled(acc), rescale=B)

    def forloop_accum_max(self, A: STensor) -> STensor:
        """The reference's spelling of ``forloop_accum(A, "max")``."""
        return self.forloop_accum(A, "max")

    # -- freezing ----------------------------------------------------------------
    def freeze(self) -> BlockGraph:
        if not self._savers:
            raise GraphError("the block graph has no outputs; add tb.new_output(stensor=..., output_map=...)")
        self._check_closed()
        return BlockGraph(self.grid, self.forloop_range, tuple(self._tensors),
                          tuple(self._nodes) + tuple(self._savers), self.block, self.reduction_dimx)

    def _check_closed(self) -> None:
        """SPEC §3.5: every tensor no op consumes is saved; nothing is computed in vain."""
        used = {i for n in self._nodes + self._savers for i in n.inputs}
        for n in self._nodes:
            for tid in n.outputs:
                if tid not in used:
                    what = "loader output" if n.op is Op.INPUT else f"{n.op.value} result"
                    raise GraphError(f"s{tid} ({what}: {self._tensors[tid]}) is never used or saved; "
                                     "remove it or pass it to tb.new_output via an accumulator")

    def saver_dims(self, t: STensor, omap: tuple[int, int, int]) -> Dims:
        return saver_dims(t.dims, omap, self.grid)

    def __repr__(self) -> str:
        return (f"BlockGraphBuilder(grid={self.grid}, forloop_range={self.forloop_range}, "
                f"{plural(len(self._tensors), 'tensor')}, {plural(len(self._savers), 'output')}, "
                f"smem={self._smem} B)")


# the op methods from the table: both levels' on the shared base, each level's own on its builder
install(_GraphBuilder, frozenset({Level.KERNEL, Level.BLOCK}))
install(KernelGraphBuilder, frozenset({Level.KERNEL}))
install(BlockGraphBuilder, frozenset({Level.BLOCK}))


def _dtype_like(v: Any) -> bool:
    return isinstance(v, DType | str) or type(v).__name__ == "dtype" or hasattr(v, "itemsize")


#: the reference's ``forloop_accum_rescale`` accumulators: acc=None and acc="sum"
RESCALED = {None: "nored_rescale", "sum": "sum_rescale"}


def _rescaled(acc: str | None) -> str:
    if acc not in RESCALED:
        raise UnsupportedOpError(f"forloop_accum_rescale: acc={acc!r} has no rescaling form; use acc=None or "
                                 "acc='sum' (as in Mirage)")
    return RESCALED[acc]


@checked
def new_kernel_graph() -> KernelGraphBuilder:
    return KernelGraphBuilder()


@checked
def new_threadblock_graph(grid_dim: Sequence[int], block_dim: Sequence[int] = (128, 1, 1),
                          forloop_range: int = 1, reduction_dimx: int = 64, **kw: Any) -> BlockGraphBuilder:
    return BlockGraphBuilder(grid_dim, block_dim, forloop_range, reduction_dimx, **kw)


def as_graph(g: KernelGraph | KernelGraphBuilder) -> KernelGraph:
    """Accept a builder or a frozen graph wherever a graph is read."""
    if isinstance(g, KernelGraphBuilder):
        return g.freeze()
    if isinstance(g, KernelGraph):
        return g
    raise GraphError("expected a kernel graph (ml.new_kernel_graph() or ml.load(...)), "
                     f"got {type(g).__name__}")

