"""Depth-first μGraph enumeration (SPEC §7.2) over lean states, as an event stream.

``Enumerator`` walks the tree of SPEC §7.2: kernel ops and customized ops at kernel level;
inside an open customized op, block ops until the block graph can be closed. Every child
is checked in the order cheapest first — op cap, canonical order (§7.4), phase, shape,
shared memory (§3.6), then the abstract-expression oracle (§5) — and every kernel-level
state is tested as a candidate (§7.2: outputs' types, the expression pre-check, then the
verifier). A verified graph is recorded and not extended.

States are plain lists mutated on the way down and restored on the way up, so a step
costs a few list operations; graphs are built through the validating builders only for
candidates (``replay``). In ``frontier`` mode the walk stops at every customized-op root
and records it as a task, which ``runner`` hands to workers (SPEC §7.5: the result must not
depend on how tasks are scheduled, so each task is explored the same way wherever it runs).
"""

from __future__ import annotations

import bisect
import contextlib
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from mirage_lab.absexpr.of_graph import op_expression
from mirage_lab.absexpr.oracle import Oracle
from mirage_lab.absexpr.terms import Term
from mirage_lab.errors import FormatError, MirageError, ShapeError
from mirage_lab.ir.dtype import DType
from mirage_lab.ir.graph import KernelGraph, loader_tile, saver_dims
from mirage_lab.ir.ops import Kind, Level, Op, ShapeContext
from mirage_lab.ir.smem import counted_bytes
from mirage_lab.ir.tensor import Dims, TensorType
from mirage_lab.search import candidates as cands
from mirage_lab.search.bound import RANKING_HARDWARE, beyond, lower_bound, opening_bound, ranking_seconds
from mirage_lab.search.config import SearchConfig
from mirage_lab.search.events import PRUNE_REASONS, Decision, Event, EventLog
from mirage_lab.search.goal import foreign_function, function_heads
from mirage_lab.search.replay import build_candidate
from mirage_lab.search.tiling import Parts, loader_parts, op_parts
from mirage_lab.verify.verifier import Verifier

Key = tuple[tuple[int, ...], int]
CUSTOMIZED_CODE = Op.CUSTOMIZED.spec.code(Level.KERNEL)


class StopSearch(Exception):
    """A budget ran out: ``reason`` is "time limit", "state limit" or "result limit"."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(slots=True)
class T:
    """A tensor of a search state."""

    dims: Dims
    dtype: DType
    expr: Term
    post: bool = False  # block level: post-loop (produced by an accumulator)
    source: bool = False  # a program input (kernel) or a loader (block)
    uses: int = 0
    part: Parts | None = None  # block level, ``index_checks``: the axes partitioning each dim (``tiling``)
    sig: int = -1  # block level: one number per (dims, dtype, part, expr), for ``Enumerator._block_memo``


@dataclass
class Block:
    """The open block graph of a customized op being built."""

    inputs: tuple[int, ...]
    grid: tuple[int, int, int]
    frange: int
    tensors: list[T]
    smem: int
    key: Key  # the customized op's canonical key, checked when it was opened
    last: Key | None = None
    n_ops: int = 0
    serial: int = 0  # which opening this is, within one walk (semantic deduplication)
    # the last kernel op the cap allows (``final_kernel_checks``): how many tensors it must save, and the
    # normal forms of the kernel tensors that stay dangling beside them (all must be the program's outputs)
    need: int | None = None
    left: tuple[int, ...] = ()
    unreachable: str | None = None  # why the last kernel op can never produce the program's outputs
    # per open state on the current path: (tensor count, per block op its viable entries), see ``_viable``
    viable: list[tuple[int, list[list[_Entry]] | None]] = field(default_factory=list)


@dataclass
class Candidate:
    """A verified μGraph found by the search."""

    graph: KernelGraph
    hash: str
    decisions: list[Decision]
    node: str
    verification: dict[str, Any]
    found_s: float


@dataclass
class Outcome:
    """What one walk produced: its events, verified candidates, tasks (frontier mode), time split."""

    events: EventLog = field(default_factory=EventLog)
    candidates: list[Candidate] = field(default_factory=list)
    tasks: list[tuple[str, list[Decision]]] = field(default_factory=list)  # (parent node id, decisions)
    seconds: dict[str, float] = field(default_factory=lambda: {"oracle": 0.0, "verification": 0.0,
                                                                "enumeration": 0.0})
    stop_reason: str = "complete"

    @property
    def states(self) -> int:
        return self.events.states


class Enumerator:
    """One walk over one subtree. Not thread-safe; build one per task."""

    def __init__(self, program: KernelGraph, config: SearchConfig, oracle: Oracle, verifier: Verifier | None, *,
                 ids: str, deadline: float | None = None, state_cap: int | None = None,
                 on_candidate: Callable[[Candidate], None] | None = None, t0: float | None = None,
                 log: EventLog | None = None, incumbent: float | None = None) -> None:
        self.program, self.cfg, self.oracle, self.verifier = program, config, oracle, verifier
        # ``cost_bound``: the proxy cost of the cheapest μGraph verified so far (``bound.py``)
        self.incumbent = math.inf if incumbent is None else incumbent
        self.ids, self.deadline, self.state_cap, self.on_candidate = ids, deadline, state_cap, on_candidate
        self.t0 = time.perf_counter() if t0 is None else t0
        self.out = Outcome(events=log or EventLog())
        clamp = config.clamp_bounds
        self.kernel_ops = [_OpInfo(Op(o), Level.KERNEL, clamp=clamp) for o in config.kernel_ops if o != "customized"]
        self.block_ops = [_OpInfo(Op(o), Level.BLOCK, clamp=clamp) for o in config.block_ops]
        self.dropped: list[tuple[str, str, str]] = []  # (level, op, the function no target applies)
        if config.pruning:
            heads = function_heads(oracle.targets)
            self.kernel_ops = self._useful(self.kernel_ops, "kernel", heads)
            self.block_ops = self._useful(self.block_ops, "block", heads)
        self._max_drop = max([1, *(i.arity - 1 for i in self.block_ops)])
        self._max_merge = max([0, *(i.arity - 1 for i in self.block_ops if not i.accum)])
        self._ctx = {lv: ShapeContext(lv, config.reduction_dimx) for lv in (Level.KERNEL, Level.BLOCK)}
        self._shapes: dict[Any, list[Dims] | None] = {}  # (op code, input dims) → output dims
        self._mixed_dtypes = len({t.dtype for t in program.input_types}) > 1
        self._exprs: dict[Any, tuple[tuple[Term, ...], Any]] = {}  # (op, inputs' terms and dims, F) → terms, verdict
        # (op, F, each operand's sig) → [output dims, smem added, parts, (terms, verdict)], filled in as needed
        self._block_memo: dict[Any, list[Any]] = {}
        self._sigs: dict[Any, int] = {}  # a block tensor's (dims, dtype, part, expr) → its sig
        self._indices: dict[tuple[int, int, int], list[tuple[int, ...]]] = {}
        self._kernels_built: dict[str, tuple[list[Any], float]] = {}  # (``opening_bound``) kernel prefix → its cost
        self.targets = sorted(self._nf_key(t) for t in oracle.targets)
        self._target_vars = [(self._nf_key(t), _variables(t)) for t in oracle.targets]
        self.out_types = sorted((t.dims, t.dtype.value) for t in program.output_types)
        self.seen_graphs: set[str] = set()
        self.seen_states: set[Any] = set()
        self._counter = 0
        self._blocks_opened = 0
        self._log = self.out.events  # (continuation) the walk's log, while a throwaway one takes the re-walk's events
        self._start()

    def _start(self) -> None:
        """Put the walk's state at the root: the program's inputs only."""
        self.kt: list[T] = [T(t.dims, t.dtype, e, source=True)
                            for t, e in zip(self.program.input_types, _input_terms(len(self.program.inputs)),
                                            strict=True)]
        self.k_ops = len(self.kt)
        self.k_last: Key | None = None
        self.n_custom = 0
        self.block: Block | None = None
        self.path: list[Decision] = []
        self._nodes: list[str] = []  # the node ids of the states on ``path`` below the walk's root
        self._last = self._root = ""  # the last node expanded, and the walk's root
        self._resume: list[tuple[Decision, str]] = []  # (continuation) the stopped walk's path still to re-enter

    def _useful(self, ops: list[_OpInfo], level: str, heads: frozenset[str]) -> list[_OpInfo]:
        keep = []
        for info in ops:
            head = foreign_function(info.op, info.attrs, info.arity, heads, self.cfg.reduction_dimx)
            if head is None:
                keep.append(info)
            else:
                self.dropped.append((level, info.name, head))
        return keep

    # ------------------------------------------------------------------ driving
    def run(self, prefix: Sequence[Decision] = (), parent: str | None = None, frontier: bool = False,
            resume: dict[str, Any] | None = None) -> Outcome:
        """Explore the subtree below ``prefix``; in ``frontier`` mode stop at customized-op roots.

        ``resume`` (what ``resume_point`` gave after a walk of the same subtree stopped at its state cap) continues
        that walk where it stopped instead of starting over: its events follow the stopped walk's, and the two
        together are, byte for byte, the events of one walk that never stopped."""
        self.frontier = frontier
        start = time.perf_counter()
        try:
            for d in prefix[:-1]:
                self._apply(d)
            if resume is not None:
                node = self._resume_at(resume)
                if prefix:
                    self._apply(prefix[-1])
            elif prefix:
                node = self._expand(parent, prefix[-1])
                self._apply(prefix[-1])
            else:
                node = self._expand(None, None)
            if not prefix and not self._resume:
                for level, op, head in self.dropped:
                    self._prune(node, "oracle", op=op, level=level, expr=f"{head}(·)", rules=[],
                                reason=f"every {op} applies {head}, which no target applies")
            self._root = node
            self._visit(node)
        except StopSearch as stop:
            self.out.stop_reason = stop.reason
        return self._finish(start)

    def resume_point(self, prefix: Sequence[Decision]) -> dict[str, Any]:
        """Where a walk that stopped at its state cap stands (JSON): the decisions and node ids from its root to the
        state it expanded last and did not visit, the next node number, and the μGraphs it verified."""
        below = self.path[len(prefix):]
        ids = [self._root, *self._nodes, self._last] if below else [self._last]
        return {"path": below, "ids": ids, "counter": self._counter, "seen": sorted(self.seen_graphs)}

    def _resume_at(self, resume: dict[str, Any]) -> str:
        """Set up a continuation (``run``): the stopped walk logged every state on its path, and every event of each
        state's children before the path's child; those are walked again silently (``_child``), into a log that is
        thrown away, down to the last state, which is visited afresh."""
        if not resumable(self.cfg):
            raise MirageError("a walk that deduplicates states cannot be resumed; run it again from its root")
        path, ids = resume["path"], resume["ids"]
        self._counter = int(resume["counter"])
        self.seen_graphs.update(resume["seen"])
        self._resume = list(zip(path, ids[1:], strict=True))
        if self._resume:
            self._log, self.out.events = self.out.events, EventLog(keep=False)
        return str(ids[0])

    def _finish(self, start: float) -> Outcome:
        s = self.out.seconds
        s["enumeration"] = time.perf_counter() - start - s["oracle"] - s["verification"]
        return self.out

    def _visit(self, node: str) -> None:
        if self.block is None:
            self._kernel_state(node)
        else:
            self._block_state(node)

    def _expand(self, parent: str | None, decision: Decision | None) -> str:
        node = self._last = f"{self.ids}{self._counter}"
        self._counter += 1
        self.out.events.expanded(node, parent, decision, "block" if self.block is not None
                                 or (decision or [""])[0] == "c" else "kernel")
        if self.state_cap is not None and self.out.states > self.state_cap:
            raise StopSearch("state limit")
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise StopSearch("time limit")
        return node

    def _prune(self, parent: str, why: str, decision: Decision | None = None, **info: Any) -> None:
        ev: Event = {"e": "prune", "parent": parent, "why": why}
        if decision is not None:
            ev["d"] = decision
        ev.update(info)
        self.out.events.append(ev)

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

    # ------------------------------------------------------------------ kernel level
    def _kernel_state(self, node: str) -> None:
        on_path = bool(self._resume)  # (continuation: the stopped walk tested and entered this state already)
        if not on_path and self._try_candidate(node):
            return
        if self.k_ops >= self.cfg.max_kernel_ops or (not on_path and self._beyond_bound(node)):
            return
        counts = {"oracle": 0, "order": 0, "shape": 0, "twin": 0}
        for info, idx, ins, dims, exprs in self._kernel_children(node, counts):
            decision: Decision = ["k", info.name, list(idx), info.attrs]
            undo = self._push_kernel(idx, (idx, info.code),
                                     [T(d, ins[0].dtype, e) for d, e in zip(dims, exprs, strict=True)])
            self._child(node, decision)
            self._pop_kernel(undo)
        if "customized" in self.cfg.kernel_ops and self.n_custom < self.cfg.max_customized:
            self._customized(node, counts)
        self._count(node, counts)

    def _kernel_children(self, node: str, counts: dict[str, int]) -> Iterator[tuple[_OpInfo, tuple[int, ...], list[T],
                                                                                   list[Dims], tuple[Term, ...]]]:
        """The kernel ops that pass every check here, in order (each rejection counted); the caller walks each
        before asking for the next, and restores the state in between."""
        for info in self.kernel_ops:
            twins = info.commutative and self.cfg.skip_commuted_twins
            walked: set[tuple[int, ...]] = set()  # (``_untwinned``, at kernel level: (i, j) comes before (j, i))
            for idx in self._after(self.k_last, info, len(self.kt), counts):
                if twins and idx[::-1] in walked:
                    counts["twin"] += 1
                    continue
                ins = [self.kt[i] for i in idx]
                dims = self._shape(info, ins, Level.KERNEL)
                if dims is None:
                    counts["shape"] += 1
                    continue
                exprs = self._expressions(node, "k", idx, info, ins, 1, counts)
                if exprs is not None:
                    walked.add(idx)
                    yield info, idx, ins, dims, exprs

    def _customized(self, node: str, counts: dict[str, int]) -> None:
        for idx in cands.customized_input_candidates(len(self.kt), self.cfg):
            key = (tuple(idx), CUSTOMIZED_CODE)
            if not self._order_ok(self.k_last, key):
                counts["order"] += 1
                continue
            dims = [self.kt[i].dims for i in idx]
            for grid in cands.grid_candidates(dims, self.cfg):
                for imaps in cands.imap_candidates(dims, grid, self.cfg):
                    for fmaps in cands.fmap_candidates(dims, self.cfg):
                        for frange in cands.forloop_candidates(dims, grid, imaps, fmaps, self.cfg):
                            decision: Decision = ["c", list(idx), list(grid), [list(m) for m in imaps],
                                                  list(fmaps), frange]
                            self._open_customized(node, decision, key)

    def _open_customized(self, node: str, decision: Decision, key: Key) -> None:
        if not self._open_block(decision, key):
            self._prune(node, "smem", decision)
            return
        assert self.block is not None
        why = self.block.unreachable
        if why is not None:
            self.block = None
            self._prune(node, "goal", decision, reason=why)
            return
        if self.frontier:
            self.block = None
            self.out.tasks.append((node, [*self.path, decision]))
            self.out.events.append({"e": "task", "parent": node, "task": len(self.out.tasks) - 1})
            return
        self._child(node, decision)
        self.block = None

    def _open_block(self, decision: Decision, key: Key) -> bool:
        _, idx, grid, imaps, fmaps, frange = decision
        tensors, smem = [], 0
        for i, imap, fmap in zip(idx, imaps, fmaps, strict=True):
            src = self.kt[i]
            tile = loader_tile(src.dims, tuple(imap), fmap, tuple(grid), frange)
            # positions in a program input are its indices; an intermediate may hold concatenated partials
            part = loader_parts(len(tile), imap, fmap, grid, frange) if src.source else (None,) * len(tile)
            t = self._signed(T(tile, src.dtype, src.expr, source=True, part=part))
            smem += counted_bytes(Op.INPUT, [TensorType(tile, src.dtype)])
            tensors.append(t)
        if smem > self.cfg.smem_budget:
            return False
        self._blocks_opened += 1
        self.block = Block(tuple(idx), tuple(grid), frange, tensors, smem, key, n_ops=len(tensors),
                           serial=self._blocks_opened)
        if self.cfg.final_kernel_checks and self.k_ops + 1 >= self.cfg.max_kernel_ops:
            self._final_kernel(self.block)
        return True

    def _final_kernel(self, b: Block) -> None:
        """The op the kernel cap makes last: what it must save, or why it never can (``b.unreachable``)."""
        left = [i for i, t in enumerate(self.kt) if t.uses == 0 and not t.source and i not in b.inputs]
        b.need = len(self.out_types) - len(left)
        b.left = tuple(self._nf_key(self.kt[i].expr) for i in left)
        if b.need < 1:
            b.unreachable = (f"the last kernel op the cap allows leaves {len(left)} earlier tensor(s) unused; the "
                             f"program has {len(self.out_types)} output(s)")
            return
        # what it saves is a function of what it loads: every input the missing outputs read must be loaded
        missing = list(self._target_vars)
        if self.cfg.expression_precheck:
            for key in b.left:
                hit = next((m for m in missing if m[0] == key), None)
                if hit is None:
                    b.unreachable = "a tensor it leaves unused is not one of the program's outputs"
                    return
                missing.remove(hit)
        if not any(self._saves_an_output(omap, b.grid) for omap in cands.omap_candidates(
                [d for d, _ in self.out_types], b.grid, self.cfg)):
            b.unreachable = f"no omap of grid {b.grid} saves a tensor with the dims of a program output"
            return
        have = frozenset().union(*(_variables(self.kt[i].expr) for i in b.inputs))
        lacking = sorted(frozenset().union(*(v for _, v in missing)) - have)
        if lacking:
            b.unreachable = (f"the last kernel op the cap allows loads nothing that reads input(s) "
                             f"{', '.join(f'v{i}' for i in lacking)}, which the program's outputs read")

    def _push_kernel(self, idx: Sequence[int], key: Key, outs: list[T]) -> tuple[Any, ...]:
        for i in idx:
            self.kt[i].uses += 1
        undo = (tuple(idx), self.k_last, len(outs))
        self.kt.extend(outs)
        self.k_last = key
        self.k_ops += 1
        return undo

    def _pop_kernel(self, undo: tuple[Any, ...]) -> None:
        idx, last, n = undo
        del self.kt[len(self.kt) - n:]
        for i in idx:
            self.kt[i].uses -= 1
        self.k_last = last
        self.k_ops -= 1

    # ------------------------------------------------------------------ block level
    def _block_state(self, node: str) -> None:
        b = self.block
        assert b is not None
        if b.n_ops == len(b.inputs) and not self._resume and self._beyond_bound(node):
            return  # a customized op just opened (a task's root, or a later kernel): the floor of it cuts it
        dangling = [i for i, t in enumerate(b.tensors) if t.uses == 0]
        if (dangling and len(dangling) <= self.cfg.max_block_outputs
                and all(b.tensors[i].post and not b.tensors[i].source for i in dangling)
                and self._may_finish(node, b, dangling)):
            self._close(node, b, dangling)
        if b.n_ops >= self.cfg.max_block_ops:
            return
        if self._cannot_close(b):
            self._prune(node, "cap", reason="the op cap leaves too few ops to consume every loop-phase tensor")
            return
        counts = {"oracle": 0, "order": 0, "phase": 0, "shape": 0, "smem": 0, "index": 0, "twin": 0}
        viable = self._viable(node, b, counts)
        walked = [self._untwinned(info, entries, counts) for info, entries in zip(self.block_ops, viable, strict=True)]
        self._count(node, counts)
        b.viable.append((len(b.tensors), viable))  # (children inherit the twins too: ``_untwinned`` is per state)
        for info, entries in zip(self.block_ops, walked, strict=True):
            for entry in entries:
                self._block_op(node, b, info, entry)
        b.viable.pop()

    def _untwinned(self, info: _OpInfo, entries: list[_Entry], counts: dict[str, int]) -> list[_Entry]:
        """``skip_commuted_twins``: of a commutative op's operand pairs (i, j) and (j, i), i < j, both open in this
        state, only (i, j) is walked.

        Sound: the two children hold equal tensors (equal functions, dims, parts and normal forms, so every
        later check agrees), and (i, j)'s key is the smaller, so the canonical order lets at least as much follow
        it. By induction its subtree holds, for every μGraph below (j, i), the same μGraph with the operands
        swapped: the same function and proxy cost. Only the state's own children are skipped: its descendants
        inherit (j, i), since there (i, j) may be closed by the order while (j, i) is still open."""
        if not (info.commutative and self.cfg.skip_commuted_twins):
            return entries
        open_ = {e[0] for e in entries}
        kept = [e for e in entries if e[0][0] <= e[0][1] or (e[0][1], e[0][0]) not in open_]
        counts["twin"] += len(entries) - len(kept)
        return kept

    def _viable(self, node: str, b: Block, counts: dict[str, int]) -> list[list[_Entry]]:
        """Per block op, the operand tuples that pass every check here, in canonical order.

        Incremental: phase, shape, expression and shared memory only get worse along a path (tensors are
        only added, smem only grows), and under the reference order so does the order test, so a tuple
        rejected in a state is rejected in all its descendants. A state therefore re-tests only its
        parent's surviving tuples for order and smem, and fully checks just the tuples that read a
        tensor the parent did not have — about half the work, and each rejection is reported once.
        """
        n = len(b.tensors)
        n_old, inherited = b.viable[-1] if b.viable else (0, None)
        posts = [t.post for t in b.tensors]
        out: list[list[_Entry]] = []
        for k, info in enumerate(self.block_ops):
            fresh = self._after(b.last, info, n, counts, n_old)
            kept = len(fresh)
            fresh = _phase_ok(fresh, posts, info)
            counts["phase"] += kept - len(fresh)
            entries = [e for idx in fresh if (e := self._check_block_op(node, b, info, idx, counts)) is not None]
            if inherited is not None and inherited[k]:
                old = [e for e in inherited[k] if self._order_ok(b.last, (e[0], info.code))
                       and b.smem + e[3] <= self.cfg.smem_budget]
                entries = sorted(old + entries, key=_entry_index) if entries else old
            out.append(entries)
        return out

    def _cannot_close(self, b: Block) -> bool:
        """Each op lowers the number of dangling loop-phase tensors by at most ``arity − 1`` (or 1, for an
        accumulator), and a block graph closes only when none is left: a state needing more ops than the cap
        leaves can never close, so none of its descendants can either. In the last kernel op, likewise, the
        dangling tensors of any phase must come down to the ``need`` outputs, and only a non-accumulator
        op merges tensors."""
        ops_left = self.cfg.max_block_ops - b.n_ops
        loop = sum(1 for t in b.tensors if t.uses == 0 and not t.post)
        if loop > ops_left * self._max_drop:
            return True
        if b.need is None:
            return False
        dangling = sum(1 for t in b.tensors if t.uses == 0)
        return dangling - b.need > ops_left * self._max_merge

    def _may_finish(self, node: str, b: Block, dangling: list[int]) -> bool:
        """In the last kernel op, a block graph saves exactly what the program still needs."""
        if b.need is None:
            return True
        if len(dangling) != b.need:
            return False
        if not self.cfg.expression_precheck:
            return True
        got = sorted([*b.left, *(self._nf_key(b.tensors[i].expr) for i in dangling)])
        if got == self.targets:
            return True
        self._prune(node, "goal", reason="the last kernel op the cap allows would save expressions that are "
                    "not the program's outputs")
        return False

    def _check_block_op(self, node: str, b: Block, info: _OpInfo, idx: tuple[int, ...],
                        counts: dict[str, int]) -> _Entry | None:
        """Shape, shared memory, index consistency and the oracle, in that order, for one operand tuple whose
        phases agree (``_phase_ok``).

        All but shared memory depend only on the op and its operands (their dims, dtypes, parts and
        expressions) and the for-loop range, so each is worked out once per such key, when first needed, and
        remembered (``_block_memo``): the deep attention tasks meet the same operands in hundreds of
        thousands of states. The shared-memory budget depends on the state and is checked every time.
        """
        ins = [b.tensors[i] for i in idx]
        key = (info.code, b.frange, *[t.sig for t in ins])
        memo = self._block_memo.get(key)
        if memo is None:
            dims = self._shape(info, ins, Level.BLOCK)
            add = sum(math.prod(d) for d in dims) * ins[0].dtype.itemsize if dims and info.smem_counted else 0
            memo = self._block_memo[key] = [dims, add, _MISSING, _MISSING]
        dims, add, parts, judged = memo
        if dims is None:
            counts["shape"] += 1
            return None
        if b.smem + add > self.cfg.smem_budget:
            counts["smem"] += 1
            return None
        if parts is _MISSING:
            parts = memo[2] = None if not self.cfg.index_checks else op_parts(
                info.op, [t.part or (None,) * len(t.dims) for t in ins], [t.dims for t in ins], dims)
        if isinstance(parts, str):
            counts["index"] += 1
            return None
        if judged is _MISSING:
            judged = memo[3] = self._judgement(info, ins, b.frange)
        exprs, bad = judged
        if bad is not None:
            self._oracle_prune(node, "b", idx, info, bad, counts)
            return None
        return idx, dims, exprs, add, parts

    def _signed(self, t: T) -> T:
        """``t`` with its ``sig``, so that a memo key hashes one int per operand."""
        t.sig = self._sigs.setdefault((t.dims, t.dtype, t.part, t.expr), len(self._sigs))
        return t

    def _block_op(self, node: str, b: Block, info: _OpInfo, entry: _Entry) -> None:
        """Apply one viable op, explore below it, undo it."""
        idx, dims, *_ = entry
        decision: Decision = ["b", info.name, list(idx), info.attrs]
        last = self._push_block_op(b, info, entry)
        if self._fresh_state(node, decision):
            self._child(node, decision)
        b.n_ops -= 1
        b.smem -= entry[3]
        del b.tensors[len(b.tensors) - len(dims):]
        b.last = last
        for i in idx:
            b.tensors[i].uses -= 1

    def _push_block_op(self, b: Block, info: _OpInfo, entry: _Entry) -> Key | None:
        """Add a viable op's outputs to the open block graph; returns the key it replaced (``_block_op`` undoes)."""
        idx, dims, exprs, add, parts = entry
        post = info.accum or b.tensors[idx[0]].post
        dtype = b.tensors[idx[0]].dtype
        for i in idx:
            b.tensors[i].uses += 1
        last, b.last = b.last, (idx, info.code)
        b.tensors.extend(self._signed(T(d, dtype, e, post=post, part=None if parts is None else parts[k]))
                         for k, (d, e) in enumerate(zip(dims, exprs, strict=True)))
        b.smem += add
        b.n_ops += 1
        return last

    def _saves_an_output(self, omap: tuple[int, int, int], grid: tuple[int, int, int]) -> bool:
        """Some program output's dims split evenly along ``omap`` (the tile a block would save)."""
        return any(all(g == 1 or d[a] % g == 0 for a, g in zip(omap, grid, strict=True) if a >= 0)
                   for d, _ in self.out_types)

    def _close(self, node: str, b: Block, dangling: list[int]) -> None:
        tiles = [b.tensors[i].dims for i in dangling]
        for omap in cands.omap_candidates(tiles, b.grid, self.cfg):
            decision: Decision = ["s", list(omap)]
            outs = _saved(b, dangling, tuple(omap))
            if b.need is not None and not all((t.dims, t.dtype.value) in self.out_types for t in outs):
                continue  # the last kernel op: a graph whose outputs have other dims is no candidate
            self.block = None
            undo = self._push_kernel(b.inputs, b.key, outs)
            self.n_custom += 1
            if self._fresh_kernel_state(node, decision):
                self._child(node, decision)
            self.n_custom -= 1
            self._pop_kernel(undo)
            self.block = b

    def _fresh_kernel_state(self, node: str, decision: Decision) -> bool:
        """``dedupe_kernel_states``: after a block graph closes, a kernel state whose tensors (expression normal
        form, dims, dtype, use count) and canonical key equal an earlier one's is skipped. Not sound: equal
        expressions do not mean equal functions (they are index-blind), so the skipped variant may be the correct
        one (docs/decisions.md); off in every preset."""
        if not self.cfg.dedupe_kernel_states:
            return True
        sig = ("k", self.k_last, self.n_custom,
               tuple((self._nf_key(t.expr), t.dims, t.dtype.value, t.uses) for t in self.kt))
        if sig in self.seen_states:
            self._prune(node, "duplicate", decision)
            return False
        self.seen_states.add(sig)
        return True

    # ------------------------------------------------------------------ checks
    def _order_ok(self, last: Key | None, key: Key) -> bool:
        return self.cfg.order != "reference" or last is None or key > last

    def _after(self, last: Key | None, info: _OpInfo, n: int, counts: dict[str, int],
               n_old: int = 0) -> list[tuple[int, ...]]:
        """The operand tuples of ``info`` over ``n`` tensors that read one of index ≥ ``n_old`` and whose key
        beats ``last`` (SPEC §7.4), found by bisection."""
        key = (info.arity, n, n_old)
        idx = self._indices.get(key)
        if idx is None:
            idx = self._indices[key] = [t for t in cands.input_index_candidates(info.arity, n) if max(t) >= n_old]
        if self.cfg.order != "reference" or last is None:
            return idx
        v, code = last
        start = bisect.bisect_left(idx, v)
        if start < len(idx) and idx[start] == v and code >= info.code:
            start += 1
        counts["order"] += start
        return idx[start:]

    def _fresh_state(self, node: str, decision: Decision) -> bool:
        """``order="semantic"``: a block state holding the same tensors as an earlier one is a duplicate."""
        if self.cfg.order != "semantic" or self.block is None:
            return True
        b = self.block
        sig = (b.serial, tuple(sorted((self._nf_key(t.expr), t.dims, t.post) for t in b.tensors)))
        if sig in self.seen_states:
            self._prune(node, "duplicate", decision)
            return False
        self.seen_states.add(sig)
        return True

    def _shape(self, info: _OpInfo, ins: list[T], level: Level) -> list[Dims] | None:
        key = (info.code, *[t.dims for t in ins])  # codes differ between levels
        got = self._shapes.get(key, _MISSING)
        if got is _MISSING:
            got = None
            with contextlib.suppress(ShapeError):
                got = info.shape(self._ctx[level], [t.dims for t in ins], info.attrs)
            self._shapes[key] = got
        if got is not None and self._mixed_dtypes and any(t.dtype != ins[0].dtype for t in ins):
            return None
        return got  # type: ignore[return-value]

    def _expressions(self, node: str, level: str, idx: tuple[int, ...], info: _OpInfo, ins: list[T],
                     frange: int, counts: dict[str, int]) -> tuple[Term, ...] | None:
        """The outputs' abstract expressions, or None (and an oracle prune) when the oracle rejects one."""
        exprs, bad = self._judgement(info, ins, frange)
        if bad is None:
            return exprs
        self._oracle_prune(node, level, idx, info, bad, counts)
        return None

    def _judgement(self, info: _OpInfo, ins: list[T], frange: int) -> tuple[tuple[Term, ...], Any]:
        """``_judged``, remembered per (op, inputs' terms and dims, F)."""
        key = (info.code, frange, *[t.expr for t in ins], *[t.dims for t in ins])
        got = self._exprs.get(key)
        if got is None:
            got = self._exprs[key] = self._judged(info, ins, frange)
        return got

    def _judged(self, info: _OpInfo, ins: list[T], frange: int) -> tuple[tuple[Term, ...], Any]:
        """The outputs' expressions, and (expression, reason, rules) of the first the oracle rejects, or None."""
        exprs = op_expression(info.op, info.attrs, [t.expr for t in ins], [t.dims for t in ins],
                              forloop_range=frange, reduction_dimx=self.cfg.reduction_dimx)
        bad = None
        if self.cfg.pruning:
            t = time.perf_counter()
            v = next((v for v in map(self.oracle.check, exprs) if not v.keep), None)
            if v is not None:
                bad = (str(v.expr), v.reason, list(v.rules))
            self.out.seconds["oracle"] += time.perf_counter() - t
        return exprs, bad

    def _oracle_prune(self, node: str, level: str, idx: tuple[int, ...], info: _OpInfo, bad: Any,
                      counts: dict[str, int]) -> None:
        expr, reason, rules = bad
        self.out.events.pruned_by_oracle(node, (level, info, idx), _oracle_decision, expr, reason, rules, counts)

    def _nf_of(self, e: Term) -> Any:
        return self.oracle.normal_form(e)

    def _nf_key(self, e: Term) -> int:
        nf = self._nf_of(e)
        return -1 if nf is None else nf.serial

    def _beyond_bound(self, node: str) -> bool:
        """``cost_bound``: cut a state (not a candidate itself) when the kernels it has built, plus one launch or the
        floor of the kernel it is building, cost more than the cheapest μGraph verified so far: every μGraph below it
        does (``bound.py``)."""
        if not self.cfg.cost_bound or not math.isfinite(self.incumbent):
            return False
        limits = {"smem_limit": self.cfg.smem_budget, "reduction_dimx": self.cfg.reduction_dimx}
        spent, bound = (opening_bound(self.program, self.path, memo=self._kernels_built, **limits)
                        if self.path and self.path[-1][0] == "c" else lower_bound(self.program, self.path, **limits))
        if not beyond(bound, self.incumbent):
            return False
        us = (spent * 1e6, bound * 1e6, self.incumbent * 1e6)
        self._prune(node, "bound", spent_us=round(us[0], 4), bound_us=round(us[1], 4), best_us=round(us[2], 4),
                    reason=f"the kernels so far cost {us[0]:.2f} µs (proxy, {RANKING_HARDWARE}); with one more "
                           f"launch, or the floor of the kernel being built, any μGraph below costs ≥ {us[1]:.2f} µs, "
                           f"more than the cheapest verified one's {us[2]:.2f} µs")
        return True

    def _costlier_than_best(self, node: str, graph: KernelGraph) -> bool:
        """``cost_bound``: a complete graph that costs more than the cheapest μGraph verified so far is not verified
        (often the dearest step of an attention search: a batch-8 GQA candidate takes over a second): it could only
        join the ranking's tail, which the bound shortens anyway. Its cost is exact, so ties are still verified."""
        if not self.cfg.cost_bound or not math.isfinite(self.incumbent):
            return False
        cost = ranking_seconds(graph)
        if not beyond(cost, self.incumbent):
            return False
        us = (cost * 1e6, self.incumbent * 1e6)
        self._prune(node, "bound", cost_us=round(us[0], 4), best_us=round(us[1], 4),
                    reason=f"this complete μGraph costs {us[0]:.2f} µs (proxy, {RANKING_HARDWARE}), more than the "
                           f"cheapest verified one's {us[1]:.2f} µs: it is not verified")
        return True

    # ------------------------------------------------------------------ candidates
    def _try_candidate(self, node: str) -> bool:
        """SPEC §7.2: test every kernel-level state; True when verified (the branch stops)."""
        dangling = [i for i, t in enumerate(self.kt) if t.uses == 0 and not t.source]
        if len(dangling) != len(self.out_types):
            return False
        if sorted((self.kt[i].dims, self.kt[i].dtype.value) for i in dangling) != self.out_types:
            return False
        if self.cfg.expression_precheck and sorted(self._nf_key(self.kt[i].expr) for i in dangling) != self.targets:
            self.out.events.append({"e": "candidate", "node": node, "outcome": "precheck"})
            return False
        t = time.perf_counter()
        graph = build_candidate(self.program, self.path, dangling, smem_limit=self.cfg.smem_budget,
                                reduction_dimx=self.cfg.reduction_dimx)
        if self._costlier_than_best(node, graph):
            return True  # (every state below it costs more still)
        if self.verifier is None:
            raise MirageError("this enumerator has no verifier; give one to walk a search (only oracle_prunes "
                              "works without)")
        res = self.verifier.check(graph)
        self.out.seconds["verification"] += time.perf_counter() - t
        summary = {"reason": res.reason, "error_bound": res.error_bound, "heuristic": res.bound_is_heuristic,
                   "permutation": list(res.permutation or ())}
        if not res.equivalent:
            self.out.events.append({"e": "candidate", "node": node, "outcome": "rejected", "reason": res.reason})
            return False
        if res.permutation is not None:
            graph = replace(graph, outputs=tuple(graph.outputs[j] for j in res.permutation))
        h = graph.canonical_hash()
        if h in self.seen_graphs:
            self.out.events.append({"e": "candidate", "node": node, "outcome": "duplicate", "hash": h})
            return True
        self.seen_graphs.add(h)
        if self.cfg.cost_bound:
            self.incumbent = min(self.incumbent, ranking_seconds(graph))
        found = Candidate(graph, h, list(self.path), node, summary, time.perf_counter() - self.t0)
        self.out.candidates.append(found)
        self.out.events.append({"e": "candidate", "node": node, "outcome": "verified", "hash": h})
        if self.on_candidate is not None:
            self.on_candidate(found)
        return True

    # ------------------------------------------------------------------ one state's oracle prunes, on demand
    def oracle_prunes(self, decisions: Sequence[Decision], node: str) -> list[Event]:
        """The children the oracle rejected in the state that ``decisions`` lead to (node id ``node``), one event
        each with its decision and expression, in the search's order: what a search log counts (``EventLog``),
        worked out again by the same checks. For a state the search expanded and did not stop at (a verified or
        capped one has no oracle prunes); each costs one replay of its path, and the checks' memos are kept for the
        next call."""
        self._start()
        self.out = Outcome(events=EventLog(list_oracle=True))
        for d in decisions:
            self._replay_step(d)
        counts = dict.fromkeys(PRUNE_REASONS, 0)
        if self.block is not None:
            self._viable(node, self.block, counts)
        elif self.k_ops < self.cfg.max_kernel_ops:
            for _ in self._kernel_children(node, counts):
                pass
        return [e for e in self.out.events.events if e["why"] == "oracle" and "d" in e]

    def _replay_step(self, d: Decision) -> None:
        """Apply one decision of a walked path to the lean state, as the walk did (``_apply``, block ops, saves)."""
        b = self.block
        if d[0] == "b" and b is not None:
            info = next(i for i in self.block_ops if i.name == d[1] and i.attrs == d[3])
            entry = self._check_block_op("", b, info, tuple(d[2]), dict.fromkeys(PRUNE_REASONS, 0))
            if entry is None:
                raise FormatError(f"decision {d!r} does not pass the search's checks in its state")
            b.viable.append((len(b.tensors), None))  # the child's fresh tuples are those reading a new tensor
            self._push_block_op(b, info, entry)
        elif d[0] == "s" and b is not None:
            self.block = None
            self._push_kernel(b.inputs, b.key, _saved(b, [i for i, t in enumerate(b.tensors) if t.uses == 0],
                                                      tuple(d[1])))
            self.n_custom += 1
        else:
            self._apply(d)

    # ------------------------------------------------------------------ forced replay of a task prefix
    def _apply(self, d: Decision) -> None:
        kind = d[0]
        if kind == "k":
            info, idx = _OpInfo(Op(d[1]), Level.KERNEL, d[3]), tuple(d[2])
            ins = [self.kt[i] for i in idx]
            dims = self._shape(info, ins, Level.KERNEL)
            assert dims is not None, d
            exprs = op_expression(info.op, d[3], [t.expr for t in ins], [t.dims for t in ins])
            self._push_kernel(idx, (idx, info.code), [T(x, ins[0].dtype, e) for x, e in zip(dims, exprs, strict=True)])
        elif kind == "c":
            assert self._open_block(d, (tuple(d[1]), CUSTOMIZED_CODE)), d
        else:
            raise ValueError(f"task prefixes hold kernel decisions and one customized root, not {d!r}")
        self.path.append(d)


def resumable(config: SearchConfig) -> bool:
    """Whether a walk stopped at its state cap can be continued (``Enumerator.run(resume=...)``): not when it
    deduplicates states, since the continuation does not see what the stopped walk saw."""
    return config.order != "semantic" and not config.dedupe_kernel_states


def _oracle_decision(what: tuple[str, _OpInfo, tuple[int, ...]]) -> Decision:
    """The decision an oracle prune names, from the (level, op, operands) key the enumerator logs it under."""
    level, info, idx = what
    return [level, info.name, list(idx), info.attrs]


def _phase_ok(tuples: list[tuple[int, ...]], posts: list[bool], info: _OpInfo) -> list[tuple[int, ...]]:
    """The operand tuples whose phases allow the op (SPEC §3.3): an accumulator reads loop-phase tensors
    only, any other op reads tensors of one phase (and its output has that phase)."""
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


_MISSING = object()

#: a viable block op: operand indices, output dims, output expressions, shared-memory bytes it adds
_Entry = tuple[tuple[int, ...], list[Dims], tuple[Term, ...], int, tuple[Parts, ...] | None]


def _entry_index(e: _Entry) -> tuple[int, ...]:
    return e[0]


class _OpInfo:
    """What the hot loops need of an op, looked up once."""

    __slots__ = ("accum", "arity", "attrs", "code", "commutative", "name", "op", "shape", "smem_counted")

    def __init__(self, op: Op, level: Level, attrs: dict[str, Any] | None = None,
                 clamp: tuple[float, float] = (0.0, 6.0)) -> None:
        spec = op.spec
        self.op, self.name, self.arity, self.code = op, op.value, spec.arity, spec.code(level)
        self.shape, self.smem_counted, self.accum = spec.shape, spec.smem_counted, spec.kind is Kind.ACCUM
        self.commutative = spec.commutative and spec.arity == 2
        self.attrs = attrs if attrs is not None else (
            {"min": float(clamp[0]), "max": float(clamp[1])} if op is Op.CLAMP else {})


def _saved(b: Block, dangling: list[int], omap: tuple[int, ...]) -> list[T]:
    """The kernel tensors a block graph's savers write with ``omap``."""
    return [T(saver_dims(b.tensors[i].dims, omap, b.grid), b.tensors[i].dtype, b.tensors[i].expr) for i in dangling]


def _variables(t: Term) -> frozenset[int]:
    """The program inputs a term reads."""
    return frozenset(int(s.param[0]) for s in t.subterms() if s.head == "input")


def _input_terms(n: int) -> list[Term]:
    from mirage_lab.absexpr.terms import var

    return [var(i) for i in range(n)]
