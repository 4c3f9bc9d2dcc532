"""The search's checks as data: an ordered list of small named parts (DESIGN principle 6).

Each ``Check`` has a name, the reason it records when it prunes (``PRUNE_REASONS``; ``precheck`` is a
candidate outcome; None: a cap of the space, recorded nowhere), a one-line doc, the function that does it and
the setting, if any, that switches it. ``STAGES`` says where the walk applies each, in order. A walk applies a
check when its setting asks for it and ``SearchConfig.disabled_checks`` does not name it (``active_checks``);
the checks that correctness needs (``required``) cannot be switched off. ``checks_frame()`` lists them.

The functions take the walk (``walk.Walk``); most are here, those of the cost bound in ``bound.py`` and those
of the goal in ``goal.py``. The walk calls each at its place in ``STAGES`` rather than looping over the list,
so that the hot ones keep their memos and bisections (``block_level``).
"""

from __future__ import annotations

import bisect
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mirage_lab.absexpr.of_graph import op_expression
from mirage_lab.absexpr.terms import Term
from mirage_lab.arguments import did_you_mean
from mirage_lab.errors import ShapeError
from mirage_lab.ir.ops import Kind, Level
from mirage_lab.ir.tensor import Dims
from mirage_lab.search import candidates as cands
from mirage_lab.search.bound import candidate_bound, state_bound
from mirage_lab.search.decision import BlockOp, Decision, KernelOp
from mirage_lab.search.folds import folded_only
from mirage_lab.search.goal import final_kernel, foreign_function_of
from mirage_lab.search.state import Block, Entry, Key, OpInfo, T
from mirage_lab.search.tiling import Parts, aligned, op_parts, saved_parts

if TYPE_CHECKING:
    import pandas as pd

    from mirage_lab.search.config import SearchConfig
    from mirage_lab.search.walk import Walk

_MISSING = object()


# --------------------------------------------------------------------------- caps of the space
def kernel_cap(w: Walk) -> bool:
    return w.k_ops >= w.cfg.max_kernel_ops


def customized_cap(w: Walk) -> bool:
    return "customized" not in w.cfg.kernel_ops or w.n_custom >= w.cfg.max_customized


def block_cap(w: Walk, b: Block) -> bool:
    return b.n_ops - b.free >= w.cfg.max_block_ops


def free_op(w: Walk, b: Block, info: OpInfo, idx: tuple[int, ...]) -> int:
    """1 when the cap does not count this op: a norm of a loaded tile, while ``free_loader_norms`` allows one."""
    return int(info.op.spec.kind is Kind.NORM and b.free < w.cfg.free_loader_norms and b.tensors[idx[0]].source)


def closing_rule(w: Walk, b: Block, dangling: list[int]) -> bool:
    """SPEC §7.2 B1: the dangling tensors are post-loop, none a loader, and at most ``max_block_outputs``."""
    return bool(dangling) and len(dangling) <= w.cfg.max_block_outputs and all(
        b.tensors[i].post and not b.tensors[i].source for i in dangling)


# --------------------------------------------------------------------------- the rules of the IR
def shape(w: Walk, info: OpInfo, ins: list[T], level: Level) -> list[Dims] | None:
    """The outputs' dims, or None when the shape rule (or mixed dtypes) refuses the operands."""
    key = (info.code, *[t.dims for t in ins])  # codes differ between levels
    got = w.shapes.get(key, _MISSING)
    if got is _MISSING:
        got = None
        with contextlib.suppress(ShapeError):
            got = info.shape(w.ctx[level], [t.dims for t in ins], info.attrs)
        w.shapes[key] = got
    if got is not None and w.mixed_dtypes and any(t.dtype != ins[0].dtype for t in ins):
        return None
    return got  # type: ignore[return-value]


def phase(tuples: list[tuple[int, ...]], posts: list[bool], info: OpInfo,
          post: set[int] | None = None) -> list[tuple[int, ...]]:
    """The operand tuples whose phases allow the op (SPEC §3.3): an accumulator reads loop-phase tensors
    only, any other op reads tensors of one phase (and its output has that phase). ``post``: the indices of
    the post-loop tensors, when the caller has them (one state asks for every op)."""
    if post is None:
        post = {i for i, p in enumerate(posts) if p}
    if not post:  # every tensor in the loop phase (most states): every tuple qualifies
        return tuples
    if info.accum:
        return [ix for ix in tuples if post.isdisjoint(ix)]
    if info.arity == 1 or len(post) == len(posts):
        return tuples
    if info.arity == 2:
        return [ix for ix in tuples if posts[ix[0]] is posts[ix[1]]]
    return [ix for ix in tuples if post.isdisjoint(ix) or post.issuperset(ix)]


def smem(w: Walk, total: int) -> bool:
    """Shared memory within the budget (SPEC §3.6)."""
    return total <= w.cfg.smem_budget


# --------------------------------------------------------------------------- pruning
def order_after(w: Walk, last: Key | None, info: OpInfo, n: int, counts: dict[str, int],
                n_old: int = 0) -> list[tuple[int, ...]]:
    """The operand tuples of ``info`` over ``n`` tensors that read one of index ≥ ``n_old`` and whose key
    beats ``last`` (SPEC §7.4), found by bisection."""
    key = (info.arity, n, n_old)
    idx = w.indices.get(key)
    if idx is None:
        idx = w.indices[key] = [t for t in cands.input_index_candidates(info.arity, n) if max(t) >= n_old]
    if "order" not in w.on or last is None:
        return idx
    v, ident = last
    start = bisect.bisect_left(idx, v)
    if start < len(idx) and idx[start] == v and ident >= info.ident:
        start += 1
    counts["order"] += start
    return idx[start:]


def order_ok(w: Walk, last: Key | None, key: Key) -> bool:
    return "order" not in w.on or last is None or key > last


def untwinned(w: Walk, info: OpInfo, entries: list[Entry], counts: dict[str, int]) -> list[Entry]:
    """Of a commutative op's operand pairs (i, j) and (j, i), i < j, both open in this state, only (i, j) is
    walked (the kernel level skips (j, i) once (i, j) passed; docs/decisions.md, "commuted twins").

    Sound: the two children hold equal tensors, and (i, j)'s key is the smaller, so the canonical order lets at
    least as much follow it; its subtree holds, for every μGraph below (j, i), the same μGraph with the operands
    swapped. Only the state's own children are skipped: its descendants inherit (j, i)."""
    if not (info.commutative and "twin" in w.on):
        return entries
    open_ = {e[0] for e in entries}
    kept = [e for e in entries if e[0][0] <= e[0][1] or (e[0][1], e[0][0]) not in open_]
    counts["twin"] += len(entries) - len(kept)
    return kept


def index(w: Walk, info: OpInfo, ins: list[T], dims: list[Dims]) -> tuple[Parts, ...] | str | None:
    """(``tiling``) The outputs' parts, or why the op mixes tiles wrongly (a text); None when off."""
    if "index" not in w.on:
        return None
    return op_parts(info.op, [t.part or (None,) * len(t.dims) for t in ins], [t.dims for t in ins], dims)


def source_parts(t: T) -> Parts | None:
    """(``tiling``) A kernel tensor's alignment for its loaders: None when aligned (a program input)."""
    return None if t.source else t.part or (None,) * len(t.dims)


def kernel_op_parts(w: Walk, info: OpInfo, ins: list[T], dims: list[Dims]) -> list[Parts | None]:
    """``intermediate_parts``: the alignment of a kernel op's outputs (``tiling``: a whole-tensor op keeps its
    operands' aligned dims where ``op_parts`` can say where each output position comes from)."""
    if "intermediate_parts" not in w.on:
        return [None] * len(dims)
    got = op_parts(info.op, [aligned(len(t.dims)) if t.source else t.part or (None,) * len(t.dims) for t in ins],
                   [t.dims for t in ins], dims)
    return [None] * len(dims) if isinstance(got, str) else list(got)


def intermediate_parts(w: Walk, outs: list[T], tiles: list[T], omap: tuple[int, ...],
                       grid: tuple[int, int, int]) -> list[T]:
    """``intermediate_parts``: give the kernel tensors a block graph saves (``outs``, from ``tiles``) their
    alignment (``tiling.saved_parts``), so that the index checks see how the next kernel tiles them."""
    if "intermediate_parts" in w.on:
        for t, tile in zip(outs, tiles, strict=True):
            t.part = saved_parts(tile.part or (None,) * len(tile.dims), omap, grid)
    return outs


def judged(w: Walk, info: OpInfo, ins: list[T], frange: int) -> tuple[tuple[Term, ...], Any]:
    """The outputs' expressions, and (expression, reason, rules) of the first the oracle rejects, or None."""
    exprs = op_expression(info.op, info.attrs, [t.expr for t in ins], [t.dims for t in ins],
                          forloop_range=frange, reduction_dimx=w.cfg.reduction_dimx)
    bad = None
    if "oracle" in w.on:
        t = time.perf_counter()
        v = next((v for v in map(w.oracle.check, exprs) if not v.keep), None)
        if v is not None:
            bad = (str(v.expr), v.reason, list(v.rules))
        w.out.seconds["oracle"] += time.perf_counter() - t
    return exprs, bad


def oracle_decision(what: tuple[str, OpInfo, tuple[int, ...]]) -> Decision:
    """The decision an oracle prune names, from the (level, op, operands) key the walk logs it under."""
    level, info, idx = what
    return (KernelOp if level == "k" else BlockOp)(info.name, idx, info.attr_items)


def cannot_close(w: Walk, b: Block) -> bool:
    """Each op lowers the number of dangling loop-phase tensors by at most ``arity − 1`` (or 1, for an
    accumulator), and a block graph closes only when none is left: a state needing more ops than the cap
    leaves can never close, nor can its descendants. In the last kernel op, likewise, the dangling tensors of
    any phase must come down to the ``need`` outputs, and only a non-accumulator op merges tensors."""
    if "cannot_close" not in w.on:
        return False
    ops_left = w.cfg.max_block_ops - (b.n_ops - b.free)  # (a free norm is unary: it merges nothing)
    loop = sum(1 for t in b.tensors if t.uses == 0 and not t.post)
    if loop > ops_left * w.max_drop:
        return True
    if b.need is None:
        return False
    dangling = sum(1 for t in b.tensors if t.uses == 0)
    return dangling - b.need > ops_left * w.max_merge


def semantic_duplicate(w: Walk, node: str, decision: Decision) -> bool:
    """``order="semantic"``: a block state holding the same tensors as an earlier one is a duplicate (True)."""
    if "semantic_duplicate" not in w.on or w.block is None:
        return False
    b = w.block
    sig = (b.serial, tuple(sorted((w.nf_key(t.expr), t.dims, t.post, tuple(sorted(t.blind))) for t in b.tensors)))
    if sig in w.seen_states:
        w.prune(node, "duplicate", decision)
        return True
    w.seen_states.add(sig)
    return False


def kernel_duplicate(w: Walk, node: str, decision: Decision) -> bool:
    """``dedupe_kernel_states``: after a block graph closes, a kernel state whose tensors (expression normal form,
    dims, dtype, use count) and canonical key equal an earlier one's is skipped (True). Not sound: equal
    expressions do not mean equal functions (they are index-blind; docs/decisions.md); off in every preset."""
    if "kernel_duplicate" not in w.on:
        return False
    sig = ("k", w.k_last, w.n_custom, tuple((w.nf_key(t.expr), t.dims, t.dtype.value, t.uses) for t in w.kt))
    if sig in w.seen_states:
        w.prune(node, "duplicate", decision)
        return True
    w.seen_states.add(sig)
    return False


def precheck(w: Walk, dangling: list[int]) -> bool:
    """``expression_precheck``: a complete graph is verified only when its outputs' expressions are the targets'."""
    return "precheck" not in w.on or sorted(w.nf_key(w.kt[i].expr) for i in dangling) == w.targets


# --------------------------------------------------------------------------- the list
@dataclass(frozen=True)
class Check:
    """One named part of the search."""

    name: str
    reason: str | None  # what it records when it prunes; None: nothing (a cap of the space)
    doc: str
    fn: Callable[..., Any]
    required: bool = False  # needed for correct results: cannot be switched off
    setting: tuple[str, Any] | None = None  # (SearchConfig field, value) it also needs to be on

    def on(self, config: SearchConfig) -> bool:
        if self.name in config.disabled_checks:
            return False
        return self.setting is None or getattr(config, self.setting[0]) == self.setting[1]


CHECKS: tuple[Check, ...] = (
    Check("foreign_ops", "oracle", "ops applying a function no target applies are never tried (one prune at the "
          "root)", foreign_function_of, setting=("pruning", True)),
    Check("precheck", "precheck", "a complete graph is verified only when its outputs' expressions are the "
          "targets'", precheck, setting=("expression_precheck", True)),
    Check("candidate_bound", "bound", "a complete graph dearer than the best verified one is not verified",
          candidate_bound, setting=("cost_bound", True)),
    Check("kernel_cap", None, "at most max_kernel_ops kernel ops, inputs included", kernel_cap, required=True),
    Check("state_bound", "bound", "cut a state whose kernels so far cost more than the best verified μGraph",
          state_bound, setting=("cost_bound", True)),
    Check("order", "order", "an op's canonical key must beat the last op's (SPEC §7.4)", order_after,
          setting=("order", "reference")),
    Check("twin", "twin", "of a commutative op's (i, j) and (j, i) only (i, j) is walked", untwinned,
          setting=("skip_commuted_twins", True)),
    Check("shape", "shape", "the op's shape rule accepts its operands (one dtype)", shape, required=True),
    Check("oracle", "oracle", "the abstract-expression oracle keeps the op's outputs (SPEC §5)", judged,
          setting=("pruning", True)),
    Check("customized_cap", None, "at most max_customized customized ops", customized_cap, required=True),
    Check("smem", "smem", "loaders and block ops fit the shared-memory budget (SPEC §3.6)", smem, required=True),
    Check("goal", "goal", "the last kernel op the cap allows must be able to save the program's outputs",
          final_kernel, setting=("final_kernel_checks", True)),
    Check("folded_inputs", "goal", "the last kernel op the cap allows must not load only sums over the for-loop "
          "of an input the program's outputs tell apart (folds.py)", folded_only,
          setting=("final_kernel_checks", True)),
    Check("closing_rule", None, "a block graph closes when its dangling tensors are post-loop, none a loader, "
          "at most max_block_outputs (SPEC §7.2 B1)", closing_rule, required=True),
    Check("block_cap", None, "at most max_block_ops block ops, loaders included", block_cap, required=True),
    Check("cannot_close", "cap", "cut a block state that needs more ops to close than the cap leaves",
          cannot_close),
    Check("phase", "phase", "an op's operands are of one phase; an accumulator's in the loop (SPEC §3.3)", phase,
          required=True),
    Check("index", "index", "no diagonal tiles or mismatched contractions over program inputs (tiling.py)",
          index, setting=("index_checks", True)),
    Check("intermediate_parts", "index", "the index checks see how intermediates are tiled where their positions "
          "are the program's indices (tiling.saved_parts)", intermediate_parts, setting=("index_checks", True)),
    Check("semantic_duplicate", "duplicate", "a block state holding an earlier one's tensors is skipped",
          semantic_duplicate, setting=("order", "semantic")),
    Check("kernel_duplicate", "duplicate", "a kernel state equal in expressions to an earlier one is skipped "
          "(unsound)", kernel_duplicate, setting=("dedupe_kernel_states", True)),
)
BY_NAME = {c.name: c for c in CHECKS}

#: where the walk applies the checks, each place's in the order it applies them
STAGES: dict[str, tuple[str, ...]] = {
    "root": ("foreign_ops",),
    "kernel state": ("precheck", "candidate_bound", "kernel_cap", "state_bound"),
    "kernel op": ("order", "twin", "shape", "oracle", "intermediate_parts"),
    "customized op": ("customized_cap", "order", "smem", "goal", "folded_inputs"),
    "block state": ("state_bound", "closing_rule", "goal", "block_cap", "cannot_close"),
    "block op": ("order", "phase", "shape", "smem", "index", "oracle", "twin", "semantic_duplicate"),
    "close": ("goal", "intermediate_parts", "kernel_duplicate"),
}


def active_checks(config: SearchConfig) -> frozenset[str]:
    """The names of the checks a walk with ``config`` applies."""
    return frozenset(c.name for c in CHECKS if c.on(config))


def refused_checks(names: tuple[str, ...]) -> str | None:
    """Why ``disabled_checks`` cannot name ``names`` (unknown, or required), or None."""
    optional = [c.name for c in CHECKS if not c.required]
    for name in names:
        if name not in BY_NAME:
            return (f"names an unknown check {name!r}{did_you_mean(name, list(BY_NAME))}; the checks that can be "
                    f"switched off are {', '.join(optional)}")
        if BY_NAME[name].required:
            return (f"cannot switch off {name!r}: correct results need it ({BY_NAME[name].doc}); the checks "
                    f"that can be switched off are {', '.join(optional)}")
    return None


def checks_frame() -> pd.DataFrame:
    """The checks, one row each, in order: name, where the walk applies it, what it records, doc, whether it can
    be switched off (``disabled_checks``) and the setting that switches it too."""
    import pandas as pd  # here, not at the top: search workers never load pandas

    where = {c.name: ", ".join(s for s, names in STAGES.items() if c.name in names) for c in CHECKS}
    rows = [{"check": c.name, "where": where[c.name], "records": c.reason or "", "doc": c.doc,
             "can_switch_off": not c.required, "setting": "" if c.setting is None else f"{c.setting[0]}="
             f"{c.setting[1]!r}"} for c in CHECKS]
    return pd.DataFrame(rows)

