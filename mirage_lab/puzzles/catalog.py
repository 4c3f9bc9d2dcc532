"""The puzzles as data: a program, the names of its inputs, goals, a statement and three graded hints.

    >>> p = ml.puzzles.get("row_sums")
    >>> p.program        # the whole-tensor program the learner's graph must equal
    >>> print(p)         # the statement, the inputs and the goals
"""

from __future__ import annotations

import functools
import html
from collections.abc import Callable
from dataclasses import dataclass

from mirage_lab.errors import InputError
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.ops import Op
from mirage_lab.puzzles import programs
from mirage_lab.puzzles.goals import Blocks, CustomKernels, ForLoop, Goal, Splits, Uses


@dataclass(frozen=True)
class Puzzle:
    name: str
    title: str
    statement: str
    inputs: tuple[str, ...]  # the program's input names, in order (v0, v1, … in abstract expressions)
    build: Callable[[], KernelGraph]
    goals: tuple[Goal, ...]
    hints: tuple[str, str, str]  # vague → nearly the answer

    @functools.cached_property
    def program(self) -> KernelGraph:
        """The whole-tensor program (a kernel graph): the specification the learner's graph must equal."""
        return self.build()

    def hint(self, level: int = 1) -> str:
        """Hint ``level`` 1 (a nudge) to 3 (nearly the answer)."""
        if level not in (1, 2, 3):
            raise InputError(f"hint level must be 1, 2 or 3, got {level!r}")
        return f"hint {level}/3: {self.hints[level - 1]}"

    def input_lines(self) -> list[str]:
        return [f"{n}: {t}" for n, t in zip(self.inputs, self.program.input_types, strict=True)]

    def __str__(self) -> str:
        out = self.program.output_types
        lines = [f"{self.name} — {self.title}", self.statement, "inputs: " + ", ".join(self.input_lines()),
                 "output: " + ", ".join(map(str, out)), f"program ({', '.join(self.inputs)} are d0, d1, …):",
                 str(self.program), "goals:", *(f"  • {g.text}" for g in self.goals),
                 "check with ml.puzzles.check(" + repr(self.name) + ", graph); hints: ml.puzzles.hint(" +
                 repr(self.name) + ", 1)"]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Puzzle({self.name!r}: {self.title}; goals: {'; '.join(g.text for g in self.goals)})"

    def _repr_html_(self) -> str:
        goals = "".join(f"<li>{html.escape(g.text)}</li>" for g in self.goals)
        ins = ", ".join(f"<code>{html.escape(s)}</code>" for s in self.input_lines())
        return (f"<div><b>{html.escape(self.name)}</b> — {html.escape(self.title)}<p>{html.escape(self.statement)}"
                f"</p><p>inputs: {ins}</p><pre>{html.escape(str(self.program))}</pre><p>goals:</p><ul>{goals}</ul>"
                "</div>")


ONE = CustomKernels(1)
LOOP = ForLoop(2)

PUZZLES: tuple[Puzzle, ...] = (
    Puzzle("copy_tile", "read a tile, write a tile",
           "Copy X to O in one custom kernel on at least 2 blocks: each block loads its tile of X and saves it "
           "where it belongs.",
           ("X",), programs.copy_tile, (ONE, Blocks(2)),
           ("A saver can only write an accumulator's result, even when there is nothing to accumulate.",
            "Give X's loader an input_map that splits rows over grid x, and use the same map when you save.",
            "tx = tb.new_input(X, (0, -1, -1), -1); tb.new_output(tb.forloop_accum(tx), (0, -1, -1)) "
            "with forloop_range=1 — a longer loop would add the same tile several times.")),
    Puzzle("add_bias", "broadcast a row",
           "Compute O = X + B, where B is a single row added to every row of X, in one custom kernel on at least "
           "2 blocks.",
           ("X", "B"), programs.add_bias, (ONE, Blocks(2)),
           ("Each block needs the part of B under its own columns, whatever rows it holds.",
            "B has one row: never split its dim 0. Split columns of both X and B with the same grid axis.",
            "grid (2, 2, 1): X with input_map (0, 1, -1), B with (-1, 1, -1); save with output_map (0, 1, -1).")),
    Puzzle("row_sums", "sum along the for-loop",
           "Compute O[i] = Σ_j X[i, j] (shape (8, 1)) in one custom kernel whose for-loop streams the columns of "
           "X (at least 2 iterations).",
           ("X",), programs.row_sums, (ONE, LOOP),
           ("An accumulator can reduce each tile's last dim as it adds up the iterations.",
            "Loop over X's columns (forloop_dim=1) and accumulate with the accumulator that sums the last dim.",
            "tx = tb.new_input(X, (0, -1, -1), 1); tb.new_output(tb.forloop_accum(tx, 'sum'), (0, -1, -1)).")),
    Puzzle("column_sums", "sum across rows",
           "Compute O[j] = Σ_i X[i, j] (shape (1, 64)) in one custom kernel that loops over the rows of X "
           "(at least 2 iterations).",
           ("X",), programs.column_sums, (ONE, LOOP),
           ("Accumulators reduce the last dim; the rows are dim 0.",
            "Sum each tile over dim 0 with tb.reduction, then add the iterations up with a plain forloop_accum.",
            "grid over columns: tx = tb.new_input(X, (1, -1, -1), 0); "
            "tb.new_output(tb.forloop_accum(tb.reduction(tx, 0)), (1, -1, -1)).")),
    Puzzle("rms_norm", "a whole row per block",
           "Compute O = X / sqrt(mean(X², row)) (RMSNorm without weight) in one custom kernel.",
           ("X",), programs.rms_norm, (ONE, Blocks(2)),
           ("The norm of a row needs every element of that row.",
            "Split rows over the grid, never columns; tb.rms_norm normalises a tile's rows.",
            "tx = tb.new_input(X, (0, -1, -1), -1); tb.new_output(tb.forloop_accum(tb.rms_norm(tx)), (0, -1, -1)).")),
    Puzzle("matmul_loop", "a matmul with a for-loop and an accumulator",
           "Compute O = X @ W in one custom kernel: split W's columns over the grid and loop over the shared "
           "dim K (at least 2 iterations), adding the partial products.",
           ("X", "W"), programs.matmul, (ONE, LOOP),
           ("Each iteration multiplies a slice of X's columns by the same slice of W's rows.",
            "X loops over dim 1, W over dim 0; a plain forloop_accum (acc=None) adds the partial products.",
            "tx = tb.new_input(X, (-1, -1, -1), 1); tw = tb.new_input(W, (1, -1, -1), 0); "
            "tb.new_output(tb.forloop_accum(tb.matmul(tx, tw)), (1, -1, -1)).")),
    Puzzle("rms_norm_linear", "RMSNorm and Linear in one kernel",
           "Compute O = rms_norm(X) @ W in one custom kernel with a for-loop over K (at least 2 iterations).",
           ("X", "W"), programs.rms_norm_linear, (ONE, LOOP),
           ("Dividing every row by a number commutes with the matmul.",
            "Accumulate X·W and the rms of X side by side in the loop; divide once, after the loop.",
            "rms = tb.forloop_accum(tx, 'rms'); acc = tb.forloop_accum(tb.matmul(tx, tw)); "
            "save tb.div(acc, rms).")),
    Puzzle("gated_mlp", "gated MLP",
           "Compute O = silu(X @ W1) ⊙ (X @ W2) in one custom kernel.",
           ("X", "W1", "W2"), programs.gated_mlp, (ONE,),
           ("silu is not linear: it must wait until its matmul is complete.",
            "Two matmuls, two accumulators in the loop; silu and the product after the loop.",
            "a1 = tb.forloop_accum(tb.matmul(tx, t1)); a2 = tb.forloop_accum(tb.matmul(tx, t2)); "
            "save tb.mul(tb.silu(a1), a2).")),
    Puzzle("lora", "LoRA",
           "Compute O = X @ W + (X @ A) @ B in one custom kernel.",
           ("X", "W", "A", "B"), programs.lora, (ONE,),
           ("Everything here is linear in X.",
            "Within one block: X·W and (X·A)·B on the same column slice of W and B, then one accumulator.",
            "with a loop over K: X over dim 1, W and A over dim 0, B with no loop dim; "
            "save tb.forloop_accum(tb.add(tb.matmul(tx, tw), tb.matmul(tb.matmul(tx, ta), tb_b))).")),
    Puzzle("softmax", "softmax along rows",
           "Compute O = exp(X) / rowsum(exp(X)) in one custom kernel.",
           ("X",), programs.softmax, (ONE, Blocks(2)),
           ("The denominator of a row needs the whole row.",
            "One block per group of rows; tb.reduction sums a tile over a dim.",
            "e = tb.exp(tx); tb.new_output(tb.forloop_accum(tb.div(e, tb.reduction(e, 1))), (0, -1, -1)).")),
    Puzzle("attention_split", "attention with a split sequence",
           "Compute O = softmax(Q @ K) @ V per head (K given transposed) in two custom kernels: the first splits "
           "the sequence (K's dim 2) over the grid and writes per-chunk results, the second combines them.",
           ("Q", "K", "V"), programs.attention,
           (CustomKernels(2), Splits(1, 2, "the sequence (K's dim 2)")),
           ("Without a max subtraction, softmax's denominator is a plain sum: chunks can be summed later.",
            "Kernel 1 saves, per chunk, the row sums of exp(Q·K) and exp(Q·K)·V; kernel 2 adds the chunks and "
            "divides.",
            "kernel 1 grid (heads, chunks, 1): Q (0,-1,-1), K (0,2,-1) loop 2, V (0,1,-1) loop 1; save "
            "forloop_accum(e, 'sum') and forloop_accum(matmul(e, tv)) with output_map (0,2,-1). Kernel 2 "
            "(reduction_dimx=16): div(forloop_accum(parts, 'sum_todimx'), forloop_accum(sums, 'sum')).")),
    Puzzle("attention_online", "attention with online softmax",
           "Compute O = softmax(Q @ K) @ V per head in one custom kernel that streams the sequence through its "
           "for-loop (at least 2 iterations) and keeps a running row max, as FlashAttention does.",
           ("Q", "K", "V"), programs.attention,
           (ONE, LOOP, Uses(Op.REDUCTION_MAX, "a running max")),
           ("exp(s − m) for a running max m keeps numbers small; when m grows, what was added must shrink.",
            "tb.reduction_max gives the running max and its change; the rescale accumulators multiply what they "
            "hold by exp(change) before adding.",
            "m, diff = tb.reduction_max(s, 2); e = tb.exp(tb.sub(s, m)); r = tb.exp(diff); "
            "div(forloop_accum(matmul(e, tv), 'nored_rescale', rescale=r), forloop_accum(e, 'sum_rescale', "
            "rescale=r)).")),
)

BY_NAME = {p.name: p for p in PUZZLES}


def names() -> list[str]:
    """The puzzles' names, easiest first."""
    return [p.name for p in PUZZLES]


def get(name: str) -> Puzzle:
    if name not in BY_NAME:
        raise InputError(f"no puzzle named {name!r}; ml.puzzles.names() lists them: {', '.join(BY_NAME)}")
    return BY_NAME[name]


def hint(name: str, level: int = 1) -> str:
    """Hint ``level`` (1 vague … 3 nearly the answer) for puzzle ``name``."""
    return get(name).hint(level)
