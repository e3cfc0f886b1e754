# squall: `make demo` runs the word count, `make test` runs every test. Both set up first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# the second Python the unit and integration tests run on (pyproject.toml's classifiers), when
# scripts/setup-python-second.sh finds one; SECOND_STAMP records that it looked
VENV2 := .venv-3.13
SECOND_STAMP := $(VENV)/.second-python
# the hot path, compiled with Cython from these sources by setup.py's build_ext: once by
# `pip install -e` in scripts/setup.sh, again by scripts/compile.py when a source changes
COMPILED := squall/_compiled.json
HOT := $(wildcard squall/api/tuple.py squall/api/tuple.pxd squall/runtime/*.pxd) \
	$(patsubst %.pxd,%.py,$(wildcard squall/runtime/*.pxd)) squall/_speedups.py scripts/compile.py setup.py

.PHONY: setup compile demo test test-fast test-second-python faults lint bench bench-full bench-clean soak docs clean

$(STAMP): pyproject.toml setup.py scripts/setup.sh scripts/setup-java.sh scripts/setup-redis.sh scripts/setup-zookeeper.sh \
	scripts/setup-node.sh scripts/setup-chromium.sh scripts/setup-prometheus.sh
	bash scripts/setup.sh "$(PYTHON)" "$(VENV)"
	touch $(STAMP)

$(SECOND_STAMP): pyproject.toml setup.py scripts/setup-python-second.sh | $(STAMP)
	bash scripts/setup-python-second.sh "$(VENV2)"
	touch $(SECOND_STAMP)

# order-only on the install: the install itself compiles, so a fresh setup compiles once
$(COMPILED): $(HOT) | $(STAMP)
	$(PY) scripts/compile.py

setup: $(STAMP) $(COMPILED) $(SECOND_STAMP)

compile: $(STAMP)
	$(PY) scripts/compile.py

demo: $(STAMP) $(COMPILED)
	$(PY) -m examples.word_count --seconds 10 --workers 2

# the fault loops on Spark run one seed each here (seven loops: 7 seeded runs, about 4 min; at 2
# seeds `make test` took 52 min on 2 cores); `make faults` runs every seed of every loop
SQUALL_FAULT_SEEDS ?= 1

# The core tests run a second time on the plain-Python hot path (SQUALL_PURE_PYTHON=1): on
# the second Python (3.13) when setup found one, so that one pass covers both, else on 3.11.
# two streams at once (scripts/run-tests.sh): the Spark and Nimbus suites, which mostly wait, and
# beside them the other tests then the plain-Python pass; logs and JUnit XML in .test-logs/
test: $(STAMP) $(COMPILED) $(SECOND_STAMP)
	SQUALL_FAULT_SEEDS=$(SQUALL_FAULT_SEEDS) bash scripts/run-tests.sh "$(PY)" "$(MAKE)" .test-logs

test-second-python: $(SECOND_STAMP)
	@if [ -f "$(VENV2)/.installed" ]; then \
		echo "squall: unit and integration tests on the plain-Python hot path, on $$($(VENV2)/bin/python --version)"; \
		SQUALL_PURE_PYTHON=1 $(VENV2)/bin/python -m pytest -q -p no:cacheprovider tests/unit tests/integration; \
	else \
		echo "squall: no Python 3.13 was found at setup (scripts/setup-python-second.sh): the plain-Python pass runs on $$($(PY) --version)"; \
		SQUALL_PURE_PYTHON=1 $(PY) -m pytest -q -p no:cacheprovider tests/unit tests/integration; \
	fi

test-fast: $(STAMP) $(COMPILED)
	$(PY) -m pytest -m "not slow"

# every seed of the fault loops: exactly-once on Spark (worker SIGKILLs and lost frames, 20
# seeds; SIGKILLs and Kafka partition moves, 10), live rescales on LocalCluster (keyed bolts and
# spouts, 20 each, simulated time) and on Spark (a keyed bolt under SIGKILLs, 20; a spout, 10;
# at-least-once: a spout's drain and a kill after each live drain, 8 each; a FileSpout under
# kills without a rescale, 8): about 30 min on 2 cores, and 5 to 13 min for each 8-seed loop
faults: $(STAMP) $(COMPILED)
	SQUALL_FAULT_SEEDS=all $(PY) -m pytest -q -s tests/spark/test_exactly_once_faults.py \
		tests/spark/test_exactly_once_kafka_faults.py tests/faults/test_live_rescale_faults.py \
		tests/faults/test_live_spout_faults.py tests/spark/test_live_rescale_keyed_spark.py \
		tests/spark/test_live_rescale_spout_spark.py tests/spark/test_at_least_once_file_faults.py

# lint-imports: the layers and no circles (pyproject.toml's [tool.importlinter], docs/architecture.md)
lint: $(STAMP)
	$(VENV)/bin/ruff check squall tests examples benchmarks scripts conftest.py
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

bench: $(STAMP) $(COMPILED)
	$(PY) -m benchmarks --quick

bench-full: $(STAMP) $(COMPILED)
	$(PY) -m benchmarks --full

# the chaos soak (not part of make test): SOAK_MINUTES=10 by default
soak: $(STAMP) $(COMPILED)
	$(PY) -m benchmarks.chaos --minutes $(or $(SOAK_MINUTES),10)

# the documentation site (MkDocs, Material theme) from docs/ into site/; --strict: a broken
# link or a page missing from mkdocs.yml's nav fails (tests/unit/test_docs_site.py does the same)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

bench-clean:
	rm -rf .bench benchmarks/results/*.json benchmarks/results/*.png

clean:
	-$(PY) scripts/compile.py --clean
	rm -rf $(VENV) $(VENV2) .pytest_cache .mypy_cache .ruff_cache .import_linter_cache *.egg-info build dist
