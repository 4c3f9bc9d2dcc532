"""What a search worker pays before its first task, and the order tasks go out in (issue 19, item 1)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from mirage_lab.ir.io import graph_to_dict
from mirage_lab.search.config import preset
from mirage_lab.search.enumerate import Enumerator
from mirage_lab.search.runner import fused_first
from mirage_lab.search.task import task_context
from mirage_lab.semantics.footprint import small_pages
from tests.search.test_search import SMALL, search, small_rmsnorm


def test_a_worker_imports_no_pandas() -> None:
    """pandas took 0.34 s of a worker's 0.58 s start; only the tables users ask for need it."""
    code = "import sys, mirage_lab.search.task; sys.exit('pandas' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_small_pages_switches_numpys_advice_off_and_back() -> None:
    switch = getattr(np._core.multiarray, "_set_madvise_hugepage", None)
    if switch is None:
        pytest.skip("this numpy has no huge-page switch")
    before = switch(True)
    try:
        with small_pages():
            assert switch(False) is False  # (reads the state: it was off)
        assert switch(True) is True  # back on after the block
    finally:
        switch(before)


def test_tasks_go_out_fused_first_and_results_stay_in_task_order() -> None:
    program = small_rmsnorm()
    prog, config, oracle, verifier = task_context(graph_to_dict(program), preset("mlp", **SMALL).to_dict())
    tasks = Enumerator(prog, config, oracle, verifier, ids="f").run(frontier=True).tasks
    order = fused_first(tasks, list(range(len(tasks))))
    kernels = [sum(d[0] == "k" for d in tasks[i][1]) for i in order]
    assert sorted(order) == list(range(len(tasks))) and kernels == sorted(kernels)
    assert kernels[0] < kernels[-1], "this program's frontier has roots behind plain kernels and roots on inputs"
    assert order != list(range(len(tasks)))  # (so the order is really changed here)
    res = search(executor="serial")
    found = [c.found_s for c in res.candidates]
    assert found and min(found) < res.report.seconds["wall"] / 2  # the fused roots, hence the finds, come early
