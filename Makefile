# Two commands on a fresh machine: `make run` and `make test`. Everything goes into .venv.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test lint typecheck pytest bench completions clean

install: $(STAMP)
	@# bytecode up to date, so that `rmq` starts fast even where PYTHONDONTWRITEBYTECODE is set
	@$(BIN)/python -m compileall -q -j 0 cli admin broker pyspark_rocketmq.py
	@# the hot modules compiled with mypyc into build/accel (see broker/compiled.py);
	@# rebuilt only when those sources changed, skipped with a reason where no compiler is found
	@$(BIN)/python build_accel.py --if-stale

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
	@# the dashboard's real-terminal test drives tmux: installed where apt-get can (root), else that test skips
	@command -v tmux >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& apt-get update -qq >/dev/null && apt-get install -y -qq tmux >/dev/null; } \
		|| echo "note: tmux is missing (apt-get install tmux); the dashboard's real-terminal test is skipped"
	@# three workers, a test file each at a time: most tests wait on servers, so two cores serve three
	$(BIN)/pytest -n 3 --dist loadfile

test: lint typecheck pytest

bench: install
	$(BIN)/python -m benchmarks

completions: install
	$(BIN)/python -m cli.completion_gen completions

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache build
