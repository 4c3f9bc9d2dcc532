"""A search run as one static HTML file, for sharing: every view, no kernel, no network.

Sections: the search report and its counters per verdict; the ranked μGraphs; the best μGraph in the
drill-down viewer, its verification evidence and its diff against the program; the decisions on the
path that found it, each with what its siblings died of; the cost model's estimate per kernel and per
op (program and best, on each GPU preset); the best μGraph's generated CUDA (and whether nvcc compiles
it, when nvcc is installed) and its kernels' analysis from ptxas and the SASS, for sm_80 and sm_90 (when nvcc and
cuobjdump are installed); plots (this run's time split and the roofline); then any ``extra``
sections the caller adds (the demo adds its timing and checkpoint tables). plotly.js is embedded once,
so the file opens offline.
"""

from __future__ import annotations

import html
import os
import warnings
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

import mirage_lab as ml
from mirage_lab.codegen import ARCHS, CompileError, generate_cuda, nvcc_available, nvcc_ptx
from mirage_lab.errors import InputError, MirageError
from mirage_lab.ir import plural, write_atomic
from mirage_lab.optimize import HARDWARE, proxy_cost
from mirage_lab.search import ABLATION_FILE, RunFolder, SearchReport, SearchResult, ranked_candidates, run_folder_of
from mirage_lab.widgets.diff import GraphDiff
from mirage_lab.widgets.explorer_state import ExplorerState, colour, decision_text
from mirage_lab.widgets.inspector import VerificationInspector
from mirage_lab.widgets.plots import ablation_figure, roofline_figure, sweep_frame
from mirage_lab.widgets.plots_checks import check_ablation_figure
from mirage_lab.widgets.static_view import static_viewer_html

CSS = """
body { font-family: Helvetica, Arial, sans-serif; margin: 24px; max-width: 1400px; color: #111827; }
h1 { font-size: 22px; } h2 { font-size: 17px; border-bottom: 1px solid #e5e7eb; padding-bottom: 4px; margin-top: 28px; }
table.mx-table { border-collapse: collapse; font-size: 12px; }
table.mx-table td, table.mx-table th { border: 1px solid #e5e7eb; padding: 3px 8px; text-align: left; }
.mx-path li { margin: 4px 0; font-size: 12px; } .mx-dead { color: #6b7280; }
.mx-swatch { display: inline-block; width: 10px; height: 10px; margin-right: 5px; border-radius: 2px; }
pre.mx-cuda { font-size: 11px; background: #f9fafb; border: 1px solid #e5e7eb; padding: 8px; max-height: 480px;
  overflow: auto; }
.mirage-lab-cost table { border-collapse: collapse; font-size: 12px; }
.mirage-lab-cost td, .mirage-lab-cost th { border: 1px solid #e5e7eb; padding: 2px 6px; }
"""


def export_html(run: Any, path: str | os.PathLike[str], title: str | None = None, reverify: bool = False,
                engine: str = "auto", progress: bool = True,
                extra: Mapping[str, pd.DataFrame | str] | None = None, ptx: bool = True) -> Path:
    """Write the static report of a search run (a SearchResult or a run folder) to ``path``.

    ``reverify=True`` verifies the best μGraph afresh for the full evidence (trials, fingerprints); the
    search keeps only a summary per candidate. ``extra`` appends sections: title → DataFrame or HTML.
    ``ptx=False`` skips compiling the generated CUDA with nvcc (and so the kernel analysis).
    """
    st = ExplorerState(run, progress=progress)
    result, report, ranked = _finished(st)
    name = title or f"mirage-lab search · {st.path.name}"
    missing = _missing(st, result["ranking"], ranked)
    parts = [f"<h1>{html.escape(name)}</h1>", _summary(st, report), "<h2>Verified μGraphs, best first</h2>",
             missing, _ranking(ranked, result.get("costs", {})) if ranked or not missing else ""]
    if ranked:
        parts += _best(st, ranked[0], reverify, engine)
    parts += ["<h2>The program</h2>", static_viewer_html(st.program, engine)]
    parts += _cost(st.program, ranked[0].graph if ranked else None)
    if ranked:
        parts += _cuda(ranked[0].graph, ptx) + _analysis(ranked[0].graph, ptx)
    parts += ["<h2>Plots</h2>", _plots(st, report, ranked, result.get("costs", {}))]
    for heading, body in (extra or {}).items():
        parts += [f"<h2>{html.escape(heading)}</h2>",
                  body.to_html(index=False, classes="mx-table", border=0) if isinstance(body, pd.DataFrame) else body]
        if isinstance(body, pd.DataFrame) and body.attrs.get("note"):  # what the rows need said (their batches)
            parts.append(f"<p>{html.escape(str(body.attrs['note']))}</p>")
    doc = (f'<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(name)}</title>'
           f"<style>{CSS}</style></head><body>{''.join(parts)}</body></html>")
    return write_atomic(Path(path), doc)


def run_figures(run: Any, progress: bool = False) -> dict[str, go.Figure]:
    """The figures of a finished search run for a paper, by name: ``ablation`` (states and time with each named
    check on and off) when the run folder holds a sweep (``mirage-lab ablate RUN`` writes ``RUN/ablation.json``),
    and, when the run verified a μGraph, ``roofline`` (the program's and the best μGraph's kernels on H100,
    proxy). ``run``: a SearchResult or a run folder. Save them with ``save_figures``."""
    st = ExplorerState(run, progress=progress)
    _, _, ranked = _finished(st)
    return _figures(st, ranked)


def ablation_sweep(run: Any) -> Path | None:
    """The run folder's ablation sweep (``ABLATION_FILE``), or None when none was written."""
    path = run_folder_of(run, "find its ablation sweep") / ABLATION_FILE
    return path if path.is_file() else None


def _finished(st: ExplorerState) -> tuple[dict[str, Any], SearchReport, list[Any]]:
    """A finished run's result.json, its report and its ranked candidates (best first)."""
    result = st.folder.read("result.json")
    if result is None:
        raise InputError(f"{st.path} has no result.json: the search did not finish; resume it by running the "
                         "same search with the same run_dir, then export")
    ranked = [c for c in ranked_candidates(st.folder, result["ranking"]) if c is not None]
    return result, SearchReport.from_dict(result["report"]), ranked


def _missing(st: ExplorerState, ranking: list[str], ranked: list[Any]) -> str:
    """What the report cannot show: ranked μGraphs whose files are gone from the run folder (or no longer verify),
    said in the page and as a warning, so that a ranking of none never reads as "nothing was verified"."""
    if len(ranked) == len(ranking):
        return ""
    gone = [h[:12] for h in ranking if not (st.path / RunFolder.candidate_name(h)).is_file()]
    first = "" if ranked and ranked[0].hash == ranking[0] else " The best μGraph below is the best that remains."
    text = (f"The search ranked {len(ranking)} verified μGraph{'s' if len(ranking) != 1 else ''}, but "
            f"{len(ranking) - len(ranked)} cannot be shown: "
            + (f"{len(gone)} file(s) are gone from {st.path / 'candidates'} ({', '.join(gone[:5])}"
               f"{', …' if len(gone) > 5 else ''})" if gone else "they no longer verify")
            + f". Rerun the search with the same run_dir to restore them.{first if ranked else ''}")
    warnings.warn(text, RuntimeWarning, stacklevel=3)
    return f'<p class="mx-warning"><b>{html.escape(text)}</b></p>'


def _summary(st: ExplorerState, report: SearchReport) -> str:
    counts = st.counts()
    rows = "".join(f'<tr><td><span class="mx-swatch" style="background:{colour(r["verdict"])}"></span>'
                   f'{html.escape(r["verdict"])}</td><td>{r["count"]:,}</td></tr>'
                   for r in counts.to_dict("records"))
    rules = "".join(f"<tr><td>{html.escape(k)}</td><td>{v:,}</td></tr>" for k, v in report.oracle_rules.most_common())
    # (pre-line: the report's warnings, such as ops left out of the space, each on its own line)
    return (f'<p style="white-space: pre-line">{html.escape(repr(report))}</p>'
            f"<p>Program: <code>{html.escape(repr(st.program))}</code><br>"
            f"Config: <code>{html.escape(repr(st.config))}</code></p>"
            f'<table class="mx-table"><tr><th>verdict</th><th>count</th></tr>{rows}</table>'
            + (f'<p>Oracle prunes by the rule that decided them:</p><table class="mx-table">{rules}</table>'
               if rules else ""))


def _ranking(ranked: list[Any], costs: dict[str, float]) -> str:
    if not ranked:
        return "<p>No verified μGraph: see the counters above for why the branches died.</p>"
    rows = [{"rank": i, "hash": c.hash[:12], "kernels": len(c.graph.compute_nodes),
             "custom kernels": len(c.graph.block_graphs), "grids": " ".join(str(b.grid) for b in c.graph.block_graphs),
             "proxy µs": round(costs.get(c.hash, float("nan")) * 1e6, 2), "found after s": round(c.found_s, 2),
             "error bound": c.verification.get("error_bound")} for i, c in enumerate(ranked)]
    return pd.DataFrame(rows).to_html(index=False, classes="mx-table", border=0)


def _best(st: ExplorerState, best: Any, reverify: bool, engine: str) -> list[str]:
    evidence = ml.verify(best.graph, st.program) if reverify else best.verification
    return ["<h2>The best μGraph</h2>", static_viewer_html(best.graph, engine),
            "<h2>Its verification</h2>", VerificationInspector(evidence, title=f"candidate {best.hash[:12]}").to_html(),
            "" if reverify else "<p><i>The search keeps a summary per candidate; export_html(..., reverify=True) "
            "verifies the best μGraph afresh and shows every trial.</i></p>",
            "<h2>What changed from the program</h2>",
            GraphDiff(st.program, best.graph, labels=("program", "best μGraph")).to_html(),
            "<h2>How the search found it</h2>", _path(st, best)]


def _cost(program: Any, best: Any) -> list[str]:
    """The cost model's estimate (a proxy, labelled so) of the program and the best μGraph on each preset."""
    graphs = {"program": program} | ({"best μGraph": best} if best is not None else {})
    estimates = {(name, hw): proxy_cost(g, hw) for name, g in graphs.items() for hw in HARDWARE}
    rows = [{"graph": name, "hardware": hw, "proxy µs": round(e.seconds * 1e6, 2), "launches": e.launches,
             "DRAM MB": round(e.bytes_moved / 1e6, 3)} for (name, hw), e in estimates.items()]
    parts = ["<h2>Cost model (proxy estimates, not measurements)</h2>",
             pd.DataFrame(rows).to_html(index=False, classes="mx-table", border=0)]
    for name in graphs:
        parts += [f"<h3>{html.escape(name)} on H100, per kernel and per op</h3>", estimates[name, "H100"]._repr_html_()]
    return parts


def _cuda(graph: Any, ptx: bool) -> list[str]:
    """The generated CUDA of ``graph``, and whether nvcc compiles it for sm_80 and sm_90 (when installed)."""
    source = generate_cuda(graph)
    checks = []
    for arch in ARCHS if ptx and nvcc_available() else ():
        try:
            res = nvcc_ptx(source, arch)
            kernels = plural(len(res.kernels), "kernel")
            checks.append(f"nvcc --ptx -arch={arch}: compiles ({kernels}, {res.seconds:.1f} s)")
        except CompileError as e:
            checks.append(f"nvcc --ptx -arch={arch}: FAILS — {str(e).splitlines()[0]}")
    note = "; ".join(checks) if checks else "not compiled here (nvcc is not installed, or ptx=False)"
    return ["<h2>Generated CUDA of the best μGraph</h2>", f"<p>{html.escape(note)}</p>",
            f'<pre class="mx-cuda">{html.escape(source)}</pre>']


def _analysis(graph: Any, ptx: bool) -> list[str]:
    """The best μGraph's kernels analysed from ptxas and the SASS (``ml.analyze_kernel``), one table per
    architecture with a column per kernel; a note instead where nvcc or cuobjdump is missing."""
    parts = ["<h2>Its kernels, from ptxas and the SASS</h2>",
             "<p>Static instruction counts (instructions in the code, not executed); occupancy, bytes in flight, "
             "the bound and the DRAM floor on the architecture's first GPU preset.</p>"]
    if not ptx:
        return [*parts, "<p><i>Not analysed: ptx=False.</i></p>"]
    for arch in ARCHS:
        try:
            frame = ml.analyze_kernel(graph, arch)
        except MirageError as e:  # no nvcc or disassembler here: the message says what to install
            return [*parts, f"<p><i>Not analysed here: {html.escape(str(e).splitlines()[0])}</i></p>"]
        floor = frame["program DRAM floor µs"].iloc[0]
        parts += [f"<h3>{arch} on {html.escape(str(frame['GPU'].iloc[0]))} (the program's DRAM floor: {floor} µs)"
                  "</h3>", frame.set_index("kernel").T.to_html(classes="mx-table", border=0)]
    return parts


def _path(st: ExplorerState, best: Any) -> str:
    node = st.index.node_index.get(best.node)
    if node is None:
        return "<p>(the event log does not hold this candidate's node)</p>"
    items = []
    for i in [*st.index.ancestors(node), node]:
        kids = st.index.children(i)
        died = Counter(st.index.label(int(k)) for k in kids if st.index.label(int(k)).startswith("pruned:"))
        dead = ", ".join(f"{n} {lab[7:]}" for lab, n in died.most_common())
        d = st.index.event(i).get("d")
        items.append(f"<li>{html.escape(decision_text(d))}<br><span class='mx-dead'>{len(kids)} children; "
                     f"pruned here: {html.escape(dead or 'none')}</span></li>")
    return f'<ol class="mx-path">{"".join(items)}</ol>'


def _figures(st: ExplorerState, ranked: list[Any]) -> dict[str, go.Figure]:
    figs = {}
    sweep = ablation_sweep(st.path)
    if sweep is not None:
        figs["ablation"] = check_ablation_figure(sweep)
    if ranked:
        figs["roofline"] = roofline_figure({"program": st.program, "best": ranked[0].graph}, "H100")
    return figs


def _plots(st: ExplorerState, report: SearchReport, ranked: list[Any], costs: dict[str, float]) -> str:
    """This run's states, time split and best cost (one run: not an ablation), then the paper figures."""
    res = SearchResult(st.program, st.config, ranked, report, st.path, costs)
    this_run = ablation_figure(sweep_frame({"this run": res}), title="This run: states, time split, best cost")
    figs = [this_run, *_figures(st, ranked).values()]
    return "".join(fig.to_html(full_html=False, include_plotlyjs=(i == 0)) for i, fig in enumerate(figs))
