"""``SearchConfig``: one frozen object holding every setting of a search (SPEC §7.1).

It round-trips to JSON, and its hash with the input program's canonical hash names the run
folder (the cache). Presets: ``reference`` reproduces the reference implementation's defaults
and reachability heuristics exactly; ``default`` is ours (the same reachability, plus budgets,
deduplication of results, an abstract-expression pre-check before verification, the
final-kernel checks, the index checks of ``tiling`` and ``skip_commuted_twins`` — see
docs/decisions.md); ``mlp``,
``attention`` and ``lora`` add what the reference's presets add, and our ``attention`` also
normalises imaps and tries the transposed 3-D grid, both 3-D grids first (reaching batch-1
split-KV graphs); ``attention`` and ``lora``, whose spaces are the large ones, also bound by the proxy cost
(``cost_bound``, ``bound.py``). Each has a ``reference_*`` twin without our additions.
Any field can be overridden: ``preset("attention", max_kernel_ops=7)``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, fields
from typing import Any

from mirage_lab.absexpr.engines import ENGINES
from mirage_lab.arguments import checked, checked_methods, did_you_mean
from mirage_lab.bounds import MAX_TRIALS
from mirage_lab.errors import ArgumentError, InputError, MirageError
from mirage_lab.ir.op_types import Level
from mirage_lab.ir.ops import Op, search_defaults
from mirage_lab.ir.tensor import MAX_RANK
from mirage_lab.search.checks import refused_checks
from mirage_lab.search.settings import Bool, Choice, Int, Many, Optional, Real, Rule, Text, check

Triple = tuple[int, int, int]

#: the default op lists, from the op table's ``search`` column (``ir/ops.py``); a program's own ops join them
#: (``space.for_program``)
KERNEL_OPS = search_defaults(Level.KERNEL)
BLOCK_OPS = search_defaults(Level.BLOCK)
#: the paper-era lists (SPEC §7.1), for studies of the older search
PAPER_KERNEL_OPS = ("matmul", "exp", "silu", "add", "mul", "div", "customized")
PAPER_BLOCK_OPS = ("matmul", "exp", "silu", "add", "mul", "div", "rms_norm", "accum_no_red", "accum_sum",
                   "accum_rms")

CUSTOMIZED_INPUTS = ("reference", "subsets")
PRESET_NAMES = ("default", "mlp", "attention", "lora", "reference", "reference_mlp", "reference_attention",
                "reference_lora")
ORDERS = ("reference", "off", "semantic")


@checked_methods
@dataclass(frozen=True)
class SearchConfig:
    """Every setting of one search. Build with ``preset(name, **overrides)``."""

    preset: str = "default"
    # ---- caps (SPEC §7.1); both op caps count inputs / loaders
    max_kernel_ops: int = 5
    max_block_ops: int = 9
    max_customized: int = 1
    max_block_outputs: int = 2
    max_block_inputs: int = 3
    kernel_ops: tuple[str, ...] = KERNEL_OPS
    block_ops: tuple[str, ...] = BLOCK_OPS
    clamp_bounds: tuple[float, float] = (0.0, 6.0)
    # ---- block-graph candidates (SPEC §7.3); user entries are tried first, then the generated ones
    forloop_ranges: tuple[int, ...] = (4, 16, 64)
    reduction_dimx: int = 64
    grids: tuple[Triple, ...] = ()
    grid_divisors: tuple[int, ...] = (8, 16, 32, 64, 128, 256)
    # attention 3-D grids (batch, y, z): y splits the key/value sequence, z the queries (the imap set's roles)
    attention_grids_yz: tuple[tuple[int, int], ...] = ((16, 4),)
    attention_3d_first: bool = False  # try those 3-D grids before the 2-D (batch, d/y, 1) ones
    min_blocks: int = 32
    max_blocks: int = 4096
    imaps: tuple[tuple[Triple, ...], ...] | None = None  # user combinations, one imap per input
    omaps: tuple[Triple, ...] = ()
    fmaps: tuple[tuple[int, ...], ...] | None = None  # user combinations, one fmap per input
    # the reference's per-input sets (its Python API's imaps= and fmaps=): each input picks any member
    imap_set: tuple[Triple, ...] | None = None  # replaces the preset's imap set in the generated product
    fmap_set: tuple[int, ...] | None = None  # replaces (-1, 0, 1, 2) in the generated product
    attention: bool = False  # REDTOX, 2-D grids, the attention imap set
    lora: bool = False  # concat_then_matmul, 4-input customized ops
    normalise_imaps: bool = False  # generated imap entries on axes with one block become φ instead of dropped
    customized_inputs: str = "reference"  # "reference" (§7.3 heuristic) or "subsets" (all input subsets)
    order: str = "reference"  # canonical ordering (§7.4): "reference", "off" or "semantic"
    randomized_branches: bool = False
    # skip kernel states whose tensors' expressions equal an earlier one's: index-blind, so it can skip the
    # correct variant after a wrong one (docs/decisions.md); off everywhere, kept for studies
    dedupe_kernel_states: bool = False
    final_kernel_checks: bool = True  # the last kernel op the cap allows must save the program's outputs
    index_checks: bool = True  # no diagonal tiles or mismatched contractions over program inputs (search/tiling.py)
    # branch and bound: cut states whose kernels so far cost more than the cheapest verified μGraph (proxy cost,
    # search/bound.py); keeps the best μGraph and its ties, drops costlier ones from the ranking's tail
    cost_bound: bool = False
    # where a commutative op's operands (i, j) and (j, i) are both open in a state, walk only (i, j): its subtree
    # holds every μGraph of the other's with the operands swapped (the same function and cost; docs/decisions.md)
    skip_commuted_twins: bool = True
    smem_budget: int = 96 * 1024
    # up to this many norms applied to a loaded tile (QKNorm's rms_norm on the Q and V tiles) that max_block_ops
    # does not count: a tenth block op for that prologue only (issue 37; docs/decisions.md)
    free_loader_norms: int = 0
    # every op the program uses joins the op lists, at the levels its op-table row allows (``space.py``)
    program_ops: bool = True
    # the final choice (search/profile.py): on a GPU, the ranking's first k measured on every backend
    profile_top_k: int = 8
    # ablation: checks switched off by name (``search/checks.py``; those correctness needs are refused)
    disabled_checks: tuple[str, ...] = ()
    # ---- pruning and verification
    pruning: bool = True
    oracle_engine: str = "normal"
    expression_precheck: bool = True  # verify only graphs whose outputs' expressions equal the targets'
    trials: int = 3
    seed: int = 0
    # ---- budgets ([lab]; the reference has none)
    time_limit_s: float | None = None
    state_limit: int | None = None
    result_limit: int | None = None
    notes: str = ""  # free text for the run folder; not part of the hash

    def __post_init__(self) -> None:
        # lists (from notebooks, JSON or --set) become tuples, so the config stays hashable and comparable
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, list | tuple):
                object.__setattr__(self, f.name, _tuples(list(v)))
        _validate(self)

    def replace(self, **changes: Any) -> SearchConfig:
        _known(changes, ArgumentError)
        return dataclasses.replace(self, **changes)

    # ---- JSON
    def to_dict(self) -> dict[str, Any]:
        """Every field; those added after run folders were first written (``LATER``) only when set, so that a
        config without them keeps its hash and its run folder."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)
                if f.name not in LATER or getattr(self, f.name) != f.default}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | dict[str, Any]) -> SearchConfig:
        """Read a config written by ``to_json``; unknown keys and values of the wrong type or range are errors
        that name the setting, the value and what it accepts."""
        try:
            data = json.loads(text) if isinstance(text, str) else dict(text)
        except json.JSONDecodeError as e:
            raise InputError(f"search config is not valid JSON ({e})") from None
        except (TypeError, ValueError):
            raise InputError(f"a search config is a JSON text or a dict, got {type(text).__name__}") from None
        if not isinstance(data, dict):
            raise InputError("a search config must be a JSON object of settings")
        _known(data, InputError)
        return cls(**data)

    @classmethod
    def from_settings(cls, base: SearchConfig, settings: dict[str, str]) -> SearchConfig:
        """``base`` with command-line texts (``--set KEY=VALUE``) read by each setting's rule: booleans are
        true / false in any case, numbers finite, lists JSON."""
        _known(settings, InputError)
        return base.replace(**{k: RULES[k].parse(v) for k, v in settings.items()})

    def hash(self) -> str:
        """sha256 of the canonical JSON of everything that can change the result."""
        d = self.to_dict()
        d.pop("notes")
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()

    def __repr__(self) -> str:
        base = PRESETS.get(self.preset, SearchConfig())
        diff = {f.name: getattr(self, f.name) for f in fields(self)
                if f.name != "preset" and getattr(self, f.name) != getattr(base, f.name)}
        extra = "".join(f", {k}={v!r}" for k, v in diff.items())
        return f"SearchConfig(preset={self.preset!r}{extra})"


#: fields added after run folders were first written, left out of ``to_dict`` (and the hash) while at their default
LATER = ("disabled_checks", "imap_set", "fmap_set", "profile_top_k", "program_ops", "free_loader_norms")


def _plain(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    return v


def _tuples(v: Any) -> Any:
    return tuple(_tuples(x) for x in v) if isinstance(v, list | tuple) else v


def _known(settings: dict[str, Any], error: type[MirageError]) -> None:
    names = [f.name for f in fields(SearchConfig)]
    for key in settings:
        if key not in names:
            raise error(f"unknown search setting {key!r}{did_you_mean(key, names)}; the settings are "
                        f"{', '.join(names)}")


def _rules() -> dict[str, Rule]:
    """Every setting's accepted values (``settings.py``); a test checks that each field has one."""
    pos, count = Int(1), Int(0)
    axis = Int(-1, MAX_RANK - 1)  # a map entry: a tensor dim, or -1 for none
    ops = Choice(tuple(op.value for op in Op))
    triple = Many(Int(1), 3)
    rules: dict[str, Rule] = {name: pos for name in (
        "max_kernel_ops", "max_block_ops", "max_block_outputs", "max_block_inputs", "reduction_dimx", "min_blocks",
        "max_blocks", "smem_budget")}
    rules |= {name: Bool() for name in (
        "attention_3d_first", "attention", "lora", "normalise_imaps", "randomized_branches", "dedupe_kernel_states",
        "final_kernel_checks", "index_checks", "cost_bound", "skip_commuted_twins", "pruning",
        "expression_precheck", "program_ops")}
    rules |= {
        "preset": Choice(PRESET_NAMES), "trials": Int(1, MAX_TRIALS), "max_customized": count, "seed": count,
        "profile_top_k": count, "free_loader_norms": count,
        "notes": Text(),
        "kernel_ops": Many(ops, nonempty=True), "block_ops": Many(ops, nonempty=True), "disabled_checks": Many(Text()),
        "clamp_bounds": Many(Real(), 2), "forloop_ranges": Many(pos, nonempty=True), "grids": Many(triple),
        "grid_divisors": Many(pos), "attention_grids_yz": Many(Many(pos, 2)),
        "imaps": Optional(Many(Many(Many(axis, 3), nonempty=True))), "omaps": Many(Many(axis, 3)),
        "fmaps": Optional(Many(Many(axis, nonempty=True))),
        "imap_set": Optional(Many(Many(axis, 3), nonempty=True)), "fmap_set": Optional(Many(axis, nonempty=True)),
        "customized_inputs": Choice(CUSTOMIZED_INPUTS), "order": Choice(ORDERS), "oracle_engine": Choice(ENGINES),
        "time_limit_s": Optional(Real(positive=True)), "state_limit": Optional(pos), "result_limit": Optional(pos),
    }
    return rules


def _flat(v: Any, depth: int) -> bool:
    """``v`` is a non-empty list nested exactly ``depth`` deep with ints at the bottom (the reference's set form)."""
    while depth:
        if not isinstance(v, tuple) or not v:
            return False
        v, depth = v[0], depth - 1
    return isinstance(v, int)


def _validate(c: SearchConfig) -> None:
    for name, depth, ours in (("imaps", 2, "imap_set"), ("fmaps", 1, "fmap_set")):
        if _flat(getattr(c, name), depth):
            raise InputError(f"SearchConfig.{name}={getattr(c, name)} is one list of choices, the reference's form; "
                             f"{name} here takes combinations with one entry per input ([[input 0's, input 1's, "
                             f"...], ...]): write {ours}={getattr(c, name)} for the reference's meaning")
    for f in fields(c):
        check(f.name, getattr(c, f.name), RULES[f.name])
    if c.min_blocks > c.max_blocks:
        raise InputError(f"SearchConfig.min_blocks ({c.min_blocks}) must be ≤ max_blocks ({c.max_blocks})")
    low, high = c.clamp_bounds
    if low > high:
        raise InputError(f"SearchConfig.clamp_bounds must be (low, high) with low ≤ high, got {c.clamp_bounds}")
    refused = refused_checks(c.disabled_checks)
    if refused:
        raise InputError(f"SearchConfig.disabled_checks {refused}")


def _presets() -> dict[str, SearchConfig]:
    """Ours, and ``reference_*`` twins that switch off what goes beyond the reference (docs/decisions.md)."""
    ours = {
        "default": SearchConfig(),
        "mlp": SearchConfig(preset="mlp"),
        "attention": SearchConfig(preset="attention", attention=True, max_customized=2,
                                  normalise_imaps=True, attention_grids_yz=((16, 4), (4, 16)), attention_3d_first=True,
                                  block_ops=search_defaults(Level.BLOCK, "attention"), cost_bound=True),
        "lora": SearchConfig(preset="lora", lora=True, block_ops=search_defaults(Level.BLOCK, "lora"),
                             max_block_inputs=4, cost_bound=True),
    }
    out = dict(ours)
    for name, c in ours.items():
        ref = "reference" if name == "default" else f"reference_{name}"
        out[ref] = dataclasses.replace(c, preset=ref, expression_precheck=False, final_kernel_checks=False,
                                       index_checks=False, cost_bound=False, skip_commuted_twins=False,
                                       dedupe_kernel_states=False, normalise_imaps=False,
                                       attention_grids_yz=SearchConfig.attention_grids_yz,
                                       attention_3d_first=False)
    return out


RULES: dict[str, Rule] = _rules()
PRESETS: dict[str, SearchConfig] = _presets()


@checked
def preset(name: str = "default", **overrides: Any) -> SearchConfig:
    """A preset, with any field overridden: ``preset("attention", max_kernel_ops=7, time_limit_s=600)``."""
    if not isinstance(name, str) or name not in PRESETS:
        raise InputError(f"unknown search preset {name!r}{did_you_mean(str(name), PRESET_NAMES)}; choose one of "
                         f"{', '.join(PRESET_NAMES)}")
    return PRESETS[name].replace(**overrides)


def as_config(config: SearchConfig | str | None, **overrides: Any) -> SearchConfig:
    """The one place a search's settings are read on their way in: a preset name (None: "default") or a
    ``SearchConfig``, with ``overrides``."""
    if isinstance(config, str | None):
        return preset(config or "default", **overrides)
    if not isinstance(config, SearchConfig):
        raise InputError(f"config must be a SearchConfig or a preset name, got {type(config).__name__}")
    return config.replace(**overrides) if overrides else config


__all__ = ["PRESETS", "SearchConfig", "as_config", "preset"]
