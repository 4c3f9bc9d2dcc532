"""The search's checks as named parts (``search/checks.py``): the list is consistent, ablations switch parts off
by name (refusing unknown names and the parts correctness needs), and switching a part off by name does what
its setting does."""

from __future__ import annotations

from typing import Any

import pytest

from mirage_lab.errors import InputError
from mirage_lab.ir.io import graph_to_dict
from mirage_lab.search import CHECKS, checks_frame
from mirage_lab.search.checks import BY_NAME, STAGES, active_checks
from mirage_lab.search.config import SearchConfig, preset
from mirage_lab.search.enumerate import Enumerator
from mirage_lab.search.event_schema import OUTCOMES, PRUNE_REASONS
from mirage_lab.search.task import task_context
from tests.search.test_search import SMALL, small_rmsnorm

#: the small search with commutative ops and the customized op as the last kernel op the cap allows: its prunes
#: include twin and goal
COMMUTATIVE = {**SMALL, "block_ops": ("matmul", "exp", "mul", "div", "accum_no_red", "accum_rms"),
               "kernel_ops": ("matmul", "mul", "customized"), "max_kernel_ops": 3}


def walk(config: SearchConfig) -> tuple[list[dict[str, Any]], list[str]]:
    prog, cfg, oracle, verifier = task_context(graph_to_dict(small_rmsnorm()), config.to_dict())
    out = Enumerator(prog, cfg, oracle, verifier, ids="").run()
    return out.events.events, [c.hash for c in out.candidates]  # type: ignore[return-value]


def test_the_list_is_consistent() -> None:
    assert len(BY_NAME) == len(CHECKS)
    assert all(c.reason in (None, *PRUNE_REASONS, *OUTCOMES) and c.doc and callable(c.fn) for c in CHECKS)
    assert {n for names in STAGES.values() for n in names} == set(BY_NAME)
    assert {"shape", "phase", "smem", "closing_rule", "kernel_cap", "block_cap"} <= {c.name for c in CHECKS
                                                                                      if c.required}
    frame = checks_frame()
    assert list(frame["check"]) == [c.name for c in CHECKS]
    assert set(frame.columns) >= {"check", "where", "records", "doc", "can_switch_off"}
    assert not frame.set_index("check").loc["shape", "can_switch_off"]


def test_the_presets_apply_what_their_settings_ask_for() -> None:
    on = active_checks(preset("mlp"))
    assert {"order", "twin", "oracle", "index", "goal", "precheck", "cannot_close"} <= on
    assert not {"state_bound", "candidate_bound", "semantic_duplicate", "kernel_duplicate"} & on
    assert {"state_bound", "candidate_bound"} <= active_checks(preset("lora"))
    assert not {"twin", "index", "goal", "precheck"} & active_checks(preset("reference"))
    assert "twin" not in active_checks(preset("mlp", disabled_checks=("twin",)))


def test_unknown_and_required_checks_are_refused() -> None:
    with pytest.raises(InputError, match=r"unknown check 'twins' \(did you mean 'twin'\?\)"):
        preset("mlp", disabled_checks=("twins",))
    with pytest.raises(InputError, match="cannot switch off 'smem': correct results need it"):
        preset("mlp", disabled_checks=("smem",))
    with pytest.raises(InputError, match="disabled_checks"):
        SearchConfig.from_json({**preset("mlp").to_dict(), "disabled_checks": "twin"})
    assert SearchConfig.from_settings(preset("mlp"), {"disabled_checks": '["twin"]'}).disabled_checks == ("twin",)


def test_an_ablation_is_written_only_when_set() -> None:
    """Configs without an ablation keep their JSON and hash (and so their run folders)."""
    plain, ablated = preset("mlp"), preset("mlp", disabled_checks=("cannot_close",))
    assert "disabled_checks" not in plain.to_dict() and ablated.to_dict()["disabled_checks"] == ["cannot_close"]
    assert SearchConfig.from_json(ablated.to_json()) == ablated and plain.hash() != ablated.hash()


@pytest.mark.parametrize("name, setting", [("twin", {"skip_commuted_twins": False}),
                                           ("index", {"index_checks": False}),
                                           ("goal", {"final_kernel_checks": False}),
                                           ("precheck", {"expression_precheck": False}),
                                           ("order", {"order": "off"})])
def test_switching_a_check_off_by_name_is_switching_its_setting_off(name: str, setting: dict[str, Any]) -> None:
    events, found = walk(preset("mlp", **COMMUTATIVE, disabled_checks=(name,)))
    assert (events, found) == walk(preset("mlp", **COMMUTATIVE, **setting))
    reason = BY_NAME[name].reason
    baseline, best = walk(preset("mlp", **COMMUTATIVE))
    fired = [e for e in baseline if e["e"] == ("candidate" if reason in OUTCOMES else "prune")
             and reason in (e.get("why"), e.get("outcome"))]
    assert fired and not [e for e in events if reason in (e.get("why"), e.get("outcome"))]
    assert set(best) <= set(found)  # these parts only save work: every μGraph is still found


def test_cannot_close_only_saves_work() -> None:
    events, found = walk(preset("mlp", **COMMUTATIVE, disabled_checks=("cannot_close",)))
    baseline, best = walk(preset("mlp", **COMMUTATIVE))
    assert any(e.get("why") == "cap" for e in baseline) and not any(e.get("why") == "cap" for e in events)
    assert found == best and sum(e["e"] == "expand" for e in events) > sum(e["e"] == "expand" for e in baseline)
