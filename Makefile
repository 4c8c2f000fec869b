# kartoframe — the two set-up commands are `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PIP_FLAGS ?= --disable-pip-version-check -q
# The installs use uv (pinned in the constraints, installed into the venv by pip): the same
# constraints as pip, resolved to the same versions, in a fraction of pip's time. The venv
# keeps pip (pinned too) for whatever runs `python -m pip`. requirements/uv.toml holds uv's
# index settings. Unlike pip, uv does not compile the venv's ~12,800 modules to bytecode up
# front (that took ~25 s of both cores): a module is compiled when it is first imported.
UV        := $(BIN)/uv
# Python writes bytecode files (its default) in every step, also where the environment turns them
# off: the modules Sphinx imports are then compiled once for the test suite too (as the test
# session does for its own subprocesses, tests/conftest.py).
unexport PYTHONDONTWRITEBYTECODE
CONSTRAINTS := requirements/constraints.txt
UV_INSTALL = $(UV) pip install --quiet --config-file requirements/uv.toml \
             --python $(BIN)/python -c $(CONSTRAINTS)

.PHONY: demo test test-cluster lint typecheck pytest test-explore java venv setup checks bench compare docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(UV): $(BIN)/python $(CONSTRAINTS)
	$(BIN)/python -m pip install $(PIP_FLAGS) -c $(CONSTRAINTS) uv
	touch $(UV)

# Reinstall whenever the project metadata or the pinned constraints change.
$(STAMP): $(UV) pyproject.toml $(CONSTRAINTS) requirements/uv.toml
	$(UV_INSTALL) -e ".[dev]" pip
	touch $(STAMP)

venv: $(STAMP)

# Spark needs a JVM; install one from Debian's packages when none is on PATH.
java:
	@command -v java >/dev/null 2>&1 || { \
	  echo "java not found: installing openjdk-17-jre-headless"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless) \
	  || { echo "could not install Java; Spark tests need it" >&2; exit 1; }; }

demo: $(STAMP) java
	$(BIN)/python -m demo --store ./demo-data

lint: $(STAMP)
	$(BIN)/ruff check kartoframe tests asv_benchmarks demo
	$(BIN)/ruff format --check kartoframe tests asv_benchmarks demo

typecheck: $(STAMP)
	$(BIN)/mypy

# A separate environment with kartothek 5.3 (pyarrow 10, pandas 1.5) for the interop tests
# that let the reference implementation query cubes written by kartoframe.
# The target is the script's stamp file (bin/python is a link to an old interpreter: make saw
# it out of date on every run and ran the script again).
KT53 := .venv-kartothek53/.kartothek53-stamp
$(KT53): tests/golden/make_kartothek53_env.sh requirements/uv.toml $(UV)
	UV=$(abspath $(UV)) bash tests/golden/make_kartothek53_env.sh

# Hypothesis profiles (tests/conftest.py): "ci" replays the same derandomised examples on every
# run; `make test-explore` draws fresh random ones to look for new counterexamples.
HYPOTHESIS_PROFILE ?= ci
# The suite runs in three worker processes (pytest-xdist) on the two cores: many tests wait on
# subprocesses, the JVM or the S3 server, and a third worker fills those waits (measured: 5:43
# against 6:00 with two). A test module per worker at a time (module fixtures stay in one
# process), and all modules that use Spark as one unit (one JVM; tests/conftest.py refines
# loadfile so); `make pytest PYTEST_WORKERS=0` runs it in one process.
PYTEST_WORKERS ?= 3
pytest: $(STAMP) java $(KT53)
	PYSPARK_PYTHON=$(abspath $(BIN)/python) $(BIN)/python -m pytest --hypothesis-profile=$(HYPOTHESIS_PROFILE) -n $(PYTEST_WORKERS) --dist loadfile -m "not cluster" $(PYTEST_ARGS)

# `make test-cluster` (the second CI stage, .ci/run): the tests marked `cluster` (tests/cluster: a
# Spark standalone cluster started from pyspark's distribution, dask process clusters, the S3 API
# server), and the Spark write, cube and conformance suites again with the `spark` fixture on that
# cluster (KARTOFRAME_TEST_SPARK=cluster). One process: one cluster (about 1 GiB more memory).
CLUSTER_SUITES := tests/cluster tests/spark/test_spark_write.py tests/spark/test_spark_cube.py \
                  tests/conformance/test_conformance_spark.py
test-cluster: $(STAMP) java
	KARTOFRAME_TEST_SPARK=cluster PYSPARK_PYTHON=$(abspath $(BIN)/python) $(BIN)/python -m pytest --hypothesis-profile=$(HYPOTHESIS_PROFILE) -n 0 $(CLUSTER_SUITES) $(PYTEST_ARGS)

test-explore:
	$(MAKE) pytest HYPOTHESIS_PROFILE=explore

# `make test`: the two environments are built side by side (the main venv, then uv installs
# the kartothek 5.3 one while the main install runs), then ruff, mypy and Sphinx run side by
# side (each is single-threaded; a failing one fails `make test`, its output printed whole),
# then the test suite.
setup: $(STAMP) $(KT53) java

checks: lint typecheck docs

test:
	@$(MAKE) --no-print-directory -j2 setup
	@$(MAKE) --no-print-directory -j3 --output-sync=target checks
	@$(MAKE) --no-print-directory pytest

# The HTML documentation (Sphinx + MyST); every warning is an error.
docs: $(STAMP)
	$(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html

compare: $(STAMP)
	$(BIN)/python asv_benchmarks/compare.py

bench: $(STAMP)
	cd asv_benchmarks && ../$(BIN)/asv machine --yes >/dev/null && ../$(BIN)/asv run --python=same --quick

clean:
	rm -rf demo-data bench-data .pytest_cache .mypy_cache .ruff_cache
