"""``SearchConfig``: one frozen object holding every setting of a search (SPEC §7.1).

It round-trips to JSON, and its hash with the input program's canonical hash names the run
folder (the cache). Presets: ``reference`` reproduces the reference implementation's defaults
and reachability heuristics exactly; ``default`` is ours (the same reachability, plus budgets,
deduplication of results, an abstract-expression pre-check before verification, the
final-kernel checks and the index checks of ``tiling`` — see docs/decisions.md); ``mlp``,
``attention`` and ``lora`` add what the reference's presets add, and our ``attention`` also
normalises imaps and tries the transposed 3-D grid, both 3-D grids first (reaching batch-1
split-KV graphs). Each has a ``reference_*`` twin without our additions.
Any field can be overridden: ``preset("attention", max_kernel_ops=7)``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, fields
from typing import Any, get_type_hints

from mirage_lab.errors import InputError
from mirage_lab.ir.ops import Op

Triple = tuple[int, int, int]

KERNEL_OPS = ("matmul", "exp", "square", "sqrt", "silu", "gelu", "relu", "clamp", "add", "mul", "div", "pow",
              "customized")
BLOCK_OPS = ("matmul", "exp", "square", "sqrt", "silu", "gelu", "relu", "clamp", "add", "mul", "div", "pow",
             "rms_norm", "accum_no_red", "accum_sum", "accum_rms")
#: the paper-era lists (SPEC §7.1), for studies of the older search
PAPER_KERNEL_OPS = ("matmul", "exp", "silu", "add", "mul", "div", "customized")
PAPER_BLOCK_OPS = ("matmul", "exp", "silu", "add", "mul", "div", "rms_norm", "accum_no_red", "accum_sum",
                   "accum_rms")

CUSTOMIZED_INPUTS = ("reference", "subsets")
ORDERS = ("reference", "off", "semantic")


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
    smem_budget: int = 96 * 1024
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
        return dataclasses.replace(self, **changes)

    # ---- JSON
    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | dict[str, Any]) -> SearchConfig:
        """Read a config written by ``to_json``; unknown keys and wrong types are errors that name the key."""
        try:
            data = json.loads(text) if isinstance(text, str) else dict(text)
        except json.JSONDecodeError as e:
            raise InputError(f"search config is not valid JSON ({e})") from None
        if not isinstance(data, dict):
            raise InputError("a search config must be a JSON object of settings")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(f"unknown search setting(s) {unknown}; the settings are {sorted(known)}")
        hints = get_type_hints(cls)
        return cls(**{k: _typed(k, v, hints[k]) for k, v in data.items()})

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


def _plain(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    return v


def _typed(key: str, value: Any, hint: Any) -> Any:
    """JSON lists back to tuples, checking the shape against the field's type."""
    text = str(hint)
    if value is None:
        if "None" not in text:
            raise InputError(f"setting {key!r} cannot be null")
        return None
    if text.startswith("tuple") or "tuple[" in text:
        if not isinstance(value, list):
            raise InputError(f"setting {key!r} must be a list, got {type(value).__name__}")
        return _tuples(value)
    return value


def _tuples(v: Any) -> Any:
    return tuple(_tuples(x) for x in v) if isinstance(v, list | tuple) else v


def _validate(c: SearchConfig) -> None:
    ints = {"max_kernel_ops": 1, "max_block_ops": 1, "max_customized": 0, "max_block_outputs": 1,
            "max_block_inputs": 1, "reduction_dimx": 1, "min_blocks": 1, "max_blocks": 1, "smem_budget": 1,
            "trials": 0, "seed": 0}
    for name, low in ints.items():
        v = getattr(c, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < low:
            raise InputError(f"SearchConfig.{name} must be an integer ≥ {low}, got {v!r}")
    for name, allowed in (("customized_inputs", CUSTOMIZED_INPUTS), ("order", ORDERS)):
        if getattr(c, name) not in allowed:
            raise InputError(f"SearchConfig.{name} must be one of {allowed}, got {getattr(c, name)!r}")
    ops = {op.value for op in Op}
    for name in ("kernel_ops", "block_ops"):
        bad = [o for o in getattr(c, name) if o not in ops]
        if bad:
            raise InputError(f"SearchConfig.{name}: unknown op(s) {bad}; ops are named as in ml.ir.ops.Op "
                             "(e.g. 'matmul', 'accum_no_red')")
    if any(not isinstance(f, int) or f < 1 for f in c.forloop_ranges):
        raise InputError(f"SearchConfig.forloop_ranges must be integers ≥ 1, got {c.forloop_ranges}")
    for g in c.grids + c.omaps:
        if len(g) != 3:
            raise InputError(f"grids and omaps are (x, y, z) triples, got {g}")
    for yz in c.attention_grids_yz:
        if len(yz) != 2 or any(not isinstance(v, int) or isinstance(v, bool) or v < 1 for v in yz):
            raise InputError(f"attention_grids_yz holds (y, z) pairs of block counts ≥ 1, got {yz}")
    for name in ("time_limit_s", "state_limit", "result_limit"):
        v = getattr(c, name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or v <= 0):
            raise InputError(f"SearchConfig.{name} must be positive or None, got {v!r}")


def _presets() -> dict[str, SearchConfig]:
    """Ours, and ``reference_*`` twins that switch off what goes beyond the reference (docs/decisions.md)."""
    ours = {
        "default": SearchConfig(),
        "mlp": SearchConfig(preset="mlp"),
        "attention": SearchConfig(preset="attention", attention=True, max_customized=2,
                                  normalise_imaps=True, attention_grids_yz=((16, 4), (4, 16)), attention_3d_first=True,
                                  block_ops=(*BLOCK_OPS, "accum_sum_todimx")),
        "lora": SearchConfig(preset="lora", lora=True, block_ops=(*BLOCK_OPS, "concat_then_matmul"),
                             max_block_inputs=4),
    }
    out = dict(ours)
    for name, c in ours.items():
        ref = "reference" if name == "default" else f"reference_{name}"
        out[ref] = dataclasses.replace(c, preset=ref, expression_precheck=False, final_kernel_checks=False,
                                       index_checks=False,
                                       dedupe_kernel_states=False, normalise_imaps=False,
                                       attention_grids_yz=SearchConfig.attention_grids_yz,
                                       attention_3d_first=False)
    return out


PRESETS: dict[str, SearchConfig] = _presets()


def preset(name: str = "default", **overrides: Any) -> SearchConfig:
    """A preset, with any field overridden: ``preset("attention", max_kernel_ops=7, time_limit_s=600)``."""
    if name not in PRESETS:
        raise InputError(f"unknown search preset {name!r}; choose one of {sorted(PRESETS)}")
    bad = sorted(set(overrides) - {f.name for f in fields(SearchConfig)})
    if bad:
        raise InputError(f"unknown search setting(s) {bad}; the settings are "
                         f"{sorted(f.name for f in fields(SearchConfig))}")
    return dataclasses.replace(PRESETS[name], **overrides)


__all__ = ["PRESETS", "SearchConfig", "preset"]
