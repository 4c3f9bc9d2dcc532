"""Every public function that takes a graph accepts the builder a user just filled (``ml.new_kernel_graph()``) as
well as the frozen graph, and gives the same answer for both (``ml.generate_cuda(builder)`` once raised
AttributeError)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.codegen.emulate import gxx_available, run_cuda_on_cpu
from mirage_lab.errors import UnsupportedOpError
from mirage_lab.optimize.cost import proxy_cost
from mirage_lab.semantics.backend import cupy_available
from tests.search.test_search import SMALL
from tests.trust.bad_inputs import Workspace

builder = Workspace.small


def inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.uniform(-1, 1, (2, 256)), rng.uniform(-1, 1, (256, 512))]


def test_interpret_verify_save() -> None:
    b, frozen = builder(), builder().freeze()
    assert all(np.array_equal(x, y) for x, y in zip(ml.interpret(b, inputs()), ml.interpret(frozen, inputs()),
                                                     strict=True))
    assert ml.verify(b, frozen).equivalent and ml.verify(frozen, b).equivalent
    assert ml.verify.__wrapped__ is not None  # the keyword check wraps it without changing it
    assert ml.absexpr.Oracle.for_program(b).audit(b) is not None


def test_save_and_load(tmp_path: Path) -> None:
    assert ml.load(ml.save(builder(), tmp_path / "g.json")) == builder().freeze()


def test_codegen_and_cost() -> None:
    b, frozen = builder(), builder().freeze()
    assert ml.generate_cuda(b) == ml.generate_cuda(frozen)
    assert ml.codegen.plan_cuda(b) == ml.codegen.plan_cuda(frozen)
    assert proxy_cost(b) == proxy_cost(frozen)


@pytest.mark.skipif(not gxx_available(), reason="needs g++ for the CPU emulation")
def test_emulate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIRAGE_LAB_CACHE", str(tmp_path))
    got = run_cuda_on_cpu(builder(), inputs())
    want = run_cuda_on_cpu(builder().freeze(), inputs())
    assert all(np.array_equal(x, y) for x, y in zip(got, want, strict=True))


def test_compile_takes_a_builder() -> None:
    """Without a GPU the builder gets as far as the frozen graph: to the clear "needs CuPy" error."""
    if cupy_available():
        assert repr(ml.compile(builder())) == repr(ml.compile(builder().freeze()))
    else:
        with pytest.raises(UnsupportedOpError, match="CuPy"):
            ml.compile(builder())


def test_superoptimize_builder_and_graph_share_one_run_folder(tmp_path: Path) -> None:
    first = ml.superoptimize(builder(), "mlp", executor="serial", run_dir=tmp_path, progress=False, **SMALL)
    again = ml.superoptimize(builder().freeze(), "mlp", executor="serial", run_dir=tmp_path, progress=False, **SMALL)
    assert first.best is not None and again.report.cached and again.best is not None
    assert again.best.hash == first.best.hash


def test_widgets() -> None:
    from mirage_lab import widgets as mw

    b = builder()
    assert "kernel graph" in repr(mw.MuGraphViewer(b))
    assert mw.GraphDiff(b, builder().freeze()).to_html()
    assert len(mw.roofline_frame({"builder": b}, "H100")) > 0
    assert mw.roofline_figure({"builder": b}, "H100") is not None
