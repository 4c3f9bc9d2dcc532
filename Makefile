# The README's two commands: `make demo` and `make test`. Both create the virtual
# environment on first use (python3 -m venv + pip; no conda needed).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# torch for the tests of torch tensors in and out (tests/compat/test_torch.py), pinned to the CPU build that lies
# on this project's machines (pip takes it from /opt/wheels); an open range would pull a multi-GB CUDA build
TORCH ?= torch==2.13.0

.PHONY: demo test lint typecheck unit bench clean system-deps

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,torch,triton]' '$(TORCH)'
	touch $(STAMP)

# graphviz + Debian chromium via apt when root and missing; a quick no-op when present,
# a warning (never a failure) on a non-root machine — browser tests then skip.
system-deps:
	bash scripts/install_system_deps.sh

demo: system-deps $(STAMP)
	$(VENV)/bin/mirage-lab demo --out reports/demo

test: lint typecheck unit

lint: $(STAMP)
	$(PY) -m ruff check mirage_lab widgets tests benchmarks scripts notebooks

typecheck: $(STAMP)
	$(PY) -m mypy

unit: system-deps $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) benchmarks/interpret.py

clean:
	rm -rf $(VENV) reports .pytest_cache .mypy_cache .ruff_cache
