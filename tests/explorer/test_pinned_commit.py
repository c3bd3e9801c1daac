"""A confirm step commits only on top of the metadata file its dry run saw: the pinned catalog
refuses the transaction's commit (Catalog.commit_updates) when the table moved."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from explorer.errors import TableChangedSinceDryRun
from explorer.tasks.runners import _PinnedCatalog
from floe.catalog.filesystem import FileSystemCatalog
from floe.schema import Schema
from floe.table import Table
from floe.types import LONG, NestedField


def test_a_pinned_commit_refuses_a_table_that_moved_and_commits_one_that_did_not(
        tmp_path: Path) -> None:
    catalog = FileSystemCatalog("c", str(tmp_path / "wh"))
    catalog.create_namespace(("db",))
    table = catalog.create_table("db.t", Schema(NestedField(1, "id", LONG, required=True)))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    planned_at = table.metadata_location

    def pinned() -> Table:
        return Table(_PinnedCatalog(catalog, planned_at, 7),  # type: ignore[arg-type]
                     table.identifier, table.metadata, planned_at)

    pinned().set_properties({"by": "confirm"})  # nothing moved: it commits
    moved = catalog.load_table("db.t")
    assert moved.properties["by"] == "confirm"
    planned_at = moved.metadata_location
    catalog.load_table("db.t").append(pa.table({"id": pa.array([3], pa.int64())}))
    now = catalog.load_table("db.t").metadata_location
    with pytest.raises(TableChangedSinceDryRun, match="changed since dry run 7"):
        pinned().set_properties({"by": "late"})
    assert catalog.load_table("db.t").metadata_location == now
