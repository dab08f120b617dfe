# Two commands on a fresh machine: `make run` and `make test`. Everything goes into .venv.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test lint typecheck pytest bench completions clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all,dev]'
	@touch $(STAMP)

run: install
	$(BIN)/rmq up

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

pytest: install
	$(BIN)/pytest

test: lint typecheck pytest

bench: install
	$(BIN)/python -m benchmarks

completions: install
	$(BIN)/python -m cli.completion_gen completions

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
