# Two commands on a fresh machine: `make run` and `make test`. Everything goes into .venv.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
COMPILED := build/.compiled
HOT_SOURCES := $(shell sed -n '/^compiled = \[/,/^\]/s/^ *"\(.*\)",$$/\1/p' pyproject.toml)
EXTENSIONS = $(wildcard rmqkit__mypyc.*.so $(HOT_SOURCES:.py=.*.so))

.PHONY: install run test lint typecheck pytest bench completions proto clean

install: $(STAMP) $(COMPILED)
	@# bytecode up to date, so that `rmq` starts fast even where PYTHONDONTWRITEBYTECODE is set
	@$(BIN)/python -m compileall -q -j 0 cli admin broker pyspark_rocketmq.py

# The hot modules (pyproject.toml's [tool.rmqkit] compiled) as mypyc extensions beside their sources,
# which Python imports instead of the .py: rebuilt whenever one of those sources (or the build) changed.
# The editable install itself stays pure Python (setup.py). RMQ_NO_ACCEL=1 removes the extensions, so
# that the sources run; without mypyc or a C compiler setup.py says why and builds none.
ifeq ($(RMQ_NO_ACCEL),1)
.PHONY: $(COMPILED)
$(COMPILED):
	@rm -f $(COMPILED) $(EXTENSIONS)
else
$(COMPILED): $(STAMP) setup.py $(HOT_SOURCES)
	@rm -f $(EXTENSIONS)
	$(BIN)/python setup.py --quiet build_ext --inplace
	@# dated now: the copies keep the time of build/'s objects, which an unchanged module's C reuses
	@find . -maxdepth 1 -name 'rmqkit__mypyc.*.so' -exec touch {} +
	@find broker -name '*.so' -exec touch {} +
	@mkdir -p build && touch $@
endif

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip 'setuptools>=77'
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
	@# two workers, a test file each at a time: most tests wait on servers; then the failover tests,
	@# whose clusters of processes must not share the two cores with other tests
	$(BIN)/pytest -n 2 --dist loadfile -m "not alone"
	$(BIN)/pytest -m alone

test: lint typecheck pytest

bench: install
	$(BIN)/python -m benchmarks

# after an edit of broker/grpc/proto/messaging.proto: its generated classes and typing stubs
proto: install
	$(BIN)/python generate_proto.py

completions: install
	$(BIN)/python -m cli.completion_gen completions

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache build $(EXTENSIONS)
