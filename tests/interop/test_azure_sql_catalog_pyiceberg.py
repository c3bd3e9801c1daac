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
    pyiceberg_history,
    pyiceberg_read,
)

from floe.catalog.sql import SqlCatalog
from floe.io import FileIO
from tests.object_store import Azurite, unique_name

pytestmark = pytest.mark.objectstore


def test_pyiceberg_and_floe_share_a_sql_catalog_in_an_azure_container(
        azurite: Azurite, tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

    database = tmp_path / "catalog.db"
    warehouse = f"abfs://{azurite.container}/{unique_name('sqlwh')}"
    pyiceberg = PyIcebergSqlCatalog(
        "lake", uri=f"sqlite:///{database}", warehouse=warehouse,
        **{**azurite.properties(), "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO"})
    written = pyiceberg_history(pyiceberg, ("shop", "events"))
    assert written.metadata_location.startswith(warehouse + "/")

    with SqlCatalog("lake", f"sqlite:///{database}", warehouse,
                    FileIO(azurite.properties())) as floe:
        table = floe.load_table("shop.events")
        assert table.metadata_location == written.metadata_location
        assert len(table.metadata.snapshots) >= 6
        for snapshot in table.metadata.snapshots:
            assert_same_rows(pyiceberg_read(written, snapshot.snapshot_id),
                             floe_read(table.io, table.metadata, snapshot.snapshot_id),
                             f"snapshot {snapshot.snapshot_id}")

        def check(step: str) -> None:
            theirs = pyiceberg.load_table(("shop", "events"))
            assert theirs.metadata_location == table.refresh().metadata_location, step
            assert_same_rows(floe_read(table.io, table.metadata), pyiceberg_read(theirs),
                             f"PyIceberg after {step}")

        floe_changes(table, check)
