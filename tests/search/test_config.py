"""``SearchConfig``: frozen, JSON round trip, presets and their reference twins, overrides, clear errors."""

from __future__ import annotations

import dataclasses
import json

import pytest

from mirage_lab.errors import ArgumentError, InputError
from mirage_lab.search.config import PRESETS, SearchConfig, preset


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_round_trips_through_json(name: str) -> None:
    c = preset(name)
    back = SearchConfig.from_json(c.to_json())
    assert back == c and back.hash() == c.hash()
    assert SearchConfig.from_json(json.loads(c.to_json())) == c  # a dict works too


def test_frozen_and_hashable() -> None:
    c = preset("attention")
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.max_kernel_ops = 9  # type: ignore[misc]
    assert hash(c) == hash(preset("attention"))


def test_lists_become_tuples() -> None:
    """Overrides typed in a notebook or passed as JSON (lists) give the same config as tuples."""
    c = preset("attention", grids=[[1, 4, 16]], attention_grids_yz=[[8, 8]], forloop_ranges=[4, 16])
    assert c.grids == ((1, 4, 16),) and c.attention_grids_yz == ((8, 8),) and c.forloop_ranges == (4, 16)
    assert c == preset("attention", grids=((1, 4, 16),), attention_grids_yz=((8, 8),), forloop_ranges=(4, 16))
    hash(c)


def test_hash_ignores_notes_only() -> None:
    c = preset("mlp")
    assert c.replace(notes="a try").hash() == c.hash()
    assert c.replace(seed=1).hash() != c.hash()
    assert preset("mlp", max_block_ops=11) == c.replace(max_block_ops=11)


def test_reference_twins_switch_off_only_our_additions() -> None:
    ours_only = {"preset", "expression_precheck", "final_kernel_checks", "dedupe_kernel_states",
                 "normalise_imaps", "attention_grids_yz", "attention_3d_first", "index_checks", "cost_bound",
                 "skip_commuted_twins"}
    for name in ("default", "mlp", "attention", "lora"):
        ours = preset(name)
        twin = preset("reference" if name == "default" else f"reference_{name}")
        differ = {f.name for f in dataclasses.fields(SearchConfig) if getattr(ours, f.name) != getattr(twin, f.name)}
        assert differ <= ours_only, name
        assert not (twin.expression_precheck or twin.final_kernel_checks or twin.normalise_imaps or twin.cost_bound
                    or twin.skip_commuted_twins)
        assert twin.attention_grids_yz == ((16, 4),)
    assert "reference_attention" in repr(preset("reference_attention"))
    assert "attention_grids_yz" not in repr(preset("attention"))  # a repr shows only the overrides
    assert "max_kernel_ops=7" in repr(preset("attention", max_kernel_ops=7))


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "JSON object"),
    ('{"max_kernel_opz": 5}', "unknown search setting"),
    ('{"grids": 5}', "must be a list"),
    ('{"max_kernel_ops": null}', "max_kernel_ops must be an integer ≥ 1, got None"),
    ('{"max_kernel_ops": "5"}', "max_kernel_ops must be an integer"),
    ('{"grids": [[1, 2]]}', r"grids must be .* got \(\(1, 2\),\) \(its entry \(1, 2\) is not a list of 3 values"),
    ('{"attention_grids_yz": [[4, 16, 1]]}', "attention_grids_yz"),
    ('{"block_ops": ["matmul", "softmax"]}', "its entry 'softmax' .* is not one of 'input'"),
    ('{"order": "random"}', "order must be one of"),
    ('{"time_limit_s": -1}', "time_limit_s must be null or a finite number > 0, got -1"),
    ('{"forloop_ranges": [0]}', "forloop_ranges"),
])
def test_bad_json_names_the_setting(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        SearchConfig.from_json(text)


def test_unknown_preset_and_override() -> None:
    with pytest.raises(InputError, match="unknown search preset"):
        preset("fast")
    with pytest.raises(ArgumentError, match=r"unknown search setting 'max_kernel' .did you mean 'max_kernel_ops'"):
        preset("mlp", max_kernel=3)
