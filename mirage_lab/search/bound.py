"""Branch and bound on the proxy cost (``SearchConfig.cost_bound``): a sound reduction of the search.

The search ranks verified μGraphs by the proxy cost (``optimize/cost.py``), which is a sum over kernels,
each at least one launch. A kernel-level state that is not itself a candidate needs at least one more
kernel, and a state inside a block graph has its kernel still to close, so every μGraph below a state
costs at least

    bound(state) = Σ proxy cost of the kernels the state has built + one launch,

and a state that has just opened a customized op (a task's root, or a later kernel below a closed one)
costs at least the kernels built plus that op's floor (``customized_floor``: the roofline of its loaders'
traffic at the best latency hiding its grid allows, plus the launch).

Each kernel's cost depends only on that kernel (its block graph, or its op and tensor types), and a
descendant keeps every kernel of its ancestors unchanged, so the bound never exceeds the cost of any
μGraph below the state (it is admissible). The *incumbent* is the cost of the cheapest μGraph verified so
far, so it never drops below the optimum C*. A state is pruned only when its bound exceeds the incumbent,
so no state on the path to a μGraph costing C* (or tied with it) is ever pruned, and the best μGraph — and
every one tied with it — is found whatever the incumbent was when each task ran. What the bound removes are
μGraphs that cost more than one already verified: the ranking's top is unchanged, its tail is shorter.

The incumbent depends on which tasks finished first, so with several workers the *tail* of the verified
set (and the state counts) may vary between runs; the best μGraph does not. Under state or result budgets,
which must truncate the same ordered stream on every executor, each task bounds only by what it verified
itself (docs/decisions.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mirage_lab.ir.graph import KernelGraph
from mirage_lab.optimize.cost import customized_floor, proxy_cost
from mirage_lab.optimize.hardware import get_hardware
from mirage_lab.search.decision import Decision, OpenBlock, decoded
from mirage_lab.search.replay import frozen_block, kernel_so_far, open_block, partial_graph, replay

if TYPE_CHECKING:
    from mirage_lab.search.walk import Walk

#: the hardware the search ranks its μGraphs for (``runner._rank``), and therefore bounds for
RANKING_HARDWARE = "H100"
#: relative slack before a bound counts as above the incumbent: the bound sums kernels in another order than
#: ``proxy_cost``, and a rounding difference must never cut a μGraph tied with the best
SLACK = 1e-9
#: kernel-level prefixes ``opening_bound`` remembers per walk before it starts over
MEMO_PREFIXES = 4096
#: openings' floors ``opening_bound`` remembers per walk before it starts over
MEMO_FLOORS = 1 << 17


def ranking_seconds(graph: KernelGraph) -> float:
    """The proxy cost the search ranks ``graph`` by."""
    return float(proxy_cost(graph, RANKING_HARDWARE).seconds)


def lower_bound(program: KernelGraph, decisions: Sequence[Decision | Sequence[Any]], *, smem_limit: int,
                reduction_dimx: int) -> tuple[float, float]:
    """(cost of the kernels ``decisions`` have built, the bound), in seconds. The bound adds one launch at kernel
    level, and inside an open block graph the floor of the kernel being built (``customized_floor``)."""
    pg = partial_graph(program, decisions, smem_limit=smem_limit, reduction_dimx=reduction_dimx)
    spent = ranking_seconds(pg.kernel)
    if pg.block is None:
        return spent, spent + get_hardware(RANKING_HARDWARE).launch_s
    return spent, spent + customized_floor(pg.block, pg.block_inputs, RANKING_HARDWARE)


def opening_bound(program: KernelGraph, decisions: Sequence[Decision | Sequence[Any]], *, smem_limit: int,
                  reduction_dimx: int, memo: dict[Any, tuple[list[Any], float]],
                  floors: dict[Any, float] | None = None) -> tuple[float, float]:
    """``lower_bound`` of a state whose last decision opens a customized op, fast: the kernel graph before it (its
    tensors and its cost) is replayed once per such prefix and kept in ``memo`` (the caller's, one per walk). In
    an attention task, thousands of second kernels open below each first one.

    ``floors`` (the caller's, one per walk) keeps each opening's floor by what it depends on: the decision and the
    types of the kernel tensors it loads. The first kernels of a task that differ only inside their block graph
    save tensors of the same types, and every second kernel opens again below each of them."""
    steps = decoded(decisions)
    key = tuple(steps[:-1])
    got = memo.get(key)
    if got is None:
        if len(memo) > MEMO_PREFIXES:
            memo.clear()
        g, handles, tb = replay(program, steps[:-1], smem_limit=smem_limit, reduction_dimx=reduction_dimx)
        assert tb is None, "the decisions before an opening end at kernel level"
        got = memo[key] = (handles, ranking_seconds(kernel_so_far(g)))
    handles, spent = got
    opening = steps[-1]
    assert isinstance(opening, OpenBlock), "the last decision opens a customized op"
    types = tuple((handles[i].dims, handles[i].dtype) for i in opening.inputs)
    floor = None if floors is None else floors.get((opening, types))
    if floor is None:
        if floors is not None and len(floors) > MEMO_FLOORS:
            floors.clear()
        tb, inputs, _ = open_block(handles, opening, smem_limit=smem_limit, reduction_dimx=reduction_dimx)
        floor = customized_floor(frozen_block(tb), tuple(x.id for x in inputs), RANKING_HARDWARE)
        if floors is not None:
            floors[(opening, types)] = floor
    return spent, spent + floor


def beyond(bound: float, incumbent: float) -> bool:
    """Whether a state with ``bound`` can be cut: every μGraph below it costs more than ``incumbent``."""
    return math.isfinite(incumbent) and bound > incumbent * (1 + SLACK)


# --------------------------------------------------------------------------- the checks (``checks.py``)
def state_bound(w: Walk, node: str) -> bool:
    """``cost_bound``: cut a state (not a candidate itself) when the kernels it has built, plus one launch or the
    floor of the kernel it is building, cost more than the cheapest μGraph verified so far (``bound.py``)."""
    if "state_bound" not in w.on or not math.isfinite(w.incumbent):
        return False
    limits = {"smem_limit": w.cfg.smem_budget, "reduction_dimx": w.cfg.reduction_dimx}
    spent, bound = (opening_bound(w.program, w.path, memo=w.kernels_built, floors=w.floors, **limits)
                    if w.path and isinstance(w.path[-1], OpenBlock) else lower_bound(w.program, w.path, **limits))
    if not beyond(bound, w.incumbent):
        return False
    us = (spent * 1e6, bound * 1e6, w.incumbent * 1e6)
    w.prune(node, "bound", spent_us=round(us[0], 4), bound_us=round(us[1], 4), best_us=round(us[2], 4),
            reason=f"the kernels so far cost {us[0]:.2f} µs (proxy, {RANKING_HARDWARE}); with one more launch, or "
                   f"the floor of the kernel being built, any μGraph below costs ≥ {us[1]:.2f} µs, more than the "
                   f"cheapest verified one's {us[2]:.2f} µs")
    return True


def candidate_bound(w: Walk, node: str, graph: KernelGraph) -> bool:
    """``cost_bound``: a complete graph that costs more than the cheapest μGraph verified so far is not verified:
    it could only join the ranking's tail. Its cost is exact, so ties are still verified."""
    if "candidate_bound" not in w.on or not math.isfinite(w.incumbent):
        return False
    cost = ranking_seconds(graph)
    if not beyond(cost, w.incumbent):
        return False
    us = (cost * 1e6, w.incumbent * 1e6)
    w.prune(node, "bound", cost_us=round(us[0], 4), best_us=round(us[1], 4),
            reason=f"this complete μGraph costs {us[0]:.2f} µs (proxy, {RANKING_HARDWARE}), more than the "
                   f"cheapest verified one's {us[1]:.2f} µs: it is not verified")
    return True
