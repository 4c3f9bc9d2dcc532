"""The ablation by check: the small search again with a check switched off, by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirage_lab.errors import FormatError, InputError
from mirage_lab.search.ablation import ALL_ON, ablate, optional_checks, read_ablation, write_ablation
from mirage_lab.search.config import preset
from tests.search.test_search import SMALL, small_rmsnorm

CONFIG = preset("mlp", **SMALL, time_limit_s=60)


def test_optional_checks_are_the_active_ones_correctness_does_not_need() -> None:
    names = optional_checks(CONFIG)
    assert "oracle" in names and "order" in names
    assert "shape" not in names and "kernel_cap" not in names  # required
    assert "semantic_duplicate" not in names  # not applied under order='reference'


def test_switching_the_oracle_off_explores_more_and_finds_the_same_best(tmp_path: Path) -> None:
    doc = ablate(small_rmsnorm(), CONFIG, ["oracle", "twin"])
    rows = {r["check"]: r for r in doc["rows"]}
    assert [r["check"] for r in doc["rows"]] == [ALL_ON, "oracle", "twin"]
    assert rows["oracle"]["states"] > 10 * rows[ALL_ON]["states"]
    assert rows["oracle"]["best"] == rows[ALL_ON]["best"] and rows[ALL_ON]["stop"] == "complete"
    assert doc["time_limit_s"] == 60 and "disabled_checks" not in doc["config"]
    assert read_ablation(write_ablation(doc, tmp_path / "ablation.json")) == doc


def test_a_check_that_cannot_or_need_not_be_switched_off_is_refused() -> None:
    with pytest.raises(InputError, match="correct results need it"):
        ablate(small_rmsnorm(), CONFIG, ["shape"])
    with pytest.raises(InputError, match="not applied by this config"):
        ablate(small_rmsnorm(), CONFIG, ["semantic_duplicate"])
    with pytest.raises(InputError, match="repeats"):
        ablate(small_rmsnorm(), CONFIG, ["oracle"], repeats=0)


def test_reading_something_else_says_how_to_write_a_sweep(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="mirage-lab ablate RUN"):
        read_ablation(tmp_path / "none.json")
    (tmp_path / "other.json").write_text('{"rows": []}')
    with pytest.raises(FormatError, match="not an ablation sweep"):
        read_ablation(tmp_path / "other.json")
