# Two commands on a fresh machine: `make run` (service on SQLite) and `make test` (whole suite).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

.PHONY: install run test test-deps test-fast bench lint format screenshots
install: $(BIN)/.installed

# Byte-compiled first, as an installed wheel is: every worker process would otherwise compile the
# sources anew where PYTHONDONTWRITEBYTECODE is set (up to half of its start-up).
run: install
	@$(BIN)/python -m compileall -q domain application interface > /dev/null
	@$(BIN)/runcode-policy serve --host $(HOST) --port $(PORT)

# Byte-compiled first too: the suite starts `serve` (a parent and its spawned workers) dozens of
# times, and each of those processes compiled the service anew where PYTHONDONTWRITEBYTECODE is set.
# A file that does not compile is left to pytest to report (compileall's own message goes to
# /dev/null): `-` goes on to the tests.
test: install
	-@$(BIN)/python -m compileall -q domain application interface > /dev/null
	$(BIN)/python -m pytest -n 4 --dist worksteal $(PYTEST_ARGS)

# What `make test` skips without (Chromium, PostgreSQL, verdaccio, the package clients), installed
# as CI installs it (apt-get needs root).
test-deps:
	bash tests/support/install-test-deps

# The inner loop: the domain and application layers only (seconds, no server, no browser).
test-fast: install
	$(BIN)/python -m pytest tests/domain tests/application $(PYTEST_ARGS)

# The console's pictures in docs/ (headless Debian Chromium, the browser tests' own flows).
screenshots: install
	$(BIN)/python -m tests.support.screenshots docs

bench: install
	$(BIN)/python -m bench $(BENCH_ARGS)

lint: install
	$(BIN)/ruff check domain application interface tests bench
	$(BIN)/ruff format --check domain application interface tests bench
	$(BIN)/mypy

format: install
	$(BIN)/ruff format domain application interface tests bench
