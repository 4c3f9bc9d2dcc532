"""A depth-first walk's state and bookkeeping, shared by its kernel and block levels (``kernel_level``,
``block_level``) and driven by ``Enumerator`` (``enumerate``).

The walk holds the lean state (``state``), the path of decisions from the root, the memos of its checks
(``checks``), which checks are on (``active_checks``: its config's settings and ``disabled_checks``), and
writes every state it enters and every child it rejects to its event log.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from mirage_lab.absexpr.oracle import Oracle
from mirage_lab.absexpr.terms import Term
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.ops import Level, ShapeContext
from mirage_lab.ir.tensor import Dims
from mirage_lab.search import checks, folds
from mirage_lab.search.config import SearchConfig
from mirage_lab.search.decision import Decision, OpenBlock
from mirage_lab.search.event_schema import prune_event
from mirage_lab.search.events import EventLog
from mirage_lab.search.goal import foreign_function_of, function_heads
from mirage_lab.search.state import (
    Block,
    Candidate,
    Key,
    OpInfo,
    Outcome,
    StopSearch,
    T,
    input_terms,
    op_infos,
)
from mirage_lab.verify.verifier import Verifier

#: the states a slice walks at least before it yields its call (``Walk.yield_at``): a call whose budget is spent
#: still moves each slice it starts forward
YIELD_AFTER_STATES = 200


class Walk:
    """One walk over one subtree. Not thread-safe; build one per task."""

    def __init__(self, program: KernelGraph, config: SearchConfig, oracle: Oracle, verifier: Verifier | None, *,
                 ids: str, deadline: float | None = None, state_cap: int | None = None,
                 on_candidate: Callable[[Candidate], None] | None = None, t0: float | None = None,
                 log: EventLog | None = None, incumbent: float | None = None,
                 memos: Walk | dict[str, Any] | None = None) -> None:
        self.program, self.cfg, self.oracle, self.verifier = program, config, oracle, verifier
        self.on = checks.active_checks(config)  # the names of the checks this walk applies
        # ``cost_bound``: the proxy cost of the cheapest μGraph verified so far (``bound.py``)
        self.incumbent = math.inf if incumbent is None else incumbent
        self.ids, self.deadline, self.state_cap, self.on_candidate = ids, deadline, state_cap, on_candidate
        # (a slice with other slices behind it in its call: ``task.run_batch``) when it stops to let them start
        self.yield_at: float | None = None
        self.t0 = time.perf_counter() if t0 is None else t0
        self.out = Outcome(events=log or EventLog())
        self.frontier = False
        self.split_above: int | None = None  # (``Enumerator.run(split=True)``) openings past this many are sub-tasks
        self._opened_from: list[Decision] | None = None  # (a sub-task's walk) the kernel state it opened from
        if memos is not None:
            self.share_memos(memos)
        else:
            self._setup(program, config, oracle)
        self.seen_graphs: set[str] = set()
        self.seen_states: set[Any] = set()
        self._counter = 0
        self.blocks_opened = 0
        self._log = self.out.events  # (continuation) the walk's log, while a throwaway one takes the re-walk's events
        self._start()

    #: what ``_setup`` works out from the program, config and oracle alone: the ops, the targets, and the checks'
    #: memos (each maps what a check depends on to its answer)
    SHARED = ("kernel_ops", "block_ops", "dropped", "max_drop", "max_merge", "ctx", "shapes", "mixed_dtypes", "_exprs",
              "block_memo", "_sigs", "indices", "kernels_built", "grid_saves", "floors", "targets", "target_vars",
              "out_types", "loaders", "openings")

    def share_memos(self, other: Walk | dict[str, Any]) -> None:
        """Take ``other``'s setup and memos (a walk of the same search before this one, in this thread, or its
        ``memos()``, ``task._kept_memos``): they hold for any walk of the search, and sub-tasks of one task meet the
        same operands (``task.run_batch``)."""
        for name, value in (other.memos() if isinstance(other, Walk) else other).items():
            setattr(self, name, value)

    def memos(self) -> dict[str, Any]:
        """This walk's setup and memos (``SHARED``), for the later walks of the same search (``share_memos``)."""
        return {name: getattr(self, name) for name in self.SHARED}

    def _setup(self, program: KernelGraph, config: SearchConfig, oracle: Oracle) -> None:
        kernel_ops = [o for o in config.kernel_ops if o != "customized"]
        self.kernel_ops = op_infos(kernel_ops, Level.KERNEL, program, config.clamp_bounds)
        self.block_ops = op_infos(config.block_ops, Level.BLOCK, program, config.clamp_bounds)
        self.dropped: list[tuple[str, str, str]] = []  # (level, op, the function no target applies)
        if "foreign_ops" in self.on:
            heads = function_heads(oracle.targets)
            self.kernel_ops = self._useful(self.kernel_ops, "kernel", heads)
            self.block_ops = self._useful(self.block_ops, "block", heads)
        self.max_drop = max([1, *(i.arity - 1 for i in self.block_ops)])
        self.max_merge = max([0, *(i.arity - 1 for i in self.block_ops if not i.accum)])
        self.ctx = {lv: ShapeContext(lv, config.reduction_dimx) for lv in (Level.KERNEL, Level.BLOCK)}
        self.shapes: dict[Any, list[Dims] | None] = {}  # (op code, input dims) → output dims
        self.mixed_dtypes = len({t.dtype for t in program.input_types}) > 1
        self._exprs: dict[Any, tuple[tuple[Term, ...], Any]] = {}  # (op, inputs' terms and dims, F) → terms, verdict
        # (op, F, each operand's sig) → [output dims, smem added, parts, (terms, verdict)], filled in as needed
        self.block_memo: dict[Any, list[Any]] = {}
        self._sigs: dict[Any, int] = {}  # a block tensor's (dims, dtype, part, expr) → its sig
        self.indices: dict[tuple[int, int, int], list[tuple[int, ...]]] = {}
        self.kernels_built: dict[Any, tuple[list[Any], float]] = {}  # (``opening_bound``) kernel prefix → its cost
        self.grid_saves: dict[Any, bool] = {}  # (``goal.final_kernel``) grid → whether an omap saves an output
        self.floors: dict[Any, float] = {}  # (``opening_bound``) an opening and its inputs' types → its floor
        self.loaders: dict[Any, Any] = {}  # (``KernelLevel._loader``) a source's type and maps → tile, parts, bytes
        self.openings: dict[Any, list[Any]] = {}  # (``KernelLevel._maps``) inputs' dims → grids, maps and ranges
        self.targets = sorted(self.nf_key(t) for t in oracle.targets)
        self.target_vars = [(self.nf_key(t), t.inputs()) for t in oracle.targets]
        self.out_types = sorted((t.dims, t.dtype.value) for t in program.output_types)


    def _start(self) -> None:
        """Put the walk's state at the root: the program's inputs only."""
        self.kt: list[T] = [T(t.dims, t.dtype, e, source=True, deps=frozenset({i}))
                            for i, (t, e) in enumerate(zip(self.program.input_types,
                                                           input_terms(len(self.program.inputs)), strict=True))]
        self.k_ops = len(self.kt)
        self.k_last: Key | None = None
        self.n_custom = 0
        self.block: Block | None = None
        self.path: list[Decision] = []
        self._nodes: list[str] = []  # the node ids of the states on ``path`` below the walk's root
        self._last = self._root = ""  # the last node expanded, and the walk's root
        self._resume: list[tuple[Decision, str]] = []  # (continuation) the stopped walk's path still to re-enter

    def _useful(self, ops: list[OpInfo], level: str, heads: frozenset[str]) -> list[OpInfo]:
        keep = []
        for info in ops:
            head = foreign_function_of(info, heads, self.cfg.reduction_dimx)
            if head is None:
                keep.append(info)
            else:
                self.dropped.append((level, info.name, head))
        return keep

    # ------------------------------------------------------------------ states and events
    def _kernel_state(self, node: str) -> None:
        raise NotImplementedError

    def _block_state(self, node: str) -> None:
        raise NotImplementedError

    def _visit(self, node: str) -> None:
        if self.block is None:
            self._kernel_state(node)
        else:
            self._block_state(node)

    def _expand(self, parent: str | None, decision: Decision | None) -> str:
        node = self._last = f"{self.ids}{self._counter}"
        self._counter += 1
        self.out.events.expanded(node, parent, decision, "block" if self.block is not None
                                 or isinstance(decision, OpenBlock) else "kernel")
        if self.state_cap is not None and self.out.states > self.state_cap:
            raise StopSearch("state limit")
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise StopSearch("time limit")
        if (self.yield_at is not None and self.out.states > YIELD_AFTER_STATES
                and time.perf_counter() > self.yield_at):
            raise StopSearch("yield")
        return node

    def prune(self, parent: str, why: str, decision: Decision | None = None, **info: Any) -> None:
        self.out.events.append(prune_event(parent, why, None if decision is None else decision.to_json(), **info))

    def _count(self, parent: str, counts: dict[str, int]) -> None:
        """A state's rejections (oracle, order, shape, phase, smem, index, twin) are counted, not listed one by one."""
        self.out.events.counted(parent, counts)

    def _child(self, parent: str, decision: Decision) -> None:
        self.path.append(decision)
        if not self._resume:
            node = self._expand(parent, decision)
        elif decision == self._resume[0][0]:  # a continuation, re-entering the stopped walk's path
            node = self._resume.pop(0)[1]
            if not self._resume:  # the state it stopped at: from here on, everything is new
                self.out.events = self._log
        else:  # a subtree the stopped walk finished
            self.path.pop()
            return
        self._nodes.append(node)
        self._visit(node)
        self._nodes.pop()
        self.path.pop()

    # ------------------------------------------------------------------ kernel tensors
    def _push_kernel(self, idx: Sequence[int], key: Key, outs: list[T]) -> tuple[Any, ...]:
        for i in idx:
            self.kt[i].uses += 1
        undo = (tuple(idx), self.k_last, len(outs))
        self.kt.extend(outs)
        self.k_last = key
        self.k_ops += 1
        return undo

    def kernel_outputs(self, info: OpInfo, ins: list[T], dims: list[Dims], exprs: Sequence[Term]) -> list[T]:
        """The kernel tensors a kernel op adds, with their alignment (``checks.kernel_op_parts``)."""
        parts = checks.kernel_op_parts(self, info, ins, dims)
        deps, blind = folds.op_tags(info, ins)
        return [T(d, ins[0].dtype, e, part=p, deps=deps, blind=blind)
                for d, e, p in zip(dims, exprs, parts, strict=True)]

    def _pop_kernel(self, undo: tuple[Any, ...]) -> None:
        idx, last, n = undo
        del self.kt[len(self.kt) - n:]
        for i in idx:
            self.kt[i].uses -= 1
        self.k_last = last
        self.k_ops -= 1

    # ------------------------------------------------------------------ memos of the checks
    def expressions(self, node: str, level: str, idx: tuple[int, ...], info: OpInfo, ins: list[T],
                    frange: int, counts: dict[str, int]) -> tuple[Term, ...] | None:
        """The outputs' abstract expressions, or None (and an oracle prune) when the oracle rejects one."""
        exprs, bad = self.judgement(info, ins, frange)
        if bad is None:
            return exprs
        self.oracle_prune(node, level, idx, info, bad, counts)
        return None

    def judgement(self, info: OpInfo, ins: list[T], frange: int) -> tuple[tuple[Term, ...], Any]:
        """``checks.judged``, remembered per (op, inputs' terms and dims, F)."""
        key = (info.ident, frange, *[t.expr for t in ins], *[t.dims for t in ins])
        got = self._exprs.get(key)
        if got is None:
            got = self._exprs[key] = checks.judged(self, info, ins, frange)
        return got

    def oracle_prune(self, node: str, level: str, idx: tuple[int, ...], info: OpInfo, bad: Any,
                     counts: dict[str, int]) -> None:
        expr, reason, rules = bad
        self.out.events.pruned_by_oracle(node, (level, info, idx), checks.oracle_decision, expr, reason, rules,
                                         counts)

    def nf_key(self, e: Term) -> int:
        nf = self.oracle.normal_form(e)
        return -1 if nf is None else nf.serial

    def signed(self, t: T) -> T:
        """``t`` with its ``sig``, so that a memo key hashes one int per operand."""
        t.sig = self._sigs.setdefault((t.dims, t.dtype, t.part, t.expr), len(self._sigs))
        return t
