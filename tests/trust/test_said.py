"""Say what was asked and not done (issue 35, item 5): a reference folder the user named that is missing is an error,
never a silent fallback; a report whose candidates' files are gone says so; ``--ptx`` alone compiles the default
architectures and says so; ``target_cc`` is checked as ``--ptx`` checks an architecture."""

from __future__ import annotations

import contextlib
import io
import shutil
import warnings
from pathlib import Path

import pytest

import mirage_lab as ml
from mirage_lab.bench.harness import REFERENCE_ENV, find_reference_dir
from mirage_lab.cli import main
from mirage_lab.codegen import ARCHS, nvcc_available
from mirage_lab.errors import InputError, PathError
from tests.search.test_search import search


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def refs(tmp_path: Path) -> Path:
    """A folder holding one reference checkpoint file (its contents are not read here)."""
    folder = tmp_path / "refs"
    folder.mkdir()
    (folder / "lora.json").write_text("[]")
    return folder


def test_a_named_reference_folder_must_exist(tmp_path: Path, refs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REFERENCE_ENV, raising=False)
    assert find_reference_dir(refs) == refs
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "empty").mkdir()
    for name, says in (("missing", "which does not exist"), ("a_file", "which is not a folder"),
                       ("empty", "which holds none of the reference μGraph files")):
        with pytest.raises(PathError, match=f"--reference-dir names .*{name}, {says}"):
            find_reference_dir(tmp_path / name, "--reference-dir")
    monkeypatch.setenv(REFERENCE_ENV, str(tmp_path / "missing"))
    with pytest.raises(PathError, match=r"\$MIRAGE_REFERENCE_MUGRAPHS names .*missing, which does not exist"):
        find_reference_dir()
    assert find_reference_dir(refs) == refs  # a folder named explicitly wins over the variable
    monkeypatch.setenv(REFERENCE_ENV, str(refs))
    assert find_reference_dir() == refs


def test_the_demo_refuses_a_wrong_folder_before_it_searches(tmp_path: Path) -> None:
    status, _, err = _run(["demo", "--out", str(tmp_path / "demo"), "--search", "rmsnorm:1",
                           "--reference-dir", str(tmp_path / "nope")])
    assert status == 2 and "--reference-dir names" in err and "does not exist" in err
    assert not (tmp_path / "demo" / "runs").exists()  # refused before the search


def test_bench_on_the_cpu_says_which_options_it_does_not_use(refs: Path) -> None:
    status, _, err = _run(["bench", "--cpu", "--programs", "lora", "--repeats", "1", "--reference-dir", str(refs),
                           "--max-graphs", "2"])
    assert status == 0
    assert "--reference-dir and --max-graphs go with GPU timings" in err


def test_a_report_whose_candidates_are_gone_says_so(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    from mirage_lab.widgets import export_html

    res = search(run_dir=tmp_path / "runs")
    assert res.run_dir is not None and len(res.candidates) >= 2
    shutil.rmtree(res.run_dir / "candidates")
    with pytest.warns(RuntimeWarning, match=rf"ranked {len(res.candidates)} verified μGraphs, but "
                                            rf"{len(res.candidates)} cannot be shown: .* are gone from"):
        page = export_html(res.run_dir, tmp_path / "r.html", progress=False, ptx=False).read_text()
    assert "No verified μGraph" not in page and "Rerun the search with the same run_dir" in page
    with pytest.warns(RuntimeWarning, match="rebuilding the run from its saved tasks"):
        again = search(run_dir=tmp_path / "runs")  # as the page says: the files come back
    assert [c.hash for c in again.candidates] == [c.hash for c in res.candidates]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        page = export_html(res.run_dir, tmp_path / "r.html", progress=False, ptx=False).read_text()
    assert "cannot be shown" not in page


@pytest.mark.skipif(not nvcc_available(), reason="needs nvcc")
def test_ptx_alone_compiles_the_default_architectures(tmp_path: Path) -> None:
    status, _, err = _run(["codegen", "fused:lora", "--out", str(tmp_path / "k.cu"), "--ptx"])
    assert status == 0
    assert f"--ptx names no architecture: compiling for the default ones, {' '.join(ARCHS)}" in err
    assert [arch for arch in ARCHS if f"nvcc --ptx -arch={arch}:" in err] == list(ARCHS)


def test_target_cc_is_checked_like_an_architecture() -> None:
    g = ml.new_kernel_graph()
    g.mark_output(g.exp(g.new_input(dims=(8, 64), dtype=ml.float16)))
    assert ml.generate_cuda_program(g, target_cc=90)["target_cc"] == 90
    assert ml.get_shared_memory_capacity(80) > 0
    for bad in ("80", 8, 1000, 9.0, True, "sm_90"):
        with pytest.raises(InputError, match="target_cc must be a compute capability"):
            ml.generate_cuda_program(g, target_cc=bad)
        with pytest.raises(InputError, match="target_cc must be a compute capability"):
            ml.generate_triton_program(g, target_cc=bad)
    status, _, err = _run(["codegen", "fused:lora", "--ptx", "sm_8"])
    assert status == 2 and "expected a CUDA architecture such as sm_80 or sm_90, got 'sm_8'" in err
