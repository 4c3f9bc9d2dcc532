"""Probabilistic equivalence of μGraphs over finite fields, with evidence (SPEC §6).

``Verifier`` holds one reference program and caches its field evaluation per trial
seed, so a search can check many candidates against it; it keeps no global state.
``verify`` is the one-shot form (it keeps its most recent ``Verifier`` for a next call
against the same program). The field arithmetic is ``CenteredFieldArith`` (float64
residues) wherever the field allows, else ``FieldArith``: the residues, hence every
verdict and witness, are the same either way. Each trial draws fresh uniform inputs from Z_p × Z_q;
a candidate passes only if, in every trial, some assignment of its outputs to the
reference's outputs matches element for element (types first, SPEC §6.3). The
assignment that matched in every trial is returned (the reference returned the
identity by mistake, SPEC §11 #3).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import threading
import time
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from mirage_lab.arguments import checked, checked_methods
from mirage_lab.bench.tolerance import within
from mirage_lab.bounds import check_trials, require_room, size
from mirage_lab.errors import InputError
from mirage_lab.ir.builder import as_graph
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.semantics.arith import FloatArith
from mirage_lab.semantics.centered_field import verification_arith
from mirage_lab.semantics.field import DEFAULT_FIELD, REFERENCE_FIELD, FieldSpec, FieldValue
from mirage_lab.semantics.footprint import (
    available_bytes,
    large_allocation_turn,
    memory_guard,
    peak_elements,
    require_memory,
)
from mirage_lab.semantics.interpret import run_kernel_graph
from mirage_lab.semantics.kernel_memo import KernelMemo, MemoScope, held_bytes
from mirage_lab.semantics.liveness import live_inputs
from mirage_lab.verify.degree import degree, heuristic_ops, unsupported_ops
from mirage_lab.verify.result import FloatCheck, TrialEvidence, VerificationResult, Witness
from mirage_lab.verify.trials import SharedTrials, shared_key

FloatCheckMode = bool | Literal["auto"]
Parity = Literal["older", "current"]
#: "auto" runs the float64 cross-check when inputs total at most this many elements (or heuristic ops occur)
AUTO_FLOAT_ELEMENTS = 1 << 25
FLOAT_RTOL = 1e-7
#: the float64 check's input ranges: signed first, positive if the program overflows or hits NaN on those
FLOAT_RANGES = ((-0.5, 0.5), (0.1, 0.6))
#: ``moved_by``: a change in the program's outputs this far above their size is the move's, not rounding's (1e-16)
MOVE_RTOL = 1e-9


def _digest(v: FieldValue) -> str:
    h = hashlib.sha256(np.ascontiguousarray(v.p).tobytes())
    h.update(np.ascontiguousarray(v.q).tobytes())
    return h.hexdigest()[:16]


def _first_mismatch(c: FieldValue, r: FieldValue) -> tuple[int, ...] | None:
    bad = np.argwhere((c.p != r.p) | (c.q != r.q))
    return tuple(int(i) for i in bad[0]) if len(bad) else None


@checked_methods
class Verifier:
    """Checks candidates against one reference program (SPEC §6.5).

    ``float_first=True`` (what the search uses) runs the float64 check before the field trials, so the
    many wrong candidates a search meets are rejected at a fraction of a field trial's cost; the
    verdicts are the same, only rejected candidates' evidence is then the float witness.
    ``memory_wait_s`` (the search's: ``search.task.MEMORY_WAIT_S``) lets a check that fits this machine, but not
    the memory free at that moment, wait that long for another process's work to free it.
    """

    def __init__(self, reference: Any, *, trials: int = 3, seed: int = 0, field: FieldSpec = DEFAULT_FIELD,
                 backend: str | None = None, float_check: FloatCheckMode = "auto",
                 parity: Parity | None = None, float_first: bool = False, memory_wait_s: float = 0.0) -> None:
        self.reference = as_graph(reference)
        if parity is not None:  # the reference's exact procedure: one deterministic test over (167, 83)
            field, trials, float_check = REFERENCE_FIELD, 1, False
        _check_settings(trials, seed, field, float_check, parity)
        if not isinstance(memory_wait_s, int | float) or isinstance(memory_wait_s, bool) or memory_wait_s < 0:
            raise InputError(f"memory_wait_s must be a number of seconds ≥ 0, got {memory_wait_s!r}")
        self.trials, self.seed, self.field, self.parity = trials, seed, field, parity
        self.memory_wait_s = float(memory_wait_s)
        self.ns = verification_arith(field, backend)
        if self.ns.xp is np:
            require_memory(self.reference, self.ns.element_bytes, "verifying over the finite field",
                           self.memory_wait_s)
            self._require_trial_room()
        self.backend = backend
        self.float_check, self.float_first = float_check, float_first
        # per trial: the inputs, and the reference's outputs on the host with their digests
        self._program: dict[int, tuple[list[FieldValue], list[FieldValue], tuple[str, ...]]] = {}
        # per input range of the float64 check: its inputs and the reference's outputs
        self._float_program: dict[int, tuple[list[Any], list[Any]]] = {}
        self._moved: dict[tuple[int, int, int], bool] = {}  # (``moved_by``) per input move
        self._program_seconds = 0.0
        self.shared: SharedTrials | None = None  # (``share_trials``) this machine's copy of the trials
        # kernels already evaluated on a trial's inputs: a search's candidates share their first kernels
        self.memo = KernelMemo()
        self._ref_live = live_inputs(self.reference)  # (semantics/liveness.py)
        self.ref_degree = degree(self.reference)
        self.ref_heuristic = heuristic_ops(self.reference)

    def __repr__(self) -> str:
        return (f"Verifier({len(self.reference.inputs)} inputs → {len(self.reference.outputs)} outputs, "
                f"trials={self.trials}, field={self.field}{', parity=' + self.parity if self.parity else ''})")

    def _require_trial_room(self) -> None:
        """Every trial's evaluation of the program (its inputs and outputs) is kept for the next candidate:
        refuse, before the first, a trial count whose evaluations cannot all fit in memory."""
        per_trial = (sum(math.prod(t.dims) for t in (*self.reference.input_types, *self.reference.output_types))
                     * self.ns.element_bytes)
        need = self.trials * per_trial + peak_elements(self.reference) * self.ns.element_bytes
        require_room(need, available_bytes(), f"trials={self.trials} (each keeps one evaluation of the program, "
                     f"{size(per_trial)})", "ask for fewer trials, or use smaller shapes")

    # -- inputs and the cached program ---------------------------------------------------------
    def trial_seed(self, trial: int) -> tuple[int, ...]:
        return (self.seed, trial)

    def _inputs(self, trial: int) -> list[FieldValue]:
        if self.parity is not None:
            return [self._parity_input(i, t.dims) for i, t in enumerate(self.reference.input_types)]
        rng = np.random.default_rng(list(self.trial_seed(trial)))
        return [self.ns.random(t.dims, rng) for t in self.reference.input_types]

    def _parity_input(self, rank: int, dims: tuple[int, ...]) -> FieldValue:
        """The reference's deterministic fingerprints: idx mod pq (older) or (100003·rank + idx) mod pq."""
        pq = self.field.p * self.field.q
        idx = np.arange(math.prod(dims), dtype=np.int64).reshape(dims)
        packed = (idx if self.parity == "older" else 100003 * rank + idx) % pq
        return self.ns.from_host(packed)

    def program(self, trial: int) -> tuple[list[FieldValue], list[FieldValue], tuple[str, ...]]:
        """The inputs of ``trial``, and the reference's outputs on them (on the host) and their digests,
        evaluated once."""
        if trial not in self._program:
            t = time.perf_counter()
            self._program[trial] = (self.shared.get(trial, lambda: self._evaluate(trial)) if self.shared is not None
                                    else self._evaluate(trial))
            self._program_seconds += time.perf_counter() - t
        return self._program[trial]

    def _evaluate(self, trial: int) -> tuple[list[FieldValue], list[FieldValue], tuple[str, ...]]:
        ins = self._inputs(trial)
        outs = [self.ns.to_host(v) for v in run_kernel_graph(self.reference, self._live(ins, self._ref_live), self.ns,
                                                             self.memo.scope(("field", trial), self._ref_live))]
        return ins, outs, tuple(_digest(v) for v in outs)

    def share_trials(self) -> str | None:
        """Evaluate each trial once per machine (``verify/trials.py``) from now on; returns the key that names the
        shared files (for ``trials.remove_all``), or None where they cannot be shared (no /dev/shm, arrays on a
        device)."""
        if self.ns.xp is not np or not SharedTrials.usable():
            return None
        key = shared_key(self)
        self.shared = SharedTrials(key)
        return key

    def _live(self, ins: list[FieldValue], live: list[frozenset[str]]) -> list[FieldValue]:
        """The trial's inputs as a graph with inputs' ``live`` components reads them: the components that
        reach no output dropped (free zeros)."""
        return [self.ns.restrict(v, parts) for v, parts in zip(ins, live, strict=True)]

    @property
    def program_seconds(self) -> float:
        """Seconds spent evaluating the program's trials so far (once per trial, then cached)."""
        return self._program_seconds

    def cached_bytes(self) -> int:
        """Memory held by the cached program evaluations (field trials and the float64 check) and the kept kernels."""
        values: list[Any] = []
        for ins, outs, _ in self._program.values():
            values += [*ins, *outs]
        for fins, fouts in self._float_program.values():
            values += [*fins, *fouts]
        return held_bytes(values) + self.memo.bytes

    def release(self) -> None:
        """Drop the cached program evaluations (they are rebuilt when a check needs them again): a search's
        parent, whose workers do the checking, would otherwise hold them all search long (7.5 GB for MHA b8)."""
        self._program.clear()
        self._float_program.clear()
        self.memo.clear()

    # -- checking -------------------------------------------------------------------------------
    def check(self, candidate: Any) -> VerificationResult:
        cand = as_graph(candidate)
        if cand.input_types != self.reference.input_types:
            raise InputError("the candidate's inputs differ from the reference's: "
                             f"{[str(t) for t in cand.input_types]} vs {[str(t) for t in self.reference.input_types]}; "
                             "both graphs must take the same tensors in the same order")
        if self.ns.xp is not np:
            with memory_guard("verifying over the finite field"):
                return self._check(cand)
        # (the reference was checked once, when the verifier was made); a candidate needing over half the free
        # memory waits until no other such verification runs (another search worker's, say), then is checked
        need = peak_elements(cand) * self.ns.element_bytes
        have = available_bytes()
        if have is not None and need > have:  # the kept kernels give way first (``KernelMemo``)
            self.memo.clear()
        with large_allocation_turn(need):
            require_memory(cand, self.ns.element_bytes, "verifying over the finite field", self.memory_wait_s)
            with memory_guard("verifying over the finite field"):
                return self._check(cand)

    def _check(self, cand: KernelGraph) -> VerificationResult:
        start = time.perf_counter()
        before = self._program_seconds
        heur = sorted(self.ref_heuristic | heuristic_ops(cand))
        unsupported = unsupported_ops(cand) | unsupported_ops(self.reference)
        D = self.ref_degree + degree(cand)
        trials: list[TrialEvidence] = []
        candidates = self._type_matchings(cand)
        reason = "every trial matched"
        # ``float_first``: the float64 check (when it runs at all) goes first. It costs a fraction of one
        # field trial, and a candidate it rejects is rejected whatever the field says, so only the reason,
        # the evidence and the time change: what a search wants, not someone reading the field witness.
        needed = bool(heur) or bool(unsupported)
        floats = self._float_run(cand, needed) if candidates and self.float_first else None
        checks = {perm: self._float_verdict(floats, perm) for perm in candidates} if floats else {}
        float_ok = [perm for perm in candidates if not checks or checks[perm].passed is not False]
        if not candidates:
            reason = "no assignment of candidate outputs to reference outputs has equal dims and dtypes"
        elif not float_ok:
            reason = f"the float64 check failed before any field trial ({checks[candidates[0]].reason})"
        elif unsupported:
            reason = f"no field rule for {', '.join(sorted(unsupported))}: decided by the float64 check alone"
        else:
            live = live_inputs(cand)  # once per candidate, for every trial
            for k in range(self.trials):
                ev = self._trial(cand, live, k, float_ok)
                trials.append(ev)
                float_ok = [perm for perm in float_ok if perm in ev.permutations]
                if not ev.matched:
                    reason = f"trial {k} found no matching assignment of outputs"
                    break
        field_ok = bool(float_ok) and all(t.matched for t in trials)
        if field_ok and floats is None:
            floats = self._float_run(cand, needed)
            checks = {perm: self._float_verdict(floats, perm) for perm in float_ok[:1]} if floats else {}
        perm0 = next(iter(float_ok or candidates), None)
        fc = checks[perm0] if perm0 is not None and perm0 in checks else FloatCheck(False, None, None, "not run")
        equivalent = field_ok and fc.passed is not False and (bool(trials) or bool(fc.passed))
        if field_ok and fc.passed is False:
            reason = f"the field trials matched but the float64 check failed ({fc.reason})"
        bound = (min(1.0, D / self.field.p) ** len(trials)) if equivalent and trials else None
        total = time.perf_counter() - start
        program = self._program_seconds - before
        return VerificationResult(
            equivalent=equivalent, reason=reason, permutation=perm0 if equivalent else None,
            trials=tuple(trials), field_name=str(self.field), p=self.field.p, degree=D, error_bound=bound,
            bound_is_heuristic=bool(heur), heuristic_ops=tuple(heur), float_check=fc,
            timings={"total": total, "program": program, "candidate": sum(t.seconds for t in trials),
                     "float_check": total - program - sum(t.seconds for t in trials)})

    def _type_matchings(self, cand: KernelGraph) -> list[tuple[int, ...]]:
        ref_t = [(t.dims, t.dtype) for t in self.reference.output_types]
        cand_t = [(t.dims, t.dtype) for t in cand.output_types]
        if len(ref_t) != len(cand_t):
            return []
        return [perm for perm in itertools.permutations(range(len(cand_t)))
                if all(cand_t[j] == ref_t[i] for i, j in enumerate(perm))]

    def _trial(self, cand: KernelGraph, live: list[frozenset[str]], k: int, perms: Sequence[tuple[int, ...]]
               ) -> TrialEvidence:
        ins, want, digests = self.program(k)
        t = time.perf_counter()
        got = [self.ns.to_host(v) for v in run_kernel_graph(cand, self._live(ins, live), self.ns,
                                                            self.memo.scope(("field", k), live))]
        equal = {(i, j): got[j].equals(want[i]) for perm in perms for i, j in enumerate(perm)}
        matched = tuple(perm for perm in perms if all(equal[(i, j)] for i, j in enumerate(perm)))
        witness = None
        if not matched:
            perm = perms[0]
            i = next(i for i, j in enumerate(perm) if not equal[(i, j)])
            j = perm[i]
            idx = _first_mismatch(got[j], want[i]) or ()
            witness = Witness(i, j, idx, (int(got[j].p[idx]), int(got[j].q[idx])),
                              (int(want[i].p[idx]), int(want[i].q[idx])), "field values (p, q)")
        return TrialEvidence(k, self.trial_seed(k), bool(matched), digests, matched,
                             witness, time.perf_counter() - t)

    # -- real arithmetic --------------------------------------------------------------------------
    def _float_run(self, cand: KernelGraph, needed: bool) -> tuple[list[Any], list[Any], bool] | None:
        """(reference outputs, candidate outputs, conclusive) in float64, or None when the check does not run."""
        mode = self.float_check
        small = sum(t.numel for t in cand.input_types) <= AUTO_FLOAT_ELEMENTS
        if mode is False or (mode == "auto" and not (needed or small)):
            return None
        ns = FloatArith(self.backend)
        for k in range(len(FLOAT_RANGES)):
            with np.errstate(all="ignore"):
                ins, want = self._float_reference(ns, k)
                if not all(np.isfinite(w).all() for w in want):
                    continue
                got = [ns.to_host(v) for v in run_kernel_graph(cand, ins, ns, self._float_scope(k))]
            return want, got, True
        return [], [], False

    def _float_reference(self, ns: FloatArith, k: int) -> tuple[list[Any], list[Any]]:
        """The float64 check's inputs from range ``k`` and the reference's outputs on them, made once."""
        if k not in self._float_program:
            low, high = FLOAT_RANGES[k]
            rng = np.random.default_rng([self.seed, 1 << 20])
            ins = [ns.from_host(rng.uniform(low, high, t.dims)) for t in self.reference.input_types]
            outs = run_kernel_graph(self.reference, ins, ns, self._float_scope(k))
            self._float_program[k] = (ins, [ns.to_host(v) for v in outs])
        return self._float_program[k]

    def moved_by(self, i: int, dim: int, step: int) -> bool:
        """Whether every output of the program changes when input ``i`` gains 1 at the origin and loses 1 at position
        ``step`` of ``dim`` (float64, the float check's first inputs), by far more than rounding could: then no
        function that cannot see that move computes the program (``search/folds.py``). Remembered per move."""
        key = (i, dim, step)
        if key not in self._moved:
            ns = FloatArith(self.backend)
            with np.errstate(all="ignore"):
                ins, want = self._float_reference(ns, 0)
                x = np.array(ns.to_host(ins[i]), dtype=np.float64)
                at = [0] * x.ndim
                x[tuple(at)] += 1.0
                at[dim] = step
                x[tuple(at)] -= 1.0
                moved = [ns.from_host(x) if k == i else v for k, v in enumerate(ins)]
                got = [ns.to_host(v) for v in run_kernel_graph(self.reference, moved, ns)]
            self._moved[key] = all(
                np.isfinite(w).all() and np.isfinite(g).all()
                and float(np.abs(g - w).max()) > MOVE_RTOL * max(float(np.abs(w).max()), 1e-300)
                for w, g in zip(want, got, strict=True))
        return self._moved[key]

    def _float_scope(self, k: int) -> MemoScope:
        return self.memo.scope(("float", k), [None] * len(self.reference.inputs))

    @staticmethod
    def _float_verdict(floats: tuple[list[Any], list[Any], bool], perm: tuple[int, ...]) -> FloatCheck:
        want, got, conclusive = floats
        if not conclusive:
            return FloatCheck(True, None, None, "inconclusive: the program is not finite on random inputs")
        worst, witness = 0.0, None
        for i, j in enumerate(perm):
            scale = max(float(np.abs(want[i]).max()), 1e-300)
            diff = np.abs(got[j] - want[i])
            err = float(np.nanmax(diff)) / scale if np.isfinite(got[j]).all() else math.inf
            if err > worst:
                worst = err
                flat = int(np.argmax(np.where(np.isnan(diff), np.inf, diff)))
                idx = tuple(int(x) for x in np.unravel_index(flat, diff.shape))
                witness = Witness(i, j, idx, float(got[j][idx]), float(want[i][idx]), "float64")
        passed = within(worst, FLOAT_RTOL)  # a candidate output with a NaN or inf has err = inf: it fails
        return FloatCheck(True, passed, worst, f"max rel err {worst:.1e} vs tolerance {FLOAT_RTOL:.0e}",
                          None if passed else witness)


def _check_settings(trials: Any, seed: Any, field: Any, float_check: Any, parity: Any) -> None:
    check_trials(trials)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise InputError(f"seed must be an integer ≥ 0, got {seed!r}")
    if not isinstance(field, FieldSpec):
        raise InputError(f"field must be a FieldSpec (e.g. mirage_lab.semantics.field.DEFAULT_FIELD), got {field!r}")
    if float_check not in (True, False, "auto"):
        raise InputError(f"float_check must be True, False or 'auto', got {float_check!r}")
    if parity not in (None, "older", "current"):
        raise InputError(f"parity must be None, 'older' or 'current', got {parity!r}")


@checked
def verify(candidate: Any, reference: Any, *, trials: int = 3, seed: int = 0, field: FieldSpec = DEFAULT_FIELD,
           backend: str | None = None, float_check: FloatCheckMode = "auto",
           parity: Parity | None = None) -> VerificationResult:
    """Is ``candidate`` equivalent to ``reference``? Randomised finite-field testing with evidence.

    ``trials`` independent random trials over ``field`` (default p = 16 774 463); the float64
    cross-check runs when heuristic ops occur or inputs are small (``float_check="auto"``).
    ``parity="older"|"current"`` reproduces the reference implementation's single deterministic test.
    The reference's evaluation is kept for the next call against the same program and settings
    (the most recent one, if it takes under a quarter of the free memory); ``forget_programs()`` drops it.
    """
    _check_settings(trials, seed, field, float_check, parity)
    ref = as_graph(reference)
    key = (ref.canonical_hash(), trials, seed, field, backend, float_check, parity)
    with _RECENT_LOCK:
        verifier = _RECENT.get(key)
        if verifier is None:
            _RECENT.clear()  # another program's evaluation: free it before this one is made
    if verifier is None:
        verifier = Verifier(ref, trials=trials, seed=seed, field=field, backend=backend,
                            float_check=float_check, parity=parity)
    result = verifier.check(candidate)
    _remember(key, verifier)
    return result


#: ``verify``'s most recent verifier, so a notebook checking several candidates evaluates the program once
_RECENT: dict[tuple[Any, ...], Verifier] = {}
_RECENT_LOCK = threading.Lock()
KEEP_SHARE = 0.25  # of the memory available after the call


def _remember(key: tuple[Any, ...], verifier: Verifier) -> None:
    room = available_bytes()
    keep = room is not None and verifier.cached_bytes() <= KEEP_SHARE * room
    with _RECENT_LOCK:
        _RECENT.clear()
        if keep:
            _RECENT[key] = verifier


def forget_programs() -> None:
    """Drop the program evaluation ``verify`` keeps between calls (its memory is freed)."""
    with _RECENT_LOCK:
        _RECENT.clear()
