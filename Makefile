# Two commands for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run serve test install lint migrate bench-deps clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

# The settings default DEBUG to off (and then refuse development secrets); development turns it on
# unless the environment says otherwise.
DEV := DEBUG=$${DEBUG:-true}

migrate: install
	$(DEV) $(BIN)/python manage.py migrate --noinput

# The development server and, beside it, the transparency log's sequencer and the signer service
# (deploy/run_dev.py), as production runs them: new records get their log proofs, signatures come from the
# signer. All write here; Ctrl-C stops all.
# `make run PORT=8001` serves elsewhere (links in mails follow unless PUBLIC_BASE_URL is set); only the
# command line sets them, never a HOST or PORT that happens to be in the environment.
HOST := 127.0.0.1
PORT := 8000

run: migrate
	$(DEV) PUBLIC_BASE_URL=$${PUBLIC_BASE_URL:-http://$(HOST):$(PORT)} $(BIN)/python deploy/run_dev.py $(HOST):$(PORT)

# Production: gunicorn with gunicorn.conf.py behind nginx (deploy/nginx.conf), on PostgreSQL and Redis,
# DEBUG off. The environment it needs: README.md, "Production". Static files are collected to
# STATIC_ROOT for nginx; deploy/serve.sh applies migrations, then starts gunicorn.
serve: install
	@test -n "$$DATABASE_URL" || { echo "make serve: set DATABASE_URL (PostgreSQL) and the rest of README.md, Production" >&2; exit 2; }
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	PYTHON=$(CURDIR)/$(BIN)/python deploy/serve.sh

test: install
	$(BIN)/python -m pytest -n 2 --dist worksteal $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/lint-imports

# Everything bench/ imports: the dev extra (its scripts use tests/ helpers), the bench extra (locust,
# PyWavelets) and the watermark peer invisible-watermark, which declares torch and onnx as dependencies
# it does not use for dwtDct: installed without dependencies. The programs some benches start come
# from Debian (README.md, "Development"): apt-get install wrk redis-server postgresql sox ffmpeg espeak-ng
bench-deps: install
	$(BIN)/pip install --quiet -e ".[dev,bench]"
	$(BIN)/pip install --quiet --no-deps invisible-watermark
	@for tool in wrk redis-server sox ffmpeg espeak-ng; do command -v $$tool >/dev/null || missing="$$missing $$tool"; done; \
	  test -z "$$missing" || echo "bench-deps: some benches also need:$$missing (apt-get install$$missing)"

clean:
	rm -rf $(VENV) db.sqlite3 .pytest_cache .ruff_cache
