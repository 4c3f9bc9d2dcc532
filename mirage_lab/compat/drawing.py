"""``KNGraph.visualize``: the μGraph drawn as the reference's users expect, ``<name>.dot`` and ``<name>.png``."""

from __future__ import annotations

from pathlib import Path

from mirage_lab.compat.notices import notice
from mirage_lab.errors import MirageError
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.io import write_atomic

__all__ = ["write_drawing"]


def write_drawing(graph: KernelGraph, file_name: str) -> Path:
    """Write ``file_name``.dot (every level) and, with graphviz installed, ``file_name``.png; return the png's
    path, or the dot file's when graphviz's ``dot`` is missing (said in a notice)."""
    try:
        from mirage_lab.widgets.draw import mugraph_dot
        from mirage_lab.widgets.svg import have_dot, with_dot
    except ImportError as e:
        raise MirageError(f"visualize needs the notebook extra ({e.name} is missing): pip install 'mirage-lab[lab]'")\
            from None
    dot = mugraph_dot(graph)
    dot_path = write_atomic(f"{file_name}.dot", dot)
    if not have_dot():
        notice(f"visualize wrote {dot_path} but no png: graphviz's `dot` is not installed (Debian: apt-get "
               "install graphviz)")
        return dot_path
    return write_atomic(f"{file_name}.png", with_dot(dot, "png"))
