"""The tile-access view as a notebook widget: block pickers and an iteration slider over ``TileAccess``.

The front end (static/tile_access.js) draws the HTML Python sends and reports the pickers; the loop slider
also steps the drawn tiles itself (every iteration's tile is in the SVG), so the drawing follows the slider
at once and the table follows when Python answers. ``to_html()`` is the current state, static, for
exported notebooks (``StaticBeside``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets

from mirage_lab.errors import MirageError
from mirage_lab.widgets.display import StaticBeside, check_widget_options
from mirage_lab.widgets.tile_access import TileAccess

STATIC = Path(__file__).parent / "static"


class TileAccessView(StaticBeside, anywidget.AnyWidget):
    """``TileAccessView(graph, kernel=0, block=(0, 0, 0), iteration=0)``: what one block reads and writes."""

    _esm = STATIC / "tile_access.js"
    _css = STATIC / "tile_access.css"
    grid = traitlets.List(traitlets.Int()).tag(sync=True)
    forloop_range = traitlets.Int(1).tag(sync=True)
    block = traitlets.List(traitlets.Int()).tag(sync=True)
    iteration = traitlets.Int(0).tag(sync=True)
    body = traitlets.Unicode("").tag(sync=True)
    message = traitlets.Unicode("").tag(sync=True)

    def __init__(self, graph: Any, kernel: int = 0, block: tuple[int, int, int] = (0, 0, 0), iteration: int = 0,
                 arch: str = "sm_90", **kw: Any) -> None:
        check_widget_options(type(self), kw)
        self.model = TileAccess(graph, kernel, block, iteration, arch)  # raises on bad input, before any trait
        super().__init__(**kw)
        self.grid, self.forloop_range = list(self.model.bg.grid), self.model.bg.forloop_range
        self.block, self.iteration = list(self.model.block), self.model.iteration
        self.body = self.model.to_html()
        self.observe(self._on_pick, names=["block", "iteration"])

    def __repr__(self) -> str:
        return f"TileAccessView({self.model!r})"

    def to_html(self) -> str:
        return self.model.to_html()

    def to_frame(self) -> Any:
        return self.model.to_frame()

    def show(self, block: tuple[int, int, int] | None = None, iteration: int | None = None) -> None:
        """Move to ``block`` and/or ``iteration`` (what the pickers do); a bad one raises and keeps the state."""
        m = self.model
        TileAccess(m.graph, m.kernel, m.block if block is None else block,
                   m.iteration if iteration is None else iteration, m.arch)  # validates
        with self.hold_trait_notifications():
            if block is not None:
                self.block = [int(b) for b in block]
            if iteration is not None:
                self.iteration = int(iteration)

    def _on_pick(self, _: Any) -> None:
        m = self.model
        try:
            self.model = TileAccess(m.graph, m.kernel, tuple(self.block), self.iteration, m.arch)
        except MirageError as e:  # a picker outside the grid: say so, keep drawing the last good state
            self.message = str(e)
            return
        self.message = ""
        self.body = self.model.to_html()
