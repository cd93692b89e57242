# qaportal — the two commands of the README:
#
#   make run    the app on the embedded default (SQLite, Celery eager, local provider)
#               with a demo requester, at http://127.0.0.1:$(PORT)
#   make test   ruff, mypy and pytest against the real PostgreSQL and Redis; pytest
#               includes the lane of `make run` itself (tests/infra/test_make_run_lane.py:
#               the four recipes end to end on SQLite, every export as a job, a browser)
#
# Both build .venv with $(PYTHON) when it is missing and reinstall the project
# when pyproject.toml changed (stamp files in .venv record what was installed).

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
RUNTIME_STAMP := $(VENV)/.installed-runtime
DEV_STAMP := $(VENV)/.installed-dev

# make run
PORT ?= 8000
DEBUG ?= 1

# make test: defaults for the test services; values set in the environment or
# on the command line win.
TEST_DATABASE_URL := $(or $(DATABASE_URL),postgres://postgres@127.0.0.1:5432/qaportal)
TEST_REDIS_URL := $(or $(REDIS_URL),redis://127.0.0.1:6379/1)
TEST_BROKER_URL := $(or $(CELERY_BROKER_URL),$(TEST_REDIS_URL))
PYTEST_ARGS ?=
# Parallel test processes (pytest-xdist), each with its own test database, cache keys and
# Celery queue (tests/settings.py). Measured on the 2-core machine: see bench/README.md.
PYTEST_WORKERS ?= 2

.PHONY: help run test lint typecheck pytest lane bench bench-faults venv dev-venv clean

help:
	@echo "make run    serve qaportal on http://127.0.0.1:$(PORT) (SQLite, demo data; PORT=, DEBUG= to change)"
	@echo "make test   lint + typecheck + pytest (PostgreSQL and Redis on 127.0.0.1)"
	@echo "make lint | typecheck | pytest   one part of make test (PYTEST_ARGS= for pytest)"
	@echo "make lane   the make run lane alone: four recipes on SQLite, every export, a browser"
	@echo "make bench  benchmarks under bench/ (BENCH_ARGS=--quick for a smoke run)"
	@echo "make bench-faults   kill -9 of the Celery worker and Redis restarts mid-batch (BENCH_ARGS=--quick)"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(RUNTIME_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	@touch $@

# The dev install contains the runtime one, so it refreshes both stamps.
$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	@touch $@ $(RUNTIME_STAMP)

venv: $(RUNTIME_STAMP)
dev-venv: $(DEV_STAMP)

# PORT is passed to every step: settings derive SITE_URL (links printed by load_demo) from it.
run: $(RUNTIME_STAMP)
	DEBUG=$(DEBUG) PORT=$(PORT) $(BIN)/python manage.py migrate --noinput
	DEBUG=$(DEBUG) PORT=$(PORT) $(BIN)/python manage.py load_demo
	@echo "qaportal: serving on http://127.0.0.1:$(PORT)/ (Ctrl-C to stop)"
	DEBUG=$(DEBUG) PORT=$(PORT) PYTHONUNBUFFERED=1 exec $(BIN)/python manage.py runserver 127.0.0.1:$(PORT) --noreload

# Runs every check even when one fails, so that one CI run reports them all. lint and
# typecheck run alongside pytest (the test processes wait on PostgreSQL, live servers and
# browsers much of the time, so the CPU has room for them; bench/README.md, "The test suite
# in ten minutes"); their output is kept and printed once pytest is done.
test: $(DEV_STAMP)
	@failed=""; logs=$$(mktemp -d); \
	( $(MAKE) --no-print-directory lint >$$logs/lint 2>&1; echo $$? >$$logs/lint.rc ) & \
	( $(MAKE) --no-print-directory typecheck >$$logs/typecheck 2>&1; echo $$? >$$logs/typecheck.rc ) & \
	$(MAKE) --no-print-directory pytest || failed="$$failed pytest"; \
	wait; \
	for step in lint typecheck; do \
		echo "==> make $$step"; cat $$logs/$$step; \
		[ "$$(cat $$logs/$$step.rc 2>/dev/null)" = 0 ] || failed="$$failed $$step"; \
	done; \
	rm -rf $$logs; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed"; exit 1; fi; \
	echo "make test: lint, typecheck and pytest passed"

# ruff, then the house's import rules: import-linter's contracts (.importlinter) and no
# import cycle between modules (tools/import_cycles.py); see docs/architecture.md.
lint: $(DEV_STAMP)
	@rc=0; \
	echo "$(BIN)/ruff check ."; $(BIN)/ruff check . || rc=1; \
	echo "$(BIN)/ruff format --check ."; $(BIN)/ruff format --check . || rc=1; \
	echo "$(BIN)/lint-imports"; $(BIN)/lint-imports --no-cache || rc=1; \
	echo "$(BIN)/python tools/import_cycles.py"; $(BIN)/python tools/import_cycles.py || rc=1; \
	exit $$rc

typecheck: $(DEV_STAMP)
	$(BIN)/mypy .

# pytest exits 5 when it collected no test: that is a failure, never a pass.
pytest: $(DEV_STAMP)
	@rc=0; \
	DATABASE_URL='$(TEST_DATABASE_URL)' REDIS_URL='$(TEST_REDIS_URL)' \
	CELERY_BROKER_URL='$(TEST_BROKER_URL)' $(BIN)/pytest -n $(PYTEST_WORKERS) --dist worksteal \
	$(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make pytest: pytest collected no tests (exit 5)"; fi; \
	exit $$rc

# The lane of `make run` alone (it also runs within `make pytest`): `make run` on a free
# port with a temporary SQLite database, the four recipes piloted and exported through
# the API, the pages and chromium. Its pytest process itself needs PostgreSQL only to start.
lane: $(DEV_STAMP)
	DATABASE_URL='$(TEST_DATABASE_URL)' REDIS_URL='$(TEST_REDIS_URL)' \
	CELERY_BROKER_URL='$(TEST_BROKER_URL)' $(BIN)/pytest -n 0 -p no:cacheprovider \
	tests/infra/test_make_run_lane.py $(PYTEST_ARGS)

# Benchmarks are run by hand, never timed inside the test suite; see bench/README.md.
BENCH_ARGS ?=
bench: $(DEV_STAMP)
	$(BIN)/python bench/worker_cycles.py $(BENCH_ARGS)

# Its own database (bench_faults) and its own redis-server on port 6390; see bench/README.md.
bench-faults: $(DEV_STAMP)
	$(BIN)/python bench/fault_bench.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) var/static .mypy_cache .ruff_cache .pytest_cache
