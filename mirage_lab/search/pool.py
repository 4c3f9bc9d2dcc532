"""The local process pool that runs search tasks (``executor="process"``, the default).

What makes it safe to use from any script, and quiet:

* **No re-import of ``__main__``.** ``spawn`` normally re-runs the user's script in every worker
  (``multiprocessing.spawn.get_preparation_data`` sends ``__main__.__spec__.name`` or
  ``__main__.__file__``), so a script without an ``if __name__ == "__main__":`` guard would start
  a search inside each worker and break the pool. Workers only ever run
  ``mirage_lab.search.runner.run_task`` on JSON data, so the pool's processes are started while a
  blank ``__main__`` module stands in for the real one (for the few microseconds of each
  ``Process.start``; Python 3.11+ starts spawn workers on demand, so this wraps every start, not
  only the first). Notebooks, whose ``__main__`` has no file, behave as before.
* **Warnings print as in the parent**: a worker formats them with the parent's ``warnings.formatwarning``
  of the time it started (the command line's one line each, ``mirage_lab.cli.warning_lines``).
* **One BLAS thread per worker**, set in the environment each worker is started with: with one
  worker per core, threaded GEMMs only fight each other.
* **Workers die with their parent**, even under ``kill -9``: each worker asks Linux for SIGKILL
  when its parent dies (``prctl(PR_SET_PDEATHSIG)``), and a daemon thread exits the worker when
  its parent pid changes (elsewhere, and as a second line of defence).
* **Ctrl-C is the parent's alone.** A terminal's Ctrl-C reaches every process of the group, and a
  worker that took it would print its own traceback (while starting, or idle between tasks) or break
  the pool under the parent, which then took the interrupt for a crashed worker. Workers are started
  with SIGINT blocked (the signal mask survives ``exec``; blocked, not ignored, so a Ctrl-C that
  arrives while a worker starts stays pending for the parent); the parent, interrupted, ends them
  with ``WorkerPool.stop``.

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
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import resource_tracker
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


@contextlib.contextmanager
def sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread, and so in the processes it starts inside this block."""
    if not hasattr(signal, "pthread_sigmask"):  # (Windows: no signal masks)
        yield
        return
    # spawn's first start launches the resource tracker, which unblocks SIGINT when it is up: launch it first
    resource_tracker.ensure_running()
    saved = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, saved)  # a Ctrl-C that came meanwhile is delivered now


class _WorkerProcess(SpawnProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        with _STARTING, blank_main(), single_threaded_blas(), sigint_blocked():
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


def start_worker(parent: int, formatwarning: Callable[..., str] | None) -> None:
    """Worker initializer: die with the parent, and format warnings as it does (the command line's one line)."""
    die_with_parent(parent)
    if formatwarning is not None:
        warnings.formatwarning = formatwarning


def _by_name(fn: Callable[..., str]) -> Callable[..., str] | None:
    """``fn`` when a worker can import it by name (how it travels), else None (the worker keeps Python's)."""
    module = sys.modules.get(fn.__module__)
    named = module is not None and fn.__module__ != "__main__" and getattr(module, fn.__qualname__, None) is fn
    return fn if named else None


def worker_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class WorkerPool(cf.ProcessPoolExecutor):
    """The search's process pool; ``stop`` ends it at once."""

    def stop(self) -> None:
        """End the running tasks now, and fail the waiting ones (an interrupted search runs them again when it
        resumes). Its workers never see Ctrl-C, so nothing else would end them before this process could exit.

        The pool takes its dead workers for a crash and fails every future it still holds; on Python 3.11 it
        fails a cancelled one too, with a traceback from its thread, so cancel none of them before this.
        """
        for p in list((self._processes or {}).values()):
            p.terminate()
        self.shutdown(wait=True)  # (quick: nothing runs any more)


def process_pool(workers: int | None = None) -> WorkerPool | None:
    """A started pool of ``workers`` processes (default: one per usable core), or None (with one line on stderr)
    when this machine cannot start one."""
    pool = None
    try:
        pool = WorkerPool(max_workers=workers or worker_count(), mp_context=_WorkerContext(),
                          initializer=start_worker,
                          initargs=(os.getpid(), _by_name(warnings.formatwarning)))
        pool.submit(int).result()  # start one worker now: a pool that cannot start fails here, not mid-search
    except KeyboardInterrupt:
        if pool is not None:
            pool.stop()
        raise
    except (OSError, BrokenProcessPool, RuntimeError) as e:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        LOG.warning(f"cannot start a process pool here ({type(e).__name__}: {e}); searching in this process "
                    "instead (pass executor='serial' to skip trying)")
        return None
    return pool
