"""Fixtures of the floe tests: the SQL catalog URIs (SQLite and the real PostgreSQL database of
tests/conftest.py's ``postgres_url``) the catalog tests are parametrised over.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest


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
