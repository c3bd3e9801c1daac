"""Factory for tests: a real file-system table written by floe with a history worth browsing —
appends, a schema change (add, rename, promote, drop), a partition-spec change, a delete, a
branch and a tag. Data and manifest files are real, so every page can read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from floe.catalog.filesystem import FileSystemCatalog
from floe.partitioning import PartitionSpec, parse_partition_by
from floe.schema import Schema
from floe.snapshots import SnapshotRefType
from floe.table import Table
from floe.types import INT, LONG, STRING, NestedField

BASE_MS = 1_700_000_000_000
MINUTE = 60_000


@dataclass(frozen=True)
class HistoryTable:
    location: str
    namespace: str
    name: str
    snapshot_ids: list[int]  # oldest first, as committed


def _rows(first: int, n: int, *, label: str = "name", amount_type: pa.DataType = pa.int32(),
          with_extra: bool = True, with_note: bool = False) -> pa.Table:
    cols: dict[str, pa.Array] = {
        "id": pa.array(range(first, first + n), pa.int64()),
        "region": pa.array([["emea", "apac", "amer"][i % 3] for i in range(n)]),
        label: pa.array([f"n{i}" for i in range(first, first + n)]),
        "amount": pa.array([i % 97 for i in range(n)], amount_type),
    }
    if with_extra:
        cols["extra"] = pa.array(["x"] * n)
    if with_note:
        cols["note"] = pa.array([None if i % 2 else "hi" for i in range(n)], pa.string())
    return pa.table(cols)


def write_history_table(warehouse: Path | str, namespace: str = "shop", name: str = "orders"
                        ) -> HistoryTable:
    catalog = FileSystemCatalog("local", str(warehouse))
    v0 = Schema(
        NestedField(1, "id", LONG, required=True),
        NestedField(2, "region", STRING, required=True),
        NestedField(3, "name", STRING, doc="customer name"),
        NestedField(4, "amount", INT),
        NestedField(5, "extra", STRING),
        schema_id=0,
    )
    catalog.create_namespace((namespace,))
    table: Table = catalog.create_table(
        f"{namespace}.{name}", v0, parse_partition_by("region", v0), format_version=2,
        properties={"write.target-file-size-bytes": str(64 * 1024 * 1024),
                    "commit.manifest-merge.enabled": "false"},
    )
    ids: list[int] = []

    def committed() -> None:
        snap = table.current_snapshot()
        assert snap is not None
        ids.append(snap.snapshot_id)

    table.append(_rows(0, 30), timestamp_ms=BASE_MS + MINUTE)
    committed()
    table.append(_rows(30, 12), timestamp_ms=BASE_MS + 2 * MINUTE)
    committed()
    # Schema change: rename name → label, promote amount int → long, drop extra, add note.
    v1 = Schema(
        NestedField(1, "id", LONG, required=True),
        NestedField(2, "region", STRING, required=True),
        NestedField(3, "label", STRING, doc="customer name"),
        NestedField(4, "amount", LONG),
        NestedField(6, "note", STRING),
        schema_id=1,
    )
    table.new_transaction().set_schema(v1).commit()
    table.append(_rows(42, 9, label="label", amount_type=pa.int64(), with_extra=False,
                       with_note=True), timestamp_ms=BASE_MS + 3 * MINUTE)
    committed()
    # Spec change: add bucket(2, id) next to region (partition field ids stay unique).
    spec0 = table.spec()
    bucket = parse_partition_by("bucket(2, id)", v1, last_partition_id=table.metadata.last_partition_id)
    table.new_transaction().set_spec(PartitionSpec(*spec0.fields, *bucket.fields)).commit()
    table.append(_rows(51, 6, label="label", amount_type=pa.int64(), with_extra=False,
                       with_note=True), timestamp_ms=BASE_MS + 4 * MINUTE)
    committed()
    table.new_transaction().set_ref("audit", ids[1], SnapshotRefType.TAG).commit()
    table.new_transaction().set_ref("dev", ids[2], SnapshotRefType.BRANCH).commit()
    # A delete: remove the first file of the first append.
    from floe.inspect import file_rows

    first_files = [r["file_path"] for r in file_rows(table.io, table.metadata, table.current_snapshot())
                   if r["snapshot_id"] == ids[0]]
    table.delete_files(sorted(first_files)[:1])
    committed()
    return HistoryTable(table.location, namespace, name, ids)
