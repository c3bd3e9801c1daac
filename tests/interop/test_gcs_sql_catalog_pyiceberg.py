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
from lake_engines import pyiceberg_sql_catalog_read_by_floe

from tests.object_store import FakeGcs, unique_name

pytestmark = pytest.mark.objectstore


def test_floe_reads_every_snapshot_pyiceberg_wrote_in_a_gcs_bucket(
        fake_gcs: FakeGcs, tmp_path: Path) -> None:
    warehouse = fake_gcs.location(unique_name("sqlwh"))
    with pyiceberg_sql_catalog_read_by_floe(fake_gcs.properties(), warehouse,
                                            tmp_path / "catalog.db"):
        pass  # the reads are the helper's
