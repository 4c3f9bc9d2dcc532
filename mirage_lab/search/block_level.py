"""The walk inside an open customized op (SPEC §7.2 B1–B2): close the block graph where the closing rule allows,
then try every block op on the block tensors, each through the checks of its stage (``checks.STAGES``:
"block state", "block op", "close").

The block-op checks are incremental (``_viable``) and remembered per operands (``_check_block_op``): the deep
attention tasks meet the same operands in hundreds of thousands of states.
"""

from __future__ import annotations

import math

from mirage_lab.ir.ops import Level
from mirage_lab.search import candidates as cands
from mirage_lab.search import checks, folds
from mirage_lab.search.bound import state_bound
from mirage_lab.search.decision import BlockOp, Close
from mirage_lab.search.goal import may_finish
from mirage_lab.search.state import Block, Entry, Key, OpInfo, T, entry_index, saved
from mirage_lab.search.walk import Walk

_MISSING = object()


class BlockLevel(Walk):
    def _block_state(self, node: str) -> None:
        b = self.block
        assert b is not None
        if b.n_ops == len(b.inputs) and not self._resume and state_bound(self, node):
            return  # a customized op just opened (a task's root, or a later kernel): the floor of it cuts it
        dangling = [i for i, t in enumerate(b.tensors) if t.uses == 0]
        if checks.closing_rule(self, b, dangling) and may_finish(self, node, b, dangling):
            self._close(node, b, dangling)
        if checks.block_cap(self, b):
            return
        if checks.cannot_close(self, b):
            self.prune(node, "cap", reason="the op cap leaves too few ops to consume every loop-phase tensor")
            return
        counts = {"oracle": 0, "order": 0, "phase": 0, "shape": 0, "smem": 0, "index": 0, "twin": 0}
        viable = self._viable(node, b, counts)
        walked = [checks.untwinned(self, info, entries, counts)
                  for info, entries in zip(self.block_ops, viable, strict=True)]
        self._count(node, counts)
        b.viable.append((len(b.tensors), viable))  # (children inherit the twins too: ``untwinned`` is per state)
        for info, entries in zip(self.block_ops, walked, strict=True):
            for entry in entries:
                self._block_op(node, b, info, entry)
        b.viable.pop()

    def _viable(self, node: str, b: Block, counts: dict[str, int]) -> list[list[Entry]]:
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
        post = {i for i, p in enumerate(posts) if p}
        out: list[list[Entry]] = []
        for k, info in enumerate(self.block_ops):
            fresh = checks.order_after(self, b.last, info, n, counts, n_old)
            kept = len(fresh)
            fresh = checks.phase(fresh, posts, info, post)
            counts["phase"] += kept - len(fresh)
            entries = [e for idx in fresh if (e := self._check_block_op(node, b, info, idx, counts)) is not None]
            if inherited is not None and inherited[k]:
                old = [e for e in inherited[k] if checks.order_ok(self, b.last, (e[0], info.ident))
                       and checks.smem(self, b.smem + e[3])]
                entries = sorted(old + entries, key=entry_index) if entries else old
            out.append(entries)
        return out

    def _check_block_op(self, node: str, b: Block, info: OpInfo, idx: tuple[int, ...],
                        counts: dict[str, int]) -> Entry | None:
        """Shape, shared memory, index consistency and the oracle, in that order, for one operand tuple whose
        phases agree (``checks.phase``).

        All but shared memory depend only on the op and its operands (their dims, dtypes, parts and
        expressions) and the for-loop range, so each is worked out once per such key, when first needed, and
        remembered (``block_memo``). The shared-memory budget depends on the state and is checked every time.
        """
        ts = b.tensors
        key = (info.ident, b.frange, *[ts[i].sig for i in idx])
        memo = self.block_memo.get(key)
        if memo is None:
            ins = [ts[i] for i in idx]
            dims = checks.shape(self, info, ins, Level.BLOCK)
            add = sum(math.prod(d) for d in dims) * ins[0].dtype.itemsize if dims and info.smem_counted else 0
            memo = self.block_memo[key] = [dims, add, _MISSING, _MISSING]
        dims, add, parts, judged = memo
        if dims is None:
            counts["shape"] += 1
            return None
        if not checks.smem(self, b.smem + add):
            counts["smem"] += 1
            return None
        if parts is _MISSING:
            parts = memo[2] = checks.index(self, info, [ts[i] for i in idx], dims)
        if isinstance(parts, str):
            counts["index"] += 1
            return None
        if judged is _MISSING:
            judged = memo[3] = self.judgement(info, [ts[i] for i in idx], b.frange)
        exprs, bad = judged
        if bad is not None:
            self.oracle_prune(node, "b", idx, info, bad, counts)
            return None
        return idx, dims, exprs, add, parts

    def _block_op(self, node: str, b: Block, info: OpInfo, entry: Entry) -> None:
        """Apply one viable op, explore below it, undo it."""
        idx, dims, *_ = entry
        decision = BlockOp(info.name, idx, info.attr_items)
        last, free = self._push_block_op(b, info, entry)
        if not checks.semantic_duplicate(self, node, decision):
            self._child(node, decision)
        b.n_ops -= 1
        b.free -= free
        b.smem -= entry[3]
        del b.tensors[len(b.tensors) - len(dims):]
        b.last = last
        for i in idx:
            b.tensors[i].uses -= 1

    def _push_block_op(self, b: Block, info: OpInfo, entry: Entry) -> tuple[Key | None, int]:
        """Add a viable op's outputs to the open block graph; returns the key it replaced and whether the cap does
        not count it (``_block_op`` undoes both)."""
        idx, dims, exprs, add, parts = entry
        free = checks.free_op(self, b, info, idx)
        post = info.accum or b.tensors[idx[0]].post
        dtype = b.tensors[idx[0]].dtype
        for i in idx:
            b.tensors[i].uses += 1
        last, b.last = b.last, (idx, info.ident)
        ins = [b.tensors[i] for i in idx]
        deps, blind = folds.op_tags(info, ins)
        b.tensors.extend(self.signed(T(d, dtype, e, post=post, part=None if parts is None else parts[k], deps=deps,
                                       blind=blind))
                         for k, (d, e) in enumerate(zip(dims, exprs, strict=True)))
        b.smem += add
        b.n_ops += 1
        b.free += free
        return last, free

    def _close(self, node: str, b: Block, dangling: list[int]) -> None:
        tiles = [b.tensors[i].dims for i in dangling]
        for omap in cands.omap_candidates(tiles, b.grid, self.cfg):
            decision = Close(omap)
            outs = checks.intermediate_parts(self, saved(b, dangling, omap), [b.tensors[i] for i in dangling], omap,
                                             b.grid)
            if b.need is not None and not all((t.dims, t.dtype.value) in self.out_types for t in outs):
                continue  # (``goal``) the last kernel op: a graph whose outputs have other dims is no candidate
            self.block = None
            undo = self._push_kernel(b.inputs, b.key, outs)
            self.n_custom += 1
            if not checks.kernel_duplicate(self, node, decision):
                self._child(node, decision)
            self.n_custom -= 1
            self._pop_kernel(undo)
            self.block = b
