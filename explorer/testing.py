"""Factories for tests: small file-system warehouses with real Iceberg table metadata.

The tables have metadata JSON only (the manifest lists they name are not written): enough for
everything that reads table metadata, such as the table list.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BASE_TIME_MS = 1_700_000_000_000


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
    totals = {"total-data-files": 0, "total-records": 0, "total-files-size": 0, "total-delete-files": 0}
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
                    "timestamp-ms": BASE_TIME_MS + seq * 60_000,
                    "manifest-list": f"{location}/metadata/snap-{1000 + seq}-1-{table_uuid}.avro",
                    "summary": summary,
                    "schema-id": 0,
                }
            )
        metadata = _metadata_json(location, table_uuid, version, written, format_version)
        (metadata_dir / f"v{version}.metadata.json").write_text(json.dumps(metadata, indent=2))
    (metadata_dir / "version-hint.text").write_text(str(len(snapshots) + 1))
    return location


def write_broken_table(warehouse: Path | str, namespace: str, name: str, content: str = "{not json") -> Path:
    location = Path(warehouse, *namespace.split("."), name)
    (location / "metadata").mkdir(parents=True)
    (location / "metadata" / "v1.metadata.json").write_text(content)
    (location / "metadata" / "version-hint.text").write_text("1")
    return location


def _metadata_json(
    location: Path, table_uuid: str, version: int, snapshots: list[dict[str, Any]], format_version: int
) -> dict[str, Any]:
    last_updated = snapshots[-1]["timestamp-ms"] if snapshots else BASE_TIME_MS
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
            {"spec-id": 0, "fields": [{"source-id": 2, "field-id": 1000, "name": "ts_day", "transform": "day"}]}
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
            {"metadata-file": f"{location}/metadata/v{v}.metadata.json", "timestamp-ms": BASE_TIME_MS + (v - 1) * 60_000}
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
