"""``KernelTable``: the DataFrame the kernel analysis returns (one row per kernel), shown transposed, a column per
kernel, so that its thirty-odd figures stay readable where a wide frame's repr would hide most of them."""

from __future__ import annotations

from typing import Any

import pandas as pd

#: beyond this many kernels the usual wide repr reads better
MAX_TRANSPOSED = 12


class KernelTable(pd.DataFrame):
    """A DataFrame, one row per kernel (indexing, filtering and ``to_dict`` as usual), whose repr and HTML show one
    column per kernel. ``attrs["sass"]`` holds each kernel's SASS text."""

    @property
    def _constructor(self) -> Any:
        return KernelTable

    def _transposed(self) -> pd.DataFrame | None:
        if "kernel" not in self.columns or not 0 < len(self) <= MAX_TRANSPOSED:
            return None
        return pd.DataFrame(self).set_index("kernel").T

    def __repr__(self) -> str:
        shown = self._transposed()
        if shown is None:
            return super().__repr__()
        return (f"KernelTable: {len(self)} kernel(s), one row each (shown transposed: a column per kernel)\n"
                + shown.to_string())

    def _repr_html_(self) -> str | None:
        shown = self._transposed()
        return super()._repr_html_() if shown is None else shown._repr_html_()
