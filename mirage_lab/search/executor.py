"""The executors a search hands its tasks to: "process" (the default: a local process pool, ``pool.py``),
"serial" (in the calling process), or any ``concurrent.futures.Executor`` such as Dask's
``client.get_executor()``."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

from mirage_lab.errors import InputError
from mirage_lab.search.pool import WorkerPool, process_pool


class SerialExecutor(Executor):
    """Runs each task in the calling process when it is submitted (no parallelism, no pickling)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        f: Future[Any] = Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt):
                raise
            f.set_exception(e)
        return f


def make_executor(executor: Executor | str | None) -> tuple[Executor, bool]:
    """The executor to use, and whether we own it (and must shut it down)."""
    if isinstance(executor, Executor):
        return executor, False
    if executor in (None, "process"):
        return process_pool() or SerialExecutor(), True
    check_executor(executor)
    return SerialExecutor(), True


def executor_workers(executor: Executor) -> int | None:
    """How many tasks ``executor`` runs at once, when it says: a process pool's workers, a Dask client's threads
    (``client.get_executor()``); None when it does not."""
    n = getattr(executor, "_max_workers", None)
    if isinstance(n, int):
        return n
    client = getattr(executor, "_client", None)
    try:
        return int(sum(client.nthreads().values())) if client is not None else None
    except Exception:  # (another executor with a ``_client``, or a client that lost its scheduler)
        return None


class Submitter:
    """How the runner hands its calls to ``executor``. A Dask client's executor (``client.get_executor()``) gets
    every call with ``pure=False``, so Dask does not hash the call's arguments into a key (tokenizing the search's
    documents cost the parent ~3 ms a call, as much as a call of LoRA's small tasks), and the documents every call
    repeats are scattered to the workers once (``share``) instead of sent with each call."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self.client = dask_client(executor)

    def share(self, value: Any) -> Any:
        """``value`` as every call should pass it: a Dask future held by the cluster's workers, or itself."""
        if self.client is None or not self.client.scheduler_info().get("workers"):
            return value  # (no worker yet, as an adaptive cluster starts: a scatter would wait for one)
        [future] = self.client.scatter([value], broadcast=True, hash=False)  # (a list: a dict would be split)
        return future

    def __call__(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]:
        if self.client is None:
            return self.executor.submit(fn, *args)
        return self.executor.submit(fn, *args, pure=False)


def warm_workers(executor: Executor | str | None) -> Any | None:
    """Have a Dask executor's workers import the search while the parent walks the frontier (``warm.py``); the
    ``Warming`` underway, or None for any other executor (a process pool's workers start with the pool)."""
    client = dask_client(executor) if isinstance(executor, Executor) else None
    if client is None:
        return None
    from mirage_lab.search.warm import warm  # (Dask is an optional dependency)

    return warm(client)


def dask_client(executor: Executor) -> Any | None:
    """The Dask client behind ``executor`` when it is ``client.get_executor()``; None otherwise."""
    if type(executor).__module__.partition(".")[0] != "distributed":
        return None
    return getattr(executor, "_client", None)


def stop(executor: Executor) -> None:
    """Shut down an executor we own without waiting for its running tasks (a process pool's end now; call this
    before cancelling any of its futures, see ``WorkerPool.stop``)."""
    if isinstance(executor, WorkerPool):
        executor.stop()
    else:
        executor.shutdown(wait=False, cancel_futures=True)


def check_executor(executor: Any) -> None:
    """Before any work: the executor is one ``make_executor`` knows."""
    if not isinstance(executor, Executor) and executor not in (None, "process", "serial"):
        raise InputError(f"executor must be 'process', 'serial' or a concurrent.futures.Executor (e.g. Dask's "
                         f"client.get_executor()), got {executor!r}")
