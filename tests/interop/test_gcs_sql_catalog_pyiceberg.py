"""A SQL catalog with its warehouse in a GCS bucket (fake-gcs-server), written by PyIceberg and
read by floe: PyIceberg's ``SqlCatalog`` (its pyarrow FileIO, which uploads through GCS's JSON
API) and floe's ``SqlCatalog`` on the same SQLite file, both configured with the same
``gcs.*`` properties (``gcs.service.host``, ``gcs.oauth2.token``,
``gcs.oauth2.token-expires-at``).

PyIceberg writes its history (partitioned, evolved, copy-on-write deletes, a partition
overwrite); floe reads every snapshot as PyIceberg does. floe's own changes are not tried:
fake-gcs-server takes none of object_store's writes (tests/object_store.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lake_engines import assert_same_rows, floe_read, pyiceberg_history, pyiceberg_read

from floe.catalog.sql import SqlCatalog
from floe.io import FileIO
from tests.object_store import FakeGcs, unique_name

pytestmark = pytest.mark.objectstore


def test_floe_reads_every_snapshot_pyiceberg_wrote_in_a_gcs_bucket(
        fake_gcs: FakeGcs, tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

    database = tmp_path / "catalog.db"
    warehouse = fake_gcs.location(unique_name("sqlwh"))
    pyiceberg = PyIcebergSqlCatalog(
        "lake", uri=f"sqlite:///{database}", warehouse=warehouse,
        **{**fake_gcs.properties(), "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO"})
    written = pyiceberg_history(pyiceberg, ("shop", "events"))
    assert written.metadata_location.startswith(warehouse + "/")

    with SqlCatalog("lake", f"sqlite:///{database}", warehouse,
                    FileIO(fake_gcs.properties())) as floe:
        table = floe.load_table("shop.events")
        assert table.metadata_location == written.metadata_location
        assert len(table.metadata.snapshots) >= 6
        for snapshot in table.metadata.snapshots:
            assert_same_rows(pyiceberg_read(written, snapshot.snapshot_id),
                             floe_read(table.io, table.metadata, snapshot.snapshot_id),
                             f"snapshot {snapshot.snapshot_id}")
