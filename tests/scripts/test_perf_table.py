"""scripts/perf_table.py: the README's performance table is what the committed timing table says (issue 36)."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

from mirage_lab.bench import baselines, programs
from mirage_lab.errors import FormatError
from tests.conftest import REPO_ROOT, load_script


def load() -> ModuleType:
    return load_script(REPO_ROOT / "scripts" / "perf_table.py", "perf_table")


def test_the_committed_readme_table_is_generated_from_the_committed_csv() -> None:
    perf = load()
    readme = (REPO_ROOT / "README.md").read_text()
    generated = perf.table(pd.read_csv(perf.DEFAULT_CSV), perf.DEFAULT_CSV.stem)
    assert perf.rewrite(readme, generated) == readme, "run scripts/perf_table.py after measuring"
    assert perf.main(["--check"]) == 0
    assert "| RMSNorm+Linear b1 |" in generated and "Measured on NVIDIA H200" in generated


def _row(graph: str, us: float, result: str = "ok", batch: int = 1, program: str = "gqa") -> dict[str, object]:
    return {"program": program, "batch": batch, "graph": graph, "median_us": us, "hardware": "H100",
            "error": "", "result": result, "dram_floor_us": 2.0}


def test_speedups_floor_wrong_rows_and_the_before_column() -> None:
    perf = load()
    df = pd.DataFrame([_row("search best", 10.0), _row("fused", 20.0, "WRONG: inf (OVER …)"),
                       _row(baselines.EAGER, 30.0), _row(baselines.COMPILE, 15.0), _row(baselines.SDPA, 12.0),
                       _row("search best (before)", 40.0), _row("unfused", 99.0),
                       _row(baselines.EAGER, 5.0, program="lora", batch=8) | {"dram_floor_us": math.nan}])
    text = perf.table(df, "NVIDIA_H100_80GB_HBM3")
    lines = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| ")}
    assert lines["| GQA b1"] == ("| GQA b1 | 10.0 | WRONG | 30.0 | 15.0 | 12.0 | 2 | 3.00× / 1.20× | – / – | 5.00× "
                                 "| 40.0 / – |")
    floor = baselines.dram_floor_s(programs.lora(8), "H100") * 1e6  # a missing floor is computed for the preset
    assert lines["| LoRA b8"] == f"| LoRA b8 | – | – | 5.0 | – | – | {floor:.2g} | – / – | – / – | – | – / – |"
    assert "Measured on NVIDIA H100 80GB HBM3" in text and "3.35 TB/s" in text and "predates" not in text
    assert list(lines)[1:] == ["| LoRA b8", "| GQA b1"]  # (after the header) in the programs' order


def test_readme_markers_and_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    perf = load()
    with pytest.raises(FormatError, match="should hold <!-- perf-table:begin --> then <!-- perf-table:end --> once"):
        perf.rewrite("no markers", "table")
    assert perf.rewrite(f"a\n{perf.BEGIN}\nold\n{perf.END}\nb", "new\n") == f"a\n{perf.BEGIN}\nnew\n{perf.END}\nb"
    csv, readme = tmp_path / "G.csv", tmp_path / "README.md"
    pd.DataFrame([_row(baselines.EAGER, 30.0)]).to_csv(csv, index=False)
    readme.write_text(f"# x\n{perf.BEGIN}\n{perf.END}\n")
    assert perf.main(["--csv", str(csv), "--readme", str(readme), "--check"]) == 1  # stale
    assert perf.main(["--csv", str(csv), "--readme", str(readme)]) == 0
    assert perf.main(["--csv", str(csv), "--readme", str(readme), "--check"]) == 0
    assert perf.main(["--csv", str(csv), "--print"]) == 0 and "| GQA b1 |" in capsys.readouterr().out
    for argv, message in [(["--csv", str(tmp_path / "none.csv")], "none.csv is not a file"),
                          (["--check", "--print"], "pass one of them"),
                          (["--csv", str(csv), "--readme", str(csv)], "should hold <!-- perf-table:begin -->")]:
        with pytest.raises(SystemExit) as e:
            perf.main(argv)
        assert e.value.code == 2 and message in capsys.readouterr().err
