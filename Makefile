# offsetops developer entry points. CI runs `.ci/run`, which calls these same targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV        ?= .venv
BIN         := $(VENV)/bin
PYTEST_ARGS ?=
DEMO_OUT    ?= out/demo

.PHONY: help setup system-deps test lint demo clean

help:
	@echo "make setup        create/refresh $(VENV) (pinned requirements-dev.lock, then -e . --no-deps; quick when unchanged)"
	@echo "make system-deps  install Java 17+ and Debian chromium if missing (apt-get)"
	@echo "make test         run the test suite (PYTEST_ARGS='-m broker' etc.)"
	@echo "make lint         ruff check, ruff format --check, pyright (the hooks of .pre-commit-config.yaml)"
	@echo "make demo         simulate a sample cluster and run the main job (all assets, local Spark) into DEMO_OUT=$(DEMO_OUT)"

setup:
	@bash scripts/setup.sh

system-deps:
	@bash scripts/ensure_system_deps.sh

# pytest exits 5 when it collected nothing: a suite that runs no test is a failure, never a pass.
test: system-deps setup
	@rc=0; $(BIN)/pytest -q $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then \
		echo "make test: pytest collected NO tests (exit 5): failing"; \
	fi; exit $$rc

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	bash scripts/typecheck.sh

demo: system-deps setup
	$(BIN)/offsetops demo --out "$(DEMO_OUT)"

clean:
	rm -rf out .pytest_cache .ruff_cache
