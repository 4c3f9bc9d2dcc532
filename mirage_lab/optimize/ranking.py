"""Ranking μGraphs by proxy cost, and comparing a ranking with measured times (SPEC §8.1 [lab]).

``rank_by_cost`` orders candidates the way selection would without a GPU; ``rank_correlation`` is the
Spearman rank correlation the measured-timing note reports between the proxy and a GPU (ties get their
average rank; computed with pandas and numpy, no scipy).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mirage_lab.ir.graph import BlockGraph, KernelGraph
from mirage_lab.optimize.cost import proxy_cost
from mirage_lab.optimize.hardware import Hardware, get_hardware

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["rank_by_cost", "rank_correlation"]

Graphs = Mapping[Any, KernelGraph | BlockGraph] | Iterable[KernelGraph | BlockGraph]


def rank_by_cost(graphs: Graphs, hardware: str | Hardware | Sequence[str | Hardware] = "H100") -> pd.DataFrame:
    """One row per (graph, hardware), cheapest first within each hardware: ``label`` (the mapping's key,
    or the position in the iterable), ``rank`` (1 = cheapest; ties share the lower rank), ``proxy_us``,
    ``kernels``, ``dram_mb``, ``l2_mb``, ``gflop``, ``fits``, ``hardware``, ``kind`` ("proxy")."""
    import pandas as pd  # here, not at the top: search workers never load pandas
    items = list(graphs.items()) if isinstance(graphs, Mapping) else list(enumerate(graphs))
    hws = [hardware] if isinstance(hardware, str | Hardware) else list(hardware)
    rows = []
    for hw in map(get_hardware, hws):
        for label, g in items:
            c = proxy_cost(g, hw)
            rows.append({"label": label, "proxy_us": c.seconds * 1e6, "kernels": c.launches,
                         "dram_mb": c.bytes_moved / 1e6, "l2_mb": c.l2_bytes_moved / 1e6, "gflop": c.flops / 1e9,
                         "fits": c.fits, "hardware": hw.name, "kind": c.kind})
    df = pd.DataFrame(rows, columns=["label", "proxy_us", "kernels", "dram_mb", "l2_mb", "gflop", "fits", "hardware",
                                     "kind"])
    if df.empty:
        df.insert(1, "rank", pd.Series(dtype="int64"))
        return df
    df.insert(1, "rank", df.groupby("hardware", sort=False)["proxy_us"].rank(method="min").astype("int64"))
    order = {hw.name: i for i, hw in enumerate(map(get_hardware, hws))}
    df = df.sort_values(["hardware", "proxy_us"], key=lambda s: s.map(order) if s.name == "hardware" else s,
                        kind="stable")
    df.attrs.update(kind="proxy")
    return df.reset_index(drop=True)


def rank_correlation(model_seconds: Iterable[float], measured_seconds: Iterable[float]) -> float:
    """Spearman's ρ between two equally long sequences (pairs with a NaN or inf are dropped): the Pearson
    correlation of their average ranks. NaN when fewer than two pairs remain or one side is constant."""
    import pandas as pd  # here, not at the top: search workers never load pandas
    a = np.asarray(list(model_seconds), dtype=float)
    b = np.asarray(list(measured_seconds), dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"rank_correlation: {a.size} model times but {b.size} measured times")
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    if a.size < 2:
        return math.nan
    ra = pd.Series(a).rank(method="average").to_numpy()
    rb = pd.Series(b).rank(method="average").to_numpy()
    if np.ptp(ra) == 0 or np.ptp(rb) == 0:
        return math.nan
    return float(np.corrcoef(ra, rb)[0, 1])
