"""Where the command line's graphs come from: one text names a μGraph (``GRAPH`` in ``mirage-lab --help``).

    rmsnorm, rmsnorm:8          a benchmark program (SPEC §9), unfused, at batch 1 or 8
    fused:rmsnorm:8             its hand-written fused μGraph (mirage_lab.bench.fused)
    graph.json[#i]              a file written by ml.save (graph i of several; default the only one)
    reference.json#i            a reference implementation checkpoint (SPEC §10): its i-th μGraph
    program.py[#name]           a Python file that builds a graph: the variable ``name`` (default ``program``,
                                then ``graph``), a KernelGraph, a builder, or a function returning one
    runs/<program>-<config>[#i] a finished search's run folder: its i-th ranked μGraph (default the best)

A ``.py`` file is run as Python — it is the user's own program, as with ``python program.py``, and the
command says so in one line before running it — while JSON files are only ever parsed, never executed.
An error in the file shows the traceback of the user's own code, then one line.
"""

from __future__ import annotations

import runpy
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mirage_lab.bench import fused, programs
from mirage_lab.errors import InputError, MirageError
from mirage_lab.ir.builder import KernelGraphBuilder, as_graph
from mirage_lab.ir.checkpoint import load_reference_checkpoint
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.io import loads_doc, read_json
from mirage_lab.paths import input_file

FORMS = ("a benchmark name[:batch] (" + ", ".join(programs.PROGRAMS) + "), fused:NAME[:batch], a .json "
         "μGraph or reference checkpoint [#index], a .py file [#variable], or a run folder [#rank]")


class ProgramFileError(InputError):
    """A program file (``GRAPH`` given as ``.py``) raised: the message, and the traceback of the user's own code,
    which the command line prints before the one-line error."""

    def __init__(self, message: str, user_traceback: str) -> None:
        super().__init__(message)
        self.user_traceback = user_traceback


@dataclass(frozen=True)
class Source:
    """A resolved graph and what it was called, for messages and file names."""

    graph: KernelGraph
    label: str
    benchmark: str | None = None  # the benchmark program's name, when the text named one
    program: Source | None = None  # what the graph should compute, when the text says (fused:, a run folder)

    def __repr__(self) -> str:
        return f"Source({self.label!r}, {len(self.graph.compute_nodes)} kernel op(s))"


def resolve(text: str) -> Source:
    """The μGraph ``text`` names (see the module docstring); a clear ``InputError`` otherwise."""
    path_text, _, selector = text.partition("#")
    path = Path(path_text)
    if path.is_dir():
        return _from_run(path, selector)
    if path.suffix == ".json":
        return _from_json(path, selector)
    if path.suffix == ".py":
        return _from_python(path, selector or None)
    if selector:
        raise InputError(f"{text!r}: '#' selects inside a file or run folder, and {path_text!r} is neither")
    return _from_benchmark(text)


def benchmark_program(text: str) -> tuple[str, int]:
    """``name[:batch]`` → (name, batch), checked against the benchmark table."""
    name, _, batch = text.partition(":")
    if name not in programs.PROGRAMS:
        raise InputError(f"{text!r} names no benchmark, file or run folder; expected {FORMS}")
    try:
        b = int(batch or 1)
    except ValueError:
        raise InputError(f"{text!r}: the batch after ':' must be a positive integer (1 or 8 in the paper)") from None
    if b < 1:
        raise InputError(f"{text!r}: the batch after ':' must be a positive integer (1 or 8 in the paper)")
    return name, b


def _from_benchmark(text: str) -> Source:
    is_fused = text.startswith("fused:")
    name, batch = benchmark_program(text.removeprefix("fused:"))
    program = Source(programs.PROGRAMS[name](batch), f"{name}_bs{batch}", name)
    if not is_fused:
        return program
    if name not in fused.FUSED:
        raise InputError(f"there is no hand-written fused μGraph for {name!r}; those are {sorted(fused.FUSED)}")
    return Source(fused.FUSED[name](batch), f"fused_{name}_bs{batch}", name, program)


def _index(selector: str, count: int, what: str) -> int:
    if not selector:
        return 0
    try:
        i = int(selector)
    except ValueError:
        raise InputError(f"#{selector}: expected the index of a {what} (0 to {count - 1})") from None
    if not 0 <= i < count:
        raise InputError(f"#{i} is out of range: there are {count} {what}s (0 to {count - 1})")
    return i


def _from_json(path: Path, selector: str) -> Source:
    doc = read_json(path)
    if doc == []:
        raise InputError(f"{path} holds no μGraph (an empty list)")
    graphs = load_reference_checkpoint(path) if isinstance(doc, list) else loads_doc(doc, str(path))
    if not graphs:
        raise InputError(f"{path} holds no μGraph")
    if len(graphs) > 1 and not selector:
        raise InputError(f"{path} holds {len(graphs)} μGraphs; pick one with {path}#INDEX (0 to {len(graphs) - 1})")
    i = _index(selector, len(graphs), "μGraph")
    return Source(graphs[i], f"{path.stem}_{i}" if len(graphs) > 1 else path.stem)


def _from_python(path: Path, name: str | None) -> Source:
    input_file(path, "program file")
    print(f"mirage-lab: running {path} as Python to build its graph (your code; name only files you trust)",
          file=sys.stderr, flush=True)
    namespace = _run_program_file(path)
    names = [name] if name else ["program", "graph"]
    found = next((n for n in names if n in namespace), None)
    if found is None:
        raise InputError(f"{path} defines no {' or '.join(repr(n) for n in names)}; assign the graph to `program` "
                         f"(a KernelGraph, a builder, or a function returning one), or name it with {path}#NAME")
    value = namespace[found]
    if callable(value) and not hasattr(value, "freeze"):
        value = _call_program_function(path, found, value)
    if not isinstance(value, KernelGraph | KernelGraphBuilder):
        raise InputError(f"{path}: {found!r} is a {type(value).__name__}, not a kernel graph; assign it "
                         "ml.new_kernel_graph()'s builder, a KernelGraph, or a function returning one")
    return Source(as_graph(value), path.stem if found == "program" else f"{path.stem}_{found}")


def _run_program_file(path: Path) -> dict[str, Any]:
    """Run the user's file; its own errors come back as a ProgramFileError carrying its traceback."""
    try:
        return runpy.run_path(str(path), run_name="__mirage_lab_program__")
    except SystemExit as e:
        raise InputError(f"{path} called sys.exit({e.code!r}) while it was run for its graph; a program file "
                         "only builds a graph: remove the exit (or guard it with if __name__ == '__main__')") from None
    except MirageError as e:
        raise ProgramFileError(f"{path} raised {type(e).__name__}: {e}", _user_traceback(e, path)) from None
    except Exception as e:
        raise ProgramFileError(f"running {path} failed ({type(e).__name__}: {e}); fix the program file",
                               _user_traceback(e, path)) from None


def _call_program_function(path: Path, name: str, fn: Any) -> Any:
    try:
        return fn()
    except MirageError as e:
        raise ProgramFileError(f"{path}: {name}() raised {type(e).__name__}: {e}", _user_traceback(e, path)) from None
    except Exception as e:
        raise ProgramFileError(f"{path}: calling {name}() failed ({type(e).__name__}: {e}); fix the program file",
                               _user_traceback(e, path)) from None


def _user_traceback(e: BaseException, path: Path) -> str:
    """The traceback from the first frame in the user's file on (ours, runpy's, are not theirs to read)."""
    tb = e.__traceback__
    target = str(path.resolve())
    while tb is not None and str(Path(tb.tb_frame.f_code.co_filename).resolve()) != target:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(e), e, tb)).rstrip()


def _from_run(path: Path, selector: str) -> Source:
    from mirage_lab.search.load import load_run  # the search layer, only when a run folder is named

    result = load_run(path)
    if not result.candidates:
        raise InputError(f"the search in {path} found no verified μGraph ({result.report.stop_reason})")
    i = _index(selector, len(result.candidates), "ranked μGraph")
    name = path.resolve().name
    return Source(result.candidates[i].graph, f"{name}_rank{i}", program=Source(result.program, f"{name} program"))


PRESET_OF_BENCHMARK = {"lora": "lora", "gqa": "attention", "mqa": "attention", "mha": "attention",
                       "qknorm_gqa": "attention"}


def config_for(source: Source, preset_name: str | None, settings: list[str]) -> Any:
    """The SearchConfig: ``preset_name`` (default: the benchmark's, else "default") with ``KEY=VALUE`` settings,
    each VALUE read by its setting's rule (``search/settings.py``): ``forloop_ranges=[4,16]``, ``pruning=false``."""
    from mirage_lab.search.config import SearchConfig, as_config

    base = as_config(preset_name or PRESET_OF_BENCHMARK.get(source.benchmark or "", "mlp" if source.benchmark
                                                            else "default"))
    changes: dict[str, str] = {}
    for item in settings:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise InputError(f"--set {item!r}: expected KEY=VALUE, e.g. --set forloop_ranges=[4,16]")
        changes[key.strip()] = value
    return SearchConfig.from_settings(base, changes) if changes else base
