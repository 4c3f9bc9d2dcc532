"""The baselines a reader trusts (issue 36): each computes its program, and the DRAM floor's arithmetic."""

from __future__ import annotations

import pytest

from mirage_lab.bench import baselines, programs
from mirage_lab.bench.harness import input_scale, random_inputs
from mirage_lab.bench.tolerance import TOLERANCE, agreement
from mirage_lab.errors import InputError, MirageError
from mirage_lab.ir.dtype import float32
from mirage_lab.optimize.hardware import HARDWARE
from mirage_lab.semantics.interpret import interpret

POINTS = [p for p in programs.PROGRAMS if p != "moe"]


@pytest.mark.parametrize("name", POINTS)
def test_every_baseline_computes_its_program_at_batch_1(name: str) -> None:
    """Eager (and SDPA for attention) in fp32 on the CPU, at the program's real shapes, against the interpreter."""
    torch = pytest.importorskip("torch")
    program = programs.PROGRAMS[name](1, dtype=float32)
    inputs = random_inputs(program, seed=3, scale=input_scale(name))
    want = interpret(program, inputs, dtype="float32")
    made = baselines.baselines(name, compile=False)
    assert [b.label for b in made] == ([baselines.EAGER, baselines.SDPA] if name in baselines.ATTENTION
                                       else [baselines.EAGER])
    for b in made:
        got = b.fn(*b.prepare([torch.from_numpy(x) for x in inputs]))
        agree = agreement([got.numpy()], want, TOLERANCE["float32"], "float32")
        assert agree.ok, f"{b}: {agree}"


def test_a_wrong_formula_fails_the_same_check() -> None:
    """The check above can fail: SDPA with its default scale 1/√d is not the program (no 1/√d in exp(Q·K))."""
    torch = pytest.importorskip("torch")
    program = programs.gqa(1, dtype=float32)
    inputs = random_inputs(program, seed=3, scale=input_scale("gqa"))
    q, k, v = (torch.from_numpy(x) for x in inputs)
    got = torch.nn.functional.scaled_dot_product_attention(q[None], k.mT[None], v[None])[0]
    assert not agreement([got.numpy()], interpret(program, inputs, dtype="float32"), TOLERANCE["float32"]).ok


def test_sdpa_and_unknown_programs_are_refused_clearly() -> None:
    pytest.importorskip("torch")
    with pytest.raises(InputError, match="SDPA is a baseline of the attention programs"):
        baselines.sdpa_function("rmsnorm")
    with pytest.raises(InputError, match="no PyTorch baseline for program 'nope'; use one of rmsnorm"):
        baselines.eager_function("nope")


def test_dram_floor_is_inputs_plus_outputs_over_the_bandwidth() -> None:
    rms = programs.rmsnorm(1)  # X(2, 4096), W(4096, 6144), O(2, 6144), fp16
    assert baselines.io_bytes(rms) == 2 * (2 * 4096 + 4096 * 6144 + 2 * 6144)
    assert baselines.dram_floor_s(rms, "H200") == pytest.approx(50_372_608 / 4.8e12)  # 10.5 µs, as issue 36 says
    assert baselines.dram_floor_s(rms, HARDWARE["H100"]) == pytest.approx(50_372_608 / 3.35e12)
    gqa8 = programs.gqa(8)  # Q(16, 256, 64), K(16, 64, 4096), V(16, 4096, 64), O(16, 256, 64)
    assert baselines.io_bytes(gqa8) == 2 * 16 * (2 * 256 * 64 + 2 * 64 * 4096)
    assert baselines.io_bytes(programs.rmsnorm(1, dtype=float32)) == 2 * baselines.io_bytes(rms)
    with pytest.raises(MirageError, match="unknown hardware 'B200'"):
        baselines.dram_floor_s(rms, "B200")


def test_torch_cuda_says_why_a_gpu_row_cannot_be_timed() -> None:
    torch = pytest.importorskip("torch")
    why = baselines.torch_cuda()
    assert (why is None) == torch.cuda.is_available()
    assert why is None or "sees no CUDA device" in why
