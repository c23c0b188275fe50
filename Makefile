# Two entry points for a fresh machine with Python 3.11+ and make:
#   make demo   — virtualenv, install, solve the sample packs locally into SQLite, print the summary
#   make test   — virtualenv with the test tools, then the whole test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python

.PHONY: demo test lint clean

$(BIN)/.installed: pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,cpsat]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/packsolve solve examples/packs --time-limit 10

# pytest exits 5 when it collected no test: a failure (a broken layout or selection), never a pass.
# Two pytest processes at once: the compose tests (marker compose: their own dockerd, a ~4 min
# bring-up and the damage scenarios, mostly waiting) beside the rest of the suite; both must pass.
COMPOSE_LOG ?= $(or $(TMPDIR),/tmp)/packsolve-compose-tests.log
test: $(BIN)/.installed
	$(PY) setup.py --quiet build_ext --inplace
	# The example plug-in kind, installed as any separate distribution would be (the tests run it).
	$(PY) -m pip install --quiet --no-deps -e examples/plugin
	# Three test processes (pytest-xdist) for the rest: most tests wait on real workers and services,
	# not the CPU. The network-namespace tests all run in one of them (one cluster fits on a machine).
	$(PY) -m pytest -m compose -p no:cacheprovider >$(COMPOSE_LOG) 2>&1 & compose=$$!; \
	$(PY) -m pytest -n 3 --dist loadgroup -m "not compose"; status=$$?; \
	wait $$compose; compose_status=$$?; \
	echo "== compose tests (pytest -m compose), log $(COMPOSE_LOG):"; cat $(COMPOSE_LOG); \
	for s in $$status $$compose_status; do \
	  if [ $$s -eq 5 ]; then echo "pytest collected no tests (exit status 5): failing" >&2; fi; \
	done; \
	if [ $$status -ne 0 ]; then exit $$status; fi; exit $$compose_status

lint: $(BIN)/.installed
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) build src/*.egg-info src/packsolve/native/*.so
