"""An MLP with a tanh-form GELU (issue 20, item 2): the search fuses it into one kernel from the unfused program.

``gelu(h) = 0.5·h·(1 + tanh(√(2/π)·(h + 0.044715·h³)))`` is written as a user would, with ``mul_scalar`` for the
constants and ``0.5·h + 0.5·h·tanh(·)`` for the ``1 +``. The search offers ``mul_scalar`` with the constants the
program uses, and the abstract expressions tell them apart (``scale(c, x)``), so it has to place each one where
the program does.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import mirage_lab as ml
from mirage_lab.absexpr import Oracle, parse
from mirage_lab.errors import InputError
from mirage_lab.ir.ops import Level, Op
from mirage_lab.search import preset, superoptimize
from mirage_lab.search.state import OpInfo, op_infos

M, K, N = 8, 64, 128
C = math.sqrt(2 / math.pi)


def gelu_tanh_mlp() -> ml.KernelGraph:
    """O = gelu_tanh(X·W), unfused: a matmul, then the GELU as nine element-wise kernel ops."""
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(M, K), dtype=ml.float16)
    w = g.new_input(dims=(K, N), dtype=ml.float16)
    h = g.matmul(x, w)
    inner = g.add(h, g.mul_scalar(g.mul(h, g.square(h)), 0.044715))
    t = g.tanh(g.mul_scalar(inner, C))
    half = g.mul_scalar(h, 0.5)
    g.mark_output(g.add(half, g.mul(half, t)))
    return g.freeze()


def test_the_program_is_the_tanh_form_of_gelu() -> None:
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(M, K)), rng.normal(size=(K, N)) / 8
    (out,) = ml.interpret(gelu_tanh_mlp(), [x, w])
    h = x @ w
    assert np.allclose(out, 0.5 * h * (1 + np.tanh(C * (h + 0.044715 * h ** 3))), rtol=1e-12, atol=1e-12)


def test_a_scale_factor_is_part_of_the_abstract_expression() -> None:
    oracle = Oracle.for_program(gelu_tanh_mlp())
    assert str(parse("scale(0.5, v0)")) == "scale(0.5, v0)"
    with pytest.raises(InputError, match="scale takes 1 number"):
        parse("scale(v0)")
    h = "sum(64, mul(v0, v1))"
    assert oracle.check(parse(f"scale(0.5, {h})")).ok
    assert oracle.check(parse(f"scale(0.25, {h})")).ok is False  # a factor the program never applies


def test_the_search_offers_mul_scalar_with_the_programs_own_factors() -> None:
    infos = op_infos(["mul_scalar", "tanh"], Level.BLOCK, gelu_tanh_mlp(), (0.0, 6.0))
    assert [i.attrs for i in infos[:-1]] == [{"scalar": c} for c in sorted([0.044715, 0.5, C])]
    assert len({i.ident for i in infos}) == len(infos)  # two factors are two ops to the order keys and memos
    plain = ml.new_kernel_graph()
    plain.mark_output(plain.tanh(plain.new_input(dims=(4, 4), dtype=ml.float16)))
    assert [i.name for i in op_infos(["mul_scalar", "tanh"], Level.BLOCK, plain.freeze(), (0.0, 6.0))] == ["tanh"]
    codes = [OpInfo(op, Level.BLOCK) for op in (Op.EXP, Op.ADD, Op.MUL)]
    assert sorted(codes, key=lambda i: i.ident) == sorted(codes, key=lambda i: i.code)  # idents order as codes do


def test_a_search_fuses_the_mlp_into_one_kernel() -> None:
    """The space of single customized kernels (kernel_ops ``customized`` only; with the element-wise kernel ops too
    it is far larger: docs/decisions.md has its figures). The kernel needs 13 block ops, its 2 loaders included."""
    ops = ("matmul", "square", "mul", "mul_scalar", "add", "tanh", "accum_no_red")
    config = preset("mlp", block_ops=ops, kernel_ops=("customized",), forloop_ranges=(4,), grid_divisors=(4,),
                    max_block_ops=13)
    res = superoptimize(gelu_tanh_mlp(), config, executor="serial", run_dir=False, progress=False)
    assert res.report.stop_reason == "complete", res.report
    single = [c for c in res.candidates if len(c.graph.compute_nodes) == 1 and c.graph.block_graphs]
    assert single, res.report
    body = single[0].graph.block_graphs[0]
    assert sorted(n.attr("scalar") for n in body.nodes if n.op is Op.MUL_SCALAR) == sorted([0.044715, C, 0.5])
    assert {Op.TANH, Op.SQUARE, Op.MATMUL} <= {n.op for n in body.nodes}
    assert ml.verify(single[0].graph, gelu_tanh_mlp()).equivalent


def test_one_cap_less_holds_no_single_kernel() -> None:
    """With 12 block ops the kernel does not fit: the search finds none (the test above cannot pass by accident)."""
    ops = ("matmul", "square", "mul", "mul_scalar", "add", "tanh", "accum_no_red")
    config = preset("mlp", block_ops=ops, kernel_ops=("customized",), forloop_ranges=(4,), grid_divisors=(4,),
                    max_block_ops=12)
    res = superoptimize(gelu_tanh_mlp(), config, executor="serial", run_dir=False, progress=False)
    assert not [c for c in res.candidates if len(c.graph.compute_nodes) == 1]


def test_the_widgets_draw_the_fused_kernel() -> None:
    """The notebook view of the kernel the search found: every element drawn, tanh and each factor in the panel."""
    from mirage_lab.widgets.graph_view import GraphView

    ops = ("matmul", "square", "mul", "mul_scalar", "add", "tanh", "accum_no_red")
    config = preset("mlp", block_ops=ops, kernel_ops=("customized",), forloop_ranges=(4,), grid_divisors=(4,),
                    max_block_ops=13)
    res = superoptimize(gelu_tanh_mlp(), config, executor="serial", run_dir=False, progress=False)
    view = GraphView(res.best.graph, "python")
    custom = next(k for k, n in enumerate(view.graph.nodes) if n.body is not None)
    assert view.click(f"n{custom}") == "opened"
    body = view.block_graph()
    assert body is not None
    tanh = next(j for j, n in enumerate(body.nodes) if n.op is Op.TANH)
    assert view.details(f"b{tanh}")["expression"].startswith(f"tanh(scale({C}")
    factors = {view.details(f"b{j}")["attributes"]["scalar"] for j, n in enumerate(body.nodes) if n.op is Op.MUL_SCALAR}
    assert factors == {0.044715, C, 0.5}
    assert "tanh" in view.svg()
