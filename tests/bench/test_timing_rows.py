"""The GPU table's rows without a GPU (issue 36): the phases' order, the baselines' rows (torch on the CPU), the DRAM
floor on every row, the table and its raw log as written after each row, and the older tree's rows ("before")
through their subprocess."""

from __future__ import annotations

import functools
import inspect
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

import mirage_lab as ml
from mirage_lab.bench import baselines, before, programs, timing
from mirage_lab.codegen import run as real_run
from mirage_lab.errors import InputError, PathError
from tests.conftest import REPO_ROOT

SAMPLES_MS = (0.011, 0.01, 0.012)


def _fake_run() -> SimpleNamespace:
    """compile and unfused_cupy as the interpreter, a timer that runs the callable once and returns SAMPLES_MS;
    each checked against the real signatures (so that the one GPU run cannot fail on a wrong call)."""

    def compile_(graph: ml.KernelGraph, *args: object, **kw: bool) -> object:
        inspect.signature(real_run.compile).bind(graph, *args, **kw)
        return lambda *xs: ml.interpret(graph, [np.asarray(x, np.float32) for x in xs], dtype="float32")

    def time_callable(fn: Any, *args: Any, **kw: Any) -> real_run.Timing:
        bound = inspect.signature(real_run.time_callable).bind(fn, *args, **kw)
        fn(*bound.arguments["args"])
        return real_run.Timing.from_samples(SAMPLES_MS)

    return SimpleNamespace(compile=compile_, unfused_cupy=compile_, time_callable=time_callable)


@pytest.fixture
def older_tree(tmp_path: Path) -> Path:
    """Today's package copied into a folder, standing for an older commit's export (scripts/prepare_before.sh)."""
    tree = tmp_path / "before"
    shutil.copytree(REPO_ROOT / "mirage_lab", tree / "mirage_lab", ignore=shutil.ignore_patterns("__pycache__"))
    return tree


def _has_cupy() -> bool:
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return True


def test_rows_come_in_phases_with_the_floor_and_are_saved_with_their_raw_runs(
        tmp_path: Path, older_tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    # torch.compile's rows through dynamo without inductor's C++ build (minutes on a small CPU): the plumbing
    monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="eager"))
    csv = tmp_path / "out" / "GPU.csv"
    csv.parent.mkdir()
    saved: list[int] = []
    raw: list[dict[str, Any]] = []

    def save(rows: list[dict[str, Any]]) -> None:
        timing.save_rows(rows, raw, csv)
        saved.append(len(pd.read_csv(csv)))

    rows = timing.measure_gpu(SimpleNamespace(asarray=np.asarray), _fake_run(), "H200", ["lora", "mqa"], [1],
                              reference_dir=None, log=lambda _: None, on_row=save, torch_device="cpu",
                              before_tree=older_tree, repeats=3, warmup=0, raw=raw)
    labels = [(r["program"], r["graph"]) for r in rows]
    kernels = [i for i, (_, g) in enumerate(labels) if g in ("unfused", "fused", "search best")]
    first_baseline = labels.index(("lora", baselines.EAGER))
    assert max(kernels) < first_baseline  # every point's kernels before any baseline
    assert labels[first_baseline:first_baseline + 3] == [("lora", baselines.EAGER), ("mqa", baselines.EAGER),
                                                         ("mqa", baselines.SDPA)]
    assert [lbl for lbl in labels if lbl[1].endswith(before.SUFFIX)] == [
        ("lora", "fused (before)"), ("lora", "search best (before)"), ("mqa", "search best (before)")]
    assert labels[-2:] == [("lora", baselines.COMPILE), ("mqa", baselines.COMPILE)]  # compilation last
    by = {(r["program"], r["graph"]): r for r in rows}
    for key in [("lora", baselines.EAGER), ("mqa", baselines.SDPA), ("lora", baselines.COMPILE)]:
        assert by[key]["result"] == "ok" and by[key]["error"] == "", by[key]
        assert by[key]["median_us"] == pytest.approx(11.0) and set(by[key]) <= {*timing.COLUMNS, "rel_error"}
    floor = {"lora": baselines.dram_floor_s(programs.lora(1), "H200") * 1e6,
             "mqa": baselines.dram_floor_s(programs.mqa(1), "H200") * 1e6}
    assert all(r["dram_floor_us"] == floor[r["program"]] for r in rows)
    if not _has_cupy():  # the older tree's process finds no GPU either: its rows say so, untimed
        assert all("cupy" in by[k]["error"] for k in by if k[1].endswith(before.SUFFIX))
    # the table and its raw log, rewritten after every row
    assert saved == list(range(1, len(rows) + 1))
    df = pd.read_csv(csv)
    assert list(df.columns) == timing.COLUMNS and len(df) == len(rows)
    assert df["dram_floor_us"].tolist() == pytest.approx([floor[p] for p in df["program"]])
    raw = [json.loads(line) for line in timing.raw_log_path(csv).read_text().splitlines()]
    assert timing.raw_log_path(csv).name == "GPU.raw.jsonl" and len(raw) == len(rows)
    assert all(tuple(r) == timing.RAW_FIELDS for r in raw)
    eager = next(r for r in raw if r["graph"] == baselines.EAGER and r["program"] == "lora")
    assert eager["samples_us"] == pytest.approx([s * 1e3 for s in SAMPLES_MS]) and eager["first_s"] > 0
    assert raw[0]["graph"] == "unfused" and raw[0]["hardware"] == "H200"


def test_without_torch_on_the_device_the_baseline_rows_say_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(baselines, "torch_cuda", lambda: "torch is not installed")
    rows = timing.measure_gpu(SimpleNamespace(asarray=np.asarray), _fake_run(), "H200", ["mqa"], [1],
                              reference_dir=None, search_best_dir=None, log=lambda _: None)
    base = [r for r in rows if r["graph"] in baselines.LABELS]
    assert [r["graph"] for r in base] == [baselines.EAGER, baselines.SDPA]  # no torch.compile row to say it twice
    assert all(r["error"] == "torch is not installed" and "median_us" not in r for r in base)


def test_the_older_tree_runs_in_its_own_interpreter(older_tree: Path) -> None:
    """The child imports the tree's package, not today's, and reports it; a child that finds another package
    refuses (exit 2), and the parent's error carries its stderr."""
    best = REPO_ROOT / "data" / "search_best" / "ntrans_bs8.json"
    rows = list(before.before_rows(older_tree, [("ntrans", 8), ("gqa", 8)], {("ntrans", 8): {"search best": best}},
                                   warmup=0, repeats=1))
    assert [(r["program"], r["batch"], r["graph"]) for r in rows] == [
        ("ntrans", 8, "search best (before)"), ("gqa", 8, "fused (before)")]
    request = json.dumps({"tree": str(older_tree), "points": [], "graphs": {}, "warmup": 0, "repeats": 1})
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    hello = subprocess.run([sys.executable, "-P", str(before.CHILD)], input=request, capture_output=True, text=True,
                           env=env | {"PYTHONPATH": str(older_tree)}, check=True).stdout.splitlines()
    assert json.loads(hello[0])["hello"]["mirage_lab"] == str(older_tree / "mirage_lab" / "__init__.py")
    assert json.loads(hello[-1]) == {"done": 0}
    mixed = subprocess.run([sys.executable, "-P", str(before.CHILD)], input=request, capture_output=True, text=True,
                           env=env | {"PYTHONPATH": str(REPO_ROOT)})
    assert mixed.returncode == 2 and "not from the tree" in mixed.stderr
    (older_tree / "mirage_lab" / "bench" / "programs.py").write_text("raise ImportError('a broken tree')\n")
    with pytest.raises(InputError, match=r"(?s)the older tree's timing .* failed \(exit 1\): .*a broken tree"):
        list(before.before_rows(older_tree, [("gqa", 1)], {}, warmup=0, repeats=1))


def test_before_tree_argument_errors(tmp_path: Path) -> None:
    with pytest.raises(PathError, match=r"which is not a folder; make it with scripts/prepare_before\.sh"):
        before.check_tree(tmp_path / "missing")
    with pytest.raises(PathError, match="holds no mirage_lab package"):
        before.check_tree(tmp_path)
    with pytest.raises(PathError, match="today's own tree"):
        before.check_tree(REPO_ROOT)
    script = [sys.executable, str(REPO_ROOT / "benchmarks" / "kernels.py")]
    env = os.environ | {"PYTHONPATH": str(REPO_ROOT)}
    for args, message in [(["--before-tree", str(tmp_path / "missing")], "which is not a folder"),
                          (["--before-tree", str(REPO_ROOT), "--from-csv", "x.csv"], "pass one of them")]:
        r = subprocess.run([*script, *args], capture_output=True, text=True, env=env)
        assert r.returncode == 2 and message in r.stderr, r.stderr
