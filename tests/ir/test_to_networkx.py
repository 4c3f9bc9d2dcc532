"""ml.to_networkx: one node per op with its shapes and maps, the tensor on each edge, block graphs nested."""

from __future__ import annotations

import ast
import builtins
import sys
import tomllib
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

import mirage_lab as ml
from mirage_lab.bench import fused, programs
from mirage_lab.errors import InputError

ROOT = Path(__file__).resolve().parents[2]


def test_a_fused_graph_nests_its_block_graph() -> None:
    g = ml.to_networkx(fused.rmsnorm())
    assert isinstance(g, nx.DiGraph) and repr(g).startswith("LabDiGraph(kernel-level μGraph: 3 nodes, 2 edges")
    assert [g.nodes[k]["op"] for k in g] == ["input", "input", "customized"]
    assert g.nodes[0]["shape"] == (2, 4096) and g.nodes[0]["dtype"] == "float16"
    assert g.graph == {"level": "kernel", "outputs": (2,), "output_shapes": ((2, 6144),)}
    assert g.edges[1, 2] | {} == {"tensor": 1, "dims": (4096, 6144), "dtype": "float16", "post_loop": False,
                                  "tensors": (1,), "slots": (1,)}
    custom = g.nodes[2]
    assert custom["grid"] == (256, 1, 1) and custom["forloop_range"] == 32
    body = custom["body"]
    assert isinstance(body, nx.DiGraph) and body.graph["level"] == "block"
    loaders = [body.nodes[j] for j in body if body.nodes[j]["op"] == "input"]
    assert [(a["imap"], a["fmap"], a["source"], a["dtensor_shape"]) for a in loaders] == [
        ((-1, -1, -1), 1, 0, (2, 4096)), ((1, -1, -1), 0, 1, (4096, 6144))]
    assert loaders[1]["shape"] == (128, 24)  # the tile: 6144/256 columns, 4096/32 rows per iteration
    (saver,) = [body.nodes[j] for j in body if body.nodes[j]["op"] == "output"]
    assert saver["omap"] == (1, -1, -1) and saver["target"] == 2 and saver["dtensor_shape"] == (2, 6144)
    accums = [body.nodes[j]["op"] for j in body if body.nodes[j]["kind"] == "accum"]
    assert sorted(accums) == ["accum_no_red", "accum_rms"]
    assert nx.is_directed_acyclic_graph(body) and nx.is_directed_acyclic_graph(g)


def test_a_builder_and_its_frozen_graph_agree_and_a_block_graph_alone() -> None:
    b = ml.new_kernel_graph()
    x = b.new_input(dims=(8, 64), dtype=ml.float16)
    y = b.mul(x, x)  # one tensor twice: one edge, two slots
    b.mark_output(b.exp(y))
    built, frozen = ml.to_networkx(b), ml.to_networkx(b.freeze())
    assert nx.utils.graphs_equal(built, frozen)
    assert built.edges[0, 1]["slots"] == (0, 1) and built.edges[0, 1]["tensors"] == (0, 0)
    assert [built.nodes[k]["op"] for k in built] == ["input", "mul", "exp"]
    block = ml.to_networkx(fused.gated_mlp().block_graphs[0])
    assert block.graph["grid"] == (128, 1, 1) and block.number_of_nodes() == 10


def test_every_benchmark_program_converts() -> None:
    for name, make in programs.PROGRAMS.items():
        kg = make()
        g = ml.to_networkx(kg)
        assert g.number_of_nodes() == len(kg.nodes), name
        assert sum(len(set(n.inputs)) for n in kg.nodes) >= g.number_of_edges(), name


def test_not_a_graph_is_refused() -> None:
    with pytest.raises(ml.MirageError, match="expected a kernel graph"):
        ml.to_networkx("x")  # type: ignore[arg-type]


def test_without_networkx_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = builtins.__import__

    def no_networkx(name: str, *a: Any, **kw: Any) -> Any:
        if name == "networkx":
            raise ImportError("No module named 'networkx'")
        return real(name, *a, **kw)

    monkeypatch.setitem(sys.modules, "networkx", None)
    monkeypatch.delitem(sys.modules, "mirage_lab.ir.nx_types", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_networkx)
    with pytest.raises(InputError, match=r"mirage-lab\[lab\]"):
        ml.to_networkx(fused.rmsnorm())


def _module_level_imports() -> set[str]:
    """Third-party packages the core (mirage_lab, not widgets) imports when a module loads."""
    found = set()
    for path in (ROOT / "mirage_lab").rglob("*.py"):
        if "engines" in path.parts or path.name in ("nx_types.py", "warm.py"):  # loaded only when asked for: an
            continue  # engine of the engines extra, networkx's graph class (``ir.nxgraph.import_networkx``), the
            # Dask worker plugin (``search.executor.warm_workers``, for a search on a Dask executor)
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "mirage_lab"}


def test_core_dependencies_are_what_the_core_imports() -> None:
    """Item 4 of issue 24: networkx and graphviz stay in the lab extra (imported lazily); the core declares
    exactly what it imports at module level, plus tabulate, which pandas' ``to_markdown`` needs (cli.demo)."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {d.split(">")[0].split("=")[0].split("<")[0].strip() for d in deps}
    assert names == _module_level_imports() | {"tabulate"}
    assert "networkx" not in _module_level_imports() and "graphviz" not in _module_level_imports()
