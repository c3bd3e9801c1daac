# The two commands of the README: `make run` and `make test`. Both set themselves up.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.floe-installed
ORACLE_SETUP := $(abspath ..)/shared/tools/iceberg-oracle/setup

.PHONY: install run serve-prod test test-fast bench clean pipeline

$(STAMP): pyproject.toml setup.py requirements.lock floe/_native.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c requirements.lock -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(PY) -m explorer.run

# The production shape (what the Dockerfile runs): PostgreSQL, Redis, gunicorn, several
# Celery workers and one beat; needs DATABASE_URL, CELERY_BROKER_URL, FLOE_SECRET_KEY and
# FLOE_ALLOWED_HOSTS (README, "Production").
serve-prod: install
	$(PY) -m explorer.run --prod

test: install
	bash scripts/test.sh

# The demo pipeline on Spark (PySpark 4 + the floe source) into the warehouse `make run`
# serves: pipeline.events, then `make run` shows it.
pipeline: install
	$(PY) pipeline/events.py

# Unit tests only (no oracle, no services, no S3 servers): for a quick loop while developing.
test-fast: install
	$(PY) -m pytest -m "not interop and not browser and not objectstore" -q

# Every benchmark, each printing floe side by side with PyIceberg / DuckDB (slow: minutes).
bench: install
	for b in manifest_read commit plan read delete maintenance spark web first_visit; do $(PY) benchmarks/$$b.py || exit 1; done

clean:
	rm -rf $(VENV) var test-artifacts
