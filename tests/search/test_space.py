"""The space always holds the program (issue 37, item 1): the op lists come from the op table, every op the
program uses joins them, and settings that still leave one out are named before the search and in its report."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import mirage_lab as ml
from mirage_lab.ir.op_types import Level
from mirage_lab.ir.ops import OPS, Op
from mirage_lab.search.config import BLOCK_OPS, KERNEL_OPS, PRESET_NAMES, preset
from mirage_lab.search.runner import run_folder_path
from mirage_lab.search.space import SearchSpaceWarning, for_program, space_gaps, used_ops
from mirage_lab.search.state import op_infos
from tests.search.test_search import small_rmsnorm

#: a space small enough for a test that still holds the fused Y·f(Y) kernel: 2 loaders, matmul, accumulator, f, mul
SMALL = dict(forloop_ranges=(4,), grid_divisors=(8,), max_block_ops=6, max_kernel_ops=5,
             kernel_ops=("matmul", "mul", "customized"), block_ops=("matmul", "mul", "accum_no_red"))


def gated(act: str) -> ml.KernelGraph:
    """Y·act(Y) after a matmul: SiLU written out with sigmoid, or with tanh (GELU-like gates)."""
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 64), dtype=ml.float16)
    w = g.new_input(dims=(64, 64), dtype=ml.float16)
    y = g.matmul(x, w)
    g.mark_output(g.mul(y, getattr(g, act)(y)))
    return g.freeze()


def search(program: ml.KernelGraph, **kw: Any) -> tuple[ml.search.SearchResult, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = ml.superoptimize(program, "default", executor="serial", run_dir=False, progress=False, **{**SMALL, **kw})
    return res, [str(w.message) for w in caught if issubclass(w.category, SearchSpaceWarning)]


def test_the_default_lists_are_the_op_tables_search_column() -> None:
    # the lists SPEC §7.1 gives, with our unary ops (square, sqrt, gelu, relu, clamp, pow): derived, not written
    assert KERNEL_OPS == ("matmul", "exp", "square", "sqrt", "silu", "gelu", "relu", "clamp", "add", "mul", "div",
                          "pow", "customized")
    assert BLOCK_OPS == ("matmul", "exp", "square", "sqrt", "silu", "gelu", "relu", "clamp", "add", "mul", "div",
                         "pow", "rms_norm", "accum_no_red", "accum_sum", "accum_rms")
    for op, spec in OPS.items():
        use = spec.search
        assert use is not None, op
        assert (op.value in KERNEL_OPS) == (Level.KERNEL in use.default), op
        assert (op.value in BLOCK_OPS) == (Level.BLOCK in use.default), op
        assert use.default | use.when_used <= spec.levels, f"{op} is offered at a level it does not exist at"
        assert all(Op(v).spec.levels >= {Level.BLOCK} for v in use.via), op
        assert set(use.presets) <= set(PRESET_NAMES), op
    assert preset("attention").block_ops == (*BLOCK_OPS, "accum_sum_todimx")
    assert preset("lora").block_ops == (*BLOCK_OPS, "concat_then_matmul")


def test_a_programs_own_ops_join_the_lists_at_both_levels() -> None:
    cfg = for_program(preset("mlp"), gated("sigmoid"))
    assert "sigmoid" in cfg.kernel_ops and "sigmoid" in cfg.block_ops
    assert cfg.kernel_ops[:len(KERNEL_OPS)] == KERNEL_OPS  # added after the given lists: their order stays
    assert used_ops(gated("tanh")) == [Op.MATMUL, Op.TANH, Op.MUL]


def test_a_program_inside_the_default_space_keeps_its_config_and_run_folder() -> None:
    cfg = preset("mlp")
    assert for_program(cfg, small_rmsnorm()) is cfg
    assert space_gaps(cfg, small_rmsnorm()) == []
    plain = run_folder_path(gated("sigmoid"), preset("mlp", program_ops=False))
    assert run_folder_path(gated("sigmoid"), "mlp") != plain  # the space walked names the folder


def test_a_programs_clamp_bounds_are_offered_beside_the_configs() -> None:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 64), dtype=ml.float16)
    g.mark_output(g.clamp(x, 0.0, 1.0))
    infos = op_infos(["clamp"], Level.BLOCK, g.freeze(), (0.0, 6.0))
    assert [i.attrs for i in infos] == [{"min": 0.0, "max": 6.0}, {"min": 0.0, "max": 1.0}]


@pytest.mark.parametrize("act", ["sigmoid", "tanh"])
def test_y_times_act_y_is_found_with_the_defaults_and_named_without(act: str) -> None:
    found, said = search(gated(act))
    assert said == [] and found.report.space_gaps == []
    assert found.report.verified > 0
    fused = [c for c in found.candidates if any(act in (n.op.value for n in bg.nodes) for bg in c.graph.block_graphs)]
    assert fused, f"no verified μGraph applies {act} inside a custom kernel"

    empty, said = search(gated(act), program_ops=False)
    assert empty.report.verified == 0
    assert len(said) == 1 and act in said[0] and "program_ops=True" in said[0]
    assert empty.report.space_gaps == said and act in repr(empty.report)


def test_an_op_written_another_way_is_named_with_the_ops_that_write_it() -> None:
    cfg = preset("mlp", block_ops=("matmul", "exp", "accum_no_red"))
    (line,) = space_gaps(for_program(cfg, small_rmsnorm()), small_rmsnorm())
    assert "rms_norm" in line and "'accum_rms'" in line
    assert space_gaps(preset("mlp", block_ops=("matmul", "accum_rms")), small_rmsnorm()) == []


def test_the_gaps_are_kept_with_the_run(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SearchSpaceWarning)
        res = ml.superoptimize(gated("sigmoid"), "default", executor="serial", run_dir=tmp_path, progress=False,
                               program_ops=False, state_limit=50, **SMALL)
    assert res.run_dir is not None
    assert ml.search.load_run(res.run_dir).report.space_gaps == res.report.space_gaps != []
    export = pytest.importorskip("mirage_lab.widgets").export_html
    page = export(res.run_dir, tmp_path / "report.html").read_text()
    assert "the program uses sigmoid, which these settings leave out" in page


def test_the_cli_resolves_the_preset_once(tmp_path: Path) -> None:
    """Along ``mirage-lab search``, the preset is read once (sources.config_for); superoptimize and the run
    folder take the resolved config."""
    prog = tmp_path / "prog.py"
    prog.write_text("import mirage_lab as ml\n"
                    "g = ml.new_kernel_graph()\n"
                    "x = g.new_input(dims=(8, 64), dtype=ml.float16)\n"
                    "w = g.new_input(dims=(64, 64), dtype=ml.float16)\n"
                    "y = g.matmul(x, w)\n"
                    "g.mark_output(g.mul(y, g.sigmoid(y)))\n"
                    "graph = g.freeze()\n")
    script = ("import sys, mirage_lab.search.config as c\n"
              "class Counting(dict):\n"
              "    n = 0\n"
              "    def __getitem__(self, k):\n"
              "        Counting.n += 1\n"
              "        return super().__getitem__(k)\n"
              "c.PRESETS = Counting(c.PRESETS)\n"
              "from mirage_lab.cli import main\n"
              f"rc = main(['search', {str(prog)!r}, '--runs', {str(tmp_path / 'runs')!r}, '--executor', 'serial', "
              "'--quiet', '--set', 'state_limit=20', '--set', 'program_ops=false'])\n"
              "print('PRESET_READS', Counting.n, 'RC', rc)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert "PRESET_READS 1 RC 0" in out.stdout, out.stdout + out.stderr
    assert "sigmoid" in out.stderr and "program_ops=True" in out.stderr  # said before the search, on stderr
