"""floe reads the manifest lists and manifests Iceberg Java wrote, and agrees with Spark's
``all_manifests`` and ``all_entries`` metadata tables about every field."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from oracle_compare import hex_map, jmap, json_diff, spark_json
from spark_tables import TABLE_NAMES, SparkTable

from floe.conversions import from_bytes
from floe.errors import ValidationError
from floe.io import FileIO
from floe.manifest import ManifestEntry, ManifestFile, read_manifest, read_manifest_list
from floe.metadata import TableMetadata, parse_metadata
from floe.partitioning import PartitionSpec
from floe.types import PrimitiveType, StructType

pytestmark = pytest.mark.interop


def _latest(table: SparkTable) -> TableMetadata:
    path = table.metadata_files()[-1]
    return parse_metadata(path.read_bytes(), str(path))


def _partition_type(md: TableMetadata, spec: PartitionSpec) -> StructType:
    """The spec's partition struct, from the newest schema that still has its sources."""
    for schema in sorted(md.schemas, key=lambda s: -s.schema_id):
        try:
            return spec.partition_type(schema)
        except ValidationError:
            continue
    raise AssertionError(f"no schema has the sources of spec {spec.spec_id}")


def _int(value: Any) -> int:
    return int(getattr(value, "value", value))


def _summary_row(md: TableMetadata, m: ManifestFile) -> dict[str, Any]:
    """A manifest-list entry as a row of Spark's ``all_manifests`` (Java's ManifestsTable)."""
    spec = md.spec_by_id(m.partition_spec_id)
    assert spec is not None
    ptype = _partition_type(md, spec)
    summaries = []
    for field, out, s in zip(spec.fields, ptype.fields, m.partitions or [], strict=True):
        t = out.field_type
        assert isinstance(t, PrimitiveType)

        def human(raw: bytes | None) -> str | None:
            if raw is None:
                # Java's ManifestsTable renders a void field's missing bound as "null"
                return "null" if str(field.transform) == "void" else None  # noqa: B023
            return field.transform.to_human_string(t, from_bytes(t, raw))  # noqa: B023

        summaries.append(
            {
                "contains_null": s.contains_null,
                "contains_nan": s.contains_nan,
                "lower_bound": human(s.lower_bound),
                "upper_bound": human(s.upper_bound),
            }
        )
    is_data = _int(m.content) == 0
    return {
        "content": _int(m.content),
        "path": m.manifest_path,
        "length": m.manifest_length,
        "partition_spec_id": m.partition_spec_id,
        "added_snapshot_id": m.added_snapshot_id,
        "added_data_files_count": m.added_files_count if is_data else 0,
        "existing_data_files_count": m.existing_files_count if is_data else 0,
        "deleted_data_files_count": m.deleted_files_count if is_data else 0,
        "added_delete_files_count": 0 if is_data else m.added_files_count,
        "existing_delete_files_count": 0 if is_data else m.existing_files_count,
        "deleted_delete_files_count": 0 if is_data else m.deleted_files_count,
        "partition_summaries": summaries,
    }


@pytest.mark.parametrize("name", TABLE_NAMES)
def test_manifest_lists_agree_with_spark(
    spark_tables: dict[str, SparkTable], spark_metadata: Any, name: str
) -> None:
    md = _latest(spark_tables[name])
    io = FileIO()
    spark_rows = spark_metadata(name)["all_manifests"]
    for snap in md.snapshots:
        assert snap.manifest_list is not None
        manifests = read_manifest_list(io, snap.manifest_list)
        got = [_summary_row(md, m) for m in manifests]
        expected = [
            {k: v for k, v in r.items() if k != "reference_snapshot_id"}
            for r in spark_rows
            if r["reference_snapshot_id"] == snap.snapshot_id
        ]
        key = lambda r: r["path"]  # noqa: E731
        diff = json_diff(sorted(got, key=key), sorted(expected, key=key))
        assert not diff, f"snapshot {snap.snapshot_id}:\n" + "\n".join(diff)
        for m in manifests:
            added_by = md.snapshot_by_id(m.added_snapshot_id)
            assert added_by is not None
            if md.format_version >= 2:
                # the sequence number of the commit that added the manifest
                assert m.sequence_number == added_by.sequence_number, m.manifest_path
                assert m.min_sequence_number <= m.sequence_number, m.manifest_path


def _all_entries(md: TableMetadata, io: FileIO) -> list[tuple[ManifestFile, ManifestEntry]]:
    """Every entry of every distinct manifest reachable from any snapshot (as Java's
    ``all_entries`` table reads them)."""
    seen: dict[str, ManifestFile] = {}
    for snap in md.snapshots:
        assert snap.manifest_list is not None
        for m in read_manifest_list(io, snap.manifest_list):
            seen.setdefault(m.manifest_path, m)
    return [(m, e) for m in seen.values() for e in read_manifest(io, m)]


def _file_format(value: Any) -> str:
    text = str(getattr(value, "value", value))
    return text.rsplit(".", 1)[-1].upper()


def _entry_row(md: TableMetadata, m: ManifestFile, e: ManifestEntry) -> dict[str, Any]:
    """A manifest entry as Spark's ``all_entries`` row (partition: this spec's fields only)."""
    df = e.data_file
    spec = md.spec_by_id(m.partition_spec_id)
    assert spec is not None
    ptype = _partition_type(md, spec)
    partition = {
        f.name: spark_json(f.field_type, v)  # type: ignore[arg-type]
        for f, v in zip(ptype.fields, tuple(df.partition), strict=True)
    }
    return {
        "status": _int(e.status),
        "snapshot_id": e.snapshot_id,
        "sequence_number": e.sequence_number,
        "file_sequence_number": e.file_sequence_number,
        "data_file": {
            "content": _int(df.content),
            "file_path": df.file_path,
            "file_format": _file_format(df.file_format),
            "spec_id": m.partition_spec_id,
            "partition": partition,
            "record_count": df.record_count,
            "file_size_in_bytes": df.file_size_in_bytes,
            "column_sizes": df.column_sizes,
            "value_counts": df.value_counts,
            "null_value_counts": df.null_value_counts,
            "nan_value_counts": df.nan_value_counts,
            "lower_bounds": hex_map(df.lower_bounds),
            "upper_bounds": hex_map(df.upper_bounds),
            "key_metadata": None if df.key_metadata is None else bytes(df.key_metadata).hex(),
            "split_offsets": None if df.split_offsets is None else list(df.split_offsets),
            "equality_ids": None if df.equality_ids is None else list(df.equality_ids),
            "sort_order_id": df.sort_order_id,
        },
    }


def _spark_entry_row(row: dict[str, Any], spec_fields: list[str]) -> dict[str, Any]:
    df = dict(row["data_file"])
    partition = df.get("partition") or {}  # absent for an unpartitioned table
    others = {k: v for k, v in partition.items() if k not in spec_fields}
    # Spark shows the union of every spec's fields; those of other specs must be null
    assert all(v is None for v in others.values()), (df["file_path"], others)
    df["partition"] = {k: partition.get(k) for k in spec_fields}
    for k in ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts",
              "lower_bounds", "upper_bounds"):
        df[k] = jmap(df[k])
    for k in ("first_row_id", "referenced_data_file", "content_offset", "content_size_in_bytes"):
        df.pop(k, None)
    return {
        "status": row["status"],
        "snapshot_id": row["snapshot_id"],
        "sequence_number": row["sequence_number"],
        "file_sequence_number": row["file_sequence_number"],
        "data_file": df,
    }


@pytest.mark.parametrize("name", TABLE_NAMES)
def test_manifest_entries_agree_with_spark(
    spark_tables: dict[str, SparkTable], spark_metadata: Any, name: str
) -> None:
    md = _latest(spark_tables[name])
    io = FileIO()
    floe_rows = [_entry_row(md, m, e) for m, e in _all_entries(md, io)]
    specs = {s.spec_id: [f.name for f in s.fields] for s in md.partition_specs}
    spark_rows = [
        _spark_entry_row(r, specs[r["data_file"]["spec_id"]])
        for r in spark_metadata(name)["all_entries"]
    ]

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["data_file"]["file_path"], r["status"], r["snapshot_id"])

    assert Counter(map(key, floe_rows)) == Counter(map(key, spark_rows))
    by_key = {key(r): r for r in spark_rows}
    problems = []
    for r in floe_rows:
        expected = by_key[key(r)]
        for field in ("sequence_number", "file_sequence_number"):
            if r[field] != expected[field]:
                problems.append(f"{key(r)} {field}: floe {r[field]}, Java {expected[field]}")
        for field, want in expected["data_file"].items():
            got = r["data_file"].get(field)
            if field.endswith("_counts") or field.endswith("_sizes") or field.endswith("_bounds"):
                got, want = got or None, want or None  # empty map == absent
            if got != want:
                problems.append(f"{key(r)[0]} {field}: floe {got!r}, Java {want!r}")
    assert not problems, "\n".join(problems[:40])


@pytest.mark.parametrize("name", TABLE_NAMES)
def test_decoded_bounds_agree_with_sparks_readable_metrics(
    spark_tables: dict[str, SparkTable], spark_metadata: Any, name: str
) -> None:
    md = _latest(spark_tables[name])
    schema = md.schema()
    io = FileIO()
    floe_files = {
        (e.data_file.file_path, _int(e.status), e.snapshot_id): e.data_file
        for _, e in _all_entries(md, io)
    }
    problems = []
    for row in spark_metadata(name)["all_entries"]:
        df = floe_files[(row["data_file"]["file_path"], row["status"], row["snapshot_id"])]
        for column, metrics in (row.get("readable_metrics") or {}).items():
            field_id = schema.find_field_id(column)
            t = schema.find_type(field_id)
            assert isinstance(t, PrimitiveType)
            got = {}
            bounds = (("lower_bound", df.lower_bounds), ("upper_bound", df.upper_bounds))
            for bound, raw_map in bounds:
                raw = (raw_map or {}).get(field_id)
                got[bound] = None if raw is None else spark_json(t, from_bytes(t, raw))
            got["column_size"] = (df.column_sizes or {}).get(field_id)
            got["value_count"] = (df.value_counts or {}).get(field_id)
            got["null_value_count"] = (df.null_value_counts or {}).get(field_id)
            got["nan_value_count"] = (df.nan_value_counts or {}).get(field_id)
            if got != metrics:
                problems.append(f"{df.file_path} {column}: floe {got}, Spark {metrics}")
    assert not problems, "\n".join(problems[:40])
