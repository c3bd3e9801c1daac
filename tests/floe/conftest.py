"""Fixtures of the floe tests: the SQL catalog URIs (SQLite and the real PostgreSQL database of
tests/conftest.py's ``postgres_url``) the catalog tests are parametrised over, and a small
table with two partition specs and position and equality deletes.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField

DELETES_SCHEMA = Schema(NestedField(1, "id", LONG, False), NestedField(2, "cat", STRING, False))


@pytest.fixture(scope="module")
def deletes_table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Eight appends of ten rows over two specs (``cat``, then also ``bucket(4, id)``; some
    ``cat`` null in the last two), with position deletes (ids 3, 61) and equality deletes
    (ids 12, 70)."""
    cat = FileSystemCatalog("c", str(tmp_path_factory.mktemp("wh")))
    t = cat.create_table("db.t", DELETES_SCHEMA, spec=parse_partition_by("cat", DELETES_SCHEMA),
                         properties={"commit.manifest-merge.enabled": "false"})

    def append(k: int, nulls: bool) -> None:
        ids = list(range(k * 10, k * 10 + 10))
        t.append(pa.table({"id": pa.array(ids, pa.int64()),
                           "cat": [None if nulls and i % 7 == 0 else f"c{i % 3}"
                                   for i in ids]}))

    for k in range(6):
        append(k, nulls=False)
    t.update_spec().add_field("bucket(4, id)").commit()
    for k in range(6, 8):
        append(k, nulls=True)
    t.delete_where("id = 3 OR id = 61", mode="merge-on-read")
    t.delete_equal(["id"], pa.table({"id": pa.array([12, 70], pa.int64())}))
    return t


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
