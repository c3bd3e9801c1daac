"""A fresh PostgreSQL database for a test or a benchmark: :func:`fresh_postgres_database`."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import URL, create_engine, make_url, text

__all__ = ["fresh_postgres_database"]


@contextmanager
def fresh_postgres_database(admin_url: str | URL, prefix: str = "floe_test") -> Iterator[URL]:
    """A new, empty database ``<prefix>_<random>`` on the server ``admin_url`` names (the URL
    of a database we may ``CREATE DATABASE`` from; ``postgres://`` and ``postgresql://`` are
    taken with psycopg 3), as ``admin_url`` with the new database's name; dropped at the end,
    whoever is still connected."""
    url = make_url(admin_url)
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(url.set(drivername="postgresql+psycopg"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield url.set(database=name)
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()
