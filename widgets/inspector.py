"""The verification inspector: a view of one verdict and the evidence behind it.

``VerificationInspector`` reads what ``ml.verify`` returned (a ``VerificationResult``) or one of
the two dict forms the engine keeps: ``VerificationResult.as_dict()`` and the short summary a
search stores on each candidate (``Candidate.verification``). It shows the verdict, the field,
the degree D, the trial count k, the error bound ε ≤ (D/p)^k and whether it is heuristic, the
float64 cross-check, one row per trial and, on failure, the witness. The dict forms hold less;
what they lack reads "not recorded". The state (selected trial, failed-only filter) is plain
Python; ``widget()`` builds an ipywidgets view over it and ``to_html()`` a static fragment.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from mirage_lab.verify import FloatCheck, TrialEvidence, VerificationResult, Witness
from mirage_lab.widgets.display import LiveOrStatic

__all__ = ["Evidence", "VerificationInspector", "evidence_of"]

NOT_RECORDED = "not recorded"
_FIELD = re.compile(r"Z_(\d+)\s*×\s*Z_(\d+)")
#: (the doubled class: as specific as the rule by which an exported page's JupyterLab styles right-align cells)
CSS = """<style>
.mlw-insp{font-family:system-ui,sans-serif;font-size:13px;line-height:1.35;color:#1f2328;background:#fff}
.mlw-insp table{border-collapse:collapse;margin:4px 0}
.mlw-insp td,.mlw-insp th{border:1px solid #d0d7de;padding:2px 6px;text-align:left;vertical-align:top}
.mlw-insp.mlw-insp td,.mlw-insp.mlw-insp th{text-align:left}
.mlw-insp th{background:#f6f8fa}
.mlw-insp .mlw-verdict{font-weight:bold;padding:4px 8px;border-radius:4px;margin-bottom:4px}
.mlw-insp .mlw-ok{background:#dafbe1;color:#1a7f37}
.mlw-insp .mlw-bad{background:#ffebe9;color:#cf222e}
.mlw-insp .mlw-unknown{background:#fff8c5;color:#7d4e00}
.mlw-insp .mlw-witness{border:2px solid #cf222e;background:#fff5f5;padding:4px 8px;margin:4px 0}
.mlw-insp tr.mlw-failed td{background:#ffebe9}
.mlw-insp tr.mlw-selected td{outline:2px solid #0969da}
.mlw-insp code{font-family:ui-monospace,monospace;font-size:12px}
</style>"""


@dataclass(frozen=True)
class Evidence:
    """One verification's evidence, whichever form it came in; ``None`` means the form did not keep it."""

    source: str  # "result", "as_dict" or "candidate"
    equivalent: bool | None
    reason: str
    permutation: tuple[int, ...] | None
    field_name: str | None
    p: int | None
    q: int | None
    degree: int | None
    trial_count: int | None
    error_bound: float | None
    heuristic: bool | None
    heuristic_ops: tuple[str, ...] | None
    float_check: Mapping[str, Any] | None
    trials: tuple[TrialEvidence, ...] = ()
    witness: Witness | str | None = None
    timings: Mapping[str, float] = field(default_factory=dict)

    def __repr__(self) -> str:
        verdict = {True: "equivalent", False: "different", None: "unknown"}[self.equivalent]
        return f"Evidence({verdict}, from {self.source}, k={self.trial_count}, ε={self.error_bound})"


def _primes(field_name: str | None) -> tuple[int | None, int | None]:
    """(p, q) read back from ``str(FieldSpec)`` = ``Z_p × Z_q (ω=…)``: the result keeps q only there."""
    m = _FIELD.search(field_name or "")
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def _float_dict(fc: FloatCheck) -> dict[str, Any]:
    return {"ran": fc.ran, "passed": fc.passed, "max_rel_error": fc.max_rel_error, "reason": fc.reason}


def _from_result(r: VerificationResult) -> Evidence:
    _, q = _primes(r.field_name)
    return Evidence("result", r.equivalent, r.reason, r.permutation, r.field_name, r.p, q, r.degree, len(r.trials),
                    r.error_bound, r.bound_is_heuristic, r.heuristic_ops, _float_dict(r.float_check), r.trials,
                    r.witness, dict(r.timings))


def _from_dict(d: Mapping[str, Any]) -> Evidence:
    # the search's candidate summary has "heuristic" and no "equivalent": it keeps verified candidates only
    candidate = "equivalent" not in d
    field_name = d.get("field")
    p, q = _primes(field_name)
    perm = d.get("permutation")
    ops = d.get("heuristic_ops")
    return Evidence("candidate" if candidate else "as_dict", True if candidate else bool(d["equivalent"]),
                    str(d.get("reason", "")), tuple(perm) if perm is not None else None, field_name, p, q,
                    d.get("degree"), d.get("trials"), d.get("error_bound"),
                    d.get("bound_is_heuristic", d.get("heuristic")), tuple(ops) if ops is not None else None,
                    d.get("float_check"), (), d.get("witness"), dict(d.get("timings") or {}))


def evidence_of(source: Any) -> Evidence:
    """Normalise a ``VerificationResult``, its ``as_dict()``, or a candidate (or its ``verification`` dict)."""
    if isinstance(source, Evidence):
        return source
    if isinstance(source, VerificationResult):
        return _from_result(source)
    if isinstance(source, Mapping):
        return _from_dict(source)
    summary = getattr(source, "verification", None)  # a search ``Candidate``
    if isinstance(summary, Mapping):
        return _from_dict(summary)
    raise TypeError(f"expected a VerificationResult, its as_dict(), or a search candidate; got {type(source).__name__}")


# --------------------------------------------------------------------------- text of the facts


def _value(v: tuple[int, int] | float) -> str:
    """Field values are (residue mod p, residue mod q); float values print with full precision."""
    return f"{v[0]} (mod p), {v[1]} (mod q)" if isinstance(v, tuple) else f"{v:.9g}"


def verdict_text(e: Evidence) -> str:
    if e.equivalent is None:
        return "UNKNOWN"
    text = "EQUIVALENT" if e.equivalent else "DIFFERENT"
    return text + (" (kept by the search: verified)" if e.source == "candidate" else "")


def bound_text(e: Evidence) -> str:
    if e.error_bound is None:
        if e.equivalent is False:
            return "none: the verdict is DIFFERENT"
        return "none: no field trial ran" if e.trial_count == 0 else NOT_RECORDED
    if None in (e.degree, e.p, e.trial_count):
        return f"ε ≤ {e.error_bound:.3g}"
    return f"ε ≤ (D/p)^k = ({e.degree}/{e.p})^{e.trial_count} = {e.error_bound:.3g}"


def bound_kind_text(e: Evidence) -> str:
    if e.heuristic is None:
        return NOT_RECORDED
    if not e.heuristic:
        return "exact (LAX: every op has a field identity)"
    ops = ", ".join(e.heuristic_ops) if e.heuristic_ops else "ops not recorded"
    return f"heuristic: {ops} (no field identity for these ops)"


def float_text(fc: Mapping[str, Any] | None) -> str:
    if fc is None:
        return NOT_RECORDED
    if not fc.get("ran"):
        return "not run" + (f" ({fc['reason']})" if fc.get("reason") and fc["reason"] != "not run" else "")
    err = fc.get("max_rel_error")
    err_text = f"max rel err {err:.1e}" if err is not None else fc.get("reason") or "no error measured"
    state = {True: "passed", False: "FAILED", None: "inconclusive"}[fc.get("passed")]
    return f"{state} ({err_text})"


def permutation_text(perm: tuple[int, ...] | None, equivalent: bool | None) -> str:
    if perm is None:
        return "none: no assignment matched in every trial" if equivalent is False else NOT_RECORDED
    return ", ".join(f"ref out {i} ← cand out {j}" for i, j in enumerate(perm)) or "(no outputs)"


def _timings_text(t: Mapping[str, float]) -> str:
    if not t:
        return NOT_RECORDED
    rest = ", ".join(f"{k} {v:.3f} s" for k, v in t.items() if k != "total")
    return f"{t.get('total', 0.0):.3f} s" + (f" ({rest})" if rest else "")


def _known(v: Any) -> str:
    return NOT_RECORDED if v is None else str(v)


def facts(e: Evidence) -> list[tuple[str, str]]:
    """(label, text) rows of the inspector's header table."""
    return [("verdict", verdict_text(e)), ("reason", e.reason or NOT_RECORDED), ("field", _known(e.field_name)),
            ("p", _known(e.p)), ("q", _known(e.q)), ("degree D", _known(e.degree)),
            ("trials run k", _known(e.trial_count)), ("error bound", bound_text(e)), ("bound", bound_kind_text(e)),
            ("float64 check", float_text(e.float_check)),
            ("output assignment", permutation_text(e.permutation, e.equivalent)),
            ("time", _timings_text(e.timings)), ("recorded as", e.source)]


def witness_facts(w: Witness | str, origin: str) -> list[tuple[str, str]]:
    if isinstance(w, str):  # the dict forms keep only the witness's text
        return [("found by", origin), ("witness", w)]
    return [("found by", origin), ("output", f"reference {w.output} (candidate {w.candidate_output})"),
            ("index", str(list(w.index))), ("candidate", _value(w.candidate)), ("reference", _value(w.reference)),
            ("note", w.note or "—")]


# --------------------------------------------------------------------------- the state


class VerificationInspector(LiveOrStatic):
    """Headless state of the verification view: the evidence, the selected trial, the failed-only filter."""

    def __init__(self, source: Any, *, title: str = "") -> None:
        self.evidence = evidence_of(source)
        self.title = title or (f"candidate {source.hash[:12]}" if isinstance(getattr(source, "hash", None), str)
                               else "")
        self.failed_only = False
        # the first failed trial holds the witness, so that is where the eye should land
        first = self.failed_trials or self.evidence.trials
        self.selected_trial: int | None = first[0].trial if first else None

    def __repr__(self) -> str:
        e = self.evidence
        sel = "" if self.selected_trial is None else f", selected trial {self.selected_trial}"
        flt = ", failed only" if self.failed_only else ""
        return f"VerificationInspector({verdict_text(e)}, {len(e.trials)} trials recorded{sel}{flt})"

    # -- state ---------------------------------------------------------------------------------------
    @property
    def failed_trials(self) -> tuple[TrialEvidence, ...]:
        return tuple(t for t in self.evidence.trials if not t.matched)

    @property
    def visible_trials(self) -> tuple[TrialEvidence, ...]:
        return self.failed_trials if self.failed_only else self.evidence.trials

    def set_failed_only(self, value: bool) -> None:
        """Filter the trial table; a selection the filter hides moves to the first visible trial."""
        self.failed_only = bool(value)
        visible = self.visible_trials
        if all(t.trial != self.selected_trial for t in visible):
            self.selected_trial = visible[0].trial if visible else None

    def select(self, trial: int | None) -> None:
        if trial is not None and all(t.trial != trial for t in self.visible_trials):
            raise ValueError(f"trial {trial} is not among the shown trials "
                             f"{[t.trial for t in self.visible_trials]}")
        self.selected_trial = trial

    @property
    def selected(self) -> TrialEvidence | None:
        return next((t for t in self.evidence.trials if t.trial == self.selected_trial), None)

    @property
    def witness(self) -> Witness | str | None:
        return self.evidence.witness

    @property
    def witness_origin(self) -> str:
        failed = self.failed_trials
        if failed:
            return f"trial {failed[0].trial} (seed {failed[0].seed})"
        return "float64 check" if isinstance(self.witness, Witness) else "the recorded summary"

    def facts(self) -> list[tuple[str, str]]:
        return facts(self.evidence)

    def trials_frame(self) -> pd.DataFrame:
        """One row per shown trial (the filter applies)."""
        return pd.DataFrame([_trial_row(t) for t in self.visible_trials], columns=TRIAL_COLUMNS)

    # -- views -----------------------------------------------------------------------------------------
    def to_html(self) -> str:
        """A static, self-contained HTML fragment (inline CSS, no script)."""
        return f'<div class="mlw-insp">{CSS}{self.header_html()}{self.trials_html()}</div>'

    def header_html(self) -> str:
        e = self.evidence
        cls = {True: "mlw-ok", False: "mlw-bad", None: "mlw-unknown"}[e.equivalent]
        title = f"{html.escape(self.title)}: " if self.title else ""
        reason = f" — {e.reason}" if e.reason else ""
        head = f'<div class="mlw-verdict {cls}">{title}{html.escape(verdict_text(e) + reason)}</div>'
        body = _table(self.facts())
        if self.witness is not None and e.equivalent is not True:
            body += self.witness_html()
        return head + body

    def witness_html(self) -> str:
        return "" if self.witness is None else _witness_box(self.witness, self.witness_origin)

    def trials_html(self) -> str:
        trials = self.visible_trials
        if not trials:
            what = "no failed trial" if self.failed_only and self.evidence.trials else "no per-trial evidence recorded"
            return f"<p><i>{what}</i></p>"
        head = "".join(f"<th>{c}</th>" for c in TRIAL_COLUMNS)
        rows = "".join(self._trial_tr(t) for t in trials)
        return f'<table class="mlw-trials"><tr>{head}</tr>{rows}</table>'

    def _trial_tr(self, t: TrialEvidence) -> str:
        cls = ("" if t.matched else "mlw-failed") + (" mlw-selected" if t.trial == self.selected_trial else "")
        cells = "".join(f"<td>{html.escape(str(v))}</td>" for v in _trial_row(t).values())
        return f'<tr class="{cls.strip()}">{cells}</tr>'

    def selected_html(self) -> str:
        t = self.selected
        if t is None:
            return ""
        rows = [(k, str(v)) for k, v in _trial_row(t).items() if k != "witness"]
        witness = "" if t.witness is None else _witness_box(t.witness, f"trial {t.trial}")
        return f"<b>trial {t.trial}</b>{_table(rows)}{witness}"

    def widget(self) -> Any:
        """An ipywidgets view over this state: trial picker, failed-only filter, evidence panes."""
        return _build_widget(self)


TRIAL_COLUMNS = ["trial", "seed", "matched", "fingerprints", "permutations", "seconds", "witness"]


def _trial_row(t: TrialEvidence) -> dict[str, Any]:
    return {"trial": t.trial, "seed": t.seed, "matched": t.matched, "fingerprints": ", ".join(t.fingerprints),
            "permutations": "; ".join(map(str, t.permutations)) or "none", "seconds": round(t.seconds, 4),
            "witness": str(t.witness) if t.witness else ""}


def _witness_box(w: Witness | str, origin: str) -> str:
    return f'<div class="mlw-witness"><b>witness</b>{_table(witness_facts(w, origin))}</div>'


def _table(rows: Sequence[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    return f'<table class="mlw-facts">{body}</table>'


# --------------------------------------------------------------------------- the ipywidgets view


def _wrap(fragment: str) -> str:
    return f'<div class="mlw-insp">{CSS}{fragment}</div>'


def _options(insp: VerificationInspector) -> list[tuple[str, int]]:
    return [(f"trial {t.trial} {'✓' if t.matched else '✗'}", t.trial) for t in insp.visible_trials]


def _build_widget(insp: VerificationInspector) -> Any:
    import ipywidgets as w

    header = w.HTML(_wrap(insp.header_html()))
    failed = w.Checkbox(value=insp.failed_only, description="failed trials only", indent=False)
    pick = w.Dropdown(description="trial", options=_options(insp), value=insp.selected_trial)
    table, detail = w.HTML(), w.HTML()
    syncing = [False]  # replacing the dropdown's options fires value events that are not the user's

    def refresh() -> None:
        table.value = _wrap(insp.trials_html())
        detail.value = _wrap(insp.selected_html())

    def on_failed(change: dict[str, Any]) -> None:
        insp.set_failed_only(change["new"])
        syncing[0] = True
        pick.options, pick.value = _options(insp), insp.selected_trial
        syncing[0] = False
        refresh()

    def on_pick(change: dict[str, Any]) -> None:
        if not syncing[0]:
            insp.select(change["new"])
            refresh()

    failed.observe(on_failed, names="value")
    pick.observe(on_pick, names="value")
    refresh()
    return w.VBox([header, w.HBox([failed, pick]), table, detail])
