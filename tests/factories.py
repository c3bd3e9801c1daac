"""Factories for tests: warehouses with real Iceberg tables.

* :func:`write_table` / :func:`write_broken_table`: small file-system tables with hand-written
  metadata JSON only (the manifest lists they name are not written): enough for everything
  that reads table metadata, such as the table list.
* :func:`write_history_table`: a real file-system table written by floe with a history worth
  browsing: appends, a schema change (add, rename, promote, drop), a partition-spec change, a
  delete, a branch and a tag. Data and manifest files are real, so every page can read them.

(``floe.demo`` builds ``make run``'s demo warehouse; it stays in floe.)
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from floe.catalog.filesystem import FileSystemCatalog
from floe.clock import ManualClock, use_clock
from floe.metadata import TableMetadata
from floe.partitioning import PartitionSpec, parse_partition_by
from floe.schema import Schema
from floe.snapshots import SnapshotRefType
from floe.table import Table
from floe.types import INT, LONG, STRING, NestedField

BASE_MS = 1_700_000_000_000
MINUTE = 60_000


@dataclass(frozen=True)
class SnapshotSpec:
    """What one append adds; the summary's running totals are computed from these."""

    added_files: int
    added_records: int
    added_size: int
    added_delete_files: int = 0


def write_table(
    warehouse: Path | str,
    namespace: str,
    name: str,
    snapshots: Sequence[SnapshotSpec] = (),
    *,
    format_version: int = 2,
) -> Path:
    """A file-system table ``<warehouse>/<ns levels>/<name>`` with one metadata file per
    commit (``v1`` creates it, each snapshot adds a ``v<N>``) and ``version-hint.text``."""
    location = Path(warehouse, *namespace.split("."), name)
    metadata_dir = location / "metadata"
    metadata_dir.mkdir(parents=True)
    table_uuid = str(uuid.uuid4())
    written: list[dict[str, Any]] = []
    totals = {"total-data-files": 0, "total-records": 0, "total-files-size": 0,
              "total-delete-files": 0}
    for version in range(1, len(snapshots) + 2):
        made = snapshots[: version - 1]
        if made:
            spec = made[-1]
            totals["total-data-files"] += spec.added_files
            totals["total-records"] += spec.added_records
            totals["total-files-size"] += spec.added_size
            totals["total-delete-files"] += spec.added_delete_files
            seq = version - 1
            summary = {
                "operation": "append",
                "added-data-files": str(spec.added_files),
                "added-records": str(spec.added_records),
                "added-files-size": str(spec.added_size),
                **{k: str(v) for k, v in totals.items()},
                "total-equality-deletes": "0",
                "total-position-deletes": "0",
            }
            written.append(
                {
                    "snapshot-id": 1000 + seq,
                    **({"parent-snapshot-id": 1000 + seq - 1} if seq > 1 else {}),
                    "sequence-number": seq,
                    "timestamp-ms": BASE_MS + seq * MINUTE,
                    "manifest-list": f"{location}/metadata/snap-{1000 + seq}-1-{table_uuid}.avro",
                    "summary": summary,
                    "schema-id": 0,
                }
            )
        metadata = _metadata_json(location, table_uuid, version, written, format_version)
        (metadata_dir / f"v{version}.metadata.json").write_text(json.dumps(metadata, indent=2))
    (metadata_dir / "version-hint.text").write_text(str(len(snapshots) + 1))
    return location


def write_broken_table(warehouse: Path | str, namespace: str, name: str,
                       content: str = "{not json") -> Path:
    location = Path(warehouse, *namespace.split("."), name)
    (location / "metadata").mkdir(parents=True)
    (location / "metadata" / "v1.metadata.json").write_text(content)
    (location / "metadata" / "version-hint.text").write_text("1")
    return location


def _metadata_json(
    location: Path, table_uuid: str, version: int, snapshots: list[dict[str, Any]],
    format_version: int,
) -> dict[str, Any]:
    last_updated = snapshots[-1]["timestamp-ms"] if snapshots else BASE_MS
    schema = {
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": 1, "name": "id", "required": True, "type": "long"},
            {"id": 2, "name": "ts", "required": False, "type": "timestamptz"},
            {"id": 3, "name": "name", "required": False, "type": "string"},
        ],
    }
    md: dict[str, Any] = {
        "format-version": format_version,
        "table-uuid": table_uuid,
        "location": str(location),
        "last-updated-ms": last_updated,
        "last-column-id": 3,
        "schemas": [schema],
        "current-schema-id": 0,
        "partition-specs": [
            {"spec-id": 0, "fields": [{"source-id": 2, "field-id": 1000, "name": "ts_day",
                                       "transform": "day"}]}
        ],
        "default-spec-id": 0,
        "last-partition-id": 1000,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "default-sort-order-id": 0,
        "properties": {"write.format.default": "parquet"},
        "snapshots": snapshots,
        "snapshot-log": [
            {"snapshot-id": s["snapshot-id"], "timestamp-ms": s["timestamp-ms"]} for s in snapshots
        ],
        "metadata-log": [
            {"metadata-file": f"{location}/metadata/v{v}.metadata.json",
             "timestamp-ms": BASE_MS + (v - 1) * MINUTE}
            for v in range(1, version)
        ],
    }
    if format_version >= 2:
        md["last-sequence-number"] = len(snapshots)
    else:
        md["schema"] = {k: v for k, v in schema.items() if k != "schema-id"}
        md["partition-spec"] = md["partition-specs"][0]["fields"]
        for s in snapshots:
            s.pop("sequence-number", None)
    if snapshots:
        md["current-snapshot-id"] = snapshots[-1]["snapshot-id"]
        md["refs"] = {"main": {"snapshot-id": snapshots[-1]["snapshot-id"], "type": "branch"}}
    else:
        md["current-snapshot-id"] = -1
        md["refs"] = {}
    return md


# --- a table with a history (written by floe) ----------------------------------------------


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
    clock = ManualClock(BASE_MS)  # the history happens a minute a step from BASE_MS
    with use_clock(clock):
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

        clock.set(BASE_MS + MINUTE)
        table.append(_rows(0, 30))
        committed()
        clock.set(BASE_MS + 2 * MINUTE)
        table.append(_rows(30, 12))
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
        clock.set(BASE_MS + 3 * MINUTE)
        table.append(_rows(42, 9, label="label", amount_type=pa.int64(), with_extra=False,
                           with_note=True))
        committed()
        # Spec change: add bucket(2, id) next to region (partition field ids stay unique).
        spec0 = table.spec()
        bucket = parse_partition_by("bucket(2, id)", v1,
                                    last_partition_id=table.metadata.last_partition_id)
        table.new_transaction().set_spec(PartitionSpec(*spec0.fields, *bucket.fields)).commit()
        clock.set(BASE_MS + 4 * MINUTE)
        table.append(_rows(51, 6, label="label", amount_type=pa.int64(), with_extra=False,
                           with_note=True))
        committed()
        table.new_transaction().set_ref("audit", ids[1], SnapshotRefType.TAG).commit()
        table.new_transaction().set_ref("dev", ids[2], SnapshotRefType.BRANCH).commit()
        # A delete: remove the first file of the first append.
        from floe.inspect import file_rows

        first_files = [r["file_path"]
                       for r in file_rows(table.io, table.metadata, table.current_snapshot())
                       if r["snapshot_id"] == ids[0]]
        table.delete_files(sorted(first_files)[:1])
        committed()
    return HistoryTable(table.location, namespace, name, ids)


def history_metadata(history: HistoryTable) -> TableMetadata:
    """The current metadata of a history table, read by floe directly (not the explorer)."""
    catalog = FileSystemCatalog("local", str(Path(history.location).parent.parent))
    return catalog.load_table(f"{history.namespace}.{history.name}").metadata


def write_path_deletes_table(root: Path) -> tuple[TableMetadata, str]:
    """A table of hand-written manifests (``id`` and ``cat``, partitioned by ``cat``: c0 and
    c1 alternate). Three data manifests of 40 files (sequence number 1), then delete
    manifests (sequence number 2) with a position delete file for every 3rd data file, scoped
    to it as Iceberg Java writes with ``write.delete.granularity=file`` (both ``file_path``
    bounds name it), one of them as a v3-style ``referenced_data_file``, and one more for
    f0123, a file of the data manifest added with sequence number 3 (the delete does not
    apply). With that data manifest, a delete manifest (sequence number 3) with a second
    delete file for every 3rd data file and one for f0120 (it applies). Its metadata
    (location set to ``root``) and the path of its metadata file."""
    import dataclasses

    from floe.catalog.filesystem import load_table_metadata
    from floe.io import FileIO
    from floe.conversions import to_bytes
    from floe.manifest import (DataFile, FileContent, FileFormat, ManifestContent,
                               ManifestListWriter, ManifestWriter)
    from floe.metadata import serialize_metadata
    from floe.scan.delete_index import FILE_PATH_FIELD_ID
    from floe.snapshots import Snapshot, SnapshotLogEntry, SnapshotRef
    from floe.table.append import create_table

    io = FileIO()
    schema = Schema(NestedField(1, "id", LONG, False), NestedField(2, "cat", STRING, True))
    create_table(io, str(root), schema, parse_partition_by("cat", schema))
    _, md = load_table_metadata(io, str(root))
    spec = md.spec()

    def data(n: int) -> DataFile:
        return DataFile(FileContent.DATA, f"{root}/data/f{n:04d}.parquet", FileFormat.PARQUET,
                        (f"c{n % 2}",), 10, 1000, lower_bounds={1: to_bytes(LONG, n * 10)},
                        upper_bounds={1: to_bytes(LONG, n * 10 + 9)})

    def manifest(name: str, seq: int, files: list[DataFile],
                 content: ManifestContent = ManifestContent.DATA) -> Any:
        w = ManifestWriter(io, f"{root}/metadata/{name}.avro", spec, schema, 2, seq, content)
        for f in files:
            w.add(f)
        return dataclasses.replace(w.close(), sequence_number=seq, min_sequence_number=seq)

    manifests = [manifest(f"m{k}", 1, [data(n) for n in range(k * 40, k * 40 + 40)])
                 for k in range(3)]
    def delete(name: str, n: int) -> DataFile:
        target = data(n).file_path
        scoped = {"referenced_data_file": target} if n == 15 else {
            "lower_bounds": {FILE_PATH_FIELD_ID: target.encode()},
            "upper_bounds": {FILE_PATH_FIELD_ID: target.encode()}}
        return DataFile(FileContent.POSITION_DELETES, f"{root}/data/{name}{n:04d}.parquet",
                        FileFormat.PARQUET, (f"c{n % 2}",), 2, 500, **scoped)

    deletes = [delete("d", n) for n in (123, *range(0, 120, 3))]
    manifests += [manifest("d0", 2, deletes[:35], ManifestContent.DELETES),
                  manifest("d1", 2, deletes[35:], ManifestContent.DELETES),
                  manifest("m3", 3, [data(n) for n in range(120, 150)]),
                  manifest("d2", 3, [delete("e", n) for n in (*range(0, 120, 3), 120)],
                           ManifestContent.DELETES)]
    snaps = []
    for seq in (1, 2, 3):
        mlist = f"{root}/metadata/snap-{seq}.avro"
        ManifestListWriter(io, mlist, 2, seq, seq - 1 or None, sequence_number=seq) \
            .add_manifests([m for m in manifests if m.sequence_number <= seq]).close()
        snaps.append(Snapshot(seq, seq - 1 or None, seq, 1_700_000_000_000 + seq, mlist,
                              {"operation": "append" if seq != 2 else "delete"}, 0))
    md = dataclasses.replace(md, snapshots=tuple(snaps), current_snapshot_id=3,
                             last_sequence_number=3,
                             snapshot_log=tuple(SnapshotLogEntry(s.timestamp_ms, s.snapshot_id)
                                                for s in snaps),
                             refs={"main": SnapshotRef(3)})
    location = root / "metadata" / "v2.metadata.json"
    location.write_bytes(serialize_metadata(md))
    (root / "metadata" / "version-hint.text").write_text("2")
    return dataclasses.replace(md, location=str(root)), str(location)
