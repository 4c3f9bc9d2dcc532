"""What a verification returns: the verdict with its evidence, readable in a notebook."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Witness:
    """The first element where the candidate and the reference disagree."""

    output: int  # reference output index
    candidate_output: int
    index: tuple[int, ...]
    candidate: tuple[int, int] | float
    reference: tuple[int, int] | float
    note: str = ""

    def __str__(self) -> str:
        where = f"output {self.output} (candidate output {self.candidate_output}) at {list(self.index)}"
        return f"{where}: candidate {self.candidate} ≠ reference {self.reference}" + (
            f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class TrialEvidence:
    """One random trial: its seed, the output fingerprints and, on failure, a witness."""

    trial: int
    seed: tuple[int, ...]
    matched: bool
    fingerprints: tuple[str, ...]  # a digest of each reference output's field values
    permutations: tuple[tuple[int, ...], ...]  # candidate-output assignments that matched in this trial
    witness: Witness | None = None
    seconds: float = 0.0


@dataclass(frozen=True)
class FloatCheck:
    """The real-arithmetic cross-check (float64 on random inputs)."""

    ran: bool
    passed: bool | None
    max_rel_error: float | None
    reason: str = ""
    witness: Witness | None = None

    def numbers(self) -> dict[str, Any]:
        """Whether it ran and passed, and its largest relative error: what a saved verdict keeps of it."""
        return {"ran": self.ran, "passed": self.passed, "max_rel_error": self.max_rel_error}


@dataclass(frozen=True)
class VerificationResult:
    equivalent: bool
    reason: str
    permutation: tuple[int, ...] | None  # permutation[i] = candidate output matching reference output i
    trials: tuple[TrialEvidence, ...]
    field_name: str
    p: int
    degree: int
    error_bound: float | None  # ε ≤ (D/p)^k, None when no trial ran or the verdict is "different"
    bound_is_heuristic: bool
    heuristic_ops: tuple[str, ...]
    float_check: FloatCheck
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def witness(self) -> Witness | None:
        failed = next((t for t in self.trials if not t.matched), None)
        return failed.witness if failed is not None else self.float_check.witness

    def __bool__(self) -> bool:
        return self.equivalent

    def summary(self) -> str:
        verdict = "EQUIVALENT" if self.equivalent else "DIFFERENT"
        parts = [f"{verdict}: {self.reason}"]
        if self.error_bound is not None:
            kind = f"heuristic: {', '.join(self.heuristic_ops)}" if self.bound_is_heuristic else "LAX"
            parts.append(f"ε ≤ {self.error_bound:.2e} ({kind}; D={self.degree}, k={len(self.trials)}, p={self.p})")
        if self.float_check.ran:
            parts.append(f"float64 check {'passed' if self.float_check.passed else 'FAILED'} "
                         f"(max rel err {self.float_check.max_rel_error:.1e})" if self.float_check.max_rel_error
                         is not None else f"float64 check: {self.float_check.reason}")
        if self.witness is not None and not self.equivalent:
            parts.append(f"witness: {self.witness}")
        if self.timings:
            parts.append(f"{self.timings.get('total', 0.0):.2f} s")
        return "; ".join(parts)

    def __repr__(self) -> str:
        return f"VerificationResult({self.summary()})"

    def to_frame(self) -> pd.DataFrame:
        """One row per trial."""
        import pandas as pd  # here, not at the top: search workers never load pandas
        return pd.DataFrame([{
            "trial": t.trial, "seed": t.seed, "matched": t.matched, "permutations": t.permutations,
            "fingerprints": t.fingerprints, "witness": str(t.witness) if t.witness else "", "seconds": t.seconds,
        } for t in self.trials])

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.equivalent else "#cf222e"
        head = html.escape(self.summary())
        table = self.to_frame().to_html(index=False) if self.trials else ""
        return f'<div><b style="color:{colour}">{head}</b>{table}</div>'

    def evidence(self) -> dict[str, Any]:
        """What a search keeps on each verified candidate (``Candidate.verification``): the verdict's numbers —
        field, degree D, trial count k, ε and whether it is heuristic, the float64 check, the time — without the
        per-trial fingerprints or a witness, so that millions of candidates stay small."""
        return {"reason": self.reason, "error_bound": self.error_bound, "heuristic": self.bound_is_heuristic,
                "heuristic_ops": list(self.heuristic_ops), "permutation": list(self.permutation or ()),
                "field": self.field_name, "degree": self.degree, "trials": len(self.trials),
                "float_check": self.float_check.numbers(),
                "timings": {k: round(v, 6) for k, v in self.timings.items()}}

    def as_dict(self) -> dict[str, Any]:
        return {
            "equivalent": self.equivalent, "reason": self.reason, "permutation": self.permutation,
            "field": self.field_name, "degree": self.degree, "error_bound": self.error_bound,
            "bound_is_heuristic": self.bound_is_heuristic, "heuristic_ops": list(self.heuristic_ops),
            "trials": len(self.trials), "witness": str(self.witness) if self.witness else None,
            "float_check": self.float_check.numbers(),
            "timings": self.timings,
        }
