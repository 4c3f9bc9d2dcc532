"""The local process pool that runs search tasks (``executor="process"``, the default).

Three things make it safe to use from any script:

* **No re-import of ``__main__``.** ``spawn`` normally re-runs the user's script in every worker
  (``multiprocessing.spawn.get_preparation_data`` sends ``__main__.__spec__.name`` or
  ``__main__.__file__``), so a script without an ``if __name__ == "__main__":`` guard would start
  a search inside each worker and break the pool. Workers only ever run
  ``mirage_lab.search.runner.run_task`` on JSON data, so the pool's processes are started while a
  blank ``__main__`` module stands in for the real one (for the few microseconds of each
  ``Process.start``; Python 3.11+ starts spawn workers on demand, so this wraps every start, not
  only the first). Notebooks, whose ``__main__`` has no file, behave as before.
* **One BLAS thread per worker**, set in the environment each worker is started with: with one
  worker per core, threaded GEMMs only fight each other.
* **Workers die with their parent**, even under ``kill -9``: each worker asks Linux for SIGKILL
  when its parent dies (``prctl(PR_SET_PDEATHSIG)``), and a daemon thread exits the worker when
  its parent pid changes (elsewhere, and as a second line of defence).

When no pool can be started here (no ``/dev/shm``, no process creation allowed), the search runs
in the calling process instead, after one line saying so.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.context import SpawnContext, SpawnProcess
from typing import Any

LOG = logging.getLogger(__name__)
PR_SET_PDEATHSIG = 1
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@contextlib.contextmanager
def blank_main() -> Iterator[None]:
    """Present a ``__main__`` without file or spec to multiprocessing, so a spawned child keeps its own."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """One BLAS thread in processes started inside this block (unless the user chose a number)."""
    saved = {n: os.environ.get(n) for n in BLAS_THREADS}
    os.environ.update({n: "1" for n in BLAS_THREADS if saved[n] is None})
    try:
        yield
    finally:
        for n, v in saved.items():
            if v is None:
                os.environ.pop(n, None)


_STARTING = threading.Lock()  # two threads starting workers at once would restore each other's stand-ins


class _WorkerProcess(SpawnProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        with _STARTING, blank_main(), single_threaded_blas():
            return SpawnProcess._Popen(process_obj)


class _WorkerContext(SpawnContext):
    Process = _WorkerProcess


def die_with_parent(parent: int) -> None:
    """Worker initializer: exit when the process that started this one dies."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the request above took effect
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="mirage-lab parent watch", daemon=True).start()


def worker_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def process_pool(workers: int | None = None) -> cf.Executor | None:
    """A started pool of ``workers`` processes (default: one per usable core), or None (with one line on stderr)
    when this machine cannot start one."""
    pool = None
    try:
        pool = cf.ProcessPoolExecutor(max_workers=workers or worker_count(), mp_context=_WorkerContext(),
                                      initializer=die_with_parent, initargs=(os.getpid(),))
        pool.submit(int).result()  # start one worker now: a pool that cannot start fails here, not mid-search
    except (OSError, BrokenProcessPool, RuntimeError) as e:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        LOG.warning(f"cannot start a process pool here ({type(e).__name__}: {e}); searching in this process "
                    "instead (pass executor='serial' to skip trying)")
        return None
    return pool
