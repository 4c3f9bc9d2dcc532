"""``SearchResult``: what a search returns — the verified μGraphs, best first, and the report of the search."""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mirage_lab.errors import InputError
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.node import plural
from mirage_lab.search.config import SearchConfig
from mirage_lab.search.events import Event, SearchReport, read_events
from mirage_lab.search.profile import Selection
from mirage_lab.search.run_folder import events_file
from mirage_lab.search.state import Candidate

if TYPE_CHECKING:
    import pandas as pd


def recorded_selection(run_dir: Path) -> Selection | None:
    """The selection ``run_dir/result.json`` recorded; None for run folders from before it was recorded."""
    try:
        doc = json.loads((Path(run_dir) / "result.json").read_text())
    except (OSError, ValueError):
        return None
    return selection_of(doc) if isinstance(doc, dict) else None


def selection_of(doc: dict[str, Any]) -> Selection | None:
    """The selection of a result.json document (None where it has none)."""
    raw = doc.get("selection")
    return Selection.from_dict(raw) if isinstance(raw, dict) else None


@dataclass
class SearchResult:
    """Verified μGraphs, best first, and the report of the search that found them."""

    program: KernelGraph
    config: SearchConfig
    candidates: list[Candidate]
    report: SearchReport
    run_dir: Path | None = None
    costs: dict[str, float] = field(default_factory=dict)  # candidate hash → proxy seconds
    selection: Selection | None = None  # how ``best`` was chosen (search/profile.py); None in older run folders

    def __post_init__(self) -> None:
        if self.selection is None and self.run_dir is not None:  # a reader of the run folder (``load_run``)
            self.selection = recorded_selection(self.run_dir)

    @property
    def best(self) -> Candidate | None:
        """The final μGraph: the one ``selection`` chose (measured on a GPU, else the cost model's), else the
        ranking's first."""
        if self.selection is not None and self.selection.chosen is not None:
            chosen = next((c for c in self.candidates if c.hash == self.selection.chosen), None)
            if chosen is not None:
                return chosen
        return self.candidates[0] if self.candidates else None

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd  # here, not at the top: search workers never load pandas
        rows = []
        for rank, c in enumerate(self.candidates):
            g = c.graph
            rows.append({"rank": rank, "hash": c.hash[:12], "kernels": len(g.compute_nodes),
                         "customized": len(g.block_graphs),
                         "block_ops": sum(len(b.compute_nodes) for b in g.block_graphs),
                         "grids": " ".join(str(b.grid) for b in g.block_graphs),
                         "proxy_cost_us": round(self.costs.get(c.hash, float("nan")) * 1e6, 2),
                         **self._measured(c.hash),
                         "found_s": round(c.found_s, 2), "error_bound": c.verification.get("error_bound")})
        return pd.DataFrame(rows)

    def _measured(self, graph_hash: str) -> dict[str, Any]:
        """The shortlist's columns: the calibrated model's figure, and each backend's measured median."""
        sel = self.selection
        if sel is None:
            return {}
        row: dict[str, Any] = {"model_us": sel.predicted_us.get(graph_hash, float("nan")),
                               "chosen": graph_hash == sel.chosen}
        for m in sel.measurements:
            if m.hash == graph_hash:
                row[f"{m.backend}_us"] = round(m.median_us, 2) if m.ok and m.median_us is not None else m.result
        return row

    def events(self) -> Iterator[Event]:
        """The run's events (``read_events``), from its run folder."""
        if self.run_dir is None:
            raise InputError("this search kept no run folder; pass run_dir= to keep its events")
        return read_events(self.run_dir / events_file(self.run_dir))

    def __repr__(self) -> str:
        best = ("none" if self.best is None
                else f"{self.best.hash[:12]} ({plural(len(self.best.graph.compute_nodes), 'kernel')})")
        how = f", {self.selection.method}" if self.selection is not None else ""
        return f"SearchResult({len(self.candidates)} verified, best {best}{how}; {self.report!r})"

    def _repr_html_(self) -> str:
        return (f"<p><b>{len(self.candidates)} verified μGraphs</b></p><pre>{html.escape(repr(self.report))}</pre>"
                + self.to_frame().head(20).to_html(index=False))
