"""A puzzle's goals: structural requirements on the learner's graph, as data with a sentence when unmet.

A goal never pins a grid or a for-loop range exactly: any correct solution that has the structure passes,
whatever its grid and loop (issue 39). ``unmet(graph)`` returns None when the goal holds, else what a learner
should read.
"""

from __future__ import annotations

from dataclasses import dataclass

from mirage_lab.ir.graph import BlockGraph, KernelGraph, plural
from mirage_lab.ir.ops import Op


def custom_kernels(graph: KernelGraph) -> list[BlockGraph]:
    return [n.body for n in graph.nodes if n.op is Op.CUSTOMIZED and n.body is not None]


@dataclass(frozen=True)
class Goal:
    """Base: ``text`` says what is asked, ``unmet`` says what is missing."""

    @property
    def text(self) -> str:
        raise NotImplementedError

    def unmet(self, graph: KernelGraph) -> str | None:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class CustomKernels(Goal):
    """Exactly ``count`` custom kernels, and no kernel-level op outside them."""

    count: int = 1

    @property
    def text(self) -> str:
        return f"{'one custom kernel' if self.count == 1 else f'{self.count} custom kernels'} and nothing else"

    def unmet(self, graph: KernelGraph) -> str | None:
        found = len(custom_kernels(graph))
        others = sorted({n.op.value for n in graph.compute_nodes if n.op is not Op.CUSTOMIZED})
        if found != self.count:
            return f"the goal is {plural(self.count, 'custom kernel')}, and your graph has {found}"
        if others:
            return (f"every op must run inside the custom kernel(s), but your graph also runs "
                    f"{', '.join(others)} as separate kernel(s)")
        return None


@dataclass(frozen=True)
class ForLoop(Goal):
    """The custom kernel (the ``kernel``-th, counted from 0) loops at least ``minimum`` times."""

    minimum: int = 2
    kernel: int = 0

    @property
    def text(self) -> str:
        which = "the custom kernel" if self.kernel == 0 else f"custom kernel {self.kernel + 1}"
        return f"{which} has a for-loop of at least {self.minimum} iterations"

    def unmet(self, graph: KernelGraph) -> str | None:
        kernels = custom_kernels(graph)
        if len(kernels) <= self.kernel:
            return f"{self.text}, but your graph has {plural(len(kernels), 'custom kernel')}"
        got = kernels[self.kernel].forloop_range
        if got < self.minimum:
            return (f"{self.text}; yours has forloop_range={got}: stream the tiles through the loop "
                    "(a forloop_dim on the inputs) instead of loading them whole")
        return None


@dataclass(frozen=True)
class Blocks(Goal):
    """The first custom kernel runs on a grid of at least ``minimum`` blocks."""

    minimum: int = 2

    @property
    def text(self) -> str:
        return f"the custom kernel runs on at least {self.minimum} blocks"

    def unmet(self, graph: KernelGraph) -> str | None:
        kernels = custom_kernels(graph)
        got = kernels[0].num_blocks if kernels else 0
        if got < self.minimum:
            return f"{self.text}; yours runs on {plural(got, 'block')}: split the work over a grid_dim"
        return None


@dataclass(frozen=True)
class Uses(Goal):
    """Some custom kernel applies ``op`` (for example reduction_max, the heart of online softmax)."""

    op: Op = Op.MATMUL
    why: str = ""

    @property
    def text(self) -> str:
        return f"a custom kernel uses {self.op.value}" + (f" ({self.why})" if self.why else "")

    def unmet(self, graph: KernelGraph) -> str | None:
        if any(n.op is self.op for bg in custom_kernels(graph) for n in bg.nodes):
            return None
        return f"the goal asks that {self.text}; none of your custom kernels does"


@dataclass(frozen=True)
class Splits(Goal):
    """The first custom kernel splits dim ``dim`` of program input ``input`` over at least two blocks."""

    input: int = 0
    dim: int = 0
    what: str = ""

    @property
    def text(self) -> str:
        return f"the first custom kernel splits {self.what} over at least 2 blocks of its grid"

    def unmet(self, graph: KernelGraph) -> str | None:
        kernels = [n for n in graph.nodes if n.op is Op.CUSTOMIZED and n.body is not None]
        if not kernels:
            return f"the goal asks that {self.text}; your graph has no custom kernel"
        node = kernels[0]
        assert node.body is not None
        wanted = graph.inputs[self.input]
        for tensor, loader in zip(node.inputs, node.body.loaders, strict=True):
            imap = loader.attr("imap")
            if tensor == wanted and any(d == self.dim and node.body.grid[a] > 1 for a, d in enumerate(imap)):
                return None
        return (f"the goal asks that {self.text}; map a grid axis of size ≥ 2 to that dim in the input_map of "
                "its loader")
