"""docs/compat.md against the code: the table of the reference's Python API says what works, and it does.

Each table row is ``| `item` | reference signature | status | mirage-lab |``. The checks (``problems``):

* a **same** or **mapped** row names something that exists: ``mi.X`` on the package, ``KNGraph.…`` on
  ``mi.new_kernel_graph()``, ``TBGraph.…`` on ``mi.new_threadblock_graph((1, 1, 1), (128, 1, 1), 1, 64)``,
  ``DTensor.…``/``STensor.…`` on tensors they return (dotted paths are followed: ``KNGraph.cygraph.X``);
* a **same** callable takes the parameters of the reference signature recorded in the row (names, order, ``*``
  and ``**``), so the check needs no copy of the reference;
* the ``superoptimize`` keyword rows are ``mirage_lab.compat.KEYWORDS``, word for word, cover the reference
  signature of ``KNGraph.superoptimize`` and are parameters of it;
* each keyword row of calling a graph and of ``compile`` is tried: a **same**/**mapped** one must work, a
  **not supported** one must raise (a fixed gap makes the row wrong, and this test says so);
* a **not supported** row whose caveat starts with "missing" names something that does not exist;
* the counts line matches the rows.

``test_the_checks_can_fail`` edits the page in memory and expects each kind of check to complain.
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import mirage_lab as mi
from mirage_lab.compat import KEYWORDS, CompatNotice
from tests.conftest import REPO_ROOT

DOC = REPO_ROOT / "docs" / "compat.md"
STATUSES = ("same", "mapped", "not supported")
COUNTS = re.compile(r"\*\*Counts:\*\* same (\d+) · mapped (\d+) · not supported (\d+) · total (\d+)")
KEYWORD_ITEM = re.compile(r"^KNGraph\.(superoptimize|__call__|compile)\((\w+)=\)$")


@dataclass(frozen=True)
class Row:
    item: str
    signature: str
    status: str
    note: str
    line: int


def parse_rows(text: str) -> list[Row]:
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        assert len(cells) == 4, f"compat.md line {n}: expected 4 cells, got {len(cells)}: {line}"
        item, sig, status, note = cells
        rows.append(Row(item.strip("`"), sig.strip("`") if sig.startswith("`(") else sig, status, note, n))
    return rows


def split_params(sig: str) -> list[str]:
    """``(a, b=(1, 2), *, c=None, **kw)`` → ``["a", "b", "*", "c", "**kw"]``: names, in order, with markers."""
    inner = sig.strip()[1:-1]
    parts, depth, quote, cur = [], 0, "", ""
    for ch in inner:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        cur += ch
    parts.append(cur)
    return [p.split("=")[0].split(":")[0].strip() for p in parts if p.strip()]


def our_params(obj: Any) -> list[str]:
    out: list[str] = []
    starred = False
    for p in inspect.signature(obj).parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            out.append("*" + p.name)
            starred = True
        elif p.kind is p.KEYWORD_ONLY and not starred:
            out.append("*")
            starred = True
            out.append(p.name)
        elif p.kind is p.VAR_KEYWORD:
            out.append("**" + p.name)
        else:
            out.append(p.name)
    return out


class Objects:
    """What the items are looked up on, built as a reference script builds them."""

    def __init__(self) -> None:
        self.graph = mi.new_kernel_graph()
        self.X = self.graph.new_input(dims=(8, 64), dtype=mi.float16)
        self.W = self.graph.new_input(dims=(64, 32), dtype=mi.float16)
        self.O = self.graph.matmul(self.X, self.W)
        self.graph.mark_output(self.O)
        self.tb = mi.new_threadblock_graph((1, 1, 1), (128, 1, 1), 1, 64)
        self.S = self.tb.new_input(self.X, (-1, -1, -1), -1)
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((8, 64)).astype(np.float16)
        self.w = rng.standard_normal((64, 32)).astype(np.float16)

    def resolve(self, item: str) -> Any:
        """The object ``item`` names; AttributeError when it does not exist."""
        head, _, path = item.partition(".")
        roots = {"mi": mi, "KNGraph": self.graph, "TBGraph": self.tb, "DTensor": self.X, "STensor": self.S}
        if head not in roots:
            raise AttributeError(f"{item}: no mirage-lab counterpart is looked up for {head!r}")
        obj = roots[head]
        for name in path.split("."):
            obj = getattr(obj, name)
        return obj

    def example(self, kind: str, keyword: str) -> Callable[[], Any]:
        """A call of ``graph(...)`` or ``graph.compile(...)`` passing ``keyword`` as a reference script would."""
        values: dict[str, Any] = {"inputs": [self.x, self.w], "outputs": [self.O], "stream": None, "verbose": False,
                                  "target_cc": 80, "num_warp_groups": 2, "pipeline_stages": 2, "profiling": False,
                                  "enable_online_softmax": False, "file_id": 1, "async_": False}
        if keyword not in values:
            raise KeyError(f"no example value for {keyword}= in test_compat_doc.Objects.example; add one")
        if kind == "__call__":
            return lambda: self.graph(**{"inputs": [self.x, self.w], keyword: values[keyword]})
        return lambda: self.graph.compile(**{keyword: values[keyword]})


def counts(rows: list[Row]) -> tuple[int, int, int, int]:
    c = [sum(r.status == s for r in rows) for s in STATUSES]
    return c[0], c[1], c[2], len(rows)


def problems(text: str) -> list[str]:
    rows = parse_rows(text)
    objs = Objects()
    found: list[str] = []
    seen: set[str] = set()
    for r in rows:
        where = f"compat.md:{r.line} {r.item}"
        if r.status not in STATUSES:
            found.append(f"{where}: status {r.status!r} is not one of {STATUSES}")
            continue
        if r.item in seen:
            found.append(f"{where}: listed twice")
        seen.add(r.item)
        if r.status != "same" and not r.note:
            found.append(f"{where}: a {r.status} row must say how or why")
        if KEYWORD_ITEM.match(r.item):
            found += keyword_problems(r, objs, where)
            continue
        try:
            obj = objs.resolve(r.item)
        except AttributeError:
            if r.status != "not supported":
                found.append(f"{where}: marked {r.status} but does not exist in mirage_lab")
            continue
        if r.status == "not supported" and r.note.startswith("missing"):
            found.append(f"{where}: the row says it is missing, but mirage_lab has it now; update the row")
        if r.status == "same" and r.signature.startswith("("):
            try:
                ours = our_params(obj)
            except (TypeError, ValueError):
                found.append(f"{where}: marked same with signature {r.signature}, but {obj!r} has no signature")
                continue
            if ours != split_params(r.signature):
                found.append(f"{where}: marked same, but the reference's parameters are "
                             f"{split_params(r.signature)} and ours are {ours}")
    found += superoptimize_problems(rows)
    m = COUNTS.search(text)
    if m is None:
        found.append("compat.md: no line '**Counts:** same N · mapped N · not supported N · total N'")
    elif tuple(map(int, m.groups())) != counts(rows):
        found.append(f"compat.md: the counts line says {m.group(0)!r}; the rows give same {counts(rows)[0]} · "
                     f"mapped {counts(rows)[1]} · not supported {counts(rows)[2]} · total {counts(rows)[3]}")
    return found


def keyword_problems(r: Row, objs: Objects, where: str) -> list[str]:
    m = KEYWORD_ITEM.match(r.item)
    assert m is not None
    kind, keyword = m.groups()
    if kind == "superoptimize":
        return []  # superoptimize_problems
    try:
        call = objs.example(kind, keyword)
    except KeyError as e:
        return [f"{where}: {e.args[0]}"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompatNotice)
        try:
            call()
        except Exception as e:  # any failure is what a not-supported row predicts
            if r.status != "not supported":
                return [f"{where}: marked {r.status}, but it raises {type(e).__name__}: {e}"]
            return []
    if r.status == "not supported":
        return [f"{where}: marked not supported, but it works now; update the row"]
    return []


def superoptimize_problems(rows: list[Row]) -> list[str]:
    found = []
    rows_by_kw = {m.group(2): r for r in rows if (m := KEYWORD_ITEM.match(r.item)) and m.group(1) == "superoptimize"}
    if set(rows_by_kw) != set(KEYWORDS):
        found.append(f"compat.md: superoptimize keyword rows {sorted(rows_by_kw)} differ from KEYWORDS "
                     f"{sorted(KEYWORDS)}")
    ours = inspect.signature(mi.KNGraph.superoptimize).parameters
    for kw, r in rows_by_kw.items():
        where = f"compat.md:{r.line} {r.item}"
        if kw in KEYWORDS and r.note != KEYWORDS[kw]:
            found.append(f"{where}: the row says {r.note!r}; KEYWORDS says {KEYWORDS[kw]!r}")
        want = "mapped" if KEYWORDS.get(kw, "").startswith("mapped:") else "not supported"
        if r.status != want:
            found.append(f"{where}: marked {r.status}, but KEYWORDS ({KEYWORDS.get(kw)!r}) means {want}")
        if kw not in ours:
            found.append(f"{where}: KNGraph.superoptimize has no parameter {kw}")
    method = next((r for r in rows if r.item == "KNGraph.superoptimize"), None)
    if method is None:
        found.append("compat.md: no KNGraph.superoptimize row")
    else:
        for kw in split_params(method.signature):
            if kw not in rows_by_kw:
                found.append(f"compat.md: the reference's superoptimize keyword {kw} has no row")
    return found


def test_compat_doc_matches_the_code() -> None:
    found = problems(DOC.read_text(encoding="utf-8"))
    assert not found, "docs/compat.md disagrees with mirage_lab:\n" + "\n".join(found)


def test_compat_doc_has_every_status() -> None:
    rows = parse_rows(DOC.read_text(encoding="utf-8"))
    same, mapped, unsupported, total = counts(rows)
    assert total >= 150 and min(same, mapped, unsupported) > 0, counts(rows)


def _edit(text: str, old: str, new: str) -> str:
    assert old in text, f"the test's edit target {old!r} is not in compat.md"
    return text.replace(old, new, 1)


@pytest.mark.parametrize("old,new,complaint", [
    ("| `mi.CyKNGraph` | `(graph=None, disable_fingerprint=False)` | not supported |",
     "| `mi.CyKNGraph` | `(graph=None, disable_fingerprint=False)` | same |", "does not exist"),
    ("| `KNGraph.new_input` | `(dims, strides=None, dtype=float16)` |",
     "| `KNGraph.new_input` | `(dims, dtype=float16, strides=None)` |", "reference's parameters"),
    ("| `KNGraph.reduction` | `(A, dim)` | mapped |",
     "| `KNGraph.reduction` | `(A, dim)` | same |", "reference's parameters"),
    ("| `KNGraph.superoptimize(franges=)` | `franges=None` | mapped | mapped: SearchConfig.forloop_ranges",
     "| `KNGraph.superoptimize(franges=)` | `franges=None` | mapped | mapped: SearchConfig.forloop_range",
     "KEYWORDS says"),
    ("| `KNGraph.superoptimize(save_codes=)` |", "| `KNGraph.superoptimize(save_code=)` |", "differ from KEYWORDS"),
    ("| `KNGraph.__call__(verbose=)` | `verbose=False` | mapped |",
     "| `KNGraph.__call__(verbose=)` | `verbose=False` | not supported |", "it works now"),
    ("| `KNGraph.compile(target_cc=)` | `target_cc` (the device's) | mapped |",
     "| `KNGraph.compile(target_cc=)` | `target_cc` (the device's) | not supported |", "it works now"),
    ("**Counts:** same ", "**Counts:** same 1", "counts line"),
])
def test_the_checks_can_fail(old: str, new: str, complaint: str) -> None:
    found = problems(_edit(DOC.read_text(encoding="utf-8"), old, new))
    assert any(complaint in p for p in found), found
