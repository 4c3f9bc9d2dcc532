"""``superoptimize``: run a search through an executor, with a run folder as cache and checkpoint.

The walk is split at customized-op roots (SPEC §7.5): the main process walks the kernel
level once (the *frontier*), and each block-graph root becomes a task that any
``concurrent.futures.Executor`` can run — in process, a local process pool, or Dask
(``client.get_executor()``); a task is ``search/task.py``. Tasks carry only JSON-able data and rebuild their context
(program, oracle, verifier) in the worker, so workers share nothing. Results are merged in
task order, and budgets (states, results) truncate that ordered stream, so the outcome does
not depend on the executor or on which task finishes first (time limits excepted; and under
``cost_bound`` without budgets, the ranking's tail below the best, see ``bound.py``). Tasks are
handed out fused-first (``fused_first``), so verified μGraphs arrive early, and under ``cost_bound``
first as short slices (``_Search._drive``).

Every finished task is saved in the run folder (appended to ``tasks.gz`` by this process, from the
events and candidates the worker returns), and every verified μGraph the moment it is verified,
so an interrupted search (KeyboardInterrupt, a time limit, a killed worker, kill -9) keeps them
and resumes with the unfinished tasks.

One search at a time writes a run folder: the search holds its lock (``mirage_lab.search.lock``),
and a second search of the same folder waits, then usually answers from the cache. Nothing the
folder holds is trusted unless its bytes match the manifest (``mirage_lab.search.run_folder``): a finished
run is served from the cache only when the result, the program, the config, the events and every
ranked candidate match; otherwise the run is rebuilt from its saved tasks, and a saved task whose
files do not match runs again (its candidates are verified again on the way). Readers of a
finished run (``search/saved.py``, ``load_run``) verify a candidate whose file does not match
again with the search's own verifier and drop it if it fails. Edits to program.json or
config.json are refused (``RunFolderError``): every result in the folder answers that question.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import math
import os
import time
import warnings
from collections import Counter, deque
from collections.abc import Iterator
from concurrent.futures import Executor, Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from mirage_lab.arguments import checked
from mirage_lab.errors import InputError, MirageError
from mirage_lab.ir.builder import as_graph
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.io import graph_to_dict
from mirage_lab.progress import progress
from mirage_lab.search import run_log
from mirage_lab.search.bound import ranking_seconds
from mirage_lab.search.config import SearchConfig, as_config
from mirage_lab.search.decision import KernelOp
from mirage_lab.search.enumerate import Enumerator, resumable
from mirage_lab.search.events import SearchReport
from mirage_lab.search.executor import (
    SerialExecutor,
    Submitter,
    check_executor,
    executor_workers,
    make_executor,
    stop,
    warm_workers,
)
from mirage_lab.search.lock import RunLock
from mirage_lab.search.profile import model_seconds, select
from mirage_lab.search.result import SearchResult, selection_of
from mirage_lab.search.run_folder import (
    CHANGED,
    DEFAULT_ROOT,
    MISSING,
    RunFolder,
    check_place,
    events_file,
    runs_root,
    verdicts_file,
)
from mirage_lab.search.saved import ranked_candidates
from mirage_lab.search.space import SearchSpaceWarning, for_program, resolve
from mirage_lab.search.split import (
    PARENT_CALL_S,
    Family,
    ParentCost,
    averaged,
    batch_size,
    call_budget_s,
    sub_batch_size,
)
from mirage_lab.search.state import Candidate, Outcome
from mirage_lab.search.task import (
    BUDGETS,
    SAVED,
    budgets,
    candidate_doc,
    candidate_from_doc,
    forget_memos,
    join_slice,
    run_batch,
    run_task,
    task_context,
    worker_name,
)
from mirage_lab.search.verdicts import VerdictTally
from mirage_lab.semantics.footprint import small_pages
from mirage_lab.verify.trials import remove_all, shared_key

LOG = logging.getLogger(__name__)

__all__ = ["SLICE_STATES", "TIME_LIMIT_ENV", "SearchResult",
           "SerialExecutor", "fused_first", "make_executor", "run_folder_path",
           "run_task", "superoptimize", "time_capped"]

# --------------------------------------------------------------------------- the driver


@checked
def superoptimize(program: Any, config: SearchConfig | str | None = None, *, executor: Executor | str | None = None,
                  run_dir: str | os.PathLike[str] | bool | None = DEFAULT_ROOT, progress: bool = True,
                  **overrides: Any) -> SearchResult:
    """Search for μGraphs equivalent to ``program`` (SPEC §7) and return them ranked.

    ``config`` is a ``SearchConfig`` or a preset name; keyword ``overrides`` change its fields.
    ``executor`` is "process" (default: a local process pool over all cores), "serial", or any
    ``concurrent.futures.Executor`` such as Dask's ``client.get_executor()``. ``run_dir`` is the
    root of the run folders (default ``$MIRAGE_LAB_RUNS``, else ``./runs``); ``False`` keeps nothing on disk.
    """
    prog = as_graph(program)
    cfg, gaps = resolve(prog, as_config(config, **overrides))
    for line in gaps:  # before the search starts, and again in its report
        warnings.warn(line, SearchSpaceWarning, stacklevel=3)
    cfg, cap = time_capped(cfg)
    check_executor(executor)
    if not isinstance(run_dir, str | os.PathLike | bool | None):
        raise InputError(f"run_dir must be a folder path, or False to keep nothing, got {type(run_dir).__name__}")
    if isinstance(run_dir, str | os.PathLike):
        run_dir = runs_root(run_dir)
    with small_pages():  # (the frontier's and the serial executor's arrays)
        return _Search(prog, cfg, executor, run_dir, progress, cap, gaps).run()


#: an environment variable that caps every search's time limit, whatever the script asks (seconds)
TIME_LIMIT_ENV = "MIRAGE_LAB_TIME_LIMIT"


def time_capped(config: SearchConfig) -> tuple[SearchConfig, float | None]:
    """``config`` with its time limit lowered to ``$MIRAGE_LAB_TIME_LIMIT``, and the cap when it applied."""
    raw = os.environ.get(TIME_LIMIT_ENV, "").strip()
    if not raw:
        return config, None
    try:
        cap = float(raw)
    except ValueError:
        cap = math.nan
    if not (math.isfinite(cap) and cap > 0):
        raise InputError(f"{TIME_LIMIT_ENV}={raw!r} is not a positive number of seconds; set it to e.g. 60, "
                         "or unset it to let each search choose")
    if config.time_limit_s is not None and config.time_limit_s <= cap:
        return config, None
    return config.replace(time_limit_s=cap), cap


@checked
def run_folder_path(program: Any, config: SearchConfig | str | None = None,
                    run_dir: str | os.PathLike[str] = DEFAULT_ROOT) -> Path:
    """Where ``superoptimize(program, config, run_dir=run_dir)`` keeps its run folder; creates nothing.

    Budgets do not change the folder (a run folder answers the same question at any budget).
    """
    prog = as_graph(program)
    return _folder_path(prog, for_program(as_config(config), prog), run_dir)


def _folder_path(program: KernelGraph, config: SearchConfig, run_dir: str | os.PathLike[str]) -> Path:
    """The run folder of a search whose settings are already resolved (``space.resolve``)."""
    folder_hash = config.replace(**{k: None for k in BUDGETS}).hash()
    return Path(runs_root(run_dir)) / RunFolder.name_for(program.canonical_hash(), folder_hash)


class _Search:
    def __init__(self, program: KernelGraph, config: SearchConfig, executor: Executor | str | None,
                 run_dir: Any, progress: bool, time_cap_s: float | None = None, gaps: list[str] | None = None) -> None:
        self.program, self.config, self.progress = program, config, progress
        self.executor_spec = executor
        self.program_doc = graph_to_dict(program)
        self.config_doc = config.to_dict()
        self.folder: RunFolder | None = None
        self.root: Path | None = None
        if run_dir is not False and run_dir is not None:
            self.root = Path(run_dir)
            self.folder = RunFolder(_folder_path(program, config, run_dir))
        self.report = SearchReport(time_cap_s=time_cap_s, space_gaps=list(gaps or ()))
        self.t0 = time.time()
        self._prefix = self._prefix_states = self._prefix_found = 0  # the finished prefix of the task list
        self._unsaved_events: dict[int, bytes] = {}  # compressed events of tasks cut short (not in tasks.gz)
        self._slices: dict[int, dict[str, Any]] = {}  # each task's slice, until its continuation finishes (``_drive``)
        self._rests: set[int] = set()  # tasks whose slice yielded its call, to be walked on as a slice (``_drive``)
        self._families: dict[int, Family] = {}  # each split task's walk, its sub-tasks and those done
        self._slice_s: float | None = None  # a batched slice's seconds lately (``split.batch_size``)
        self._sub_s: float | None = None  # a sub-task's seconds lately (``split.batch_size``)
        # the parent's seconds per call, measured while tasks run elsewhere (``split.ParentCost``); None once a
        # task ran in this process (a serial or threaded executor), whose CPU would count as the parent's
        self._parent: ParentCost | None = ParentCost()
        self.incumbent = math.inf  # ``cost_bound``: the cheapest verified μGraph's proxy cost so far (bound.py)
        # state and result budgets truncate the tasks in task order: they go out in order, and are merged so
        self._in_order = bool(config.state_limit or config.result_limit)
        # the run's tail worked out while the workers run (``_finish`` merges what is left): the verdicts of the
        # tasks done, in any order (not under budgets), and the frontier's blocks
        self._verdicts = VerdictTally()
        self._tallied: set[int] = set()
        self._frontier: run_log.Segments | None = None

    def run(self) -> SearchResult:
        if self.folder is None or self.root is None:
            return self._search()
        check_place(self.folder.path, self.root)
        cached = self._cached(locked=False)  # reads only: a finished run is served without writing anything
        if cached is not None:
            return cached
        self.folder.create()
        with RunLock(self.folder.path):
            self.folder = RunFolder(self.folder.path)  # the manifest as it is now that no one else writes
            cached = self._cached(locked=True)  # whoever held the lock may have finished this very search
            if cached is not None:
                return cached
            self.folder.writer = True
            self.folder.remove_temporaries()
            try:
                return self._search()
            finally:
                self.folder.save_manifest()

    def _search(self) -> SearchResult:
        if self.folder is not None:
            self.folder.ensure("program.json", self.program_doc)
            self.folder.ensure("config.json", self._config_record())
            self.folder.save_manifest()
        warm_workers(self.executor_spec)  # (a cluster's workers import the search while the frontier runs)
        program, config, oracle, verifier = task_context(self.program_doc, self.config_doc)
        deadline = None if config.time_limit_s is None else time.perf_counter() + config.time_limit_s
        front = Enumerator(program, config, oracle, verifier, ids="f", state_cap=config.state_limit,
                           deadline=deadline).run(frontier=True)
        if config.cost_bound:
            self.incumbent = min([math.inf, *(ranking_seconds(c.graph) for c in front.candidates)])
        if self.folder is not None:
            self._frontier = run_log.Segments(front.events.events).start()
        if self.executor_spec != "serial":  # workers check the tasks' candidates: free the frontier's trials
            verifier.release()  # (MHA b8's parent held 7.5 GB beside two workers and was killed for memory)
        try:
            outcomes = self._run_tasks(front)
        finally:  # the trials the workers on this machine shared (``verify/trials.py``), and the memos of tasks
            remove_all(shared_key(verifier))  # walked in this process (a serial executor's)
            forget_memos()
        return self._finish(front, outcomes)

    def _config_record(self) -> dict[str, Any]:
        return {k: v for k, v in self.config_doc.items() if k not in BUDGETS}

    def _cached(self, locked: bool) -> SearchResult | None:
        """The finished run the folder holds for this search, when every file it is served from is intact."""
        folder = self.folder
        assert folder is not None
        folder.holds("program.json", self.program_doc)  # a RunFolderError when edited
        folder.holds("config.json", self._config_record())
        why = folder.check("result.json")
        if why == MISSING:
            return None
        doc: dict[str, Any] = (folder.read("result.json") or {}) if why is None else {}
        # a finished search, or one cut by a deterministic budget that is asked for again; interrupted or
        # timed-out searches resume instead
        if doc and not (doc["report"]["stop_reason"] == "complete" or (
                doc["report"]["stop_reason"] in ("state limit", "result limit")
                and doc["budgets"] == budgets(self.config))):
            return None
        damaged = folder.damaged(["program.json", "config.json", events_file(folder.path), verdicts_file(folder.path),
                                  *(RunFolder.candidate_name(h) for h in doc["ranking"])]) if doc else \
            [f"result.json {why}"]
        if damaged:
            if locked:  # (unlocked, a writer may be mid-way: the locked look decides)
                _warn(f"run folder {folder.path}: {', '.join(damaged)}; rebuilding the run from its saved tasks "
                      "(tasks whose files do not match their recorded hashes run again)")
            return None
        report = SearchReport.from_dict(doc["report"])
        report.cached, report.space_gaps = True, self.report.space_gaps
        cands = [c for c in ranked_candidates(folder, doc["ranking"]) if c is not None]
        return SearchResult(self.program, self.config, cands, report, folder.path, doc["costs"],
                            selection_of(doc))

    # ---- tasks
    def _run_tasks(self, front: Outcome) -> dict[int, dict[str, Any]]:
        done: dict[int, dict[str, Any]] = {}
        todo = []
        changed: list[str] = []
        for i in range(len(front.tasks)):
            saved = self._saved_task(i, changed)
            if saved is not None and (saved["stop_reason"] == "complete"
                                      or saved["config_budgets"] == budgets(self.config)):
                done[i] = saved
                self._improve(saved)
                self._tally_verdicts(i, saved)
            else:
                todo.append(i)
        if changed:
            _warn(f"run folder {self.folder.path if self.folder else ''}: {', '.join(changed[:5])}"
                  f"{f' (and {len(changed) - 5} more)' if len(changed) > 5 else ''} {CHANGED}; running "
                  f"{'that task' if len(changed) == 1 else 'those tasks'} again")
        self.report.tasks_total = len(front.tasks)
        if not todo:
            return done
        executor, owned = make_executor(self.executor_spec)
        bar = progress(total=len(front.tasks), initial=len(done), desc="search", unit="task", disable=not self.progress)
        inflight: dict[Future[Any], tuple[Any, ...]] = {}  # future → what it runs (``_drive``)
        drove = False
        try:
            # a few calls in flight per worker: two each, 64 for an executor that does not say how many it runs
            workers = executor_workers(executor)
            self._drive(executor, 2 * (workers or (1 if owned else 32)), front, todo, done, inflight, bar,
                        batched=not owned)
            drove = True
            LOG.debug("the parent's time: %r", self._parent or "not measured (calls ran in its process)")
        except KeyboardInterrupt:
            self.report.stop_reason = "interrupted"
        except BrokenProcessPool as e:
            where = f"the finished tasks are kept in {self.folder.path}; " if self.folder is not None else ""
            raise MirageError(f"a search worker process died ({e}; killed, or out of memory?); {where}run the same "
                              "search again to resume it, or use executor='serial' to see the worker's error") from None
        finally:
            bar.close()
            if owned and not drove:  # interrupted, or failed: what still runs is not wanted
                stop(executor)
            # calls still running past the time limit stop at it by themselves; cancelling a cluster's call races
            # its end (Dask's executor then sets the result of a cancelled future: an InvalidStateError traceback)
            if owned or not self._past_deadline():
                for f in inflight:
                    f.cancel()
            if owned and drove:
                executor.shutdown(wait=True, cancel_futures=True)
        return done

    def _drive(self, executor: Executor, window: int, front: Outcome, todo: list[int],
               done: dict[int, dict[str, Any]], inflight: dict[Future[Any], tuple[Any, ...]], bar: Any,
               batched: bool = False) -> None:
        """Hand tasks out (a few in flight per worker) and take their results until all are done or a budget,
        the time limit or an interrupt stops the search.

        Without budgets every task first runs as a *slice* of ``SLICE_STATES`` states. A task the slice does not
        finish is heavy: it goes to the back of the queue and is later *continued* where the slice stopped, with
        ``split`` (``split.py``): the kernels it opens after its root closes come back as sub-tasks, which go to
        the front of the queue in batches (``run_batch``) that any free worker takes — once some came back, each
        batch worth at least ``split.SUB_CALL_S`` at their recent seconds — and the task's result is joined from them
        (``split.Family``). Under ``cost_bound``, the slices of all roots come first, so the cheap
        μGraphs anywhere in the space set the incumbent before the heavy subtrees are walked (GQA's split-KV
        μGraph lies 6 341 states into task 933, behind heavy roots that take minutes), and each continuation or
        sub-task starts from the incumbent of the time. What a slice verified lowers the incumbent at once, and a
        search stopped before the continuation still reports it. The slice and its continuation make one result
        (``join_slice``) whose events are those of one uninterrupted walk; no state is walked twice.

        ``batched`` (an executor we do not own: a cluster's, whose scheduler spends about a millisecond per
        hand-out) hands slices out several per call too (``split.batch_size``), each call worth the parent's round of
        every worker (``split.call_budget_s``) at what the parent measures it spends a call (``split.ParentCost``). A
        slice with others behind it in its call stops once that budget is spent (it *yields*, ``task.run_batch``),
        and the rest of it goes out first, alone, as a slice again (what counts as heavy is unchanged): a batch of
        MQA b1's slices otherwise waited up to 2 s behind its first.
        """
        deadline = None if self.config.time_limit_s is None else self.t0 + self.config.time_limit_s
        in_order = self._in_order
        queue = deque(todo if in_order else fused_first(front.tasks, todo))
        slicing = not in_order and resumable(self.config)
        run_dir = str(self.folder.path) if self.folder is not None else None
        workers = max(1, window // 2)
        submit = Submitter(executor)
        program, config = submit.share(self.program_doc), submit.share(self.config_doc)
        subqueue: deque[list[int]] = deque()  # [task, its next sub-task to hand out], before ``queue``
        cpu = time.process_time()  # (the parent's CPU: ``ParentCost``)
        while True:
            while (subqueue or queue) and len(inflight) < window:  # budgets are checked as results arrive, in order
                # budgets truncate one ordered stream on every executor: there, each task bounds only by what it
                # verifies itself, so its walk does not depend on which tasks finished first
                bound = None if in_order or not math.isfinite(self.incumbent) else self.incumbent
                if subqueue:
                    i, ks = self._sub_batch(subqueue, workers)
                    subs = self._families[i].subtasks
                    inflight[submit(run_batch, program, config, [i] * len(ks), [subs[k][0] for k in ks],
                                    [subs[k][1] for k in ks], run_dir, deadline, self.t0, bound, [None] * len(ks),
                                    ks)] = ("subs", i, ks)
                    continue
                i = queue.popleft()
                sliced = slicing and self._slicing(i)
                if batched and sliced:
                    batch = [i]
                    # (one slice a call until one came back: the first roots are the heavy ones)
                    most = batch_size(len(queue) + 1, workers, BATCH_TASKS,
                                      math.inf if self._slice_s is None else self._slice_s, parent_s=self._parent_s)
                    # (the rest of a slice that yielded goes alone: with others behind it, it would yield again)
                    while i not in self._rests and queue and queue[0] not in self._slices and len(batch) < most:
                        batch.append(queue.popleft())
                    inflight[submit(run_batch, program, config, batch, [front.tasks[j][0] for j in batch],
                                    [front.tasks[j][1] for j in batch], run_dir, deadline, self.t0, bound,
                                    [self._slice_left(j) for j in batch], [None] * len(batch),
                                    call_budget_s(workers, self._parent_s), [self._resume(j) for j in batch])] = (
                        "tasks", batch)
                    continue
                parent, prefix = front.tasks[i]
                resume = self._resume(i)
                inflight[submit(run_task, program, config, i, parent, prefix, run_dir, deadline, self.t0, bound,
                                self._slice_left(i) if sliced else None, resume,
                                resume is not None and not sliced)] = ("task", i, sliced)
            if not inflight:
                return
            finished, _ = cf.wait(list(inflight), return_when=cf.FIRST_COMPLETED)
            items = 0
            for f in finished:
                what = inflight.pop(f)
                items += self._ran_where(f.result())
                if what[0] == "subs":
                    self._sub_results(what[1], what[2], f.result(), done, bar)
                elif what[0] == "tasks":
                    results = f.result()
                    queue.extendleft(reversed(what[1][len(results):]))  # (not started within the call's budget)
                    for res in results:
                        self._slice_s = averaged(self._slice_s, res["wall"])
                        self._task_result(res["index"], True, res, queue, subqueue, workers, done, bar)
                else:
                    self._task_result(what[1], what[2], f.result(), queue, subqueue, workers, done, bar)
            if self._parent is not None:
                self._parent.add(time.process_time() - cpu, len(finished), items)
            cpu = time.process_time()
            if self._budget_spent(done, len(front.tasks)) or self._past_deadline():
                return

    def _task_result(self, i: int, sliced: bool, res: dict[str, Any], queue: deque[int],
                     subqueue: deque[list[int]], workers: int, done: dict[int, dict[str, Any]],
                     bar: Any) -> None:
        """Take a task's result: a slice to continue later, a split walk whose sub-tasks go out first, or a
        finished task."""
        self._improve(res)
        if sliced and res["stop_reason"] == "slice":
            if self.folder is not None:  # (the candidate files it wrote are sound)
                self.folder.record(res.get("files", {}))
            self._slices[i] = join_slice(self._slices[i], res) if i in self._rests else res
            if res.get("yielded"):  # (its slice goes on first: it only made way for the others in its call)
                self._rests.add(i)
                queue.appendleft(i)
            else:
                self._rests.discard(i)
                queue.append(i)
            return
        subs = res.get("subtasks") or []
        if subs:
            if self.folder is not None:
                self.folder.record(res.get("files", {}))
            self._families[i] = Family(res)
            subqueue.append([i, 0])
            return
        self._task_done(i, res, done, bar)

    @property
    def _parent_s(self) -> float:
        """The parent's seconds per call that calls are sized to (``split.served_s``)."""
        return PARENT_CALL_S if self._parent is None else self._parent.per_call_s

    def _ran_where(self, result: dict[str, Any] | list[dict[str, Any]]) -> int:
        """How many items a call returned; the parent's CPU is no longer measured once a call ran in this process."""
        results = [result] if isinstance(result, dict) else result
        if self._parent is not None and results and results[0].get("worker") == worker_name():
            self._parent = None
        return len(results)

    def _slicing(self, i: int) -> bool:
        """Whether task ``i``'s next walk is (the rest of) its slice, not its continuation."""
        return i not in self._slices or i in self._rests

    def _slice_left(self, i: int) -> int:
        """The states task ``i``'s slice has left to walk (the whole of it unless it yielded its call)."""
        return SLICE_STATES - self._slices[i]["states"] if i in self._rests else SLICE_STATES

    def _resume(self, i: int) -> dict[str, Any] | None:
        """Where task ``i``'s next walk starts: where its slice stopped, else at its root."""
        return self._slices[i]["resume"] if i in self._slices else None

    def _sub_batch(self, subqueue: deque[list[int]], workers: int) -> tuple[int, list[int]]:
        """The next call's sub-tasks, from the first split task with some left: sized as it goes out, by what the
        sub-tasks took lately once some came back (a call worth its hand-out), else a share of those left."""
        family = subqueue[0]
        i, first = family
        left = len(self._families[i].subtasks) - first
        n = sub_batch_size(left, workers, self._sub_s, self._parent_s)
        family[1] += n
        if n == left:
            subqueue.popleft()
        return i, list(range(first, first + n))

    def _sub_results(self, i: int, ks: list[int], results: list[dict[str, Any]], done: dict[int, dict[str, Any]],
                     bar: Any) -> None:
        family = self._families[i]
        for k, res in zip(ks, results, strict=True):
            self._sub_s = averaged(self._sub_s, res["wall"])
            self._improve(res)
            if self.folder is not None:
                self.folder.record(res.get("files", {}))
            family.add(k, res)
        if family.complete:
            del self._families[i]
            self._task_done(i, family.joined(), done, bar)

    def _task_done(self, i: int, res: dict[str, Any], done: dict[int, dict[str, Any]], bar: Any) -> None:
        if i in self._slices:
            res = join_slice(self._slices[i], res)
        # kept before it counts as done: ``_finish`` merges every done task and reads its events from
        # where ``_keep`` put them, and an interrupt may land anywhere in between
        self._keep(res)
        done[i] = res
        self._tally_verdicts(i, res)
        self._slices.pop(i, None)
        self._rests.discard(i)
        bar.update()

    def _tally_verdicts(self, i: int, res: dict[str, Any]) -> None:
        """Add a finished task's verdicts to the run's tally now (not under budgets: ``_finish`` merges those in
        order), and let them go: saved with the task, they are most of what the parent would otherwise hold
        until the end (LoRA b1: 300 per task over 10 694 tasks, which every full garbage collection walked)."""
        if not self._in_order:
            self._verdicts.add(res["verdicts"])
            self._tallied.add(i)
            res["verdicts"] = {}

    def _saved_task(self, index: int, changed: list[str]) -> dict[str, Any] | None:
        """A task an earlier search of this folder finished, when its files match their recorded hashes (the
        names of those that were changed since are added to ``changed``)."""
        if self.folder is None:
            return None
        names = list(self.folder.task_names(index))
        checks = [self.folder.check(n) for n in names]
        if any(checks):
            changed += [n for n, why in zip(names, checks, strict=True) if why == CHANGED]
            return None
        return self.folder.task(index)

    def _keep(self, res: dict[str, Any]) -> None:
        """Save a finished task and record the files its worker wrote (the manifest at most once a second)."""
        events = res.pop("events_gz", None) or b""
        head = res.pop("record_gz", None)  # (a task walked whole: its record, as its worker encoded it)
        if self.folder is None:
            return
        self.folder.record(res.get("files", {}))
        for doc in res["candidates"]:  # those a worker on another machine could not write
            if RunFolder.candidate_name(doc["hash"]) not in res.get("files", {}):
                self.folder.save_candidate(doc)
        if res["stop_reason"] in SAVED:
            self.folder.save_task(res["index"], res, events, head)
        else:  # cut by the time limit: run again on resume, but its events belong to this run's log
            self._unsaved_events[res["index"]] = events
        self.folder.save_manifest(every=1.0)

    def _improve(self, res: dict[str, Any]) -> None:
        """``cost_bound``: lower the incumbent to a finished task's cheapest verified μGraph."""
        if res.get("incumbent") is not None:
            self.incumbent = min(self.incumbent, float(res["incumbent"]))

    def _past_deadline(self) -> bool:
        return self.config.time_limit_s is not None and time.time() > self.t0 + self.config.time_limit_s

    def _budget_spent(self, done: dict[int, dict[str, Any]], total: int) -> bool:
        """Stop early when the tasks finished *in order* already exhaust a state or result budget.

        The finished prefix only grows, so it is summed incrementally (this runs after every task).
        """
        while self._prefix < total and self._prefix in done:
            res = done[self._prefix]
            self._prefix_states += res["states"]
            self._prefix_found += len(res["candidates"])
            self._prefix += 1
            if self._limit_reached(self._prefix_states, self._prefix_found):
                return True
        return False

    # ---- merging
    def _finish(self, front: Outcome, done: dict[int, dict[str, Any]]) -> SearchResult:
        cands: list[dict[str, Any]] = [candidate_doc(c) for c in front.candidates]
        self.report.add_seconds(front.seconds)
        self.report.add_summary(front.events.summary())
        verdicts = self._verdicts
        verdicts.add(front.events.verdicts)
        stop = self.report.stop_reason if self.report.stop_reason != "complete" else front.stop_reason
        merged: list[int] = []
        for ev in front.events.events:
            if ev["e"] != "task":
                continue
            res = done.get(ev["task"])
            if res is None:
                stop = stop if stop != "complete" else "time limit" if self.config.time_limit_s else "interrupted"
                family = self._families.get(ev["task"])
                unfinished = [self._slices.get(ev["task"], {}),
                              *([family.head, family.so_far()] if family is not None else [])]
                for part in unfinished:  # what they verified before the stop, and the worker time they took
                    cands.extend(part.get("candidates", ()))
                    self.report.add_seconds(part.get("seconds", {}))
                continue
            merged.append(ev["task"])
            self.report.add_summary(res["summary"])
            self.report.add_seconds(res["seconds"])
            self.report.tasks_done += 1
            if ev["task"] not in self._tallied:
                verdicts.add(res["verdicts"])
            cands.extend(res["candidates"])
            if res["stop_reason"] != "complete" and stop == "complete":
                stop = res["stop_reason"]
            if self._limit_reached(self.report.states, len(cands)):
                stop = "state limit" if self.config.state_limit and self.report.states >= self.config.state_limit \
                    else "result limit"
                break
        self.report.stop_reason = stop
        self.report.seconds["wall"] = time.time() - self.t0
        ranked, costs = _rank(cands, self.config.result_limit)
        selection = select(self.program, ranked, self.config.profile_top_k, predicted=model_seconds)
        verified_times = [c.found_s for c in ranked]
        self.report.first_verified_s = min(verified_times) if verified_times else None
        self.report.verified = len(ranked)
        if self.folder is not None:
            for c in ranked:  # the first finder's record, in task order, whichever worker wrote the file first
                self.folder.save_candidate(candidate_doc(c))
            self.folder.write_events(self._event_stream(front, set(merged)))
            self.folder.write_verdicts(verdicts)
            self.folder.write("result.json", {"ranking": [c.hash for c in ranked], "costs": costs,
                                              "report": self.report.to_dict(), "budgets": budgets(self.config),
                                              "selection": selection.to_dict()})
            self.folder.save_manifest()
        return SearchResult(self.program, self.config, ranked, self.report,
                            self.folder.path if self.folder is not None else None, costs, selection)

    def _event_stream(self, front: Outcome, merged: set[int]) -> Iterator[bytes]:
        """The run's stream as event blocks (``run_log``): the frontier's events, each merged task's spliced in at
        its root, in task order, by naming its events in ``tasks.gz`` (a task cut short is copied)."""
        assert self.folder is not None
        return run_log.stream(self._frontier or front.events.events, self.folder.tasks, self._unsaved_events,
                              self.folder.task_events, merged)

    def _limit_reached(self, states: int, found: int) -> bool:
        c = self.config
        return bool((c.state_limit and states >= c.state_limit) or (c.result_limit and found >= c.result_limit))


#: states a task's first run walks before it yields to the other tasks' (``_Search._drive``); a task that needs more
#: is split when continued
SLICE_STATES = 10_000
#: the most slices one worker call of a cluster takes (``split.batch_size``); the call stops starting them after
#: ``split.call_budget_s`` (``task.run_batch``), so a batch of heavy slices lasts about one of them
BATCH_TASKS = 32


def fused_first(tasks: list[tuple[str, list[Any]]], todo: list[int]) -> list[int]:
    """The order to hand tasks out in: roots with fewer plain kernels before them first.

    The frontier lists a root under every kernel-level prefix, in depth-first order, so the roots that fuse
    the most (a customized op straight on the program's inputs) come last, and with them the verified
    μGraphs: RMSNorm+Linear's first one was in task 647 of 819, 10 s into the search. Results are still
    merged in task order, so the outcome is the same; only the time to the first verified μGraph changes.
    State and result budgets count tasks in order, so under those the tasks go out in order too.
    """
    return sorted(todo, key=lambda i: (sum(_kernel_op(d) for d in tasks[i][1]), i))


def _kernel_op(d: Any) -> bool:
    """Whether ``d`` (a decision or its JSON form) is a kernel op, without decoding it (``fused_first`` looks at
    every decision of every task, serially, before the first task goes out)."""
    return isinstance(d, KernelOp) if not isinstance(d, list | tuple) else d[0] == KernelOp.kind


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def _rank(docs: list[dict[str, Any]], limit: int | None) -> tuple[list[Candidate], dict[str, float]]:
    """Deduplicate by canonical hash (first found wins) and sort by proxy cost — the cost the branch and bound
    keeps the best of, ties included —, its ties by the calibrated model (``profile.model_seconds``: the
    proxy ties μGraphs whose grids and access widths differ, 20 of 26 RMSNorm b1 ones at one figure), then by
    discovery order."""
    seen: dict[str, Candidate] = {}
    for d in docs:
        seen.setdefault(d["hash"], candidate_from_doc(d))
    cands = list(seen.values())[:limit] if limit else list(seen.values())
    costs = {c.hash: ranking_seconds(c.graph) for c in cands}
    tied = Counter(round(c, PROXY_DIGITS) for c in costs.values())
    model = {c.hash: model_seconds(c.graph) for c in cands if tied[round(costs[c.hash], PROXY_DIGITS)] > 1}
    order = sorted(range(len(cands)), key=lambda i: (round(costs[cands[i].hash], PROXY_DIGITS),
                                                     model.get(cands[i].hash, 0.0), i))
    return [cands[i] for i in order], costs


#: proxy costs equal to this many decimals (of seconds: a femtosecond) are ties
PROXY_DIGITS = 15

