"""Shared fixtures of the floe tests: a real PostgreSQL database per session, and the SQL
catalog URIs (SQLite and PostgreSQL) the catalog tests are parametrised over.

PostgreSQL is found at ``FLOE_TEST_POSTGRES_URL`` (an SQLAlchemy URL of a database we may
``CREATE DATABASE`` from), by default ``postgresql+psycopg://postgres@127.0.0.1:5432/postgres``
(``scripts/test.sh`` makes sure it runs there). With ``FLOE_REQUIRE_POSTGRES=1`` an
unreachable server fails the tests that need it; otherwise they skip.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of a fresh, empty database (``floe_test_<random>``), dropped at the end."""
    admin_url = make_url(os.environ.get("FLOE_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL))
    try:
        admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as e:  # noqa: BLE001 - any reason PostgreSQL is unusable is the same here
        why = f"PostgreSQL at {admin_url.render_as_string(hide_password=True)}: {e}"
        if os.environ.get("FLOE_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"FLOE_REQUIRE_POSTGRES=1 but {why}", pytrace=False)
        pytest.skip(why)
    name = f"floe_test_{uuid.uuid4().hex[:12]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield admin_url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def sql_uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A catalog database URI; tests give their catalogs unique names, so they can share the
    session's PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'catalog.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def catalog_name() -> str:
    return f"cat_{uuid.uuid4().hex[:10]}"
