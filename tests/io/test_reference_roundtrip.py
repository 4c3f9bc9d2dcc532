"""Our own JSON format and ``to_python`` are the identity on every saved reference μGraph."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirage_lab.bench.harness import CHECKPOINTS
from mirage_lab.ir.checkpoint import load_reference_checkpoint
from tests.ir.test_roundtrip import check_roundtrips


@pytest.mark.parametrize("stem", sorted(CHECKPOINTS))
def test_reference_graphs_round_trip_through_json_and_python(reference_dir: Path, stem: str) -> None:
    graphs = load_reference_checkpoint(reference_dir / f"{stem}.json")
    assert graphs
    for g in graphs:
        check_roundtrips(g)
