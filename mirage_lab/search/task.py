"""One search task: the subtree below one block-graph root, explored by whichever worker runs it.

Tasks carry only JSON-able data and rebuild their context (program, oracle, verifier) in the worker, once
per process, so workers share nothing and any ``concurrent.futures.Executor`` can run them. A task returns
its events compressed, for the parent to append to the run folder's ``tasks.gz``; it writes every candidate
into the run folder the moment it is verified (when the folder is on its machine), and returns the sha256
of each file it wrote, for the parent to record in the manifest.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mirage_lab.absexpr.oracle import Oracle
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.io import graph_from_dict, graph_to_dict
from mirage_lab.search.config import SearchConfig
from mirage_lab.search.decision import decoded, encoded
from mirage_lab.search.enumerate import Enumerator
from mirage_lab.search.events import EventLog
from mirage_lab.search.run_folder import RunFolder
from mirage_lab.search.split import summed
from mirage_lab.search.state import Candidate
from mirage_lab.search.verdicts import Packed
from mirage_lab.semantics.footprint import small_pages
from mirage_lab.task_log import record_member
from mirage_lab.verify.verifier import Verifier

BUDGETS = ("time_limit_s", "state_limit", "result_limit")
#: the stop reasons of a task its parent saves in ``tasks.gz`` (one cut by the time limit runs again)
SAVED = ("complete", "state limit")

_CONTEXTS: dict[tuple[str, str], tuple[KernelGraph, SearchConfig, Oracle, Verifier]] = {}
#: the two documents' JSON text → their context's key: a call's documents come unpickled afresh, and their text
#: costs ~0.1 ms where parsing the program and hashing it canonically costs ~2.5 ms, a call's overhead on LoRA
_KEYS: dict[str, tuple[str, str]] = {}


#: (``_LOCAL.memos``) the setup and checks' memos of the last walk of each search in this thread (``Walk.memos``),
#: with the context they were made with, for its next call's walks to start from: they hold for any walk of the
#: search (``Walk.share_memos``) in that context (an oracle's normal forms are numbered per oracle), and 1 500 of
#: LoRA b1's tasks, one call each as a process pool runs them, took 66-70 s with them against 82-83 s from nothing.
#: One store per thread, since a Dask worker may run calls in several threads and the memos are not thread-safe.
_LOCAL = threading.local()
#: the most memo entries a thread keeps between calls: GQA b1's serial search peaked at 1.11 GB with its 1.34 M
#: kept, 0.79 GB without (about 240 bytes an entry); past it, the next call starts from nothing again
MEMO_ENTRIES = 1_000_000


def task_context(program_doc: dict[str, Any], config_doc: dict[str, Any]) -> tuple[KernelGraph, SearchConfig, Oracle,
                                                                                  Verifier]:
    """The worker's program, oracle and verifier for one search, built once per process."""
    return _CONTEXTS[_context_key(program_doc, config_doc)]


def forget_memos() -> None:
    """Drop the walks' memos this thread keeps between calls (``_LOCAL``): a search that ran its tasks here is
    over."""
    _LOCAL.__dict__.pop("memos", None)


def _kept_memos(key: tuple[str, str]) -> dict[str, Any] | None:
    """The memos this thread kept for the search ``key`` in its current context (``_keep_memos``), if any."""
    got = _LOCAL.__dict__.get("memos", {}).get(key)
    return got[1] if got is not None and got[0] is _CONTEXTS.get(key) else None


def _keep_memos(key: tuple[str, str], walker: Enumerator) -> None:
    """Keep ``walker``'s memos for the search's next call in this thread, unless they hold too much."""
    memos = walker.memos()
    kept = _LOCAL.__dict__.setdefault("memos", {})
    if sum(len(v) for v in memos.values() if isinstance(v, dict)) <= MEMO_ENTRIES:
        kept[key] = (_CONTEXTS[key], memos)
    else:
        kept.pop(key, None)


def _context_key(program_doc: dict[str, Any], config_doc: dict[str, Any]) -> tuple[str, str]:
    """The key of the search's context in ``_CONTEXTS``, built there first if need be."""
    text = json.dumps([program_doc, config_doc], sort_keys=True, separators=(",", ":"))
    key = _KEYS.get(text)
    if key is not None and key in _CONTEXTS:
        return key
    program, config = graph_from_dict(program_doc), SearchConfig.from_json(config_doc)
    key = (program.canonical_hash(), config.hash())
    if len(_KEYS) > 16:
        _KEYS.clear()
    _KEYS[text] = key
    if key not in _CONTEXTS:
        if len(_CONTEXTS) > 4:
            _CONTEXTS.clear()
        oracle = Oracle.for_program(program, engine=config.oracle_engine)
        verifier = search_verifier(program, config)
        if multiprocessing.parent_process() is not None:  # a pool's or a cluster's worker: the trials once per machine
            verifier.share_trials()
        _CONTEXTS[key] = (program, config, oracle, verifier)
    return key


#: how long a search's verification waits for memory another worker holds before it gives up (``ResourceError``)
MEMORY_WAIT_S = 600.0


def search_verifier(program: KernelGraph, config: SearchConfig) -> Verifier:
    """The verifier a search checks its candidates with; it also checks saved candidates again. Its checks
    wait for memory the other workers' verifications hold, rather than stop the search."""
    return Verifier(program, trials=config.trials, seed=config.seed, float_first=True, memory_wait_s=MEMORY_WAIT_S)


def run_task(program_doc: dict[str, Any], config_doc: dict[str, Any], index: int, parent: str,
             prefix: list[Any], run_dir: str | None, deadline: float | None, started: float,
             incumbent: float | None = None, slice_states: int | None = None,
             resume: dict[str, Any] | None = None, split: bool = False) -> dict[str, Any]:
    """Explore one block-graph root's subtree; the worker entry point (JSON-able in and out).

    ``deadline`` and ``started`` are epoch seconds (the search's), so workers on other machines agree.
    ``incumbent``: with ``cost_bound``, the proxy cost of the cheapest μGraph verified so far (``bound.py``).
    ``slice_states``: walk at most that many states; a task cut there stops with reason "slice", and its result
    carries where it stopped (``resume``), to be continued later from there (``runner``; ``join_slice``).
    ``split``: the customized ops opened after the root's closes are not walked but returned as ``subtasks``
    (``split.py``), for ``run_batch``.
    """
    key = _context_key(program_doc, config_doc)
    with small_pages():
        res, walker = _run_task(_CONTEXTS[key], index, parent, prefix, run_dir, deadline, started, incumbent,
                                slice_states, resume, split, None, _kept_memos(key), None)
    _keep_memos(key, walker)
    return res


def run_batch(program_doc: dict[str, Any], config_doc: dict[str, Any], indices: list[int], parents: list[str],
              prefixes: list[list[Any]], run_dir: str | None, deadline: float | None, started: float,
              incumbent: float | None, slices: Sequence[int | None], subs: Sequence[int | None],
              budget_s: float | None = None, resumes: Sequence[dict[str, Any] | None] | None = None
              ) -> list[dict[str, Any]]:
    """Several tasks or sub-tasks in one worker call (``run_task``'s arguments, a list each where they differ):
    a cluster's scheduler hands out one call instead of many, the walks share their checks' memos (sub-tasks of
    one task meet the same operands), and each starts from the cheapest μGraph the ones before it verified.
    ``subs[k]`` numbers a sub-task within its task (its node ids are ``<task>.<sub>.<n>``), None for a task.
    With ``budget_s``, no item starts once the call has run that long: the results are those of the first items,
    and the caller hands the others out again (a batch of slices then lasts about one slice however many it
    holds); and a slice with others behind it stops there too (``Walk.yield_at``), its result ``yielded``, to be
    resumed where it stopped (``resumes[k]``, its slice's rest) — MQA b1's 2 s slices kept the slices behind them
    in their call waiting for it."""
    out: list[dict[str, Any]] = []
    key = _context_key(program_doc, config_doc)
    context = _CONTEXTS[key]
    memos: Enumerator | dict[str, Any] | None = _kept_memos(key)
    began = time.perf_counter()
    resumes = resumes or [None] * len(indices)
    with small_pages():
        for k, (index, parent, prefix, cap, sub, resume) in enumerate(zip(indices, parents, prefixes, slices, subs,
                                                                          resumes, strict=True)):
            if out and budget_s is not None and time.perf_counter() - began >= budget_s:
                break
            yield_at = began + budget_s if budget_s is not None and cap is not None and k + 1 < len(indices) else None
            res, memos = _run_task(context, index, parent, prefix, run_dir, deadline, started, incumbent, cap, resume,
                                   False, sub, memos, yield_at)
            if res["incumbent"] is not None:
                incumbent = res["incumbent"] if incumbent is None else min(incumbent, res["incumbent"])
            out.append(res)
    if isinstance(memos, Enumerator):
        _keep_memos(key, memos)
    return out


def _run_task(context: tuple[KernelGraph, SearchConfig, Oracle, Verifier], index: int, parent: str,
              prefix: list[Any], run_dir: str | None, deadline: float | None, started: float,
              incumbent: float | None, slice_states: int | None, resume: dict[str, Any] | None, split: bool,
              sub: int | None, memos: Enumerator | dict[str, Any] | None,
              yield_at: float | None) -> tuple[dict[str, Any], Enumerator]:
    program, config, oracle, verifier = context
    # candidates go to the run folder the moment they are verified, when it is on this machine (a killed
    # worker then loses nothing); a worker elsewhere returns them only, and the parent writes them
    folder = RunFolder(run_dir) if run_dir and (Path(run_dir) / "candidates").is_dir() else None
    t0 = time.time()
    files: dict[str, str] = {}  # what this task wrote, and its sha256: the parent records them in the manifest

    def keep(c: Candidate) -> None:
        if folder is not None:
            files[RunFolder.candidate_name(c.hash)] = folder.save_candidate(candidate_doc(c))

    # with a run folder, the events come back compressed, for the parent to append to tasks.gz
    log = EventLog(keep=False, packed=run_dir is not None)
    cap = config.state_limit if slice_states is None else min(slice_states, config.state_limit or slice_states)
    ids = f"{index}." if sub is None else f"{index}.{sub}."
    program_s = verifier.program_seconds
    if sub is not None and isinstance(memos, Enumerator) and memos.stands_before(prefix):  # (the last sub-task's
        # kernel state, in this call)
        walker = memos
        walker.yield_at = yield_at
        out = walker.next_opening(parent, prefix[-1], ids, log, keep, incumbent)
    else:
        walker = Enumerator(program, config, oracle, verifier, ids=ids, state_cap=cap,
                            deadline=None if deadline is None else time.perf_counter() + (deadline - time.time()),
                            on_candidate=keep, t0=time.perf_counter() - (t0 - started), log=log,
                            incumbent=incumbent, memos=memos)
        walker.yield_at = yield_at
        out = walker.run(prefix, parent, resume=resume, split=split)
    stopped_at = None
    yielded = out.stop_reason == "yield"
    if slice_states is not None and (yielded or (out.stop_reason == "state limit" and cap == slice_states)):
        out.stop_reason, stopped_at = "slice", walker.resume_point(prefix)
    events = log.packed_events() if run_dir is not None else None
    res: dict[str, Any] = {"resume": stopped_at, "yielded": yielded, "index": index, "sub": sub,
            "subtasks": out.tasks if split else [],
            "trials_s": verifier.program_seconds - program_s,  # (the program's trials, evaluated by this task)
            "events_gz": events,
            "summary": log.summary(), "verdicts": log.verdicts,
            "candidates": [candidate_doc(c) for c in out.candidates],
            "seconds": out.seconds, "stop_reason": out.stop_reason, "states": out.states,
            "wall": time.time() - t0, "config_budgets": budgets(config), "files": files,
            "began": t0, "worker": worker_name(),  # (for the scaling figures)
            "incumbent": walker.incumbent if math.isfinite(walker.incumbent) else None}
    if events is not None and resume is None and sub is None and not res["subtasks"] \
            and out.stop_reason in SAVED:  # (a task walked whole: its parent saves this very record)
        res["record_gz"] = record_member(index, {k: v for k, v in res.items() if k != "events_gz"}, len(events))
    res["verdicts"] = Packed(log.verdicts)  # (what the parent loads fastest; the record holds them as a dict)
    return res, walker


def worker_name() -> str:
    """Which process walks a task (its result's ``worker``): ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def join_slice(first: dict[str, Any], then: dict[str, Any]) -> dict[str, Any]:
    """The result of a task walked as a slice (``first``) and then continued where it stopped (``then``): that of
    one walk. Its events are the two logs one after the other (event blocks concatenate), the events of a walk that
    never stopped; counts, verdicts, candidates and times add up."""
    out = {**then, **summed([first, then]), "began": first["began"]}
    out.pop("record_gz", None)  # (the record of ``then`` alone; a worker encodes none for a resumed walk anyway)
    if first.get("events_gz") is not None or then.get("events_gz") is not None:
        out["events_gz"] = (first.get("events_gz") or b"") + (then.get("events_gz") or b"")
    return out


def candidate_doc(c: Candidate) -> dict[str, Any]:
    return {"hash": c.hash, "graph": graph_to_dict(c.graph), "decisions": encoded(c.decisions), "node": c.node,
            "verification": c.verification, "found_s": c.found_s}


def candidate_from_doc(d: dict[str, Any]) -> Candidate:
    return Candidate(graph_from_dict(d["graph"]), d["hash"], decoded(d["decisions"]), d["node"], d["verification"],
                     float(d["found_s"]))


def budgets(config: SearchConfig) -> dict[str, Any]:
    return {k: getattr(config, k) for k in BUDGETS}
