"""A Dask cluster's workers made ready while the parent walks the frontier.

On a cluster that is already up, a worker's first call of a search would import mirage_lab's search first:
0.24–0.26 s on a fresh Dask worker of the 2-core Xeon, less than the frontier takes (GQA b1 0.5 s, LoRA b1 0.7 s),
and that call waits for it. So as a search starts, the runner registers a
worker plugin that imports it (``warm``): on the workers the cluster has, and on those that join later, as an
adaptive cluster grows, when they start. It is registered from a thread, so the parent walks the frontier
meanwhile. Once workers import the search before its first call, a replay's worker start is what the frontier
leaves of their import, nothing on a cluster that ran a search before (``benchmarks/scaling.py --worker-start-s``).
"""

from __future__ import annotations

import threading
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

#: the plugin's name on the cluster: registering it again (the next search) changes nothing
NAME = "mirage-lab-search-imports"


class SearchImports(WorkerPlugin):
    """Imports the search's worker code (``search.task`` and what it needs) as a worker starts."""

    idempotent = True

    def setup(self, worker: Any) -> None:
        import mirage_lab.search.task  # noqa: F401


class Warming:
    """The registration of ``SearchImports`` on a client's cluster, in a thread of its own (a daemon: a search
    that ends first does not wait for it). A failure is kept in ``error``, not raised: warming only saves time,
    and a worker that did not import the search beforehand imports it at its first call."""

    def __init__(self, client: Any) -> None:
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._register, args=(client,), name="warm-workers", daemon=True)
        self.thread.start()

    def _register(self, client: Any) -> None:
        try:
            client.register_plugin(SearchImports(), name=NAME)
        except Exception as e:  # (a scheduler gone, a worker that failed to import: the calls will say so)
            self.error = e

    def __repr__(self) -> str:
        state = "running" if self.thread.is_alive() else "failed" if self.error is not None else "done"
        return f"Warming({state})"


def warm(client: Any) -> Warming:
    """Start importing the search on every worker of ``client``'s cluster, now and as workers join."""
    return Warming(client)
