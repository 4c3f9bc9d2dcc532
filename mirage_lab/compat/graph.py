"""``KNGraph``: the kernel graph that Mirage scripts build, search and call, written as they write it.

    import mirage_lab as mi                       # was: import mirage as mi
    graph = mi.new_kernel_graph()
    X = graph.new_input(dims=(8, 4096), dtype=mi.float16)
    ...
    graph.mark_output(O)
    optimized = graph.superoptimize(config="mlp")  # the best verified μGraph, itself a KNGraph
    (out,) = optimized(inputs=[x, w])              # numpy, CuPy or torch in; the same kind out

A ``KNGraph`` is a ``KernelGraphBuilder`` (every builder method, the reference's argument order) with the
reference's graph-level methods. The one ``superoptimize`` returns carries the whole ``SearchResult`` as
``.result`` for the workbench.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mirage_lab.arguments import checked_methods
from mirage_lab.codegen import generate_cuda, generate_triton
from mirage_lab.codegen.arch import arch_of_cc
from mirage_lab.compat.keywords import SearchPlan, plan_search
from mirage_lab.compat.notices import notice
from mirage_lab.compat.reference_api import compile_notices, generate_cuda_program, out_of_scope
from mirage_lab.compat.running import GraphRunner
from mirage_lab.errors import GraphError, InputError
from mirage_lab.ir.builder import BlockGraphBuilder, KernelGraphBuilder, as_graph
from mirage_lab.ir.checkpoint import loads_reference_checkpoint
from mirage_lab.ir.checkpoint_export import dumps_reference_checkpoint, save_reference_checkpoint
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.io import read_json, write_atomic
from mirage_lab.ir.ops import Op
from mirage_lab.ir.refformat import detect_era
from mirage_lab.ir.tensor import DTensor
from mirage_lab.search import SearchResult
from mirage_lab.search import superoptimize as search
from mirage_lab.semantics.backend import cupy_available
from mirage_lab.semantics.interpret import check_inputs

__all__ = ["KNGraph", "TBGraph", "cy_from_json", "cy_to_json", "new_kernel_graph"]

LOG = logging.getLogger(__name__)
#: the reference's name for a thread-block graph builder
TBGraph = BlockGraphBuilder


class _Unset:
    def __repr__(self) -> str:
        return "<not given>"


UNSET: Any = _Unset()
#: keywords a call takes beside inputs= and outputs= (the reference passes them on to compile)
CALL_KEYWORDS = {"stream", "verbose", "target_cc", "num_warp_groups", "pipeline_stages", "profiling",
                 "enable_online_softmax", "file_id"}
#: on a GPU, how many of the cost model's best μGraphs are compiled and timed (the reference times all of them;
#: compiling each takes seconds, and the proxy's top ranks hold the fastest: docs/decisions.md, issue 6)
TIMED = 8
@checked_methods
class KNGraph(KernelGraphBuilder):
    """A kernel graph as Mirage's Python API builds it: a builder that also searches, runs and saves."""

    def __init__(self, graph: KernelGraph | KernelGraphBuilder | None = None) -> None:
        """An empty graph to build, or (as the reference's ``KNGraph(cygraph)``) one holding ``graph``."""
        super().__init__()
        self.result: SearchResult | None = None
        self.backend = "cuda"
        self._runner = GraphRunner()
        self._asked: set[str] = set()  # graphs whose compile keywords were answered
        if graph is not None:
            self._load(as_graph(graph))

    @classmethod
    def from_graph(cls, graph: KernelGraph, result: SearchResult | None = None) -> KNGraph:
        """A KNGraph holding a frozen graph (a search's best, a loaded file), ready to call or extend."""
        g = cls(graph)
        g.result = result
        return g

    def _load(self, graph: KernelGraph) -> None:
        self._tensors, self._nodes, self._outputs = list(graph.tensors), list(graph.nodes), list(graph.outputs)

    @property
    def cygraph(self) -> KNGraph:
        """The reference's handle to its C++ graph; here the graph itself (``mi.generate_cuda_program(g.cygraph)``)."""
        return self

    # -- searching ---------------------------------------------------------------
    def superoptimize(self, imaps: Any = UNSET, omaps: Any = UNSET, griddims: Any = UNSET, blockdims: Any = UNSET,
                      fmaps: Any = UNSET, franges: Any = UNSET, verbose: Any = UNSET, config: Any = UNSET,
                      backend: Any = UNSET, warmup_iters: Any = UNSET, profile_iters: Any = UNSET,
                      use_graph_dataset: Any = UNSET, use_cached_graphs: Any = UNSET, save_codes: Any = UNSET,
                      is_formal_verified: Any = UNSET, previous_checkpoint: Any = UNSET,
                      **settings: Any) -> KNGraph:
        """Search for the fastest verified μGraph equal to this graph and return it (callable, a KNGraph).

        The reference's keywords mean what they mean there (docs/compat.md); any ``SearchConfig`` field may be
        passed too (``time_limit_s=60``). ``MIRAGE_LAB_TIME_LIMIT`` caps the search whatever is asked. With no
        verified μGraph (a search cut short), the program itself comes back, with a notice.
        """
        named = dict(imaps=imaps, omaps=omaps, griddims=griddims, blockdims=blockdims, fmaps=fmaps,
                     franges=franges, verbose=verbose, config=config, backend=backend, warmup_iters=warmup_iters,
                     profile_iters=profile_iters, use_graph_dataset=use_graph_dataset,
                     use_cached_graphs=use_cached_graphs, save_codes=save_codes,
                     is_formal_verified=is_formal_verified, previous_checkpoint=previous_checkpoint)
        given = {k: v for k, v in named.items() if v is not UNSET}
        plan = plan_search(given, settings, gpu=cupy_available())
        program = self.freeze()
        result = search(program, plan.config, run_dir=plan.run_dir)
        return self._chosen(program, result, plan)

    def _chosen(self, program: KernelGraph, result: SearchResult, plan: SearchPlan) -> KNGraph:
        if plan.verbose:
            print(result.report)
            print(result.to_frame().head(20).to_string(index=False))
        if not result.candidates:
            notice(f"superoptimize found no verified μGraph ({result.report.stop_reason}"
                   f"{result.report.cap_note()}); returning the program itself, unfused")
            return KNGraph.from_graph(program, result)
        graphs = [c.graph for c in result.candidates]
        best = self._runner.fastest(graphs[:TIMED], plan.warmup_iters, plan.profile_iters, plan.verbose,
                                    plan.backend) if plan.time_on_gpu else graphs[0]
        if plan.checkpoint is not None:
            save_reference_checkpoint(graphs, plan.checkpoint)
        if plan.save_codes:
            path = Path("generated_codes") / f"mugraph_{best.canonical_hash()[:12]}.cu"
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, generate_cuda(best))
            LOG.info("saved the best μGraph's CUDA to %s", path)
        chosen = KNGraph.from_graph(best, result)
        chosen.backend = plan.backend
        return chosen

    # -- running -------------------------------------------------------------------
    def __call__(self, inputs: Sequence[Any] | None = None, outputs: Sequence[DTensor] | None = None,
                 **kwargs: Any) -> list[Any]:
        """Run the graph on ``inputs`` (numpy, CuPy or torch); outputs come back as the same kind of array.

        On a CUDA device the compiled kernels run; without one, the interpreter (said once). ``outputs`` picks
        which tensors to return (the reference's ``graph(inputs=..., outputs=[...])``), marked or not. The
        reference's compile keywords (``target_cc``, ``num_warp_groups``, …) are taken as ``compile`` takes them.
        """
        if inputs is None:
            raise InputError("pass the input arrays: graph(inputs=[x, ...]), one per new_input, in order")
        unknown = sorted(set(kwargs) - CALL_KEYWORDS)
        if unknown:
            raise InputError(f"graph(...) takes inputs=, outputs= and {', '.join(sorted(CALL_KEYWORDS))}, not "
                             f"{', '.join(unknown)}")
        if kwargs.get("stream") is not None:
            notice("graph(stream=...): kernels run on the current CuPy stream; the stream argument is not used")
        if kwargs.pop("verbose", False):
            print("inputs:", ", ".join(f"{tuple(a.shape)} {a.dtype}" for a in inputs))
        graph = self._frozen_with(outputs)
        asked = {k: v for k, v in kwargs.items() if k != "stream"}
        if asked.get("target_cc") is not None:
            arch_of_cc(asked["target_cc"])  # on every call: the notices below come once per graph
        if asked and graph.canonical_hash() not in self._asked:
            self._asked.add(graph.canonical_hash())
            compile_notices(**{k: v for k, v in asked.items() if k != "file_id"})
        return self._runner.run(graph, inputs, self.backend)

    def cuda_call(self, **kwargs: Any) -> list[Any]:
        """The reference's name for calling the graph on CUDA: the same as ``graph(**kwargs)``."""
        return self(**kwargs)

    def triton_call(self, inputs: Sequence[Any] | None = None, outputs: Sequence[DTensor] | None = None,
                    **kwargs: Any) -> list[Any]:
        """Run the graph's Triton module: its kernels on a CUDA device, Triton's CPU interpreter without one."""
        if inputs is None:
            raise InputError("pass the input arrays: graph.triton_call(inputs=[x, ...])")
        backend = "triton" if self._runner.on_device() else "triton-interpreter"
        return self._runner.run(self._frozen_with(outputs), inputs, backend)

    def generate_triton_program(self, filepath: str) -> None:
        """Write the graph's Triton module to ``filepath`` (the reference's ``cygraph.generate_triton_program``)."""
        write_atomic(filepath, generate_triton(self.freeze()))

    def _frozen_with(self, outputs: Sequence[DTensor] | None) -> KernelGraph:
        if outputs is None:
            if not self._outputs:
                raise GraphError("the graph has no outputs: call graph.mark_output(tensor), or name the tensors to "
                                 "return with graph(inputs=[...], outputs=[t, ...])")
            return self.freeze()
        picked = [outputs] if isinstance(outputs, DTensor) else list(outputs)
        ids = [self._resolve(t, f"outputs[{i}]") for i, t in enumerate(picked)]
        if not ids:
            raise GraphError("outputs=[] names no tensor; list the tensors to return, or leave outputs out")
        return KernelGraph(tuple(self._tensors), tuple(self._nodes), tuple(ids))

    def compile(self, async_: bool = False, inputs: Sequence[Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        """The reference's compile step: generate (and on a GPU compile) the kernels; returns the program's dict
        (``generate_cuda_program``). ``inputs`` are checked against the graph; calling compiles on first use anyway."""
        graph = self.freeze()
        if async_:
            notice("compile(async_=True): compiled now, synchronously")
        if "file_id" in kwargs:
            notice(f"compile(file_id={kwargs.pop('file_id')!r}): use save_codes=True or ml.generate_cuda to keep code")
        if inputs is not None:
            check_inputs(graph, inputs)
        program = generate_cuda_program(graph, **kwargs)
        self._runner.prepare(graph)
        return program

    def get_error_message(self) -> str:
        """The reference's compile status text: a graph that freezes generates code ("No error")."""
        self.freeze()
        return "No error"

    def valid_kernels(self) -> bool:
        """True: a graph that freezes is one mirage-lab can generate code for (a ResourceError says otherwise)."""
        self.freeze()
        return True

    # -- reading and writing ---------------------------------------------------------
    def visualize(self, file_name: str) -> Path:
        """Write ``file_name``.dot and ``file_name``.png: the kernel graph with each custom kernel's block graph."""
        from mirage_lab.compat.drawing import write_drawing

        return write_drawing(self.freeze(), file_name)

    def to_json(self, filename: str | os.PathLike[str]) -> None:
        """Write the graph in the reference's JSON format (one graph: a list of operators)."""
        text = dumps_reference_checkpoint(self.freeze())
        write_atomic(filename, text[text.index("[", 1):text.rindex("]")].strip() + "\n")

    def from_json(self, filename: str | os.PathLike[str]) -> None:
        """Replace this graph by the one in ``filename`` (the reference's JSON: one graph, or a list of them)."""
        doc = read_json(filename)
        single = isinstance(doc, list) and (not doc or isinstance(doc[0], dict))
        doc = [doc] if single else doc
        # the reference writes its current era; a file whose codes do not say is read as that
        graphs = loads_reference_checkpoint(doc, str(filename), None if detect_era(doc) else "current")
        if len(graphs) != 1:
            raise InputError(f"{filename} holds {len(graphs)} graphs; load one with "
                             "mi.load_reference_checkpoint(path)[i]")
        self._load(graphs[0])

    # -- the reference's queries -------------------------------------------------------
    def get_input_dtensors(self) -> list[DTensor]:
        return [DTensor(self, n.outputs[0]) for n in self._nodes if n.op is Op.INPUT]

    def get_num_inputs(self) -> int:
        return len(self.get_input_dtensors())

    def get_num_outputs(self) -> int:
        return len(self._outputs)

    def get_input_dtensor_shape_and_stride(self, A: DTensor) -> tuple[tuple[int, ...], tuple[int, ...]]:
        tid = self._resolve(A, "get_input_dtensor_shape_and_stride")
        node = next((n for n in self._nodes if n.op is Op.INPUT and n.outputs[0] == tid), None)
        if node is None:
            raise GraphError(f"d{tid} is not an input of this graph; pass one of graph.get_input_dtensors()")
        return self._tensors[tid].dims, tuple(node.attr("strides"))

    def get_owner_independent_hash(self) -> int:
        """A content hash of the graph (the first 64 bits of its canonical sha256)."""
        return int(self.freeze().canonical_hash()[:16], 16)

    # -- the persistent-kernel runtime (out of scope) -------------------------------------
    attach_torch_tensor = out_of_scope("attach_torch_tensor (MPK)")
    attach_cuda_tensor = out_of_scope("attach_cuda_tensor (MPK)")
    attach_nvshmem_tensor = out_of_scope("attach_nvshmem_tensor (nvshmem)")
    fuse_tensors = out_of_scope("fuse_tensors (MPK)")
    shuffle_tensors = out_of_scope("shuffle_tensors (MPK)")
    register_task = out_of_scope("register_task (MPK)")
    generate_task_graph = out_of_scope("generate_task_graph (MPK, multi-GPU)")

    def __repr__(self) -> str:
        found = "" if self.result is None else f", best of {len(self.result.candidates)} verified"
        return super().__repr__().replace("KernelGraphBuilder(", "KNGraph(", 1)[:-1] + found + ")"


def cy_to_json(input_graph: Any, filename: str) -> None:
    """Write ``input_graph`` in the reference's JSON format (``KNGraph.to_json``)."""
    KNGraph(as_graph(input_graph)).to_json(filename)


def cy_from_json(filename: str) -> KNGraph:
    """The graph in a reference JSON file, as a KNGraph (``KNGraph.from_json``)."""
    graph = KNGraph()
    graph.from_json(filename)
    return graph


def new_kernel_graph() -> KNGraph:
    """An empty kernel graph to build (Mirage's ``mi.new_kernel_graph()``)."""
    return KNGraph()
