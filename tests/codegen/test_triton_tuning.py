"""The Triton backend's launch parameters (issue 36): defaults from the tiles, the key a tuned value is filed under,
the tuned table's file (written, read back, refused when malformed), the backend rendering with it, and the tuner's
sweep logic driven by a fake timer and a fake clock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import mirage_lab as ml
from mirage_lab.bench.fused import FUSED
from mirage_lab.codegen.registry import backend
from mirage_lab.codegen.triton import triton_module
from mirage_lab.codegen.triton.backend import TritonBackend
from mirage_lab.codegen.triton.launch import TritonLaunch, default_launch, kernel_key, padded
from mirage_lab.codegen.triton.sweep import TuneTarget, candidates, sweep, tune_targets
from mirage_lab.codegen.triton.tuned import TunedKernel, TunedTable, load_tuned, tuned_path, write_tuned
from mirage_lab.errors import FormatError, InputError, MirageError, PathError, UnsupportedOpError


def only_kernel(graph: ml.KernelGraph) -> tuple[str, TritonLaunch]:
    (kern,) = triton_module(graph).kernels.values()
    return kern.key, kern.launch


# -- launch parameters -----------------------------------------------------------------------------------------------
def test_launch_parameters_are_checked_and_read_well() -> None:
    assert repr(TritonLaunch(4, 3)) == "TritonLaunch(num_warps=4, num_stages=3, min_extent=16, default)"
    assert TritonLaunch(4, 3, origin="tuned on X") == TritonLaunch(4, 3)  # where it came from is not what it is
    for bad in ({"num_warps": 3, "num_stages": 2}, {"num_warps": 64, "num_stages": 2},
                {"num_warps": 4, "num_stages": 0}, {"num_warps": 4, "num_stages": 2, "min_extent": 8},
                {"num_warps": 4, "num_stages": 2, "min_extent": 48}, {"num_warps": True, "num_stages": 2}):
        with pytest.raises(InputError):
            TritonLaunch(**bad)  # type: ignore[arg-type]
    assert [padded(n, 64) for n in (1, 2, 16, 100)] == [1, 64, 64, 128]


def test_defaults_follow_the_tiles() -> None:
    rms1 = FUSED["rmsnorm"](1).block_graphs[0]  # (2, 128) and (128, 24) tiles, 32 iterations: 12 KiB per stage
    assert default_launch(rms1) == TritonLaunch(4, 3)  # 2 buffers hold 16 KiB in flight
    rms8 = FUSED["rmsnorm"](8).block_graphs[0]  # a (1024, 24) tile: 32K elements, 96 KiB per stage, 4 iterations
    assert default_launch(rms8) == TritonLaunch(8, 2)
    lora = FUSED["lora"](1).block_graphs[0]  # one iteration: nothing to overlap
    assert default_launch(lora).num_stages == 1
    assert default_launch(rms1, 64).min_extent == 64


def test_the_key_is_the_kernel_not_the_program() -> None:
    key, _ = only_kernel(FUSED["rmsnorm"](1))
    assert key == only_kernel(FUSED["rmsnorm"](1))[0] and len(key) == 64
    assert key != only_kernel(FUSED["rmsnorm"](8))[0]
    bg = FUSED["rmsnorm"](1).block_graphs[0]
    contiguous = [(4096, 1), (6144, 1)]
    assert kernel_key(bg, contiguous, [(6144, 1)]) == key  # the module passes the inputs' strides
    assert kernel_key(bg, [(1, 2), (6144, 1)], [(6144, 1)]) != key  # another layout is another kernel


def test_the_launch_is_recorded_in_the_module_and_passed_at_launch() -> None:
    graph = FUSED["rmsnorm"](1)
    key, _ = only_kernel(graph)
    module = triton_module(graph, {key: TritonLaunch(2, 4, 64, origin="tuned on TEST")})
    assert module.launches == {"kernel_2": TritonLaunch(2, 4, 64)}
    assert "LAUNCH = {'kernel_2': {'num_warps': 2, 'num_stages': 4}}" in module.source
    assert "kernel_2[(256, 1, 1)](t[0], t[1], t[2], num_warps=2, num_stages=4)" in module.source
    assert "r64 = tl.arange(0, 64)" in module.source and "r16 " not in module.source  # M and N padded to 64
    assert "tl.dot(h0, h1)" in module.source  # the loads, as loaded, feed the tensor cores


def test_a_padding_triton_cannot_reshape_is_named() -> None:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(16, 64), dtype=ml.float32)
    tb = ml.new_threadblock_graph((1, 1, 1), (128, 1, 1), 1, 16)
    t = tb.new_input(x, (-1, -1, -1), -1)
    tb.new_output(tb.forloop_accum(tb.reduction_to_dimx(t, 1)), (-1, -1, -1))
    g.mark_output(g.customized([x], tb)[0])
    graph = g.freeze()
    key, _ = only_kernel(graph)
    with pytest.raises(UnsupportedOpError, match="at least the padding's 64"):
        triton_module(graph, {key: TritonLaunch(4, 1, 64)})


# -- the tuned table --------------------------------------------------------------------------------------------------
def _table(graph: ml.KernelGraph, launch: TritonLaunch, gpu: str = "TEST_GPU") -> TunedTable:
    key, _ = only_kernel(graph)
    return TunedTable(gpu, "3.9.0", (TunedKernel(key, launch, 0.01, 0.02, 7, "fused_rmsnorm_b1/kernel_2"),))


def test_a_tuned_table_is_written_read_and_used(tmp_path: Path) -> None:
    graph = FUSED["rmsnorm"](1)
    path = write_tuned(tuned_path("TEST_GPU", tmp_path), _table(graph, TritonLaunch(8, 4, 32)))
    assert path.name == "triton_tuned_TEST_GPU.json"
    table = load_tuned(path, "TEST_GPU")
    assert repr(table) == "TunedTable(TEST_GPU, Triton 3.9.0, 1 kernel)"
    rendering = TritonBackend(tuned="TEST_GPU", timings_dir=tmp_path).render(graph)
    ((_, launch),) = rendering.launches
    assert launch == TritonLaunch(8, 4, 32) and launch.origin == "tuned on TEST_GPU"
    assert "num_warps=8, num_stages=4" in rendering.source and "tuned on TEST_GPU" in repr(rendering)
    other = TritonBackend(tuned="TEST_GPU", timings_dir=tmp_path).render(FUSED["rmsnorm"](8))  # not in the table
    assert other.launches[0][1].origin == "default"
    assert TritonBackend(tuned=None, timings_dir=tmp_path).render(graph).launches[0][1].origin == "default"
    # without a device, "auto" has no GPU to look up: the defaults
    assert TritonBackend().render(graph).launches[0][1].origin == "default" and backend("triton") == TritonBackend()
    with pytest.raises(PathError, match="tune on the device first"):
        TritonBackend(tuned="OTHER_GPU", timings_dir=tmp_path).render(graph)
    with pytest.raises(InputError, match="GPU label"):
        tuned_path("NVIDIA H200", tmp_path)


def _rewrite(path: Path, edit: object) -> None:
    doc = json.loads(path.read_text())
    edit(doc)  # type: ignore[operator]
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.update(format="something else"), "not a mirage-lab/triton-tuned file"),
    (lambda d: d.pop("kernels"), "lacks its 'kernels' table"),
    (lambda d: d.update(gpu="NVIDIA_A100"), "holds times for NVIDIA_A100, not TEST_GPU"),
    (lambda d: next(iter(d["kernels"].values())).update(num_warps=16), "checksum does not match"),
])
def test_a_malformed_table_is_refused_with_the_fix(tmp_path: Path, edit: object, message: str) -> None:
    path = write_tuned(tuned_path("TEST_GPU", tmp_path), _table(FUSED["rmsnorm"](1), TritonLaunch(8, 4)))
    _rewrite(path, edit)
    with pytest.raises(FormatError, match=message) as info:
        load_tuned(path, "TEST_GPU")
    assert "benchmarks/triton_tune.py" in str(info.value)


def test_entries_are_checked_one_by_one(tmp_path: Path) -> None:
    path = tuned_path("TEST_GPU", tmp_path)
    path.write_text("{not json")
    with pytest.raises(FormatError, match="is not JSON"):
        load_tuned(path)
    bad_launch = _table(FUSED["rmsnorm"](1), TritonLaunch(8, 4))
    write_tuned(path, bad_launch)
    _rewrite(path, lambda d: d["kernels"].update({"nothex": next(iter(d["kernels"].values()))}))
    from mirage_lab.codegen.triton import tuned as tuned_module

    def resign(d: dict[str, Any]) -> None:  # a well-signed file whose content is wrong
        d["checksum"] = tuned_module._checksum(d["kernels"])

    def no_stages(d: dict[str, Any]) -> None:
        next(iter(d["kernels"].values())).update(num_stages=0)
        resign(d)

    _rewrite(path, resign)
    with pytest.raises(FormatError, match="'nothex' is not a kernel key"):
        load_tuned(path)
    write_tuned(path, bad_launch)
    _rewrite(path, no_stages)
    with pytest.raises(FormatError, match="num_stages must be an integer"):
        load_tuned(path)


# -- the sweep ---------------------------------------------------------------------------------------------------------
def test_candidates_start_at_the_defaults_and_respect_the_loop() -> None:
    default = TritonLaunch(4, 3)
    cands = candidates(default, forloop_range=32)
    assert cands[0] == default and len(set(cands)) == len(cands) == 3 * 4 * 3
    assert {c for c in cands[1:6]} <= {TritonLaunch(2, 3), TritonLaunch(8, 3), TritonLaunch(4, 2),
                                       TritonLaunch(4, 4), TritonLaunch(4, 3, 32)}  # one step away first
    assert {c.num_stages for c in candidates(TritonLaunch(4, 1), forloop_range=1)} == {1}
    assert max(c.num_stages for c in candidates(TritonLaunch(4, 2), forloop_range=2)) == 2


class FakeDevice:
    """A timer whose cost per trial advances a fake clock; times come from a formula of the parameters."""

    def __init__(self, cost_s: float = 1.0) -> None:
        self.now, self.cost_s, self.calls = 0.0, cost_s, 0

    def clock(self) -> float:
        return self.now

    def __call__(self, target: TuneTarget, launch: TritonLaunch) -> float:
        self.now += self.cost_s
        self.calls += 1
        if launch.min_extent == 64:
            raise MirageError("out of shared memory")
        return 10.0 + abs(launch.num_warps - 8) + abs(launch.num_stages - 2) + (0.5 if "b8" in target.where else 0)


def _targets() -> list[TuneTarget]:
    return tune_targets({"fused_rmsnorm_b1": FUSED["rmsnorm"](1), "fused_rmsnorm_b8": FUSED["rmsnorm"](8),
                         "again": FUSED["rmsnorm"](1)})


def test_the_sweep_finds_the_fastest_and_records_failures() -> None:
    targets = _targets()
    assert [t.where for t in targets] == ["fused_rmsnorm_b1/kernel_2", "fused_rmsnorm_b8/kernel_2"]  # once each
    device = FakeDevice()
    result = sweep(targets, device, budget_s=1000, clock=device.clock)
    assert result.complete and device.calls == len(result.trials) == 36 + 36
    best = {k.where: k for k in result.tuned}
    assert best["fused_rmsnorm_b1/kernel_2"].launch == TritonLaunch(8, 2)
    assert best["fused_rmsnorm_b1/kernel_2"].median_ms == 10.0 and best["fused_rmsnorm_b1/kernel_2"].default_ms == 15
    failed = [t for t in result.trials if t.ms is None]
    assert len(failed) == 2 * 12 and all("out of shared memory" in (t.error or "") for t in failed)
    assert set(result.table().columns) == {"key", "num_warps", "num_stages", "min_extent", "ms", "error"}


def test_the_budget_cuts_every_kernel_evenly() -> None:
    targets = _targets()
    device = FakeDevice(cost_s=1.0)
    result = sweep(targets, device, budget_s=7, clock=device.clock)
    assert not result.complete and len(result.trials) == 7
    per_kernel = [sum(t.key == target.key for t in result.trials) for target in targets]
    assert per_kernel == [4, 3]  # round-robin: the defaults of both first, then one more each, …
    assert all(k.tried in (3, 4) for k in result.tuned) and "cut by the budget" in repr(result)
    with pytest.raises(InputError, match="budget"):
        sweep(targets, device, budget_s=0)


def test_identical_candidates_are_timed_once_and_broken_defaults_leave_a_kernel_out() -> None:
    targets = _targets()[:1]
    device = FakeDevice()
    plan = {targets[0].key: [targets[0].default, TritonLaunch(8, 2), TritonLaunch(8, 2, 32)]}
    result = sweep(targets, device, budget_s=100, plans=plan, clock=device.clock,
                   signature=lambda t, launch: (launch.num_warps, launch.num_stages))  # the padding changes nothing
    assert device.calls == 2 and len(result.trials) == 3 and result.trials[2].ms == result.trials[1].ms

    def broken(target: TuneTarget, launch: TritonLaunch) -> float:
        raise MirageError("no device")

    assert sweep(targets, broken, budget_s=100, plans=plan).tuned == ()
