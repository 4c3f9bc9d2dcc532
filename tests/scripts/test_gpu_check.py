"""scripts/gpu_check.sh fits one device run of 8 minutes (issue 36): its time limits, and what runs first."""

from __future__ import annotations

import re

from tests.conftest import REPO_ROOT

SCRIPT = (REPO_ROOT / "scripts" / "gpu_check.sh").read_text()


def test_time_limits_sum_to_at_most_480_s_with_the_kernels_right_after_the_short_tests() -> None:
    steps = [(m[1], int(m[2])) for m in re.finditer(r"^\s*step (\S+) (\d+) ", SCRIPT, re.M)]
    waits = [int(m[1]) for m in re.finditer(r"^\s*timeout (\d+) .*[^&]$", SCRIPT, re.M)]
    beside = [int(m[1]) for m in re.finditer(r"^\s*timeout (\d+) .*&$", SCRIPT, re.M)]  # run beside a step
    names = [n for n, _ in steps]
    assert names[:3] == ["environment", "gpu_tests", "kernels_gpu"], names
    assert sum(s for _, s in steps) + sum(waits) <= 480, (steps, waits)
    assert beside and all(b <= dict(steps)["gpu_tests"] for b in beside)  # the warm-up ends with the tests
    assert "--before-tree .before" in SCRIPT and "--warm-compile" in SCRIPT
