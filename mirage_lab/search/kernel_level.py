"""The walk at kernel level (SPEC §7.2 K1–K3): test the state as a candidate, then try every kernel op and
every customized op on the kernel tensors, each child through the checks of its stage (``checks.STAGES``:
"kernel state", "kernel op", "customized op")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mirage_lab.absexpr.terms import Term
from mirage_lab.ir.graph import loader_tile
from mirage_lab.ir.ops import Level, Op
from mirage_lab.ir.smem import counted_bytes
from mirage_lab.ir.tensor import Dims, TensorType
from mirage_lab.search import candidates as cands
from mirage_lab.search import checks, folds
from mirage_lab.search.bound import state_bound
from mirage_lab.search.candidates import Triple
from mirage_lab.search.decision import KernelOp, OpenBlock
from mirage_lab.search.event_schema import task_event
from mirage_lab.search.goal import final_kernel
from mirage_lab.search.state import CUSTOMIZED_CODE, Block, Key, OpInfo, T
from mirage_lab.search.tiling import Parts, loader_parts
from mirage_lab.search.walk import Walk


class KernelLevel(Walk):
    def _try_candidate(self, node: str) -> bool:
        raise NotImplementedError

    def _kernel_state(self, node: str) -> None:
        on_path = bool(self._resume)  # (continuation: the stopped walk tested and entered this state already)
        if not on_path and self._try_candidate(node):
            return
        if checks.kernel_cap(self) or (not on_path and state_bound(self, node)):
            return
        counts = {"oracle": 0, "order": 0, "shape": 0, "twin": 0}
        for info, idx, ins, dims, exprs in self._kernel_children(node, counts):
            decision = KernelOp(info.name, idx, info.attr_items)
            undo = self._push_kernel(idx, (idx, info.ident), self.kernel_outputs(info, ins, dims, exprs))
            self._child(node, decision)
            self._pop_kernel(undo)
        if not checks.customized_cap(self):
            self._customized(node, counts)
        self._count(node, counts)

    def _kernel_children(self, node: str, counts: dict[str, int]) -> Iterator[tuple[OpInfo, tuple[int, ...], list[T],
                                                                                  list[Dims], tuple[Term, ...]]]:
        """The kernel ops that pass every check here, in order (each rejection counted); the caller walks each
        before asking for the next, and restores the state in between."""
        for info in self.kernel_ops:
            twins = info.commutative and "twin" in self.on
            walked: set[tuple[int, ...]] = set()  # (``twin``, at kernel level: (i, j) comes before (j, i))
            for idx in checks.order_after(self, self.k_last, info, len(self.kt), counts):
                if twins and idx[::-1] in walked:
                    counts["twin"] += 1
                    continue
                ins = [self.kt[i] for i in idx]
                dims = checks.shape(self, info, ins, Level.KERNEL)
                if dims is None:
                    counts["shape"] += 1
                    continue
                exprs = self.expressions(node, "k", idx, info, ins, 1, counts)
                if exprs is not None:
                    walked.add(idx)
                    yield info, idx, ins, dims, exprs

    def _customized(self, node: str, counts: dict[str, int]) -> None:
        memo: dict[Any, Any] = {}  # (``goal.final_kernel``) this kernel state's inputs → what the last op must save
        for idx in cands.customized_input_candidates(len(self.kt), self.cfg):
            key = (tuple(idx), CUSTOMIZED_CODE)
            if not checks.order_ok(self, self.k_last, key):
                counts["order"] += 1
                continue
            for grid, imaps, fmaps, frange in self._maps(tuple(self.kt[i].dims for i in idx)):
                self._open_customized(node, OpenBlock(tuple(idx), grid, imaps, fmaps, frange), key, memo)

    def _maps(self, dims: tuple[Dims, ...]) -> list[tuple[Triple, tuple[Triple, ...], tuple[int, ...], int]]:
        """Every grid, imaps, fmaps and for-loop range a customized op over inputs of ``dims`` may take (SPEC §7.3),
        in the search's order; worked out once per dims (a heavy task opens later kernels tens of thousands of times
        on the same few kernel tensors)."""
        got = self.openings.get(dims)
        if got is None:
            got = self.openings[dims] = [
                (grid, tuple(imaps), tuple(fmaps), frange)
                for grid in cands.grid_candidates(dims, self.cfg)
                for imaps in cands.imap_candidates(dims, grid, self.cfg)
                for fmaps in cands.fmap_candidates(dims, self.cfg)
                for frange in cands.forloop_candidates(dims, grid, imaps, fmaps, self.cfg)]
        return got

    def _open_customized(self, node: str, decision: OpenBlock, key: Key, memo: dict[Any, Any]) -> None:
        if not self._open_block(decision, key, memo):
            self.prune(node, "smem", decision)
            return
        assert self.block is not None
        why = self.block.unreachable
        if why is not None:
            self.block = None
            self.prune(node, "goal", decision, reason=why)
            return
        if self.frontier or (self.split_above is not None and self.n_custom >= self.split_above
                             and not self._resume):  # (a continuation splits only past the stopped walk's path)
            self.block = None
            self.out.tasks.append((node, [d.to_json() for d in (*self.path, decision)]))
            self.out.events.append(task_event(node, len(self.out.tasks) - 1))
            return
        self._child(node, decision)
        self.block = None

    def _loader(self, src: T, imap: tuple[int, ...], fmap: int, grid: tuple[int, int, int], frange: int
                ) -> tuple[Dims, Parts, int]:
        """A loader's tile, its parts and its shared-memory bytes, worked out once per source type and maps (a deep
        task opens a later kernel tens of thousands of times on the same few kernel tensors)."""
        source = checks.source_parts(src)
        key = (src.dims, src.dtype, source, imap, fmap, grid, frange)
        got = self.loaders.get(key)
        if got is None:
            tile = loader_tile(src.dims, imap, fmap, grid, frange)
            # positions in a program input are its indices; an intermediate's only in its aligned dims (it may
            # hold concatenated partials: ``tiling.saved_parts``)
            part = loader_parts(len(tile), imap, fmap, grid, frange, source)
            got = self.loaders[key] = (tile, part, counted_bytes(Op.INPUT, [TensorType(tile, src.dtype)]))
        return got

    def _open_block(self, decision: OpenBlock, key: Key, memo: dict[Any, Any] | None = None) -> bool:
        """Open the block graph ``decision`` names, with its loaders; False when they exceed shared memory. ``memo``:
        ``goal.final_kernel``'s, for the openings of one kernel state."""
        tensors, smem = [], 0
        grid, frange = decision.grid, decision.frange
        for i, imap, fmap in zip(decision.inputs, decision.imaps, decision.fmaps, strict=True):
            src = self.kt[i]
            tile, part, nbytes = self._loader(src, imap, fmap, grid, frange)
            fold = folds.loader_move(src, imap, fmap, grid, frange)
            tensors.append(self.signed(T(tile, src.dtype, src.expr, source=True, part=part, deps=src.deps,
                                         blind=src.blind, fold=fold)))
            smem += nbytes
        if not checks.smem(self, smem):
            return False
        self.blocks_opened += 1
        self.block = Block(decision.inputs, grid, frange, tensors, smem, key, n_ops=len(tensors),
                           serial=self.blocks_opened)
        if "goal" in self.on and self.k_ops + 1 >= self.cfg.max_kernel_ops:
            final_kernel(self, self.block, memo)
        return True
