"""A small RMSNorm+Linear program file and the narrowed search settings that find its fused kernel in seconds
(the same as tests/search/test_search.py's SMALL), as command-line arguments."""

from __future__ import annotations

from pathlib import Path

from mirage_lab import cli

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

SETTINGS = ["--preset", "mlp", "--set", "forloop_ranges=[4]", "--set", "grid_divisors=[8]",
            "--set", 'block_ops=["matmul","exp","div","accum_no_red","accum_rms"]', "--set", "max_block_ops=6",
            "--set", 'kernel_ops=["matmul","exp","customized"]']


def program_file(folder: Path) -> Path:
    path = folder / "small_rmsnorm.py"
    path.write_text(PROGRAM)
    return path


def run_small_demo(out: Path) -> Path:
    """``mirage-lab demo`` end to end on the small program: search, fused-vs-unfused (RMSNorm only), no
    checkpoint section (a missing --reference-dir); returns the folder holding report.html."""
    prog = program_file(out.parent)
    rc = cli.main(["demo", "--out", str(out), "--search", str(prog), *SETTINGS, "--programs", "rmsnorm",
                   "--repeats", "1", "--reference-dir", str(out.parent / "no-such-dir")])
    assert rc == 0
    return out
