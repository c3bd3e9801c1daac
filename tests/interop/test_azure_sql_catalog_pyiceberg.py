"""A SQL catalog with its warehouse in an Azure container (Azurite), shared by PyIceberg and
floe: PyIceberg's ``SqlCatalog`` (its pyarrow FileIO) and floe's ``SqlCatalog`` on the same
SQLite file, both configured with the same ``adls.*`` properties.

PyIceberg writes its history (partitioned, evolved, copy-on-write deletes); floe reads every
snapshot as PyIceberg does; then floe appends, deletes merge-on-read, rewrites the position
deletes, compacts and expires, and PyIceberg reads what floe reads after each step.

The warehouse is ``abfs://<container>/<path>`` (the account from ``adls.account-name``):
PyIceberg 0.12's pyarrow FileIO hands ``container@account.dfs.core.windows.net/path`` to
pyarrow for the ``abfss://container@account…`` form, which Azure refuses (400
``InvalidResourceName``; tests/object_store.py). DuckDB is not here: its wheels carry no
Azure extension.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lake_engines import (
    assert_same_rows,
    floe_changes,
    floe_read,
    pyiceberg_read,
    pyiceberg_sql_catalog_read_by_floe,
)

from tests.object_store import Azurite, unique_name

pytestmark = pytest.mark.objectstore


def test_pyiceberg_and_floe_share_a_sql_catalog_in_an_azure_container(
        azurite: Azurite, tmp_path: Path) -> None:
    warehouse = f"abfs://{azurite.container}/{unique_name('sqlwh')}"
    with pyiceberg_sql_catalog_read_by_floe(azurite.properties(), warehouse,
                                            tmp_path / "catalog.db") as (pyiceberg, table):

        def check(step: str) -> None:
            theirs = pyiceberg.load_table(("shop", "events"))
            assert theirs.metadata_location == table.refresh().metadata_location, step
            assert_same_rows(floe_read(table.io, table.metadata), pyiceberg_read(theirs),
                             f"PyIceberg after {step}")

        floe_changes(table, check)
