"""Kernel-graph nodes already evaluated on the same inputs, kept for the next graph that computes them again.

A search verifies many candidates that differ only in their last kernels: in GQA b8's split-KV task 1036, 12 of
the 13 candidates that reach the verifier share kernel 1, and kernel 1 is 95 % of evaluating each (three field
trials and the float64 check apiece). A node's outputs depend only on its op, its attributes, its block graph and
its input values, so the interpreter names every value by how it was computed from the inputs — an input by its
position and the caller's tag (which values were fed there), a node's output by its op, attributes, body, the
names of its inputs and its output position — and a node named like one already evaluated takes those outputs.

Entries are kept least recently used first out, within a byte budget; the arrays they hold are made read-only,
so an in-place write into a shared value fails loudly instead of changing what a later graph reads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from mirage_lab.ir.graph import Node
from mirage_lab.semantics.field import FieldValue
from mirage_lab.semantics.footprint import total_bytes

#: the budget when none is given: at most this much, and at most 1/16 of the machine's memory
DEFAULT_MAX_BYTES = 1 << 30


class KernelMemo:
    """Outputs of kernel-graph nodes, by how they were computed; ``scope`` binds it to one set of inputs."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self.max_bytes = default_budget() if max_bytes is None else int(max_bytes)
        self._entries: OrderedDict[Hashable, tuple[list[Any], int]] = OrderedDict()
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()  # (``verify``'s verifiers serve every thread of a notebook)

    def __repr__(self) -> str:
        return (f"KernelMemo({len(self._entries)} nodes, {self.bytes / 2**20:.1f} of {self.max_bytes / 2**20:.1f} MiB, "
                f"{self.hits} hits, {self.misses} misses)")

    def scope(self, context: Hashable, input_tags: Sequence[Hashable]) -> MemoScope:
        """This memo for graphs fed one set of input values: ``context`` names the set (a trial, say), and
        ``input_tags[i]`` what was fed at input position ``i`` beyond that (which components were kept)."""
        return MemoScope(self, context, tuple(input_tags))

    def get(self, key: Hashable) -> list[Any] | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[0]

    def put(self, key: Hashable, outputs: list[Any]) -> None:
        size = held_bytes(outputs)
        if size > self.max_bytes or key in self._entries:
            return  # (a race with another thread's put of the same key keeps the first)
        for v in outputs:
            _freeze(v)
        with self._lock:
            self._entries[key] = (outputs, size)
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, (_, freed) = self._entries.popitem(last=False)
                self.bytes -= freed

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0


class MemoScope:
    """A ``KernelMemo`` bound to one set of input values: what ``run_kernel_graph(memo=...)`` takes."""

    def __init__(self, memo: KernelMemo, context: Hashable, input_tags: tuple[Hashable, ...]) -> None:
        self.memo, self.context, self.input_tags = memo, context, input_tags

    def input_key(self, position: int) -> Hashable:
        return (self.context, position, self.input_tags[position])

    @staticmethod
    def node_key(node: Node, input_keys: Sequence[Hashable]) -> Hashable:
        return (node.op, node.attrs, node.body, tuple(input_keys))


def default_budget() -> int:
    total = total_bytes()
    return DEFAULT_MAX_BYTES if total is None else min(DEFAULT_MAX_BYTES, total // 16)


def _arrays(v: Any) -> tuple[Any, ...]:
    """The arrays a value holds: a field value's two components, or the array itself."""
    return (v.p, v.q) if isinstance(v, FieldValue) else (v,)


def held_bytes(values: Iterable[Any]) -> int:
    """The memory ``values`` (arrays or field values) hold; a zero-strided view (a broadcast value) holds none."""
    return sum(int(a.nbytes) for v in values for a in _arrays(v) if any(a.strides))


def _freeze(v: Any) -> None:
    for a in _arrays(v):
        flags = getattr(a, "flags", None)
        if flags is not None and hasattr(flags, "writeable"):  # (numpy's; CuPy arrays have no such flag)
            flags.writeable = False
