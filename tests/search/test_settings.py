"""Every SearchConfig setting is checked by type and range (``search/settings.py``): from Python, from JSON and
from the command line's ``--set``, with the same rule and an error naming the setting, the value and what is
accepted."""

from __future__ import annotations

import dataclasses
import math

import pytest

from mirage_lab.cli.commands import config_for
from mirage_lab.cli.sources import resolve
from mirage_lab.errors import ArgumentError, InputError
from mirage_lab.search.config import PRESETS, RULES, SearchConfig, preset


def test_every_setting_has_a_rule_and_every_preset_passes_it() -> None:
    assert set(RULES) == {f.name for f in dataclasses.fields(SearchConfig)}
    for c in PRESETS.values():
        SearchConfig.from_json(c.to_json())


@pytest.mark.parametrize(("text", "value"), [("false", False), ("False", False), ("FALSE", False),
                                             ("true", True), ("True", True)])
def test_set_pruning_false_means_false(text: str, value: bool) -> None:
    """`--set pruning=False` once stored the truthy string "False", and pruning stayed on."""
    c = config_for(resolve("rmsnorm:1"), None, [f"pruning={text}"])
    assert c.pruning is value


@pytest.mark.parametrize("text", ["0", "1", "no", "yes", "'false'", "[]"])
def test_set_booleans_accept_only_true_or_false(text: str) -> None:
    with pytest.raises(InputError, match=r"SearchConfig.pruning must be true or false, got"):
        config_for(resolve("rmsnorm:1"), None, [f"pruning={text}"])


@pytest.mark.parametrize(("key", "value", "message"), [
    ("grid_divisors", [0], r"grid_divisors.*its entry 0 is not an integer ≥ 1"),
    ("forloop_ranges", [], r"forloop_ranges must be a non-empty list .*it is empty"),
    ("time_limit_s", math.nan, r"time_limit_s must be null or a finite number > 0, got nan"),
    ("time_limit_s", math.inf, r"got inf"),
    ("time_limit_s", 0, r"got 0"),
    ("state_limit", 0, r"state_limit must be null or an integer ≥ 1"),
    ("state_limit", 2.5, r"state_limit .* got 2.5"),
    ("trials", 0, r"trials must be an integer ≥ 1"),
    ("seed", -1, r"seed must be an integer ≥ 0"),
    ("max_kernel_ops", True, r"max_kernel_ops must be an integer ≥ 1, got True"),
    ("max_kernel_ops", "5", r"got '5' \(a str\)"),
    ("clamp_bounds", (6.0, 0.0), r"low ≤ high"),
    ("clamp_bounds", (0.0, math.nan), r"clamp_bounds.*its entry nan is not a finite number"),
    ("omaps", [(0, 1, 7)], r"omaps.*its entry 7 is not an integer ≥ -1 and ≤ 3"),
    ("fmaps", [[]], r"fmaps must be null or"),
    ("oracle_engine", "egg", r"oracle_engine must be one of 'normal', 'egglog', 'z3', got 'egg'"),
    ("preset", "fast", r"preset must be one of 'default'"),
    ("notes", 3, r"notes must be a text, got 3"),
    ("min_blocks", 8192, r"min_blocks \(8192\) must be ≤ max_blocks \(4096\)"),
])
def test_out_of_range_values_name_setting_value_and_rule(key: str, value: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        preset("mlp", **{key: value})
    with pytest.raises(InputError, match=message):  # the same rule from JSON
        SearchConfig.from_json({**preset("mlp").to_dict(), key: value})


def test_set_reads_numbers_lists_and_null() -> None:
    c = config_for(resolve("rmsnorm:1"), "default", ["forloop_ranges=[4, 16]", "time_limit_s=2.5",
                                                     "state_limit=none", "order=semantic", "notes=a try"])
    assert (c.forloop_ranges, c.time_limit_s, c.state_limit, c.order, c.notes) == ((4, 16), 2.5, None, "semantic",
                                                                                     "a try")
    with pytest.raises(InputError, match=r"time_limit_s .* got nan"):
        config_for(resolve("rmsnorm:1"), None, ["time_limit_s=NaN"])


def test_mistyped_setting_suggests_the_name() -> None:
    with pytest.raises(InputError, match=r"unknown search setting 'prunning' \(did you mean 'pruning'\?\)"):
        config_for(resolve("rmsnorm:1"), None, ["prunning=false"])
    with pytest.raises(ArgumentError, match="did you mean 'time_limit_s'"):
        preset("default").replace(time_limit=3)
    with pytest.raises(TypeError):  # an ArgumentError is a TypeError too, as Python's own keyword errors are
        preset("default", time_limit=3)
