"""The reference's ``KNGraph.superoptimize`` keywords, each mapped to a mirage-lab setting or to a notice.

``KEYWORDS`` is the table (docs/compat.md is written from it); ``plan_search`` applies it to the keywords a
script passed — only those: a default the script left alone is never reported. Reference formats:

* ``imaps``: a list of imaps; each input of a custom kernel picks any of them (the reference's
  ``imap_to_explore``) → ``SearchConfig.imap_set``. A list of per-input combinations (mirage-lab's own
  ``imaps``) is recognised by its nesting and passed on as such.
* ``fmaps``: a list of for-loop dims, each input picking any (``fmap_to_explore``) → ``fmap_set``; per-input
  combinations → ``fmaps``.
* ``griddims`` → ``grids`` (tried before the generated grids); ``franges`` → ``forloop_ranges`` (replacing
  the preset's); ``omaps`` → ``omaps`` (tried before the generated omaps). Same semantics as the reference.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from mirage_lab.arguments import did_you_mean
from mirage_lab.bounds import check_timed_runs
from mirage_lab.compat.notices import notice, notice_once, unsupported
from mirage_lab.errors import ArgumentError, InputError
from mirage_lab.search import SearchConfig
from mirage_lab.search.config import as_config
from mirage_lab.search.run_folder import DEFAULT_ROOT

__all__ = ["KEYWORDS", "SearchPlan", "plan_search"]

#: every keyword of the reference's superoptimize: how mirage-lab reads it
KEYWORDS: dict[str, str] = {
    "imaps": "mapped: SearchConfig.imap_set (each input picks any listed imap, as the reference does)",
    "omaps": "mapped: SearchConfig.omaps (tried before the generated omaps)",
    "griddims": "mapped: SearchConfig.grids (tried before the generated grids, same block-count filter)",
    "blockdims": "mapped: only (128, 1, 1), the one block size searched (the reference asserts None)",
    "fmaps": "mapped: SearchConfig.fmap_set (each input picks any listed for-loop dim)",
    "franges": "mapped: SearchConfig.forloop_ranges (replaces the preset's)",
    "config": "mapped: the preset of that name (None → 'default'); a SearchConfig is accepted too",
    "backend": "mapped: 'cuda' or 'triton' (candidates timed with it on a GPU, cost-ranked without one; the result "
               "runs it on a GPU); 'nki' raises",
    "warmup_iters": "mapped: warm-up runs of each timed μGraph on a GPU; a notice without one",
    "profile_iters": "mapped: timed runs of each μGraph on a GPU; a notice without one",
    "verbose": "mapped: prints the search report and the ranking",
    "use_graph_dataset": "notice: no graph dataset; run folders (runs/) cache every search instead",
    "use_cached_graphs": "mapped: False keeps no run folder (run_dir=False)",
    "save_codes": "mapped: writes the best μGraph's CUDA to generated_codes/",
    "is_formal_verified": "notice: verification is randomized finite-field testing (SPEC §6), not formal",
    "previous_checkpoint": "mapped: the verified μGraphs are written there in the reference's format (an "
                           "existing file is left alone; run folders resume searches)",
}
BACKENDS = ("cuda", "triton", "nki")
BLOCK_DIM = (128, 1, 1)


@dataclass(frozen=True)
class SearchPlan:
    """What a reference ``superoptimize`` call asks of mirage-lab."""

    config: SearchConfig
    run_dir: str | bool = DEFAULT_ROOT
    backend: str = "cuda"  # what the candidates are timed with, and what the result runs, on a GPU
    time_on_gpu: bool = False
    warmup_iters: int = 16
    profile_iters: int = 1000
    verbose: bool = False
    save_codes: bool = False
    checkpoint: str | None = None


def _depth(v: Any) -> int:
    d = 0
    while isinstance(v, list | tuple) and v:
        d, v = d + 1, v[0]
    return d


def _config(given: dict[str, Any], settings: dict[str, Any]) -> SearchConfig:
    name = given.get("config")
    base = as_config(name)
    changes = dict(settings)
    for key, ours, per_input in (("imaps", "imap_set", "imaps"), ("fmaps", "fmap_set", "fmaps")):
        value = given.get(key)
        if value is not None:  # a flat list is the reference's set; one level deeper, our combinations
            changes[per_input if _depth(value) == (3 if key == "imaps" else 2) else ours] = value
    for key, ours in (("griddims", "grids"), ("franges", "forloop_ranges"), ("omaps", "omaps")):
        if given.get(key) is not None:
            changes[ours] = given[key]
    return base.replace(**changes) if changes else base


def _check_blockdims(blockdims: Any) -> None:
    if blockdims is None:
        return
    if not isinstance(blockdims, list | tuple) or any(tuple(b) != BLOCK_DIM for b in blockdims):
        raise unsupported(f"blockdims={blockdims!r}", f"every custom kernel runs {BLOCK_DIM} threads; leave "
                          "blockdims out")


def _backend(given: dict[str, Any], gpu: bool) -> str:
    backend = given.get("backend", "cuda")
    if backend not in BACKENDS:
        raise InputError(f"backend={backend!r} is not a Mirage backend; use 'cuda' or 'triton'")
    if backend == "nki":
        raise unsupported("backend='nki' (AWS Neuron)", "use backend='cuda' or backend='triton'")
    if not gpu:
        timed = [k for k in ("warmup_iters", "profile_iters") if k in given]
        notice_once("no-gpu-ranking", "superoptimize: no CUDA device, so the μGraphs are ranked by mirage-lab's cost "
                    f"model rather than timed{' (' + ', '.join(timed) + ' unused)' if timed else ''}")
    return str(backend)


def _known_settings(settings: dict[str, Any]) -> None:
    fields = list(SearchConfig.__dataclass_fields__)
    for key in settings:
        if key not in fields:
            raise ArgumentError(f"superoptimize: unknown keyword {key!r}{did_you_mean(key, [*KEYWORDS, *fields])}; "
                                f"it takes Mirage's keywords ({', '.join(KEYWORDS)}) and any SearchConfig field")


def plan_search(given: dict[str, Any], settings: dict[str, Any], *, gpu: bool) -> SearchPlan:
    """The plan for a reference ``superoptimize(**given)``; ``settings`` are mirage-lab SearchConfig fields."""
    _known_settings(settings)
    _check_blockdims(given.get("blockdims"))
    warmup, repeats = check_timed_runs(given.get("warmup_iters", 16), given.get("profile_iters", 1000),
                                       ("warmup_iters", "profile_iters"))  # refused before the search, not after
    config = _config(given, settings)
    backend = _backend(given, gpu)
    if "use_graph_dataset" in given:
        notice("superoptimize: use_graph_dataset: mirage-lab has no graph dataset; each search is cached in its "
               "run folder under runs/ and answered from there when asked again")
    if given.get("is_formal_verified"):
        notice("superoptimize: is_formal_verified=True: mirage-lab verifies by randomized finite-field testing "
               "(SPEC §6), which is probabilistic, not a formal proof")
    checkpoint = given.get("previous_checkpoint")
    if checkpoint is not None and os.path.exists(checkpoint):
        notice(f"superoptimize: previous_checkpoint={checkpoint!r} exists and is left as it is: mirage-lab "
               "resumes and caches searches in its run folders, and writes a checkpoint only to a new file")
        checkpoint = None
    return SearchPlan(config=config, run_dir=DEFAULT_ROOT if given.get("use_cached_graphs", True) else False,
                      backend=backend, time_on_gpu=gpu, warmup_iters=warmup,
                      profile_iters=repeats, verbose=bool(given.get("verbose", False)),
                      save_codes=bool(given.get("save_codes", False)), checkpoint=checkpoint)
