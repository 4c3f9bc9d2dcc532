"""The README's self-contained Python block ("A taste") runs to the end from an empty folder, as a newcomer would
run it after installing (issue 38, item 5): nothing it needs lies outside that folder (no ../shared)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def section_code(title: str) -> str:
    """The first ```python block under the README heading ``## title``."""
    text = README.read_text()
    body = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    m = re.search(r"```python\n(.*?)```", body, re.DOTALL)
    assert m, f"no python block under '## {title}'"
    return m.group(1)


def test_a_taste_runs_from_an_empty_folder(tmp_path: Path) -> None:
    code = section_code("A taste")
    assert "../" not in code  # nothing from beside the checkout
    script = tmp_path / "taste.py"
    script.write_text(code)
    work = tmp_path / "empty"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIRAGE_LAB_")} | {"MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, str(script)], cwd=work, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "EQUIVALENT" in done.stdout and (work / "rmsnorm_fused.json").is_file()
    assert any((work / "runs").iterdir())  # the search's run folder lands in the working folder
