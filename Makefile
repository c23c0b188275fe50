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
# The suite in three pytest processes at once, each its own part, all of which must pass: the compose
# tests (marker compose: their own dockerd, a ~4 min bring-up and the damage scenarios, mostly
# waiting); the network-namespace tests (marker netns: one cluster of hosts at a time, one after
# another); and the rest in three test processes (pytest-xdist: most tests wait on real workers and
# services, not the CPU). The first two are kept out of xdist by marker, not by xdist_group: pytest
# 9.2 and pytest-xdist 3.8 no longer group tests (pytest-dev/pytest-xdist#1386).
COMPOSE_LOG ?= $(or $(TMPDIR),/tmp)/packsolve-compose-tests.log
NETNS_LOG ?= $(or $(TMPDIR),/tmp)/packsolve-netns-tests.log
test: $(BIN)/.installed
	$(PY) setup.py --quiet build_ext --inplace
	# The example plug-in kind, installed as any separate distribution would be (the tests run it).
	$(PY) -m pip install --quiet --no-deps -e examples/plugin
	$(PY) -m pytest -m compose -p no:cacheprovider >$(COMPOSE_LOG) 2>&1 & compose=$$!; \
	$(PY) -m pytest -m netns -p no:cacheprovider >$(NETNS_LOG) 2>&1 & netns=$$!; \
	$(PY) -m pytest -n 3 -m "not compose and not netns"; status=$$?; \
	wait $$netns; netns_status=$$?; \
	wait $$compose; compose_status=$$?; \
	echo "== network-namespace tests (pytest -m netns), log $(NETNS_LOG):"; cat $(NETNS_LOG); \
	echo "== compose tests (pytest -m compose), log $(COMPOSE_LOG):"; cat $(COMPOSE_LOG); \
	for s in $$status $$netns_status $$compose_status; do \
	  if [ $$s -eq 5 ]; then echo "pytest collected no tests (exit status 5): failing" >&2; fi; \
	done; \
	for s in $$status $$netns_status $$compose_status; do \
	  if [ $$s -ne 0 ]; then exit $$s; fi; \
	done

lint: $(BIN)/.installed
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) build src/*.egg-info src/packsolve/native/*.so
