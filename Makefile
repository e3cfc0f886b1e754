# squall: `make demo` runs the word count, `make test` runs every test. Both set up first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-fast lint bench bench-full bench-clean clean

$(STAMP): pyproject.toml scripts/setup.sh scripts/setup-java.sh scripts/setup-redis.sh scripts/setup-zookeeper.sh
	bash scripts/setup.sh "$(PYTHON)" "$(VENV)"
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(PY) -m examples.word_count --seconds 10 --workers 2

test: $(STAMP)
	$(PY) -m pytest

test-fast: $(STAMP)
	$(PY) -m pytest -m "not slow"

lint: $(STAMP)
	$(VENV)/bin/ruff check squall tests examples benchmarks
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) -m benchmarks --quick

bench-full: $(STAMP)
	$(PY) -m benchmarks --full

bench-clean:
	rm -rf .bench benchmarks/results/*.json benchmarks/results/*.png

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
