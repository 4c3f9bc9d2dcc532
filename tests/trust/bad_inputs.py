"""The bad-input table: what a careless or hostile user types, over the command line and the Python API, and
what each must get back — one clear line (exit status 2, or a ``MirageError`` subclass) naming the problem.

A case runs in a ``Workspace`` of prepared files (a regular file, a directory, broken JSON, program files that
raise, exit or define nothing…). ``run_case`` classifies what happened:

* ``clear``: the expected exit status / error class, and a message that names the problem (every needle);
* ``unclear``: an error, but of the wrong class or status, or a message missing a needle, or more than one line;
* ``silent``: no error at all;
* ``traceback``: an exception that is not a ``MirageError`` (the user would see a raw traceback);
* ``hang``: still running after the sweep's time limit (``scripts/bad_inputs.py``; a writer blocked on a FIFO,
  say, or a bad input that started hours of work instead of being refused).

``tests/trust/test_bad_inputs.py`` asserts every case is clear; ``scripts/bad_inputs.py`` prints the counts.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import mirage_lab as ml
from mirage_lab import errors as E
from mirage_lab.search.config import SearchConfig, preset
from mirage_lab.semantics.field import FieldArith
from tests.cli.small import PROGRAM

PROGRAM_FILES = {
    "good.py": PROGRAM,
    "raises.py": "def build():\n    return 1 / 0\n\n\nbuild()\n",
    "mirage_raises.py": "import mirage_lab as ml\n\ng = ml.new_kernel_graph()\nx = g.new_input(dims=(2, 3))\n"
                        "y = g.new_input(dims=(4, 5))\ng.matmul(x, y)\n",
    "exits.py": "import sys\n\nsys.exit(3)\n",
    "nothing.py": "x = 1\n",
    "not_graph.py": "program = [1, 2, 3]\n",
    "function_raises.py": "def program():\n    raise RuntimeError('no weights here')\n",
    "syntax.py": "program = (\n",
    "imports_missing.py": "import no_such_module_anywhere\n",
}


class Workspace:
    """Files and folders the cases point at, made fresh in ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.file = root / "a_file.txt"
        self.file.write_text("not a folder\n")
        self.dir = root / "a_dir"
        self.dir.mkdir()
        self.below_file = self.file / "inside"  # unwritable for everyone, root included
        self.missing = root / "missing.json"
        (root / "truncated.json").write_text('{"format": "mirage-lab/mugraph", "version": 1, "graphs": [')
        (root / "nested.json").write_text("[" * 100_000 + "]" * 100_000)
        (root / "empty_list.json").write_text("[]")
        (root / "wrong_format.json").write_text(json.dumps({"format": "something/else", "graphs": []}))
        (root / "bad_op.json").write_text(json.dumps(_bad_op_doc()))
        (root / "huge_number.json").write_text('{"format": "mirage-lab/mugraph", "version": 1e999999}')
        self.fifo = root / "a_fifo"  # a writer that opened it would wait for a reader forever: a hang
        os.mkfifo(self.fifo)
        self.dangling = root / "dangling.json"
        self.dangling.symlink_to(root / "nowhere")
        (root / "fifo_link.json").symlink_to(self.fifo)
        (root / "empty_refs").mkdir()
        ml.save([self.small(), self.small()], root / "two.json")
        ml.save(self.small(), root / "one.json")
        for name, text in PROGRAM_FILES.items():
            (root / name).write_text(text)

    def __getitem__(self, name: str) -> str:
        return str(self.root / name)

    @staticmethod
    def small() -> Any:
        """The small RMSNorm+Linear program (a builder), as a fresh object each time."""
        g = ml.new_kernel_graph()
        x = g.new_input(dims=(2, 256), dtype=ml.float16)
        w = g.new_input(dims=(256, 512), dtype=ml.float16)
        g.mark_output(g.matmul(g.rms_norm(x), w))
        return g

    def small_inputs(self) -> list[np.ndarray]:
        return [np.ones((2, 256)), np.ones((256, 512))]


def _bad_op_doc() -> dict[str, Any]:
    doc = json.loads(ml.ir.io.dumps(Workspace.small()))
    doc["graphs"][0]["nodes"][2]["op"] = "softmax"
    return doc


@dataclass(frozen=True)
class Case:
    """One bad input: ``argv`` for the CLI (``{name}`` → that path in the workspace), or ``call(workspace)``."""

    id: str
    expect: type[E.MirageError] | int  # the error class (API), or the exit status (CLI)
    says: tuple[str, ...]  # pieces the message must contain (case-insensitive)
    argv: tuple[str, ...] | None = None
    call: Callable[[Workspace], Any] | None = None
    user_traceback: bool = False  # the CLI may print the user's own traceback before the line

    @property
    def surface(self) -> str:
        return "cli" if self.argv is not None else "api"


@dataclass(frozen=True)
class Outcome:
    kind: str  # clear | unclear | silent | traceback | hang
    detail: str


CASES: list[Case] = []


def cli(case_id: str, argv: str, *says: str, status: int = 2, user_traceback: bool = False) -> None:
    CASES.append(Case(case_id, status, says, argv=tuple(argv.split()), user_traceback=user_traceback))


def api(case_id: str, error: type[E.MirageError], call: Callable[[Workspace], Any], *says: str) -> None:
    CASES.append(Case(case_id, error, says, call=call))


# --------------------------------------------------------------------------- the command line: GRAPH texts

cli("cli-no-command", "", "required")
cli("cli-unknown-command", "frobnicate", "invalid choice", "frobnicate")
cli("cli-unknown-option", "verify rmsnorm:1 --trails 2", "unrecognized arguments", "--trails")
cli("graph-unknown-benchmark", "verify softmax_net", "names no benchmark", "softmax_net")
cli("graph-batch-zero", "verify rmsnorm:0", "positive integer")
cli("graph-batch-text", "verify rmsnorm:eight", "positive integer")
cli("graph-batch-absurd", "verify rmsnorm:1000000000", "needs at least", "available", "smaller")
cli("graph-no-fused-version", "verify fused:ntrans", "no hand-written fused", "ntrans")
cli("graph-selector-on-benchmark", "verify rmsnorm:1#2", "'#' selects")
cli("graph-plain-file", "verify {a_file.txt}", "names no benchmark")
cli("graph-dir-not-run", "verify {a_dir}", "not a run folder")
cli("graph-json-missing", "verify {missing.json}", "does not exist")
cli("graph-json-truncated", "verify {truncated.json}", "not valid JSON")
cli("graph-json-nested", "verify {nested.json}", "nested too deeply")
cli("graph-json-empty-list", "verify {empty_list.json}", "holds no μGraph")
cli("graph-json-wrong-format", "verify {wrong_format.json}", "not a mirage-lab μGraph file")
cli("graph-json-unknown-op", "verify {bad_op.json} --against rmsnorm:1", "unknown op", "softmax")
cli("graph-json-huge-number", "verify {huge_number.json}", "version")
cli("graph-json-several", "verify {two.json} --against {good.py}", "holds 2 μGraphs", "#INDEX")
cli("graph-json-index-range", "verify {two.json}#5 --against {good.py}", "out of range")
cli("graph-json-index-text", "verify {two.json}#first --against {good.py}", "expected the index")
cli("graph-py-missing", "verify {gone.py}", "does not exist")
cli("graph-py-raises", "verify {raises.py}", "ZeroDivisionError", "fix the program file", user_traceback=True)
cli("graph-py-mirage-error", "verify {mirage_raises.py}", "ShapeError", "matmul", user_traceback=True)
cli("graph-py-exits", "verify {exits.py}", "sys.exit(3)", "remove the exit")
cli("graph-py-defines-nothing", "verify {nothing.py}", "defines no 'program' or 'graph'")
cli("graph-py-not-a-graph", "verify {not_graph.py}", "list, not a kernel graph")
cli("graph-py-function-raises", "verify {function_raises.py}", "calling program() failed", "no weights here",
    user_traceback=True)
cli("graph-py-syntax", "verify {syntax.py}", "SyntaxError", user_traceback=True)
cli("graph-py-missing-import", "verify {imports_missing.py}", "no_such_module_anywhere", user_traceback=True)
cli("graph-py-unknown-name", "verify {good.py}#weights", "defines no 'weights'")

# --------------------------------------------------------------------------- verify

cli("cli-verify-no-program", "verify {good.py}", "--against")
cli("cli-verify-trials-negative", "verify fused:rmsnorm --trials -1", "--trials", "integer ≥ 0")
cli("verify-trials-text", "verify fused:rmsnorm --trials many", "--trials", "integer ≥ 0")
cli("cli-verify-seed-negative", "verify fused:rmsnorm --seed -3", "--seed")
cli("cli-verify-inputs-differ", "verify fused:rmsnorm --against gated_mlp:1", "inputs differ")

# --------------------------------------------------------------------------- search settings

SEARCH = "search {good.py} --executor serial --quiet --runs {runs}"
cli("set-bool-number", f"{SEARCH} --set pruning=0", "SearchConfig.pruning must be true or false")
cli("set-bool-word", f"{SEARCH} --set pruning=no", "true or false", "'no'")
cli("set-mistyped-key", f"{SEARCH} --set prunning=false", "unknown search setting 'prunning'", "did you mean")
cli("set-no-equals", f"{SEARCH} --set pruning", "KEY=VALUE")
cli("set-empty-key", f"{SEARCH} --set =3", "KEY=VALUE")
cli("set-divisor-zero", f"{SEARCH} --set grid_divisors=[0]", "grid_divisors", "entry 0")
cli("set-time-nan", f"{SEARCH} --set time_limit_s=NaN", "time_limit_s", "got nan")
cli("set-time-negative", f"{SEARCH} --set time_limit_s=-5", "time_limit_s", "> 0")
cli("set-ranges-empty", f"{SEARCH} --set forloop_ranges=[]", "forloop_ranges", "empty")
cli("set-ranges-text", f"{SEARCH} --set forloop_ranges=four", "forloop_ranges", "'four'")
cli("set-trials-zero", f"{SEARCH} --set trials=0", "trials must be an integer ≥ 1")
cli("set-ops-float", f"{SEARCH} --set max_kernel_ops=2.5", "max_kernel_ops", "2.5")
cli("set-seed-negative", f"{SEARCH} --set seed=-1", "seed must be an integer ≥ 0")
cli("set-state-limit-zero", f"{SEARCH} --set state_limit=0", "state_limit")
cli("set-order-unknown", f"{SEARCH} --set order=random", "order must be one of")
cli("set-engine-unknown", f"{SEARCH} --set oracle_engine=egg", "oracle_engine", "'egg'")
cli("set-unknown-op", f"{SEARCH} --set kernel_ops=[\"softmax\"]", "kernel_ops", "'softmax'")
cli("set-grid-pair", f"{SEARCH} --set grids=[[1,2]]", "grids", "3 values")
cli("set-imap-axis", f"{SEARCH} --set imaps=[[[0,9,-1]]]", "imaps", "9")
cli("set-blocks-order", f"{SEARCH} --set min_blocks=9000", "min_blocks (9000) must be ≤ max_blocks")
cli("search-unknown-preset", f"{SEARCH} --preset fast", "unknown search preset 'fast'")
cli("search-time-zero", f"{SEARCH} --time-limit 0", "--time-limit", "> 0")
cli("search-time-nan", f"{SEARCH} --time-limit nan", "--time-limit")
cli("search-top-zero", f"{SEARCH} --top 0", "--top", "positive integer")
cli("search-executor-unknown", f"{SEARCH} --executor threads", "executor", "'threads'")
cli("search-runs-is-file", "search {good.py} --quiet --runs {a_file.txt}", "is a file", "run folders")
cli("search-runs-below-file", "search {good.py} --quiet --runs {a_file.txt}/runs", "is a file, not a directory")
cli("search-out-is-file", f"{SEARCH} --out {{a_file.txt}}", "is a file", "--out")
cli("search-html-is-dir", f"{SEARCH} --html {{a_dir}}", "is a directory", "HTML report")

# --------------------------------------------------------------------------- codegen, bench, report, demo

cli("codegen-out-is-dir", "codegen fused:rmsnorm --out {a_dir}", "is a directory", "CUDA source")
cli("codegen-out-below-file", "codegen fused:rmsnorm --out {a_file.txt}/k.cu", "is a file")
cli("codegen-bad-json", "codegen {truncated.json}", "not valid JSON")
cli("codegen-bad-arch", "codegen fused:rmsnorm --out {k.cu} --ptx sm_7", "sm_7")
cli("bench-out-is-file", "bench --cpu --programs rmsnorm --out {a_file.txt}", "is a file", "--out")
cli("bench-batch-zero", "bench --cpu --batches 0", "--batches", "positive integer")
cli("bench-unknown-program", "bench --programs softmax_net", "invalid choice", "softmax_net")
cli("bench-repeats-zero", "bench --cpu --repeats 0", "--repeats", "positive integer")
cli("bench-unknown-hardware", "bench --cpu --hardware B200", "invalid choice", "B200")
cli("report-on-file", "report {a_file.txt}", "is a file", "run folder")
cli("report-on-plain-dir", "report {a_dir}", "a_dir")
cli("report-missing", "report {no_such_run}", "does not exist")
cli("report-html-is-dir", "report {a_dir} --html {a_dir}", "is a directory")
cli("demo-out-is-file", "demo --no-search --out {a_file.txt}", "is a file", "report folder")
cli("demo-per-file-negative", "demo --no-search --per-file -1", "--per-file")
cli("demo-tol-nan", "demo --no-search --tol nan", "--tol")
cli("demo-repeats-zero", "demo --no-search --repeats 0", "--repeats")

# --------------------------------------------------------------------------- the API: files and paths

api("load-dir", E.PathError, lambda w: ml.load(w.dir), "is a directory")
api("load-missing", E.PathError, lambda w: ml.load(w.missing), "does not exist")
api("load-truncated", E.FormatError, lambda w: ml.load(w["truncated.json"]), "not valid JSON")
api("load-nested", E.FormatError, lambda w: ml.load(w["nested.json"]), "nested too deeply")
api("load-checkpoint-as-own", E.FormatError, lambda w: ml.load(w["empty_list.json"]), "reference checkpoint")
api("load-bad-op", E.FormatError, lambda w: ml.load(w["bad_op.json"]), "unknown op 'softmax'")
api("load-keyword", E.ArgumentError, lambda w: ml.load(w["one.json"], strict=True), "'strict'")
api("save-to-dir", E.PathError, lambda w: ml.save(w.small(), w.dir), "is a directory")
api("save-below-file", E.PathError, lambda w: ml.save(w.small(), w.below_file / "g.json"), "cannot write")
api("save-not-a-graph", E.GraphError, lambda w: ml.save("rmsnorm", w.root / "g.json"), "expected a kernel graph")
api("checkpoint-dir", E.PathError, lambda w: ml.load_reference_checkpoint(w.dir), "is a directory")
api("checkpoint-era", E.FormatError,
    lambda w: ml.load_reference_checkpoint(w["empty_list.json"], era="future"), "unknown era 'future'")
api("checkpoint-keyword", E.ArgumentError, lambda w: ml.load_reference_checkpoint(w.dir, eras="older"),
    "did you mean 'era'")
api("loads-not-text", E.FormatError, lambda w: ml.ir.io.loads(5), "expected JSON text")

# --------------------------------------------------------------------------- the API: builders

api("input-zero-dim", E.ShapeError, lambda w: ml.new_kernel_graph().new_input(dims=(0, 4)), "dims[0] = 0")
api("input-keyword", E.ArgumentError, lambda w: ml.new_kernel_graph().new_input(dim=(2, 3)),
    "did you mean 'dims'")
api("input-dtype", E.UnsupportedOpError, lambda w: ml.new_kernel_graph().new_input(dims=(4,), dtype="float7"),
    "unknown dtype 'float7'")
api("input-dtype-reference-only", E.UnsupportedOpError,
    lambda w: ml.new_kernel_graph().new_input(dims=(4,), dtype=ml.float8), "float8 tensors are not supported")
api("input-dtype-as-strides", E.ShapeError, lambda w: ml.new_kernel_graph().new_input((4,), ml.float32),
    "the second argument is strides")
api("grid-zero", E.MapError, lambda w: ml.new_threadblock_graph(grid_dim=(0, 1, 1)), "grid_dim.x = 0")
api("grid-keyword", E.ArgumentError, lambda w: ml.new_threadblock_graph(grid=(1, 1, 1)), "grid_dim")
api("program-batch-zero", E.ShapeError, lambda w: ml.bench.programs.rmsnorm(batch_size=0), "batch")
api("program-keyword", E.ArgumentError, lambda w: ml.bench.programs.rmsnorm(batch=8), "did you mean 'batch_size'")


def _mismatched_matmul(w: Workspace) -> Any:
    g = ml.new_kernel_graph()
    return g.matmul(g.new_input(dims=(2, 3)), g.new_input(dims=(4, 5)))


def _bad_imap(w: Workspace) -> Any:
    g = ml.new_kernel_graph()
    x = g.new_input(dims=(8, 8))
    tb = ml.new_threadblock_graph(grid_dim=(2, 1, 1))
    return tb.new_input(x, input_map=(5, -1, -1))


api("matmul-shapes", E.ShapeError, _mismatched_matmul, "matmul")
api("imap-out-of-range", E.MapError, _bad_imap, "5")

# --------------------------------------------------------------------------- the API: interpret and verify


def _interpret(**kw: Any) -> Callable[[Workspace], Any]:
    return lambda w: ml.interpret(w.small(), w.small_inputs(), **kw)


api("interpret-count", E.InputError, lambda w: ml.interpret(w.small(), [np.ones((2, 256))]), "2 inputs")
api("interpret-shape", E.InputError, lambda w: ml.interpret(w.small(), [np.ones((2, 256)), np.ones((256, 5))]),
    "input 1 must have shape (256, 512)")
api("interpret-bare-array", E.InputError, lambda w: ml.interpret(w.small(), np.ones((2, 256))), "list of arrays")
api("interpret-ragged", E.InputError, lambda w: ml.interpret(w.small(), [[[1, 2], [3]], np.ones((256, 512))]),
    "rectangular")
api("interpret-dtype", E.InputError, _interpret(dtype="float17"), "dtype must be one of")
api("interpret-backend", E.UnsupportedOpError, _interpret(backend="tpu"), "unknown backend 'tpu'")
api("interpret-keyword", E.ArgumentError, _interpret(dtypes="float32"), "did you mean 'dtype'")
api("interpret-not-graph", E.GraphError, lambda w: ml.interpret("rmsnorm", []), "expected a kernel graph")
api("interpret-missing-inputs", E.ArgumentError, lambda w: ml.interpret(w.small()), "'inputs'")
api("verify-absurd-size", E.ResourceError,
    lambda w: ml.verify(ml.bench.programs.rmsnorm(10**9), ml.bench.programs.rmsnorm(10**9)),
    "needs at least", "TiB", "available")
api("verify-trials-negative", E.InputError, lambda w: ml.verify(w.small(), w.small(), trials=-1), "trials")
api("verify-trials-float", E.InputError, lambda w: ml.verify(w.small(), w.small(), trials=2.5), "trials")
api("verify-seed-negative", E.InputError, lambda w: ml.verify(w.small(), w.small(), seed=-2), "seed")
api("verify-float-check", E.InputError, lambda w: ml.verify(w.small(), w.small(), float_check="yes"),
    "float_check must be")
api("verify-parity", E.InputError, lambda w: ml.verify(w.small(), w.small(), parity="newest"), "parity must be")
api("verify-field", E.InputError, lambda w: ml.verify(w.small(), w.small(), field=7), "FieldSpec")
api("verify-keyword", E.ArgumentError, lambda w: ml.verify(w.small(), w.small(), trails=3), "did you mean 'trials'")
api("verify-missing-reference", E.ArgumentError, lambda w: ml.verify(w.small()), "'reference'")
api("verify-inputs-differ", E.InputError, lambda w: ml.verify(w.small(), ml.bench.programs.rmsnorm(1)),
    "inputs differ")

# --------------------------------------------------------------------------- the API: settings and search

api("preset-unknown", E.InputError, lambda w: preset("fast"), "unknown search preset 'fast'")
api("preset-keyword", E.ArgumentError, lambda w: preset("mlp", max_kernel=3), "did you mean 'max_kernel_ops'")
api("config-bool-string", E.InputError, lambda w: preset("mlp", pruning="False"), "pruning must be true or false")
api("config-zero-divisor", E.InputError, lambda w: preset("mlp", grid_divisors=[0]), "grid_divisors")
api("config-nan-time", E.InputError, lambda w: preset("mlp", time_limit_s=math.nan), "time_limit_s")
api("config-trials-zero", E.InputError, lambda w: SearchConfig(trials=0), "trials")
api("config-keyword", E.ArgumentError, lambda w: SearchConfig(prunning=False), "did you mean 'pruning'")
api("config-json-text", E.InputError, lambda w: SearchConfig.from_json("{pruning"), "not valid JSON")
api("config-json-bool-string", E.InputError, lambda w: SearchConfig.from_json('{"pruning": "false"}'),
    "pruning must be true or false")
api("config-json-not-object", E.InputError, lambda w: SearchConfig.from_json("[1]"), "JSON object")
api("config-json-number", E.InputError, lambda w: SearchConfig.from_json(5), "JSON text or a dict")
api("config-json-unknown", E.InputError, lambda w: SearchConfig.from_json('{"prunning": false}'),
    "did you mean 'pruning'")
api("search-string-bool", E.InputError, lambda w: ml.superoptimize(w.small(), "mlp", run_dir=False, pruning="no"),
    "pruning must be true or false")
api("search-keyword", E.ArgumentError, lambda w: ml.superoptimize(w.small(), run_dir=False, prunning=False),
    "did you mean 'pruning'")
api("search-not-graph", E.GraphError, lambda w: ml.superoptimize("rmsnorm", run_dir=False), "expected a kernel graph")
api("search-bad-config", E.InputError, lambda w: ml.superoptimize(w.small(), 5, run_dir=False),
    "config must be a SearchConfig or a preset name")
api("search-executor", E.InputError, lambda w: ml.superoptimize(w.small(), run_dir=False, executor="threads"),
    "executor must be")
api("search-run-dir-file", E.PathError, lambda w: ml.superoptimize(w.small(), run_dir=w.file), "is a file")
api("search-run-dir-below-file", E.PathError, lambda w: ml.superoptimize(w.small(), run_dir=w.below_file),
    "is a file")
api("load-run-plain-dir", E.InputError, lambda w: ml.search.load_run(w.dir), "not a run folder")
api("load-run-file", E.PathError, lambda w: ml.search.load_run(w.file), "is a file")

# --------------------------------------------------------------------------- the API: codegen and widgets

api("codegen-keyword", E.ArgumentError, lambda w: ml.generate_cuda(w.small(), prefech=False), "prefetch")
api("codegen-option-type", E.ArgumentError, lambda w: ml.generate_cuda(w.small(), prefetch="no"), "True or False")
api("codegen-not-graph", E.GraphError, lambda w: ml.generate_cuda("rmsnorm"), "expected a kernel graph")
api("compile-without-gpu", E.UnsupportedOpError, lambda w: ml.compile(w.small()), "CuPy")
api("widget-keyword", E.ArgumentError, lambda w: _widgets().MuGraphViewer(w.small(), heigth=300), "'heigth'")
api("widget-diff-missing", E.ArgumentError, lambda w: _widgets().GraphDiff(w.small()), "'right'")
api("widget-roofline-empty", E.InputError, lambda w: _widgets().roofline_figure({}, "H100"), "non-empty")
api("widget-roofline-hardware", E.InputError, lambda w: _widgets().roofline_figure(w.small(), "B200"), "B200")
api("widget-export-not-run", E.InputError, lambda w: _widgets().export_html(w.dir, w.root / "r.html"), "a_dir")
api("absexpr-parse", E.InputError, lambda w: ml.absexpr.parse("exp("), "ends too early")


# --------------------------------------------------------------------------- writers never replace what is not a file

cli("codegen-out-fifo", "codegen fused:rmsnorm --out {a_fifo}", "named pipe", "not a regular file")
cli("codegen-out-fifo-link", "codegen fused:rmsnorm --out {fifo_link.json}", "a link to", "named pipe")
cli("codegen-out-dangling", "codegen fused:rmsnorm --out {dangling.json}", "symbolic link to nothing")
cli("codegen-triton-out-fifo", "codegen fused:rmsnorm --backend triton --out {a_fifo}", "named pipe")
cli("search-html-fifo", f"{SEARCH} --html {{a_fifo}}", "named pipe", "HTML report")
cli("report-html-fifo", "report {a_dir} --html {a_fifo}", "named pipe")
api("save-fifo", E.PathError, lambda w: ml.save(w.small(), w.fifo), "named pipe", "left alone")
api("save-dangling-link", E.PathError, lambda w: ml.save(w.small(), w.dangling), "symbolic link to nothing")
api("save-link-to-fifo", E.PathError, lambda w: ml.save(w.small(), w["fifo_link.json"]), "a link to", "named pipe")
api("checkpoint-export-fifo", E.PathError,
    lambda w: _checkpoint_export().save_reference_checkpoint([w.small()], w.fifo), "named pipe")
api("drop-in-to-json-fifo", E.PathError, lambda w: _drop_in_graph().to_json(str(w.fifo)), "named pipe")


def _checkpoint_export() -> Any:
    from mirage_lab.ir import checkpoint_export

    return checkpoint_export


def _drop_in_graph() -> Any:
    g = ml.new_kernel_graph()
    g.mark_output(g.exp(g.new_input(dims=(8, 64), dtype=ml.float16)))
    return g


# --------------------------------------------------------------------------- values the interpreter cannot honour


def _interpret_one(value: Any, **kw: Any) -> Callable[[Workspace], Any]:
    """Interpret ``exp`` of one (2, 4) input given as ``value``."""
    def call(w: Workspace) -> Any:
        g = ml.new_kernel_graph()
        g.mark_output(g.exp(g.new_input(dims=(2, 4), dtype=ml.float32)))
        return ml.interpret(g, [value], **kw)
    return call


api("interpret-complex", E.InputError, _interpret_one(np.ones((2, 4)) * (1 + 2j)), "complex", "np.real")
api("interpret-object-none", E.InputError, _interpret_one(np.array([[1.0, None, 2.0, 3.0]] * 2, dtype=object)),
    "None at (0, 1)", "np.nan")
api("interpret-object-string", E.InputError, _interpret_one(np.array([[1.0, 2.0, 3.0, "x"]] * 2, dtype=object)),
    "a str", "(0, 3)")
api("interpret-list-of-none", E.InputError, _interpret_one([[None] * 4] * 2), "None")
api("interpret-strings", E.InputError, _interpret_one([["1"] * 4] * 2), "strings", "dtype=float")
api("interpret-bytes", E.InputError, _interpret_one(np.full((2, 4), b"1")), "byte strings")
api("interpret-datetime", E.InputError, _interpret_one(np.zeros((2, 4), dtype="datetime64[s]")), "dates and times")
api("interpret-timedelta", E.InputError, _interpret_one(np.zeros((2, 4), dtype="timedelta64[s]")), "time spans")
api("interpret-structured", E.InputError, _interpret_one(np.zeros((2, 4), dtype=[("a", "f4")])), "structured")
api("interpret-masked", E.InputError, _interpret_one(np.ma.masked_array(np.ones((2, 4)), mask=True)),
    "masked entries", "filled")
api("interpret-ns-unknown", E.InputError, _interpret_one(np.ones((2, 4)), ns="fields"), "ns='fields'",
    "did you mean 'field'")
api("interpret-ns-class", E.InputError, _interpret_one(np.ones((2, 4)), ns=FieldArith), "is a class",
    "FieldArith()")
api("interpret-ns-number", E.InputError, _interpret_one(np.ones((2, 4)), ns=5), "ns must be a number system")
api("interpret-field-complex", E.InputError, _interpret_one(np.ones((2, 4)) * 1j, ns="field"), "complex")

# --------------------------------------------------------------------------- bounds on what a user can ask

cli("verify-trials-huge", "verify fused:rmsnorm --trials 10000000", "trials=10000000", "at most 1,000")
cli("set-trials-huge", f"{SEARCH} --set trials=5000", "trials", "≤ 1000")
cli("bench-repeats-huge", "bench --cpu --programs rmsnorm --repeats 1000000", "repeats=1000000", "at most 100,000")
cli("demo-repeats-huge", "demo --no-search --repeats 1000000", "repeats=1000000", "at most 100,000")
api("api-verify-trials-huge", E.InputError, lambda w: ml.verify(w.small(), w.small(), trials=10**7), "at most 1,000")
api("verify-trials-memory", E.ResourceError,
    lambda w: ml.verify(ml.bench.programs.rmsnorm(8), ml.bench.programs.rmsnorm(8), trials=1000),
    "trials=1000", "each keeps one evaluation", "fewer trials")
api("config-trials-huge", E.InputError, lambda w: preset("mlp", trials=10**6), "trials", "≤ 1000")
api("timing-repeats-huge", E.InputError,
    lambda w: ml.codegen.BACKENDS["reference"].time(w.small(), w.small_inputs(), repeats=10**6), "at most 100,000")
api("timing-warmup-negative", E.InputError,
    lambda w: ml.codegen.BACKENDS["reference"].time(w.small(), w.small_inputs(), warmup=-1), "warmup")
api("measure-cpu-repeats-huge", E.InputError,
    lambda w: ml.bench.timing.measure_cpu(["rmsnorm"], [1], repeats=10**6, log=lambda _: None), "at most 100,000")
api("drop-in-profile-iters", E.InputError,
    lambda w: _drop_in_graph().superoptimize(profile_iters=10**7), "profile_iters=10000000", "at most")
api("drop-in-warmup-text", E.InputError, lambda w: _drop_in_graph().superoptimize(warmup_iters="many"),
    "warmup_iters must be an integer")

# --------------------------------------------------------------------------- what was asked and not done

cli("demo-reference-dir-missing", "demo --no-search --reference-dir {no_such_dir}", "--reference-dir", "does not exist")
cli("demo-reference-dir-file", "demo --no-search --reference-dir {a_file.txt}", "not a folder")
cli("demo-reference-dir-empty", "demo --no-search --reference-dir {empty_refs}", "holds none of the reference")
cli("demo-reference-dir-and-none", "demo --no-search --no-references --reference-dir {a_dir}", "one or the other")
cli("bench-reference-dir-missing", "bench --cpu --reference-dir {no_such_dir}", "--reference-dir", "does not exist")
cli("codegen-ptx-triton-suffix", "codegen fused:rmsnorm --backend triton --ptx sm_90a", "plain sm_XX", "sm_90a")
cli("codegen-ptx-arch-word", "codegen fused:rmsnorm --ptx hopper", "CUDA architecture", "'hopper'")
api("reference-dir-env-missing", E.PathError, lambda w: _with_env("MIRAGE_REFERENCE_MUGRAPHS", str(w.root / "nope"),
                                                                  ml.bench.find_reference_dir),
    "$MIRAGE_REFERENCE_MUGRAPHS", "does not exist")
api("reference-dir-explicit-file", E.PathError, lambda w: ml.bench.find_reference_dir(w.file), "not a folder")
api("target-cc-text", E.InputError, lambda w: _mi().generate_cuda_program(_drop_in_graph(), target_cc="80"),
    "target_cc must be", "'80'")
api("target-cc-short", E.InputError, lambda w: _mi().get_shared_memory_capacity(8), "target_cc", "got 8")
api("target-cc-bool", E.InputError, lambda w: _mi().generate_triton_program(_drop_in_graph(), target_cc=True),
    "target_cc")
api("nvcc-arch-word", E.InputError, lambda w: ml.codegen.nvcc_ptx("", "hopper"), "CUDA architecture")


def _with_env(name: str, value: str, fn: Callable[[], Any]) -> Any:
    """``fn()`` with the environment variable ``name`` set to ``value`` (restored afterwards)."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        return fn()
    finally:
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before


def _mi() -> Any:
    """The drop-in, as a script written for Mirage imports it."""
    import mirage_lab as mi

    return mi


def _widgets() -> Any:
    from mirage_lab import widgets

    return widgets


# --------------------------------------------------------------------------- running a case


def run_case(case: Case, workspace: Workspace) -> Outcome:
    if case.argv is not None:
        return _run_cli(case, workspace)
    assert case.call is not None
    try:
        case.call(workspace)
    except E.MirageError as e:
        return _judge(case, isinstance(e, case.expect) if isinstance(case.expect, type) else False,
                      f"{type(e).__name__}: {e}", str(e))
    except Exception as e:
        return Outcome("traceback", f"{type(e).__name__}: {e}")
    return Outcome("silent", "no error")


def _run_cli(case: Case, workspace: Workspace) -> Outcome:
    from mirage_lab.cli import main

    argv = [re.sub(r"\{([^}]+)\}", lambda m: workspace[m.group(1)], a) for a in case.argv or ()]
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
    except SystemExit as e:  # argparse's usage and error (not one line), or a program file's own exit (no word)
        said = [ln for ln in err.getvalue().splitlines() if "error:" in ln]
        kind = "unclear" if said else "silent"
        return Outcome(kind, f"exit {e.code} from inside main: {(said or ['(nothing on stderr)'])[-1][:200]}")
    except Exception as e:
        return Outcome("traceback", f"{type(e).__name__}: {e}")
    lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
    if status == 0:
        return Outcome("silent", f"exit 0: {(lines or ['(nothing on stderr)'])[-1]}")
    message = lines[-1] if lines else ""
    extra = [ln for ln in lines[:-1] if not ln.startswith("mirage-lab: running ")]  # the .py notice
    one_line = message.startswith("mirage-lab: error: ") and (not extra or case.user_traceback)
    return _judge(case, status == case.expect and one_line, f"exit {status}: {message}", message)


def _judge(case: Case, right_kind: bool, detail: str, message: str) -> Outcome:
    missing = [s for s in case.says if s.lower() not in message.lower()]
    if right_kind and not missing:
        return Outcome("clear", detail)
    why = f"expected {case.expect if isinstance(case.expect, int) else case.expect.__name__}"
    return Outcome("unclear", f"{detail} ({why}{'; missing ' + repr(missing) if missing else ''})")


def summarize(outcomes: Sequence[tuple[Case, Outcome]]) -> dict[str, int]:
    counts = {"tried": len(outcomes), "clear": 0, "unclear": 0, "silent": 0, "traceback": 0, "hang": 0}
    for _, o in outcomes:
        counts[o.kind] += 1
    return counts
