"""``SearchResult``: what a search returns — the verified μGraphs, best first, and the report of the search."""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mirage_lab.errors import InputError
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.search.config import SearchConfig
from mirage_lab.search.events import Event, SearchReport, read_events
from mirage_lab.search.run_folder import events_file
from mirage_lab.search.state import Candidate

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class SearchResult:
    """Verified μGraphs, best first, and the report of the search that found them."""

    program: KernelGraph
    config: SearchConfig
    candidates: list[Candidate]
    report: SearchReport
    run_dir: Path | None = None
    costs: dict[str, float] = field(default_factory=dict)  # candidate hash → proxy seconds

    @property
    def best(self) -> Candidate | None:
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
                         "found_s": round(c.found_s, 2), "error_bound": c.verification.get("error_bound")})
        return pd.DataFrame(rows)

    def events(self) -> Iterator[Event]:
        """The run's events (``read_events``), from its run folder."""
        if self.run_dir is None:
            raise InputError("this search kept no run folder; pass run_dir= to keep its events")
        return read_events(self.run_dir / events_file(self.run_dir))

    def __repr__(self) -> str:
        best = "none" if self.best is None else f"{self.best.hash[:12]} ({len(self.best.graph.compute_nodes)} kernels)"
        return f"SearchResult({len(self.candidates)} verified, best {best}; {self.report!r})"

    def _repr_html_(self) -> str:
        return (f"<p><b>{len(self.candidates)} verified μGraphs</b></p><pre>{html.escape(repr(self.report))}</pre>"
                + self.to_frame().head(20).to_html(index=False))
