"""The reference's superoptimize keywords (issue 21, item 1): each mapped to a setting, or a notice, or an error;
reference-format imaps/fmaps give exactly the space our own per-input combinations give."""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path

import pytest

import mirage_lab as mi
from mirage_lab.compat import KEYWORDS, CompatNotice, UnsupportedFeatureError
from mirage_lab.compat.keywords import plan_search
from mirage_lab.errors import ArgumentError, InputError
from mirage_lab.search import candidates as C
from mirage_lab.search.config import preset
from tests.compat.helpers import rmsnorm_linear as program

X, W = (8, 256), (256, 512)
IMAPS = [(0, -1, -1), (1, -1, -1)]  # both split along x: no combination replicates on an axis with blocks
FMAPS = [-1, 1]




def combinations(members: list, most: int = 3) -> list:
    """Our format of a per-input set: every combination for 1..``most`` inputs."""
    return [list(c) for n in range(1, most + 1) for c in itertools.product(members, repeat=n)]


def test_every_reference_keyword_has_a_mapping() -> None:
    ref = ("imaps", "omaps", "griddims", "blockdims", "fmaps", "franges", "verbose", "config", "backend",
           "warmup_iters", "profile_iters", "use_graph_dataset", "use_cached_graphs", "save_codes",
           "is_formal_verified", "previous_checkpoint")
    assert set(KEYWORDS) == set(ref)
    assert all(v.split(":")[0] in ("mapped", "notice") for v in KEYWORDS.values())
    import inspect

    params = inspect.signature(mi.KNGraph.superoptimize).parameters
    assert list(params)[1:len(ref)] == list(ref)[:len(ref) - 1]  # the reference's order (previous_checkpoint last)


def test_grids_ranges_and_omaps_map_onto_our_fields() -> None:
    given = {"config": "mlp", "griddims": [(64, 1, 1), (32, 2, 1)], "franges": [8, 2], "omaps": [(1, -1, -1)]}
    plan = plan_search(given, {}, gpu=False)
    assert plan.config == preset("mlp", grids=((64, 1, 1), (32, 2, 1)), forloop_ranges=(8, 2), omaps=((1, -1, -1),))


@pytest.mark.parametrize("grid", [(8, 1, 1), (2, 1, 1), (64, 1, 1)])
@pytest.mark.parametrize("dims", [[X, W], [(8, 256), (8, 256), (256, 8)], [(16,), (16, 16)]])
def test_reference_imaps_and_fmaps_give_our_combinations(grid: tuple[int, int, int], dims: list) -> None:
    ours = preset("mlp", imaps=combinations(IMAPS), fmaps=combinations(FMAPS))
    theirs = plan_search({"config": "mlp", "imaps": IMAPS, "fmaps": FMAPS}, {}, gpu=False).config
    assert theirs.imap_set == tuple(IMAPS) and theirs.fmap_set == tuple(FMAPS)
    assert C.imap_candidates(dims, grid, theirs) == C.imap_candidates(dims, grid, ours)
    assert C.fmap_candidates(dims, theirs) == C.fmap_candidates(dims, ours)


def test_reference_sets_drop_what_replicates_on_a_split_axis_as_the_reference_does() -> None:
    """On grid (4, 2, 1) every input replicates along y: the reference drops such combinations from the set it
    generates (its imap_to_explore) but keeps user combinations (imap_comb_to_explore); so do we."""
    theirs = plan_search({"imaps": IMAPS}, {}, gpu=False).config
    assert C.imap_candidates([X, W], (4, 2, 1), theirs) == []
    assert len(C.imap_candidates([X, W], (4, 2, 1), preset("default", imaps=combinations(IMAPS)))) == 4


def test_our_own_combinations_pass_through_the_drop_in() -> None:
    combos = [[(0, -1, -1), (-1, -1, -1)]]
    plan = plan_search({"imaps": combos, "fmaps": [[1, -1]]}, {}, gpu=False)
    assert plan.config.imaps == ((((0, -1, -1), (-1, -1, -1))),) and plan.config.fmaps == ((1, -1),)
    assert plan.config.imap_set is None and plan.config.fmap_set is None


def test_the_reference_format_searches_the_same_space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompatNotice)  # (no GPU: ranked by the cost model)
        found = program().superoptimize(config="mlp", imaps=IMAPS, fmaps=FMAPS, use_cached_graphs=False)
    ours = mi.superoptimize(program(), "mlp", imaps=combinations(IMAPS), fmaps=combinations(FMAPS), run_dir=False,
                            progress=False)
    assert found.result is not None
    assert found.result.report.states == ours.report.states > 0
    assert [c.hash for c in found.result.candidates] == [c.hash for c in ours.candidates]
    assert ours.candidates and found.freeze() == ours.candidates[0].graph


def test_unhonoured_keywords_raise_or_say_so() -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"backend='nki'.*backend='cuda' or backend='triton'"):
        plan_search({"backend": "nki"}, {}, gpu=False)
    assert plan_search({"backend": "triton"}, {}, gpu=True).backend == "triton"
    with pytest.raises(InputError, match="not a Mirage backend"):
        plan_search({"backend": "tpu"}, {}, gpu=False)
    with pytest.raises(UnsupportedFeatureError, match="blockdims"):
        plan_search({"blockdims": [(256, 1, 1)]}, {}, gpu=False)
    assert plan_search({"blockdims": [(128, 1, 1)]}, {}, gpu=False).config == preset("default")
    with pytest.warns(CompatNotice, match="finite-field"):
        plan_search({"is_formal_verified": True}, {}, gpu=False)
    with pytest.warns(CompatNotice, match="no graph dataset"):
        plan_search({"use_graph_dataset": False}, {}, gpu=False)
    assert plan_search({"use_cached_graphs": False}, {}, gpu=False).run_dir is False
    with pytest.raises(ArgumentError, match=r"unknown keyword 'warmup' .did you mean 'warmup_iters'"):
        plan_search({}, {"warmup": 3}, gpu=False)
    with pytest.raises(ArgumentError, match=r"unknown keyword 'grid_dims' .did you mean 'griddims'"):
        mi.new_kernel_graph().superoptimize(grid_dims=[(8, 1, 1)])


def test_defaults_left_alone_say_nothing(recwarn: pytest.WarningsRecorder) -> None:
    plan = plan_search({}, {}, gpu=True)
    assert plan.config == preset("default") and plan.time_on_gpu and not recwarn.list


def test_an_existing_checkpoint_is_left_alone(tmp_path: Path) -> None:
    existing = tmp_path / "found.json"
    existing.write_text("[]")
    with pytest.warns(CompatNotice, match="left as it is"):
        plan = plan_search({"previous_checkpoint": str(existing)}, {}, gpu=False)
    assert plan.checkpoint is None and existing.read_text() == "[]"
    fresh = tmp_path / "new.json"
    assert plan_search({"previous_checkpoint": str(fresh)}, {}, gpu=False).checkpoint == str(fresh)


@pytest.mark.parametrize(("name", "value", "ours"), [("imaps", [(0, -1, 1), (-1, -1, -1)], "imap_set"),
                                                     ("fmaps", [-1, 0, 1], "fmap_set")])
def test_our_config_names_the_set_field_for_the_reference_form(name: str, value: list, ours: str) -> None:
    with pytest.raises(InputError, match=f"the reference's form.*write {ours}="):
        preset("default", **{name: value})
