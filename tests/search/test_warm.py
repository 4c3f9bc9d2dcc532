"""A Dask cluster's workers import the search while the parent walks the frontier (``search/warm.py``): those it
has, and those that join later; the runner starts it for a Dask executor and for no other."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from mirage_lab.search.executor import SerialExecutor, warm_workers


def _imported() -> bool:
    return "mirage_lab.search.task" in sys.modules


def test_workers_import_the_search_now_and_as_they_join() -> None:
    distributed = pytest.importorskip("distributed")
    cloudpickle = pytest.importorskip("cloudpickle")
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # (asking must not import mirage_lab there)
    try:
        _warm_a_fresh_cluster(distributed)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _warm_a_fresh_cluster(distributed: Any) -> None:
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        assert list(client.run(_imported).values()) == [False]  # (a fresh worker process)
        warming = warm_workers(client.get_executor())
        assert warming is not None
        warming.thread.join(timeout=120)
        assert warming.error is None and repr(warming) == "Warming(done)"
        assert list(client.run(_imported).values()) == [True]
        cluster.scale(2)
        client.wait_for_workers(2, timeout=120)
        assert list(client.run(_imported).values()) == [True, True]
        warm_workers(client.get_executor()).thread.join(timeout=120)  # (the next search's: registered once)
        assert len(client.run(_imported)) == 2


def test_other_executors_are_not_warmed() -> None:
    assert warm_workers(SerialExecutor()) is None and warm_workers("process") is None and warm_workers(None) is None
