"""Depth-first μGraph enumeration (SPEC §7.2) over lean states, as an event stream.

``Enumerator`` walks the tree of SPEC §7.2: kernel ops and customized ops at kernel level (``kernel_level``);
inside an open customized op, block ops until the block graph can be closed (``block_level``). Every child
passes the named checks of its stage, cheapest first (``checks``: caps, canonical order §7.4, phase, shape,
shared memory §3.6, then the abstract-expression oracle §5), and every kernel-level state is tested as a
candidate (§7.2: outputs' types, the expression pre-check, then the verifier). A verified graph is recorded
and not extended.

States are plain lists mutated on the way down and restored on the way up (``state``), so a step costs a few
list operations; graphs are built through the validating builders only for candidates (``replay``). In
``frontier`` mode the walk stops at every customized-op root and records it as a task, which ``runner`` hands
to workers (SPEC §7.5: the result must not depend on how tasks are scheduled, so each task is explored the
same way wherever it runs).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from mirage_lab.absexpr.of_graph import op_expression
from mirage_lab.errors import FormatError, MirageError
from mirage_lab.ir.ops import Level, Op
from mirage_lab.search import checks
from mirage_lab.search.block_level import BlockLevel
from mirage_lab.search.bound import candidate_bound, ranking_seconds
from mirage_lab.search.config import SearchConfig
from mirage_lab.search.decision import BlockOp, Close, Decision, KernelOp, OpenBlock, decoded, encoded
from mirage_lab.search.event_schema import PRUNE_REASONS, SearchEvent, candidate_event
from mirage_lab.search.events import EventLog
from mirage_lab.search.kernel_level import KernelLevel
from mirage_lab.search.replay import build_candidate
from mirage_lab.search.state import CUSTOMIZED_CODE, Candidate, OpInfo, Outcome, StopSearch, saved


class Enumerator(KernelLevel, BlockLevel):
    """One walk over one subtree. Not thread-safe; build one per task."""

    def run(self, prefix: Sequence[Decision | Sequence[Any]] = (), parent: str | None = None, frontier: bool = False,
            resume: dict[str, Any] | None = None, split: bool = False, at_kernel_state: bool = False) -> Outcome:
        """Explore the subtree below ``prefix`` (decisions, or their JSON form); in ``frontier`` mode stop at
        customized-op roots. With ``split`` (a task's walk), every customized op opened after the task's own root
        closed is not walked but recorded as a *sub-task* (``out.tasks``, a ``task`` event where it opens, as the
        frontier records tasks): those later kernels' openings are what make a task heavy (GQA b1's task 933
        opens a second kernel 28 863 times, 99 % of its states), and each is walked by whichever worker is free
        (``runner``; ``split.Family`` puts their events back in place).

        ``resume`` (what ``resume_point`` gave after a walk of the same subtree stopped at its state cap) continues
        that walk where it stopped instead of starting over: its events follow the stopped walk's, and the two
        together are, byte for byte, the events of one walk that never stopped."""
        self.frontier = frontier
        steps = decoded(prefix)
        self.split_above = self._customs_in(steps) if split else None
        self._opened_from = None
        start = time.perf_counter()
        try:
            for d in steps[len(self.path) if at_kernel_state else 0:-1]:  # (``next_opening``: there already)
                self._apply(d)
            if resume is not None:
                node = self._resume_at(resume)
                if steps:
                    self._apply(steps[-1])
            elif steps:
                node = self._expand(parent, steps[-1])
                self._apply(steps[-1])
            else:
                node = self._expand(None, None)
            if not steps and not self._resume:
                for level, op, head in self.dropped:
                    self.prune(node, "oracle", op=op, level=level, expr=f"{head}(·)", rules=[],
                               reason=f"every {op} applies {head}, which no target applies")
            self._root = node
            self._visit(node)
            if steps and isinstance(steps[-1], OpenBlock) and resume is None and not frontier:  # (a sub-task)
                self.block = None
                self.path.pop()
                self._opened_from = list(self.path)
        except StopSearch as stop:
            self.out.stop_reason = stop.reason
        return self._finish(start)

    def stands_before(self, prefix: Sequence[Any]) -> bool:
        """Whether this walk, a finished sub-task's, can walk the sub-task ``prefix`` next (``next_opening``): it
        walked an opening from the kernel state the same decisions lead to, and stopped nowhere."""
        return (self.out.stop_reason == "complete" and self._opened_from is not None and self.state_cap is None
                and len(prefix) == len(self._opened_from) + 1 and decoded(prefix[:-1]) == self._opened_from)

    def next_opening(self, parent: str, opening: Any, ids: str, log: EventLog,
                     on_candidate: Callable[[Candidate], None] | None, incumbent: float | None) -> Outcome:
        """Walk the sub-task that opens ``opening`` (JSON) from the kernel state this walk's last sub-task opened
        from (``stands_before``), as ``run`` would from scratch: the path to it is not replayed again (a heavy
        task's sub-tasks are mostly the openings of one state after another)."""
        self.out, self._log, self.ids, self._counter, self.on_candidate = Outcome(events=log), log, ids, 0, on_candidate
        self.seen_graphs = set()
        if incumbent is not None:
            self.incumbent = min(self.incumbent, incumbent)
        return self.run([*self.path, *decoded([opening])], parent, at_kernel_state=True)

    def resume_point(self, prefix: Sequence[Any]) -> dict[str, Any]:
        """Where a walk that stopped at its state cap stands (JSON): the decisions and node ids from its root to the
        state it expanded last and did not visit, the next node number, and the μGraphs it verified."""
        below = self.path[len(prefix):]
        ids = [self._root, *self._nodes, self._last] if below else [self._last]
        return {"path": encoded(below), "ids": ids, "counter": self._counter, "seen": sorted(self.seen_graphs)}

    def _resume_at(self, resume: dict[str, Any]) -> str:
        """Set up a continuation (``run``): the stopped walk logged every state on its path, and every event of each
        state's children before the path's child; those are walked again silently (``_child``), into a log that is
        thrown away, down to the last state, which is visited afresh."""
        if not resumable(self.cfg):
            raise MirageError("a walk that deduplicates states cannot be resumed; run it again from its root")
        path, ids = decoded(resume["path"]), resume["ids"]
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

    # ------------------------------------------------------------------ candidates
    def _try_candidate(self, node: str) -> bool:
        """SPEC §7.2: test every kernel-level state; True when verified (the branch stops)."""
        dangling = [i for i, t in enumerate(self.kt) if t.uses == 0 and not t.source]
        if len(dangling) != len(self.out_types):
            return False
        if sorted((self.kt[i].dims, self.kt[i].dtype.value) for i in dangling) != self.out_types:
            return False
        if not checks.precheck(self, dangling):
            self.out.events.append(candidate_event(node, "precheck"))
            return False
        t = time.perf_counter()
        graph = build_candidate(self.program, self.path, dangling, smem_limit=self.cfg.smem_budget,
                                reduction_dimx=self.cfg.reduction_dimx)
        if candidate_bound(self, node, graph):
            return True  # (every state below it costs more still)
        if self.verifier is None:
            raise MirageError("this enumerator has no verifier; give one to walk a search (only oracle_prunes "
                              "works without)")
        res = self.verifier.check(graph)
        self.out.seconds["verification"] += time.perf_counter() - t
        summary = res.evidence()
        if not res.equivalent:
            self.out.events.append(candidate_event(node, "rejected", reason=res.reason))
            return False
        if res.permutation is not None:
            graph = replace(graph, outputs=tuple(graph.outputs[j] for j in res.permutation))
        h = graph.canonical_hash()
        if h in self.seen_graphs:
            self.out.events.append(candidate_event(node, "duplicate", graph_hash=h))
            return True
        self.seen_graphs.add(h)
        if self.cfg.cost_bound:
            self.incumbent = min(self.incumbent, ranking_seconds(graph))
        found = Candidate(graph, h, list(self.path), node, summary, time.perf_counter() - self.t0)
        self.out.candidates.append(found)
        self.out.events.append(candidate_event(node, "verified", graph_hash=h))
        if self.on_candidate is not None:
            self.on_candidate(found)
        return True

    # ------------------------------------------------------------------ one state's oracle prunes, on demand
    def oracle_prunes(self, decisions: Sequence[Decision | Sequence[Any]], node: str) -> list[SearchEvent]:
        """The children the oracle rejected in the state that ``decisions`` lead to (node id ``node``), one event
        each with its decision and expression, in the search's order: what a search log counts (``EventLog``),
        worked out again by the same checks. For a state the search expanded and did not stop at (a verified or
        capped one has no oracle prunes); each costs one replay of its path, and the checks' memos are kept for the
        next call."""
        self._start()
        self.out = Outcome(events=EventLog(list_oracle=True))
        for d in decoded(decisions):
            self._replay_step(d)
        counts = dict.fromkeys(PRUNE_REASONS, 0)
        if self.block is not None:
            self._viable(node, self.block, counts)
        elif not checks.kernel_cap(self):
            for _ in self._kernel_children(node, counts):
                pass
        return [e for e in self.out.events.events if e["e"] == "prune" and e["why"] == "oracle" and "d" in e]

    def _replay_step(self, d: Decision) -> None:
        """Apply one decision of a walked path to the lean state, as the walk did (``_apply``, block ops, saves)."""
        b = self.block
        if isinstance(d, BlockOp) and b is not None:
            info = next(i for i in self.block_ops if i.name == d.op and i.attrs == d.attributes)
            entry = self._check_block_op("", b, info, d.inputs, dict.fromkeys(PRUNE_REASONS, 0))
            if entry is None:
                raise FormatError(f"decision {d.to_json()!r} does not pass the search's checks in its state")
            b.viable.append((len(b.tensors), None))  # the child's fresh tuples are those reading a new tensor
            self._push_block_op(b, info, entry)
        elif isinstance(d, Close) and b is not None:
            self.block = None
            dangling = [i for i, t in enumerate(b.tensors) if t.uses == 0]
            outs = checks.intermediate_parts(self, saved(b, dangling, d.omap), [b.tensors[i] for i in dangling], d.omap,
                                             b.grid)
            self._push_kernel(b.inputs, b.key, outs)
            self.n_custom += 1
        else:
            self._apply(d)

    # ------------------------------------------------------------------ forced replay of a task prefix
    def _apply(self, d: Decision) -> None:
        if isinstance(d, BlockOp | Close) and self.block is not None:  # (a sub-task's prefix: an earlier kernel)
            self._replay_step(d)
        elif isinstance(d, KernelOp):
            info, idx = OpInfo(Op(d.op), Level.KERNEL, d.attributes), d.inputs
            ins = [self.kt[i] for i in idx]
            dims = checks.shape(self, info, ins, Level.KERNEL)
            assert dims is not None, d
            exprs = op_expression(info.op, info.attrs, [t.expr for t in ins], [t.dims for t in ins])
            self._push_kernel(idx, (idx, info.ident), self.kernel_outputs(info, ins, dims, exprs))
        elif isinstance(d, OpenBlock):
            assert self._open_block(d, (d.inputs, CUSTOMIZED_CODE)), d
        else:
            raise ValueError(f"task prefixes hold decisions of a walked path, not {d.to_json()!r}")
        self.path.append(d)

    @staticmethod
    def _customs_in(steps: Sequence[Decision]) -> int:
        """How many customized ops a path opened: a split walk walks the openings up to its root's (``run``)."""
        return sum(isinstance(d, OpenBlock) for d in steps)


def resumable(config: SearchConfig) -> bool:
    """Whether a walk stopped at its state cap can be continued (``Enumerator.run(resume=...)``): not when it
    deduplicates states, since the continuation does not see what the stopped walk saw."""
    return config.order != "semantic" and not config.dedupe_kernel_states
