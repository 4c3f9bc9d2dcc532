"""Every bad input in the table (``bad_inputs.py``) gets one clear line: exit status 2 on the command line, a
``MirageError`` subclass from the API, and a message that names the problem — never silence, never a raw
traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.trust.bad_inputs import CASES, Case, Workspace, run_case


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    monkeypatch.chdir(tmp_path)  # nothing a case writes by default lands in the checkout
    monkeypatch.setenv("MIRAGE_LAB_CACHE", str(tmp_path / "cache"))
    return Workspace(tmp_path)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_gets_one_clear_error(case: Case, workspace: Workspace) -> None:
    outcome = run_case(case, workspace)
    assert outcome.kind == "clear", f"{case.id}: {outcome.kind}: {outcome.detail}"


def test_table_is_large_and_covers_both_surfaces() -> None:
    assert len(CASES) >= 100
    assert {c.surface for c in CASES} == {"cli", "api"}
    assert sum(c.surface == "cli" for c in CASES) >= 50 and sum(c.surface == "api" for c in CASES) >= 50
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"


def test_a_case_that_passes_silently_is_reported_as_silent(workspace: Workspace) -> None:
    """The classifier can fail: a good input is 'silent', a bare exception is 'traceback'."""
    import mirage_lab as ml
    from mirage_lab.errors import InputError

    good = Case("good", InputError, (), call=lambda w: ml.interpret(w.small(), w.small_inputs()))
    assert run_case(good, workspace).kind == "silent"
    bare = Case("bare", InputError, (), call=lambda w: {}["missing"])
    assert run_case(bare, workspace).kind == "traceback"
    worded = Case("worded", InputError, ("a word nobody says",), call=lambda w: ml.interpret(w.small(), []))
    assert run_case(worded, workspace).kind == "unclear"
    assert run_case(Case("cli-good", 2, (), argv=("verify", "fused:rmsnorm", "--trials", "1")), workspace).kind \
        == "silent"
