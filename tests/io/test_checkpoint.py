"""Reference checkpoint import/export (SPEC §10): the 17 saved files, eras, round trips, hostile input."""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mirage_lab as ml
from mirage_lab.errors import FormatError, PathError
from mirage_lab.ir.checkpoint import load_reference_checkpoint, loads_reference_checkpoint
from mirage_lab.ir.checkpoint_export import dumps_reference_checkpoint, save_reference_checkpoint
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.ops import Level, Op
from mirage_lab.ir.refformat import ALIASES, Era, detect_era
from mirage_lab.ir.smem import SEARCH_SMEM_BUDGET, heuristic_usage

# file stem → (kernel graphs, block graphs); graph counts from SPEC §9, totals 601 / 1105 (SPEC §10)
FILES = {
    "rmsnorm_bs1": (18, 18), "rmsnorm_bs8": (20, 20), "gated_mlp": (32, 32), "single_gated_mlp": (1, 1),
    "lora": (4, 4), "single_lora": (1, 1), "gqa_bs1": (28, 56), "gqa_bs8": (10, 20), "mha_bs1": (21, 41),
    "mha_bs8": (38, 74), "mqa_bs1": (12, 24), "mqa_bs8": (17, 34), "single_mqa_bs1": (1, 2),
    "qknorm_gqa_bs1": (190, 380), "qknorm_gqa_bs8": (190, 380), "ntrans_bs1": (9, 9), "ntrans_bs8": (9, 9),
}


@functools.cache
def _load(directory: Path, stem: str) -> list[KernelGraph]:
    return load_reference_checkpoint(directory / f"{stem}.json")


@pytest.fixture(scope="module")
def corpus(reference_dir: Path) -> dict[str, list[KernelGraph]]:
    return {stem: _load(reference_dir, stem) for stem in FILES}


def _customized(g: KernelGraph) -> list[Any]:
    return [n for n in g.compute_nodes if n.op is Op.CUSTOMIZED]


def _loader_view(bg: Any) -> list[tuple[tuple[int, ...], int, tuple[int, ...]]]:
    """(imap, fmap, tile) of each loader."""
    return [(n.attr("imap"), n.attr("fmap"), bg.tensors[n.outputs[0]].dims) for n in bg.loaders]


# --------------------------------------------------------------------------- the 17 files


@pytest.mark.parametrize("stem", sorted(FILES))
def test_every_file_loads_with_the_documented_counts(reference_dir: Path, stem: str) -> None:
    graphs = _load(reference_dir, stem)
    n_graphs, n_blocks = FILES[stem]
    assert len(graphs) == n_graphs
    assert sum(len(g.block_graphs) for g in graphs) == n_blocks
    assert all(isinstance(g, KernelGraph) for g in graphs)


def test_corpus_totals_and_record_counts(corpus: dict[str, list[KernelGraph]]) -> None:
    graphs = [g for gs in corpus.values() for g in gs]
    assert len(graphs) == 601
    assert sum(len(g.block_graphs) for g in graphs) == 1105
    kernel = Counter(n.op for g in graphs for n in g.nodes)
    block = Counter(n.op for g in graphs for bg in g.block_graphs for n in bg.nodes)
    # SPEC §10, "Every op_type in the 17 reference files" (record counts)
    assert kernel == {Op.INPUT: 1770, Op.CUSTOMIZED: 1105, Op.MATMUL: 442, Op.EXP: 41, Op.MUL: 17, Op.DIV: 139}
    assert sum(len(g.outputs) for g in graphs) == 601
    assert block == {Op.INPUT: 2719, Op.OUTPUT: 1995, Op.MATMUL: 435, Op.EXP: 484, Op.SILU: 33, Op.ADD: 41,
                     Op.MUL: 290, Op.DIV: 712, Op.RMS_NORM: 490, Op.ACCUM_NO_RED: 1696, Op.ACCUM_SUM: 924,
                     Op.ACCUM_RMS: 344, Op.ACCUM_SUM_TODIMX: 140}
    bgs = [bg for g in graphs for bg in g.block_graphs]
    assert {bg.block for bg in bgs} == {(128, 1, 1)}
    assert {bg.reduction_dimx for bg in bgs} == {64}
    assert {t.dtype for g in graphs for t in g.tensors} == {ml.float16}


def test_reference_block_graphs_fit_the_search_smem_budget(corpus: dict[str, list[KernelGraph]]) -> None:
    """SPEC §3.6 heuristic sum: every saved block graph is within 96 KiB (so far below sm_90's 223 KiB)."""
    usage = [heuristic_usage((n.op, [bg.tensors[i] for i in n.outputs]) for n in bg.nodes)
             for gs in corpus.values() for g in gs for bg in g.block_graphs]
    assert max(usage) == 84 * 1024
    assert max(usage) <= SEARCH_SMEM_BUDGET


def test_every_reference_file_is_older_era(reference_dir: Path) -> None:
    for stem in FILES:
        doc = json.loads((reference_dir / f"{stem}.json").read_text())
        assert detect_era(doc) is Era.OLDER


# --------------------------------------------------------------------------- SPEC §9 known structures


def test_rmsnorm_bs8_graph0(corpus: dict[str, list[KernelGraph]]) -> None:
    g = corpus["rmsnorm_bs8"][0]
    (node,) = g.compute_nodes
    bg = node.body
    assert bg is not None and bg.grid == (256, 1, 1) and bg.forloop_range == 4
    assert _loader_view(bg) == [((-1, -1, -1), 1, (16, 1024)), ((1, -1, -1), 0, (1024, 24))]
    assert [n.op for n in bg.compute_nodes] == [Op.ACCUM_RMS, Op.MATMUL, Op.ACCUM_NO_RED, Op.DIV]
    rms = bg.compute_nodes[0]
    assert bg.tensors[rms.outputs[0]].dims == (16, 1)
    (saver,) = bg.savers
    assert saver.attr("omap") == (1, -1, -1) and bg.tensors[saver.inputs[0]].dims == (16, 24)
    assert g.output_types[0].dims == (16, 6144)


def test_rmsnorm_bs1_graph0_and_variants(corpus: dict[str, list[KernelGraph]]) -> None:
    gs = corpus["rmsnorm_bs1"]
    bg = gs[0].block_graphs[0]
    assert bg.forloop_range == 32 and _loader_view(bg) == [((-1, -1, -1), 1, (2, 128)), ((1, -1, -1), 0, (128, 24))]
    assert sorted({g.block_graphs[0].grid[0] for g in gs}) == [64, 96, 128, 192, 256, 384, 512, 768]
    assert Counter(g.block_graphs[0].forloop_range for g in gs) == {32: 8, 64: 8, 1: 2}
    f1 = {i: g.block_graphs[0] for i, g in enumerate(gs) if g.block_graphs[0].forloop_range == 1}
    assert sorted(f1) == [14, 15]
    # SPEC §9 says both F = 1 variants matmul after the loop; only graph 14 does (15 matmuls in the loop phase)
    post = {i: b.tensors[next(n for n in b.compute_nodes if n.op is Op.MATMUL).outputs[0]].post_loop
            for i, b in f1.items()}
    assert post == {14: True, 15: False}
    assert {g.block_graphs[0].forloop_range for g in corpus["rmsnorm_bs8"]} == {4, 16, 64}


def test_gated_mlp_structure(corpus: dict[str, list[KernelGraph]]) -> None:
    gs = corpus["gated_mlp"]
    g = gs[0]
    bg = g.block_graphs[0]
    assert bg.grid == (128, 1, 1) and bg.forloop_range == 64
    assert _loader_view(bg) == [((-1, -1, -1), 1, (8, 64)), ((1, -1, -1), 0, (64, 32)), ((1, -1, -1), 0, (64, 32))]
    assert [t.dims for t in bg.output_types] == [(8, 4096), (8, 4096)]
    assert [n.op for n in g.compute_nodes] == [Op.CUSTOMIZED, Op.MUL]
    assert sum(any(n.op is Op.MUL for n in x.compute_nodes) for x in gs) == 16  # half fuse the mul
    assert sorted({x.block_graphs[0].grid[0] for x in gs}) == [64, 128, 256, 512]
    assert {x.block_graphs[0].forloop_range for x in gs} == {16, 64}


def test_lora_structure(corpus: dict[str, list[KernelGraph]]) -> None:
    bg = corpus["lora"][0].block_graphs[0]
    assert bg.grid == (64, 1, 1) and bg.forloop_range == 1
    assert _loader_view(bg) == [((-1, -1, -1), -1, (16, 256)), ((1, -1, -1), -1, (256, 64)),
                                ((-1, -1, -1), -1, (256, 16)), ((1, -1, -1), -1, (16, 64))]
    assert [n.op for n in bg.compute_nodes] == [Op.MATMUL, Op.MATMUL, Op.MATMUL, Op.ADD, Op.ACCUM_NO_RED]
    assert not any(n.op is Op.CONCAT_THEN_MATMUL for g in corpus["lora"] for b in g.block_graphs for n in b.nodes)


def test_gqa_split_kv_structure(corpus: dict[str, list[KernelGraph]]) -> None:
    g = corpus["gqa_bs1"][0]
    k1, k2 = (n.body for n in _customized(g))
    assert len(g.compute_nodes) == 2
    assert k1.grid == (2, 8, 16) and k1.forloop_range == 4
    assert _loader_view(k1) == [((0, -1, 1), -1, (1, 16, 64)), ((0, 2, -1), 2, (1, 64, 128)),
                                ((0, 1, -1), 1, (1, 128, 64))]
    assert [n.op for n in k1.compute_nodes] == [Op.MATMUL, Op.EXP, Op.ACCUM_NO_RED, Op.MATMUL, Op.ACCUM_NO_RED]
    assert [t.dims for t in k1.output_types] == [(2, 256, 1024), (2, 256, 512)]
    assert {s.attr("omap") for s in k1.savers} == {(0, 2, 1)}
    assert k2.grid == (2, 16, 1) and k2.forloop_range == 1
    assert [n.op for n in k2.compute_nodes] == [Op.ACCUM_SUM, Op.ACCUM_SUM_TODIMX, Op.DIV]
    assert [t.dims for t in k2.output_types] == [(2, 256, 64)]
    b8 = [n.body for n in _customized(corpus["gqa_bs8"][0])]
    assert b8[0].grid == (16, 16, 4) and {t for _, _, t in _loader_view(b8[0])} == {(1, 64, 64)}
    assert [t.dims for t in b8[0].output_types] == [(16, 256, 1024)] * 2
    assert b8[1].grid == (16, 16, 1)


def test_single_mqa_structure(corpus: dict[str, list[KernelGraph]]) -> None:
    k1, k2 = (n.body for n in _customized(corpus["single_mqa_bs1"][0]))
    assert k1.grid == (1, 8, 16) and k1.forloop_range == 4
    assert _loader_view(k1) == [((-1, -1, 1), -1, (1, 64, 64)), ((-1, 2, -1), 2, (1, 64, 128)),
                                ((-1, 1, -1), 1, (1, 128, 64))]
    assert [t.dims for t in k1.output_types] == [(1, 1024, 8), (1, 1024, 512)]
    assert {s.attr("omap") for s in k1.savers} == {(-1, 2, 1)}
    assert k2.grid == (1, 64, 1)
    assert [n.op for n in k2.compute_nodes] == [Op.ACCUM_SUM, Op.ACCUM_SUM_TODIMX, Op.DIV]
    assert {s.attr("omap") for s in k2.savers} == {(-1, 1, -1)}


def test_mha_structure(corpus: dict[str, list[KernelGraph]]) -> None:
    gs = corpus["mha_bs1"]
    assert {len(g.compute_nodes) for g in gs} == {3, 4}
    for g in gs:  # Q@K runs at kernel level
        first = g.compute_nodes[0]
        assert first.op is Op.MATMUL and g.tensors[first.outputs[0]].dims == (32, 16, 4096)
    bg = gs[1].block_graphs[0]
    assert bg.grid == (32, 2, 1) and bg.forloop_range == 4
    assert [t.dims for t in bg.output_types] == [(32, 16, 2), (32, 16, 128)]
    assert Counter(n.op for n in bg.compute_nodes)[Op.EXP] == 1


def test_qknorm_structure(corpus: dict[str, list[KernelGraph]]) -> None:
    for stem, b in (("qknorm_gqa_bs1", 1), ("qknorm_gqa_bs8", 8)):
        gs = corpus[stem]
        for g in gs:
            first = g.compute_nodes[0]
            assert first.body is not None and first.body.grid == (2 * b, 64, 1) and first.body.forloop_range == 1
        kinds = Counter(tuple(n.op for n in g.compute_nodes) for g in gs)
        assert kinds[(Op.CUSTOMIZED, Op.CUSTOMIZED, Op.MATMUL)] == 120
        assert {len(g.compute_nodes) for g in gs} == {3, 4}


def test_ntrans_structure(corpus: dict[str, list[KernelGraph]]) -> None:
    for stem, b in (("ntrans_bs1", 1), ("ntrans_bs8", 8)):
        bg = corpus[stem][0].block_graphs[0]
        assert bg.grid == (8 * b, 1, 1) and bg.forloop_range == 1
        assert {imap for imap, _, _ in _loader_view(bg)} == {(0, -1, -1)}
        assert [n.op for n in bg.compute_nodes] == [Op.RMS_NORM, Op.ADD, Op.MUL, Op.ADD, Op.RMS_NORM,
                                                    Op.ACCUM_NO_RED]
        assert bg.savers[0].attr("omap") == (0, -1, -1)


# --------------------------------------------------------------------------- alias table


def test_alias_table_covers_both_eras() -> None:
    assert ALIASES["tb_accum_nored_op"].op is ALIASES["tb_forloop_accum_nored_op"].op is Op.ACCUM_NO_RED
    assert ALIASES["tb_accum_redtox_ld_sum_op"].op is Op.ACCUM_SUM_TODIMX
    assert ALIASES["tb_forloop_accum_max_op"].op is Op.ACCUM_MAX
    assert "tb_accum_max_op" not in ALIASES  # only the current era has max / rescale accumulators
    assert (ALIASES["kn_reduction_0_op"].level, ALIASES["kn_reduction_0_op"].op) == (Level.KERNEL, Op.REDUCTION)
    assert (ALIASES["tb_reduction_1_to_dimx_op"].op, ALIASES["tb_reduction_1_to_dimx_op"].dim) == \
        (Op.REDUCTION_TO_DIMX, 1)
    assert (ALIASES["tb_concat_0_op"].op, ALIASES["tb_concat_0_op"].dim) == (Op.CONCAT, 0)
    assert ALIASES["tb_reduction_2_max_op"].op is Op.REDUCTION_MAX
    assert ALIASES["tb_concat_then_matmul_op"].op is Op.CONCAT_THEN_MATMUL
    assert ALIASES["kn_customized_op"].op is Op.CUSTOMIZED


# --------------------------------------------------------------------------- eras


def _small_graph(dtype: ml.DType = ml.float16) -> KernelGraph:
    """A kernel-only graph: no accumulator names to reveal the era."""
    g = ml.new_kernel_graph()
    x = g.new_input((8, 64), dtype=dtype)
    g.mark_output(g.exp(x))
    return g.freeze()


def _replace(doc: Any, key: str, old: Any, new: Any) -> Any:
    if isinstance(doc, dict):
        return {k: new if k == key and v == old else _replace(v, key, old, new) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_replace(v, key, old, new) for v in doc]
    return doc


def test_era_detection_cases(reference_dir: Path) -> None:
    original = json.loads((reference_dir / "rmsnorm_bs8.json").read_text())
    assert detect_era(original) is Era.OLDER  # tb_accum_* names
    current = json.loads(dumps_reference_checkpoint(_load(reference_dir, "rmsnorm_bs8")))
    assert detect_era(current) is Era.CURRENT  # tb_forloop_accum_* names
    fp16 = json.loads(dumps_reference_checkpoint(_small_graph()))
    assert detect_era(fp16) is None  # only 940: fp16 now, double before
    assert detect_era(_replace(fp16, "data_type", 940, 921)) is Era.OLDER  # 921 exists only in the older era
    assert detect_era(json.loads(dumps_reference_checkpoint(_small_graph(ml.float32)))) is Era.CURRENT  # 950
    assert detect_era(json.loads(dumps_reference_checkpoint(_small_graph(ml.bfloat16)))) is Era.CURRENT  # 941


def test_ambiguous_file_needs_an_explicit_era(tmp_path: Path) -> None:
    path = save_reference_checkpoint(_small_graph(), tmp_path / "k.json")
    with pytest.raises(FormatError, match=r"cannot tell the reference era.*era='older' or era='current'"):
        load_reference_checkpoint(path)
    (g,) = load_reference_checkpoint(path, era="current")
    assert g == _small_graph()
    (old,) = load_reference_checkpoint(path, era=Era.OLDER)  # 940 is double in the older era
    assert old.input_types[0].dtype is ml.float64


def test_explicit_era_must_not_contradict_the_file(reference_dir: Path) -> None:
    with pytest.raises(FormatError, match=r"era='current' was given, but the file is older-era.*tb_accum_"):
        load_reference_checkpoint(reference_dir / "rmsnorm_bs8.json", era="current")
    assert len(load_reference_checkpoint(reference_dir / "rmsnorm_bs8.json", era="older")) == 20
    with pytest.raises(FormatError, match="unknown era"):
        load_reference_checkpoint(reference_dir / "rmsnorm_bs8.json", era="middle")


def test_mixed_eras_are_rejected(reference_dir: Path) -> None:
    doc = json.loads((reference_dir / "rmsnorm_bs8.json").read_text())[:1]
    doc[0][2]["bgraph"]["operators"][2]["op_type"] = "tb_forloop_accum_red_ld_rms_op"
    with pytest.raises(FormatError, match="mixes both reference eras"):
        loads_reference_checkpoint(doc)


def test_data_types_outside_our_dtypes_are_named() -> None:
    doc = json.loads(dumps_reference_checkpoint(_small_graph()))
    with pytest.raises(FormatError, match=r"data_type = 920 is fp4 in the current era.*not support"):
        loads_reference_checkpoint(_replace(doc, "data_type", 940, 920), era="current")
    with pytest.raises(FormatError, match=r"data_type = 999 is unknown"):
        loads_reference_checkpoint(_replace(doc, "data_type", 940, 999), era="current")
    with pytest.raises(FormatError, match=r"data_type = 12 means nothing in the current era"):
        loads_reference_checkpoint(_replace(doc, "data_type", 940, 12), era="current")


# --------------------------------------------------------------------------- round trips


def _normalised(doc: list[Any], older: bool) -> list[Any]:
    """Per graph: guids renumbered by first appearance (sorted keys); older-era codes and names updated."""
    out = []
    for graph in doc:
        ids: dict[int, int] = {}

        def walk(v: Any, ids: dict[int, int] = ids) -> Any:
            if isinstance(v, dict):
                res = {}
                for k, x in sorted(v.items()):
                    if k == "guid":
                        res[k] = ids.setdefault(x, len(ids))
                    elif older and k == "data_type":
                        res[k] = {921: 940}[x]
                    elif older and k == "op_type":
                        res[k] = x.replace("tb_accum_", "tb_forloop_accum_")
                    else:
                        res[k] = walk(x)
                return res
            return [walk(x) for x in v] if isinstance(v, list) else v

        out.append(walk(graph))
    return out


@pytest.mark.parametrize("stem", sorted(FILES))
def test_round_trip_is_the_identity(reference_dir: Path, tmp_path: Path, stem: str) -> None:
    graphs = _load(reference_dir, stem)
    path = save_reference_checkpoint(graphs, tmp_path / f"{stem}.json")
    again = load_reference_checkpoint(path)
    assert again == graphs
    assert detect_era(json.loads(path.read_text())) is Era.CURRENT
    assert dumps_reference_checkpoint(again) == path.read_text()  # export is a fixed point
    assert not list(tmp_path.glob("*.tmp"))  # atomic write leaves no temporary behind


@pytest.mark.parametrize("stem", ["rmsnorm_bs8", "gqa_bs1", "mha_bs8", "qknorm_gqa_bs1", "gated_mlp"])
def test_export_reproduces_the_reference_records(reference_dir: Path, stem: str) -> None:
    """Our current-era export equals the original file record for record (smem_offset included),
    up to guid numbering and the era's data_type codes and accumulator names."""
    original = json.loads((reference_dir / f"{stem}.json").read_text())
    ours = json.loads(dumps_reference_checkpoint(_load(reference_dir, stem)))
    assert _normalised(ours, older=False) == _normalised(original, older=True)


def _every_op_graph() -> KernelGraph:
    """Uses every op and accumulator the corpus lacks, so their names and replays round-trip too."""
    g = ml.new_kernel_graph()
    x = g.new_input((8, 4, 256), dtype=ml.float16)
    y = g.new_input((8, 4, 256), dtype=ml.float16, strides=(1024, 256, 1))
    w = g.new_input((8, 256, 16), dtype=ml.float16)
    r = g.reduction(x, 2, group_size=4)
    n = g.rms_norm(y, normalized_shape=(4, 256))
    c = g.clamp(g.mul_scalar(g.sqrt(g.square(n)), 0.5), -1.0, 2.0)
    tb = ml.new_threadblock_graph((8, 1, 1), forloop_range=2)
    a = tb.new_input(c, (0, -1, -1), 2)  # (1, 4, 128)
    b = tb.new_input(x, (0, -1, -1), 2)
    p = tb.pow(tb.sub(a, b), b)
    red = tb.reduction(tb.concat(a, b, 1), 1)  # (1, 1, 128)
    m, d = tb.reduction_max(tb.reduction_to_dimx(p, 2), 2)  # (1, 4, 1) each
    o1 = tb.forloop_accum(red, "sum_todimx")  # (1, 1, 64)
    o2 = tb.mul(tb.add(tb.forloop_accum(m, "max"), tb.forloop_accum(d, "sum_rescale", rescale=m)),
                tb.forloop_accum(tb.log(tb.relu(tb.gelu(tb.sigmoid(tb.silu(tb.exp(a)))))), "mean"))
    tb.new_output(o1, (0, -1, -1))
    tb.new_output(o2, (0, -1, -1))
    s1, s2 = g.customized([c, x], tb)
    tb2 = ml.new_threadblock_graph((8, 1, 1), forloop_range=2)
    a0 = tb2.new_input(n, (0, -1, -1), 2)  # (1, 4, 128)
    w0 = tb2.new_input(w, (0, -1, -1), 1)  # (1, 128, 16)
    cm = tb2.concat_then_matmul(a0, a0, w0, w0)  # (1, 4, 16)
    scale = tb2.reduction(cm, 2)  # (1, 4, 1)
    acc = tb2.div(tb2.forloop_accum(tb2.rms_norm(cm), "nored_rescale", rescale=scale),
                  tb2.forloop_accum(cm, "rms"))
    tb2.new_output(acc, (0, -1, -1))
    (s3,) = g.customized([n, w], tb2)
    for t in (r, s1, s2, s3):
        g.mark_output(t)
    return g.freeze()


def test_every_op_round_trips(tmp_path: Path) -> None:
    g = _every_op_graph()
    path = save_reference_checkpoint(g, tmp_path / "all.json")
    text = path.read_text()
    for name in ("kn_reduction_2_op", "kn_rms_norm_op", "kn_clamp_op", "kn_mul_scalar_op", "tb_concat_1_op",
                 "tb_reduction_1_op", "tb_reduction_2_to_dimx_op", "tb_reduction_2_max_op", "tb_sub_op",
                 "tb_pow_op", "tb_forloop_accum_max_op", "tb_forloop_accum_red_ld_sum_rescale_op",
                 "tb_forloop_accum_red_ld_mean_op", "tb_forloop_accum_nored_rescale_op",
                 "tb_concat_then_matmul_op", "tb_forloop_accum_redtox_ld_sum_op"):
        assert f'"{name}"' in text
    assert load_reference_checkpoint(path) == [g]


def test_save_accepts_a_builder_and_a_single_graph(tmp_path: Path) -> None:
    g = ml.new_kernel_graph()
    g.mark_output(g.exp(g.new_input((4, 4), dtype=ml.float32)))
    save_reference_checkpoint(g, tmp_path / "b.json")
    assert load_reference_checkpoint(tmp_path / "b.json") == [g.freeze()]


# --------------------------------------------------------------------------- hostile and malformed input
# rmsnorm_bs8 graph 0: op 0, 1 = kn_input (X, W); op 2 = kn_customized_op whose block ops are
# 0, 1 loaders, 2 RED_LD_RMS, 3 matmul, 4 NO_RED, 5 div, 6 saver; op 3 = kn_output_op.


@pytest.fixture
def doc(reference_dir: Path) -> list[Any]:
    return json.loads((reference_dir / "rmsnorm_bs8.json").read_text())[:1]


def _ops(doc: list[Any]) -> list[Any]:
    return doc[0][2]["bgraph"]["operators"]


def _fails(tmp_path: Path, content: Any, *patterns: str, era: str | None = None) -> str:
    path = tmp_path / "bad.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(FormatError) as info:
        load_reference_checkpoint(path, era=era)
    msg = str(info.value)
    assert str(path) in msg
    for p in patterns:
        assert re.search(p, msg), f"{p!r} not in {msg!r}"
    return msg


def test_truncated_file(tmp_path: Path, reference_dir: Path) -> None:
    text = (reference_dir / "rmsnorm_bs8.json").read_text()
    _fails(tmp_path, text[: len(text) // 2], "not valid JSON", "truncated")
    _fails(tmp_path, "", "not valid JSON")
    _fails(tmp_path, b"\xff\xfe\x00garbage", "not valid JSON")


def test_unknown_op_type_names_file_graph_and_op(tmp_path: Path, doc: list[Any]) -> None:
    _ops(doc)[3]["op_type"] = "tb_frobnicate_op"
    _fails(tmp_path, doc, r"graph 0, op 2 \(kn_customized_op\), block op 3", "unknown op_type", "tb_frobnicate_op")


def test_unsupported_and_misplaced_op_types(tmp_path: Path, doc: list[Any]) -> None:
    d = copy.deepcopy(doc)
    d[0][3]["op_type"] = "kn_concat_0_op"
    _fails(tmp_path, d, "graph 0, op 3", "outside the searched method")
    d = copy.deepcopy(doc)
    d[0][3]["op_type"] = "tb_exp_op"
    _fails(tmp_path, d, "graph 0, op 3", "wrong level", "block-level op")


def test_guid_used_before_definition(tmp_path: Path, doc: list[Any]) -> None:
    d = copy.deepcopy(doc)
    _ops(d)[3]["input_tensors"][0]["guid"] = 12345
    _fails(tmp_path, d, "block op 3", "guid used before its definition", "12345")
    d = copy.deepcopy(doc)
    d[0][3]["input_tensors"][0]["guid"] = 777
    _fails(tmp_path, d, "graph 0, op 3 \\(kn_output_op\\)", "guid used before its definition")
    d = copy.deepcopy(doc)
    d[0][1]["output_tensors"][0]["guid"] = d[0][0]["output_tensors"][0]["guid"]
    _fails(tmp_path, d, "graph 0, op 1", "guid defined twice")


def test_wrong_num_dims(tmp_path: Path, doc: list[Any]) -> None:
    d = copy.deepcopy(doc)
    d[0][0]["output_tensors"][0]["num_dims"] = 3  # [16, 4096, 0, 0] read as 3-D
    _fails(tmp_path, d, "graph 0, op 0", "wrong num_dims", "zero")
    d = copy.deepcopy(doc)
    d[0][0]["output_tensors"][0]["num_dims"] = 5
    _fails(tmp_path, d, "num_dims = 5 is outside \\[1, 4\\]")
    d = copy.deepcopy(doc)
    d[0][0]["output_tensors"][0]["dim"] = [16]
    _fails(tmp_path, d, "wrong num_dims", "has 1 entries")


def test_negative_dims(tmp_path: Path, doc: list[Any]) -> None:
    doc[0][0]["output_tensors"][0]["dim"][0] = -16
    _fails(tmp_path, doc, "graph 0, op 0", r"dim\[0\] = -16 is outside")


def test_nan_and_infinity(tmp_path: Path, doc: list[Any]) -> None:
    text = json.dumps(doc).replace('"forloop_range": 4', '"forloop_range": NaN')
    _fails(tmp_path, text, "forloop_range must be an integer", "non-finite")
    text = json.dumps(doc).replace('"num_dims": 2', '"num_dims": Infinity', 1)
    _fails(tmp_path, text, "num_dims must be an integer", "non-finite")


def test_deeply_nested_json(tmp_path: Path) -> None:
    _fails(tmp_path, "[" * 200_000 + "]" * 200_000, "nested too deeply")


def test_huge_numbers(tmp_path: Path, doc: list[Any]) -> None:
    d = copy.deepcopy(doc)
    d[0][0]["output_tensors"][0]["dim"][1] = 10**30
    _fails(tmp_path, d, r"dim\[1\] = a 31-digit number is outside \[1, 2147483647\]")
    d = copy.deepcopy(doc)
    d[0][2]["bgraph"]["forloop_range"] = 10**60
    _fails(tmp_path, d, "forloop_range = a 61-digit number is outside")
    text = json.dumps(doc).replace('"forloop_range": 4', '"forloop_range": 1' + "0" * 5000)
    _fails(tmp_path, text, "oversized number")
    text = json.dumps(doc).replace('"forloop_range": 4', '"forloop_range": 1e999')
    _fails(tmp_path, text, "forloop_range must be an integer")


def test_top_level_and_record_shapes(tmp_path: Path, doc: list[Any]) -> None:
    _fails(tmp_path, {"graphs": doc}, "top level must be a JSON list of kernel graphs")
    _fails(tmp_path, "42", "top level must be a JSON list")
    _fails(tmp_path, [{"op_type": "kn_input_op"}], "graph 0", "kernel graph must be a JSON list", era="older")
    _fails(tmp_path, [[17]], "graph 0, op 0", "op record must be a JSON object", era="older")
    d = copy.deepcopy(doc)
    del d[0][0]["output_tensors"]
    _fails(tmp_path, d, "graph 0, op 0", "lacks the field 'output_tensors'")
    d = copy.deepcopy(doc)
    d[0][0]["output_tensors"][0]["num_dims"] = True
    _fails(tmp_path, d, "num_dims must be an integer, got true")
    d = copy.deepcopy(doc)
    d[0][2]["bgraph"]["grid_dim"] = [256, 1, 1]
    _fails(tmp_path, d, "graph 0, op 2", "grid_dim must be a JSON object")


def test_loader_input_guid_mismatch(tmp_path: Path, doc: list[Any]) -> None:
    d = copy.deepcopy(doc)
    _ops(d)[0]["dtensor"] = copy.deepcopy(d[0][1]["output_tensors"][0])  # loader 0 claims to load W
    _fails(tmp_path, d, "block op 0 \\(tb_input_op\\)", "loader/input binding", "by position")
    d = copy.deepcopy(doc)
    d[0][2]["input_tensors"].append(copy.deepcopy(d[0][2]["input_tensors"][0]))  # 3 inputs, 2 loaders
    _fails(tmp_path, d, "loader/input binding", "2 loader\\(s\\)", "3 input\\(s\\)")


def test_saver_output_guid_mismatch(tmp_path: Path, doc: list[Any]) -> None:
    _ops(doc)[6]["dtensor"]["guid"] = 4242
    _fails(tmp_path, doc, "block op 6 \\(tb_output_op\\)", "saver/output binding", "4242")


def test_loaders_first_and_savers_last(tmp_path: Path, doc: list[Any]) -> None:
    d = copy.deepcopy(doc)
    ops = _ops(d)
    ops.insert(2, ops.pop(1))  # W's loader after the first accumulator
    _fails(tmp_path, d, "loaders come first")
    d = copy.deepcopy(doc)
    extra = copy.deepcopy(_ops(d)[5])
    extra["output_tensors"][0]["guid"] = 99
    _ops(d).append(extra)  # a div after the saver
    _fails(tmp_path, d, "block op 7", "savers come last")
    d = copy.deepcopy(doc)
    d[0].append(copy.deepcopy(d[0][0]))  # a kernel input after the output
    _fails(tmp_path, d, "graph 0, op 4", "inputs come first")


def test_stored_dims_and_flags_must_match_the_rules(tmp_path: Path, doc: list[Any]) -> None:
    d = copy.deepcopy(doc)
    _ops(d)[2]["output_tensors"][0]["dim"] = [16, 2, 0, 0]
    _fails(tmp_path, d, "block op 2", "stored dims differ from the derived dims", r"\[16, 2\]", r"\[16, 1\]")
    d = copy.deepcopy(doc)
    _ops(d)[3]["output_tensors"][0]["after_accum"] = True
    _fails(tmp_path, d, "block op 3", "after_accum flag disagrees")
    d = copy.deepcopy(doc)
    _ops(d)[6]["dtensor"]["dim"] = [16, 24, 0, 0]
    _fails(tmp_path, d, "saver 0", "stored dims differ", r"\[16, 6144\]")
    d = copy.deepcopy(doc)
    d[0][2]["output_tensors"][0]["dim"] = [16, 6000, 0, 0]
    _fails(tmp_path, d, "graph 0, op 2", "stored dims differ")


def test_builder_rules_and_layouts(tmp_path: Path, doc: list[Any]) -> None:
    d = copy.deepcopy(doc)
    d[0][2]["bgraph"]["grid_dim"]["y"] = 64  # 256 × 64 blocks
    _fails(tmp_path, d, "graph 0, op 2", "breaks a builder rule", "4096")
    d = copy.deepcopy(doc)
    d[0][2]["bgraph"]["forloop_range"] = 3
    _fails(tmp_path, d, "block op 0", "breaks a builder rule", "not divisible")
    d = copy.deepcopy(doc)
    d[0][0]["output_tensors"][0]["layout"] = "DmemColumnMajor"
    _fails(tmp_path, d, "unsupported layout", "row-major")
    d = copy.deepcopy(doc)
    d[0][0]["output_tensors"][0]["layout"] = "SmemRowMajor"
    _fails(tmp_path, d, "unknown layout")


def test_shared_memory_limit_is_applied(tmp_path: Path, reference_dir: Path) -> None:
    path = reference_dir / "rmsnorm_bs8.json"
    with pytest.raises(FormatError, match=r"graph 0, op 2 .*breaks a builder rule \(ResourceError\).*1024-byte"):
        load_reference_checkpoint(path, smem_limit=1024)
    with pytest.raises(FormatError, match="sm_86"):
        load_reference_checkpoint(path, arch="sm_86", smem_limit=1024)
    assert len(load_reference_checkpoint(path, arch="sm_86")) == 20  # 99 KiB suffices


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PathError, match=r"absent\.json does not exist"):
        load_reference_checkpoint(tmp_path / "absent.json")


def _paths(v: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(v, dict):
        for k, x in v.items():
            out += _paths(x, (*prefix, k))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out += _paths(x, (*prefix, i))
    return out


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
                     max_leaves=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_records_raise_only_format_errors(doc: list[Any], data: st.DataObject) -> None:
    """Any single-value corruption either still loads or raises FormatError, never another exception."""
    paths = _paths(doc)[1:]
    path = data.draw(st.sampled_from(paths))
    d = copy.deepcopy(doc)
    parent = d
    for k in path[:-1]:
        parent = parent[k]
    if data.draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(_JSON)
    with contextlib.suppress(FormatError):
        loads_reference_checkpoint(d, era=data.draw(st.sampled_from([None, "older", "current"])))
