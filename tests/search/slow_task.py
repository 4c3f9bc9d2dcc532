"""A ``run_task`` that dawdles once the search has verified a candidate, so that a test can kill the search
mid-way with verified candidates on disk and tasks left to run. Pool workers import it by name."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from mirage_lab.search import runner

real_run_task = runner.run_task


def slow_run_task(*args: Any) -> dict[str, Any]:
    run_dir = args[5]
    if run_dir is not None and any((Path(run_dir) / "candidates").iterdir()):
        time.sleep(0.2)
    return real_run_task(*args)
