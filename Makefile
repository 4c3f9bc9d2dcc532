# The README's two commands: `make demo` and `make test`. Both create the virtual
# environment on first use (python3 -m venv + pip; no conda needed).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/mirage-lab demo --out reports/demo

test: lint typecheck unit

lint: $(STAMP)
	$(PY) -m ruff check mirage_lab widgets tests benchmarks

typecheck: $(STAMP)
	$(PY) -m mypy

unit: $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) benchmarks/interpret.py

clean:
	rm -rf $(VENV) reports .pytest_cache .mypy_cache .ruff_cache
