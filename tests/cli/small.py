"""A small RMSNorm+Linear program file and the narrowed search settings that find its fused kernel in seconds
(the same as tests/search/test_search.py's SMALL), as command-line arguments."""

from __future__ import annotations

import json
from pathlib import Path

from mirage_lab import cli
from tests.search.test_search import SMALL

PROGRAM = '''
import mirage_lab as ml

g = ml.new_kernel_graph()
x = g.new_input(dims=(2, 256), dtype=ml.float16)
w = g.new_input(dims=(256, 512), dtype=ml.float16)
g.mark_output(g.matmul(g.rms_norm(x), w))
program = g

wrong = ml.new_kernel_graph()  # forgets the normalisation: same inputs, a different function
x2 = wrong.new_input(dims=(2, 256), dtype=ml.float16)
w2 = wrong.new_input(dims=(256, 512), dtype=ml.float16)
wrong.mark_output(wrong.matmul(x2, w2))
'''

#: tests/search/test_search.py's SMALL narrowing, as the command line writes it
SETTINGS = ["--preset", "mlp", *(arg for k, v in SMALL.items() for arg in ("--set", f"{k}={json.dumps(v)}"))]


def program_file(folder: Path) -> Path:
    path = folder / "small_rmsnorm.py"
    path.write_text(PROGRAM)
    return path


def run_small_demo(out: Path) -> Path:
    """``mirage-lab demo`` end to end on the small program: search, fused-vs-unfused (RMSNorm only), no
    checkpoint section (--no-references); returns the folder holding report.html."""
    prog = program_file(out.parent)
    rc = cli.main(["demo", "--out", str(out), "--search", str(prog), *SETTINGS, "--programs", "rmsnorm",
                   "--repeats", "1", "--no-references"])
    assert rc == 0
    return out
