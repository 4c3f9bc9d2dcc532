"""Candidate generators of the search (SPEC §7.3): pure functions from shapes and a ``SearchConfig`` to lists.

Under the reference settings every list reproduces the reference implementation (REACH): the same
members, in the order of SPEC §7.3. User entries from ``SearchConfig`` come first (grids, omaps), or
replace the generated list where the reference does so (imaps, fmaps, forloop ranges: see below).

* ``input_index_candidates`` — operand tuples of a kernel or block op: unary ``(i,)``; binary every ordered
  pair, ``i == j`` included; n-ary ordered tuples of distinct indices.
* ``customized_input_candidates`` — which kernel tensors a customized op reads. ``"reference"``: all three
  when there are exactly 3 tensors, all four with ``lora`` and 4 tensors, else the last two.
  ``"subsets"``: every index-ordered subset of 1..``max_block_inputs`` tensors, larger subsets first.
* ``grid_candidates`` — §7.3 steps (1)–(6).
* ``imap_candidates`` — one imap per input (user combinations, or the cartesian product of the preset's
  imap set), filtered by rank, divisibility and the "every input replicates along an axis" rule.
* ``fmap_candidates`` — one forloop dim per input, −1 or a dim of size > 1.
* ``forloop_candidates`` — {1} when nothing iterates, else the ranges dividing every iterated tile dim.
* ``omap_candidates`` — one omap shared by all outputs of a block graph.

Decisions where SPEC §7.3 is silent (also in docs/decisions.md):

* Step (2) of the grids walks the divisors in ``grid_divisors`` order, and for each divisor the distinct
  dims in order of first appearance (input by input, dim by dim). The reference walks an
  ``std::unordered_set``, whose order is unspecified; only the order, never the set, depends on it.
* ``batch`` (dim 0 of the first input when all inputs are 2-D or all 3-D) is defined with or without
  ``attention``: the reference computes it unconditionally, so step (5) adds ``(batch, 1, 1)`` under the
  default preset too (the nTrans graphs' grid (8, 1, 1) needs it). The attention-only steps (3) use it.
* User grids go through the same block-count filter as generated ones (reference); lower ``min_blocks``
  to try small grids.
* User imap combinations (``imaps`` not None/empty) *replace* the generated product ("otherwise", SPEC
  §7.3), as in the reference; they are checked for length, rank and divisibility (the reference's
  ``is_valid_input_map``), for [lab] distinct dims per imap, then normalised (entries on axes with
  g = 1 become −1, SPEC §3.2) and deduplicated. The all-replicate rule is not applied to them (reference).
  Generated imaps drop an entry that is non-φ on a g = 1 axis instead of normalising it (SPEC §7.3; this
  is what makes the MQA bs1 imaps unreachable).
* User fmap combinations likewise replace the generated product; each must have one entry per input,
  each −1 or a dim of size > 1.
* ``forloop_ranges`` is the list of F tried (the reference's ``frange_to_explore``).
* User omaps are checked strictly like the generated ones (g > 1 ⇔ entry ≠ −1), not normalised.
  [lab] An imap or omap naming one data dim on two axes is dropped.
* ``customized_inputs="reference"`` with a single kernel tensor gives ``[(0,)]`` (the reference would
  index tensor −1); ``max_block_inputs`` caps both modes.
* ``randomized_branches`` shuffles every list with ``random.Random`` seeded from ``config.seed`` and a
  CRC-32 of the call's arguments, so the order is the same in every process and on every run.
"""

from __future__ import annotations

import itertools
import random
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from mirage_lab.ir.graph import PHI
from mirage_lab.ir.tensor import Dims

if TYPE_CHECKING:
    from mirage_lab.search.config import SearchConfig

Triple = tuple[int, int, int]
T = TypeVar("T")

#: §7.3 imap set, tried by every preset
IMAPS_BASE: tuple[Triple, ...] = ((0, PHI, 1), (0, 1, PHI), (0, 2, PHI), (PHI, 1, PHI))
#: added unless ``attention`` is set
IMAPS_NON_ATTENTION: tuple[Triple, ...] = ((PHI, PHI, PHI), (1, PHI, PHI), (0, PHI, PHI))
#: §7.3 omap list, after the user's
OMAPS: tuple[Triple, ...] = ((0, 1, PHI), (0, 2, 1), (0, 2, PHI), (0, PHI, PHI), (PHI, 2, 1), (PHI, 1, PHI),
                             (PHI, 2, PHI), (PHI, PHI, PHI), (1, PHI, PHI))
#: forloop dims tried per input
FMAPS: tuple[int, ...] = (PHI, 0, 1, 2)
#: step (3): divisors of the attention preset's 2-D grids (batch, d/y, 1)
ATTENTION_GRID_DIVISORS: tuple[int, ...] = (8, 64, 128, 256)


# --------------------------------------------------------------------------- helpers
def _dedupe(items: Iterable[T]) -> list[T]:
    """Keep the first occurrence of each item, in order."""
    seen: set[Any] = set()
    out: list[T] = []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def _maybe_shuffle(items: list[T], config: SearchConfig | None, what: str, *args: Any) -> list[T]:
    """Shuffle in place when ``randomized_branches`` is set; the order depends only on the seed and the call."""
    if config is None or not config.randomized_branches or len(items) < 2:
        return items
    salt = zlib.crc32(repr((what, args)).encode())
    random.Random(config.seed * 0x1_0000_0000 + salt).shuffle(items)
    return items


def _norm_dims(input_dims: Sequence[Sequence[int]]) -> tuple[Dims, ...]:
    return tuple(tuple(int(x) for x in d) for d in input_dims)


def _batch(dims: Sequence[Dims]) -> int | None:
    """dim 0 of the first input when every input is 2-D or every input is 3-D (SPEC §7.3 step 3)."""
    if not dims:
        return None
    ranks = {len(d) for d in dims}
    if ranks == {2} or ranks == {3}:
        return dims[0][0]
    return None


def _distinct_dims(dims: Sequence[Dims]) -> list[int]:
    return _dedupe(x for d in dims for x in d)


def _blocks(grid: Sequence[int]) -> int:
    return grid[0] * grid[1] * grid[2]


def _is_triple(m: Any) -> bool:
    return isinstance(m, tuple | list) and len(m) == 3 and all(isinstance(x, int) and not isinstance(x, bool)
                                                               for x in m)


def _distinct_targets(m: Sequence[int]) -> bool:
    """[lab] no data dim is named by two axes."""
    named = [d for d in m if d != PHI]
    return len(named) == len(set(named))


def _imap_entry_ok(dims: Dims, imap: Sequence[int], grid: Triple) -> bool:
    """One input's imap (SPEC §7.3, §3.2): its dims exist, it is φ on every axis with g = 1, the grid sizes
    divide the mapped dims, and [lab] no dim is named twice."""
    if any(d < PHI or d >= len(dims) for d in imap) or not _distinct_targets(imap):
        return False
    return all(d == PHI or (grid[axis] > 1 and dims[d] % grid[axis] == 0) for axis, d in enumerate(imap))


def _normalise_imap(imap: Sequence[int], grid: Triple) -> Triple:
    """SPEC §3.2 [lab]: entries on axes with one block are −1."""
    return (imap[0] if grid[0] > 1 else PHI, imap[1] if grid[1] > 1 else PHI, imap[2] if grid[2] > 1 else PHI)


def _replicates_everywhere(combo: Sequence[Triple], grid: Triple) -> bool:
    """True when, on some axis with g > 1, every input is replicated (SPEC §7.3)."""
    return any(grid[a] > 1 and all(m[a] == PHI for m in combo) for a in range(3))


# --------------------------------------------------------------------------- input indices
def input_index_candidates(arity: int, n_tensors: int, config: SearchConfig | None = None
                           ) -> Iterator[tuple[int, ...]]:
    """Operand index tuples of an op with ``arity`` inputs over ``n_tensors`` tensors (SPEC §7.3).

    Unary: ``(i,)``; binary: every ordered pair, ``i == j`` included; ``arity ≥ 3``: ordered tuples of
    distinct indices. In creation order (first operand outermost); shuffled under ``randomized_branches``.
    """
    if arity < 1:
        raise ValueError(f"input_index_candidates: arity must be ≥ 1, got {arity}")
    if arity <= 2:
        gen: Iterable[tuple[int, ...]] = itertools.product(range(n_tensors), repeat=arity)
    else:
        gen = itertools.permutations(range(n_tensors), arity)
    if config is None or not config.randomized_branches:
        yield from gen
        return
    yield from _maybe_shuffle(list(gen), config, "inputs", arity, n_tensors)


def customized_input_candidates(n_tensors: int, config: SearchConfig) -> list[tuple[int, ...]]:
    """Which kernel tensors a new customized op reads (SPEC §7.3, REACH).

    ``customized_inputs="reference"``: ``(0, 1, 2)`` with exactly 3 tensors; ``(0, 1, 2, 3)`` with ``lora`` and
    4 tensors; otherwise the last two ``(n−2, n−1)`` (``(0,)`` when there is one tensor).
    ``"subsets"``: every subset of 1..``max_block_inputs`` tensors as an increasing index tuple; larger subsets
    first (fusing more is the point of a customized op), lexicographic within a size.
    Both modes drop tuples longer than ``max_block_inputs``.
    """
    cap = config.max_block_inputs
    out: list[tuple[int, ...]]
    if n_tensors <= 0:
        out = []
    elif config.customized_inputs == "subsets":
        out = [c for k in range(min(cap, n_tensors), 0, -1) for c in itertools.combinations(range(n_tensors), k)]
    elif n_tensors == 3:
        out = [(0, 1, 2)]
    elif config.lora and n_tensors == 4:
        out = [(0, 1, 2, 3)]
    elif n_tensors == 1:
        out = [(0,)]
    else:
        out = [(n_tensors - 2, n_tensors - 1)]
    out = [c for c in out if len(c) <= cap]
    return _maybe_shuffle(out, config, "customized", n_tensors)


# --------------------------------------------------------------------------- grids
def grid_candidates(input_dims: Sequence[Dims], config: SearchConfig) -> list[Triple]:
    """Grids for a customized op over DTensors of ``input_dims`` (SPEC §7.3 steps 1–6, in order).

    (1) ``config.grids``; (2) ``(d/x, 1, 1)`` for x in ``grid_divisors`` and every distinct dim d with d % x = 0;
    (3) with ``attention`` and a batch: ``(batch, d/y, 1)`` for y in (8, 64, 128, 256), and with more than two
    inputs ``(batch, y, z)`` for each pair of ``attention_grids_yz`` (reference: (16, 4); ours adds (4, 16)),
    after the 2-D ones or, with ``attention_3d_first`` (ours), before them;
    (4) keep ``min_blocks ≤ blocks ≤ max_blocks``; (5) ``(batch, 1, 1)``
    (bypassing the lower bound); (6) deduplicate.
    """
    dims = _norm_dims(input_dims)
    batch = _batch(dims)
    distinct = _distinct_dims(dims)
    cands: list[Triple] = [(int(g[0]), int(g[1]), int(g[2])) for g in config.grids]
    cands += [(d // x, 1, 1) for x in config.grid_divisors if x > 0 for d in distinct if d % x == 0]
    if config.attention and batch is not None:
        flat = [(batch, d // y, 1) for y in ATTENTION_GRID_DIVISORS for d in distinct if d % y == 0]
        split = [(batch, y, z) for y, z in config.attention_grids_yz] if len(dims) > 2 else []
        cands += split + flat if config.attention_3d_first else flat + split
    cands = [g for g in cands if min(g) >= 1 and config.min_blocks <= _blocks(g) <= config.max_blocks]
    if batch is not None and 1 <= batch <= config.max_blocks:
        cands.append((batch, 1, 1))
    return _maybe_shuffle(_dedupe(cands), config, "grids", dims)


# --------------------------------------------------------------------------- imaps
def imap_candidates(input_dims: Sequence[Dims], grid: Triple, config: SearchConfig) -> list[tuple[Triple, ...]]:
    """One imap per input for ``grid`` (SPEC §7.3, §3.2).

    Generated: the cartesian product (first input outermost) of the imap set — (0,−1,1), (0,1,−1), (0,2,−1),
    (−1,1,−1), plus (−1,−1,−1), (1,−1,−1), (0,−1,−1) unless ``attention`` — keeping per input the entries
    whose dims exist, that are φ on every axis with g = 1 and divide the mapped dims, and dropping
    combinations in which every input replicates along one axis with g > 1.
    ``config.imap_set`` (the reference's ``imaps=``, when set) replaces the imap set, each input picking any
    member (the reference's ``imap_to_explore``); ``config.imaps`` (when not None or empty) replaces the
    product: each combination needs one valid imap
    per input (rank, divisibility, distinct dims); entries on g = 1 axes are normalised to −1, then
    duplicates are dropped.
    """
    dims = _norm_dims(input_dims)
    g: Triple = (int(grid[0]), int(grid[1]), int(grid[2]))
    out: list[tuple[Triple, ...]]
    if config.imaps:
        out = []
        for combo in config.imaps:
            if len(combo) != len(dims) or not all(_is_triple(m) for m in combo):
                continue
            if any(e < PHI or e >= len(d) for d, m in zip(dims, combo, strict=True) for e in m):
                continue
            normal = tuple(_normalise_imap(m, g) for m in combo)
            if all(_imap_entry_ok(d, m, g) for d, m in zip(dims, normal, strict=True)):
                out.append(normal)
        out = _dedupe(out)
    else:
        base = _imap_set(config)
        if config.normalise_imaps:  # an entry on an axis with one block means φ (SPEC §3.2): keep it as φ
            base = tuple(_dedupe(_normalise_imap(m, g) for m in base))
        per_input = [[m for m in base if _imap_entry_ok(d, m, g)] for d in dims]
        out = [c for c in itertools.product(*per_input) if not _replicates_everywhere(c, g)]
    return _maybe_shuffle(out, config, "imaps", dims, g)


def _imap_set(config: SearchConfig) -> tuple[Triple, ...]:
    if config.imap_set:
        return tuple(m for m in config.imap_set if _is_triple(m))
    return IMAPS_BASE if config.attention else IMAPS_BASE + IMAPS_NON_ATTENTION


# --------------------------------------------------------------------------- fmaps and forloop ranges
def _fmap_ok(dims: Dims, f: int) -> bool:
    return f == PHI or (0 <= f < len(dims) and dims[f] > 1)


def fmap_candidates(input_dims: Sequence[Dims], config: SearchConfig) -> list[tuple[int, ...]]:
    """One forloop dim per input (SPEC §7.3): the product over inputs of (−1, 0, 1, 2), keeping −1 and the dims
    that exist with size > 1; ``config.fmap_set`` (the reference's ``fmaps=``) replaces (−1, 0, 1, 2).
    ``config.fmaps`` (when not None or empty) replaces the product, filtered the same way."""
    dims = _norm_dims(input_dims)
    out: list[tuple[int, ...]]
    if config.fmaps:
        out = _dedupe(tuple(c) for c in config.fmaps
                      if len(c) == len(dims) and all(isinstance(f, int) and _fmap_ok(d, f)
                                                     for d, f in zip(dims, c, strict=True)))
    else:
        fmap_set = config.fmap_set or FMAPS
        out = list(itertools.product(*[[f for f in fmap_set if _fmap_ok(d, f)] for d in dims]))
    return _maybe_shuffle(out, config, "fmaps", dims)


def forloop_candidates(input_dims: Sequence[Dims], grid: Triple, imaps: Sequence[Triple], fmaps: Sequence[int],
                       config: SearchConfig) -> list[int]:
    """Forloop ranges F (SPEC §7.3): ``[1]`` when every fmap is −1; otherwise each F of ``forloop_ranges``
    dividing, for every input with fmap f, ``dim[f]`` divided by the grid sizes mapped to f."""
    dims = _norm_dims(input_dims)
    if all(f == PHI for f in fmaps):
        return [1]
    tiles = []
    for d, imap, f in zip(dims, imaps, fmaps, strict=True):
        if f == PHI:
            continue
        size = d[f]
        for axis in range(3):
            if imap[axis] == f and grid[axis] > 1:
                size //= grid[axis]
        tiles.append(size)
    out = [F for F in config.forloop_ranges if all(t % F == 0 for t in tiles)]
    return _maybe_shuffle(out, config, "franges", dims, tuple(grid), tuple(imaps), tuple(fmaps))


# --------------------------------------------------------------------------- omaps
def omap_ok(omap: Sequence[int], output_dims: Sequence[Dims], grid: Triple) -> bool:
    """SPEC §7.3: on each axis g > 1 ⇔ entry ≠ −1; every entry < the rank of every output; [lab] distinct dims."""
    if not _is_triple(omap) or not _distinct_targets(omap):
        return False
    for axis in range(3):
        e = omap[axis]
        if e < PHI or (grid[axis] > 1) != (e != PHI):
            return False
        if any(e >= len(d) for d in output_dims):
            return False
    return True


def omap_candidates(output_dims: Sequence[Dims], grid: Triple, config: SearchConfig) -> list[Triple]:
    """One omap shared by the savers of a block graph whose saved tiles have ``output_dims`` (SPEC §7.3):
    ``config.omaps`` then (0,1,−1), (0,2,1), (0,2,−1), (0,−1,−1), (−1,2,1), (−1,1,−1), (−1,2,−1), (−1,−1,−1),
    (1,−1,−1), deduplicated, keeping the valid ones (``omap_ok``)."""
    dims = _norm_dims(output_dims)
    g: Triple = (int(grid[0]), int(grid[1]), int(grid[2]))
    user = [(int(m[0]), int(m[1]), int(m[2])) for m in config.omaps if _is_triple(m)]
    out = [m for m in _dedupe([*user, *OMAPS]) if omap_ok(m, dims, g)]
    return _maybe_shuffle(out, config, "omaps", dims, g)


__all__ = [
    "customized_input_candidates",
    "fmap_candidates",
    "forloop_candidates",
    "grid_candidates",
    "imap_candidates",
    "input_index_candidates",
    "omap_candidates",
    "omap_ok",
]
