"""The program's trials evaluated once per machine (``verify/trials.py``): a second process's verifier maps the first's
files instead of evaluating, and decides every candidate as it would have."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

import mirage_lab as ml
from mirage_lab.verify.trials import SharedTrials, shared_key
from mirage_lab.verify.verifier import Verifier
from tests.search.test_search import small_rmsnorm


def _fused_wrong() -> ml.KernelGraph:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(2, 256), dtype=ml.float16)
    w = g.new_input(dims=(256, 512), dtype=ml.float16)
    g.mark_output(g.matmul(x, w))  # (no norm: not equivalent)
    return g.freeze()


def test_a_second_verifier_maps_the_first_ones_trials(tmp_path: Path) -> None:
    first, second = Verifier(small_rmsnorm(), trials=2), Verifier(small_rmsnorm(), trials=2)
    key = shared_key(first)
    assert key == shared_key(second)
    first.shared, second.shared = SharedTrials(key, tmp_path), SharedTrials(key, tmp_path)
    assert first.check(small_rmsnorm()).equivalent
    assert sorted(p.name for p in (tmp_path / f"mirage-lab-trials-{key}").iterdir()) == ["0", "0.lock", "1", "1.lock"]

    def boom() -> None:
        raise AssertionError("the second verifier evaluated the program")

    second._evaluate = boom  # type: ignore[method-assign,assignment]
    assert second.check(small_rmsnorm()).equivalent and not second.check(_fused_wrong()).equivalent
    ins, outs, digests = second.program(1)
    mine = Verifier(small_rmsnorm(), trials=2).program(1)
    assert digests == mine[2] and all(np.array_equal(a.p, b.p) and np.array_equal(a.q, b.q)
                                      for a, b in zip([*ins, *outs], [*mine[0], *mine[1]], strict=True))
    assert isinstance(ins[0].p, np.memmap)  # mapped, not copied
    SharedTrials(key, tmp_path).remove()
    assert not (tmp_path / f"mirage-lab-trials-{key}").exists()


def test_the_writer_removes_its_files_when_it_exits(tmp_path: Path) -> None:
    code = ("import sys; from pathlib import Path; from tests.search.test_search import small_rmsnorm; "
            "from mirage_lab.verify.verifier import Verifier; from mirage_lab.verify.trials import SharedTrials, "
            "shared_key; v = Verifier(small_rmsnorm(), trials=1); v.shared = SharedTrials(shared_key(v), "
            "Path(sys.argv[1])); v.program(0); print(len(list(Path(sys.argv[1]).iterdir())))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1" and not any(tmp_path.iterdir())


def test_a_folder_others_could_write_is_never_read(tmp_path: Path) -> None:
    """The trials decide what verifies, so shared ones are read only from the user's own 0700 folder: planted files
    in a folder anyone may write are ignored and the program is evaluated here."""
    v = Verifier(small_rmsnorm(), trials=1)
    key = shared_key(v)
    folder = tmp_path / f"mirage-lab-trials-{key}"
    folder.mkdir()
    folder.chmod(0o777)
    (folder / "0").mkdir()
    (folder / "0" / "meta.json").write_text('{"ins": 0, "outs": 0, "digests": []}')  # planted: no outputs at all
    v.shared = SharedTrials(key, tmp_path)
    evaluated: list[int] = []
    real = v._evaluate

    def counted(*args: object, **kw: object) -> object:
        evaluated.append(1)
        return real(*args, **kw)  # type: ignore[arg-type]

    v._evaluate = counted  # type: ignore[method-assign,assignment]
    assert v.check(small_rmsnorm()).equivalent and not v.check(_fused_wrong()).equivalent
    assert evaluated and len(v.program(0)[1]) == 1  # evaluated here, not read from the planted folder
