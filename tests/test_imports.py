"""The import graph (issue 20, item 6): no cycles, no layer imports one above it, widgets use public names only.

Every ``import`` counts, at module level or inside a function; only the ``if TYPE_CHECKING:`` blocks do not,
since they never run (annotations alone may name a class of a module that imports this one).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = {"mirage_lab": ROOT / "mirage_lab", "mirage_lab.widgets": ROOT / "widgets"}

#: DESIGN.md's layers, lowest first; a module may import its own layer and those below. The top-level
#: single-file modules (errors, paths, jsonl, cache, progress, arguments, task_log) are the base.
LAYERS = (
    ("base",),
    ("ir",),
    ("semantics", "absexpr", "optimize"),
    ("codegen",),
    ("bench",),
    ("verify",),
    ("search",),
    # compat: the reference's Python API (mpk: its out-of-scope runtime, an import error); api:
    # mirage_lab/__init__.py, the package's face (``import mirage_lab as ml``); puzzles: graded exercises
    # over the builders, the verifier and the oracle (issue 39)
    ("cli", "widgets", "compat", "mpk", "puzzles", "api"),
)


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (the longest name of ours that the statement names)
    names: tuple[str, ...]  # what ``from target import ...`` takes (empty for ``import target``)
    line: int


def modules() -> dict[str, Path]:
    found = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def _runs(tree: ast.Module) -> Iterator[ast.AST]:
    """Every node that can run: ``if TYPE_CHECKING:`` bodies are left out."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports() -> list[Import]:
    known = modules()

    def ours(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    found = []
    for module, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        for node in _runs(tree):
            if isinstance(node, ast.Import):
                pairs = [(a.name, ()) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(module, path.name == "__init__.py", node)
                # ``from pkg import submodule`` imports the submodule
                pairs = [(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base, (a.name,)) for a in node.names]
            else:
                continue
            for name, names in pairs:
                target = ours(name)
                if target and target != module:
                    found.append(Import(module, target, names, node.lineno))
    return found


def layer(module: str) -> int:
    parts = module.split(".")
    if module in ("mirage_lab", "mirage_lab.__main__"):  # the package's face, and ``python -m mirage_lab``
        name = "api"
    elif len(parts) == 2 and not (ROOT / "mirage_lab" / parts[1]).is_dir() and parts[1] != "widgets":
        name = "base"
    else:
        name = parts[1]
    return next(i for i, names in enumerate(LAYERS) if name in names)


def test_the_import_graph_has_no_cycles() -> None:
    graph = nx.DiGraph((i.source, i.target) for i in imports())
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    described = []
    for cycle in cycles:
        ties = [f"{i.source}:{i.line} -> {i.target}" for i in imports() if i.source in cycle and i.target in cycle]
        described.append(f"{len(cycle)} modules: " + "; ".join(ties))
    assert not cycles, "import cycles:\n" + "\n".join(described)


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = [f"{i.source}:{i.line} imports {i.target}" for i in imports() if layer(i.target) > layer(i.source)]
    assert not upward, "upward imports:\n" + "\n".join(upward)


def public_names(package: str) -> set[str]:
    init = modules()[package]
    tree = ast.parse(init.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def test_the_widgets_use_public_names_only() -> None:
    """Widgets import the base modules, the package (``import mirage_lab as ml``) and what a layer's package
    lists in its ``__all__`` (``from mirage_lab.search import Enumerator``), never a module inside a layer."""
    packages = {m for m, p in modules().items() if p.name == "__init__.py"}
    private = []
    for i in imports():
        if not i.source.startswith("mirage_lab.widgets") or i.target.startswith("mirage_lab.widgets"):
            continue
        if layer(i.target) == 0 or i.target == "mirage_lab":
            continue
        parent, _, last = i.target.rpartition(".")
        if i.target not in packages and i.names == (last,) and last in public_names(parent):
            continue  # ``from mirage_lab.bench import programs``: a module its package lists
        missing = set(i.names) - public_names(i.target) if i.target in packages else {"(a module inside a layer)"}
        if missing:
            private.append(f"{i.source}:{i.line} takes {sorted(missing)} from {i.target}")
    assert not private, "widgets reach into engine internals:\n" + "\n".join(private)


@pytest.mark.parametrize("source", ["import_cycle", "upward"])
def test_the_checks_see_what_they_look_for(source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks above fail on a planted cycle and a planted upward import (so they cannot pass vacuously)."""
    fake = tmp_path / "mirage_lab"
    for sub in ("ir", "search"):
        (fake / sub).mkdir(parents=True)
        (fake / sub / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "ir" / "graph.py").write_text("def f():\n    from mirage_lab.search.runner import g\n")
    runner = "from mirage_lab.ir.graph import f\n" if source == "import_cycle" else ""
    (fake / "search" / "runner.py").write_text(runner)
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    monkeypatch.setattr(f"{__name__}.PACKAGE_DIRS", {"mirage_lab": fake})
    check = {"import_cycle": test_the_import_graph_has_no_cycles,
             "upward": test_no_module_imports_a_layer_above_its_own}[source]
    with pytest.raises(AssertionError, match="runner"):
        check()
