"""floe reads every metadata version file Iceberg Java wrote, and agrees with Spark about it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from oracle_compare import iso_ms, json_diff
from spark_tables import TABLE_NAMES, SparkTable

from floe.catalog.filesystem import load_table_metadata
from floe.io import FileIO
from floe.metadata import TableMetadata, metadata_to_json, parse_metadata, serialize_metadata

pytestmark = pytest.mark.interop


def _raw(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    doc: dict[str, Any] = json.loads(data)
    return doc


def _parse(path: Path) -> TableMetadata:
    return parse_metadata(path.read_bytes(), str(path))


@pytest.mark.parametrize("name", TABLE_NAMES)
def test_every_metadata_version_round_trips_to_javas_json(
    spark_tables: dict[str, SparkTable], name: str
) -> None:
    """metadata_to_json(parse(file)) is exactly the object Java wrote, key order included."""
    files = spark_tables[name].metadata_files()
    assert len(files) >= 2
    for path in files:
        raw = _raw(path)
        md = _parse(path)
        assert md.format_version == spark_tables[name].format_version
        got = metadata_to_json(md)
        diff = json_diff(got, raw)
        assert not diff, f"{path.name}: floe's JSON differs from Java's:\n" + "\n".join(diff)
        assert list(got) == list(raw), f"{path.name}: key order differs"
        assert _parse_bytes(serialize_metadata(md), path) == md, path.name


def test_decimal_type_is_spelled_like_java(spark_tables: dict[str, SparkTable]) -> None:
    path = spark_tables["evolve_v2"].metadata_files()[0]
    raw = _raw(path)
    assert metadata_to_json(_parse(path))["schemas"] == raw["schemas"]


def _parse_bytes(data: bytes, path: Path) -> TableMetadata:
    return parse_metadata(data, str(path))


def test_gzip_metadata_files_are_read(spark_tables: dict[str, SparkTable]) -> None:
    table = spark_tables["gzip_v2"]
    files = table.metadata_files()
    assert files and all(p.name.endswith(".gz.metadata.json") for p in files)
    for path in files:
        md = _parse(path)
        assert md.property("write.metadata.compression-codec") == "gzip"
        assert _parse_bytes(serialize_metadata(md, compress=True), path) == md
    location, md = load_table_metadata(FileIO(), str(table.location))
    assert Path(location) == files[-1]


@pytest.mark.parametrize("name", TABLE_NAMES)
def test_snapshots_agree_with_spark_in_every_version(
    spark_tables: dict[str, SparkTable], spark_metadata: Any, name: str
) -> None:
    """Spark's ``snapshots`` table (current metadata) vs each version's snapshots."""
    spark = {r["snapshot_id"]: r for r in spark_metadata(name)["snapshots"]}
    files = spark_tables[name].metadata_files()
    for path in files:
        md = _parse(path)
        for snap in md.snapshots:
            row = spark.get(snap.snapshot_id)
            assert row is not None, f"{path.name}: snapshot {snap.snapshot_id} unknown to Spark"
            summary = dict(snap.summary)
            got = {
                "committed_at": iso_ms(snap.timestamp_ms),
                "snapshot_id": snap.snapshot_id,
                "parent_id": snap.parent_snapshot_id,
                "operation": summary.pop("operation", None),
                "manifest_list": snap.manifest_list,
                "summary": summary,
            }
            assert got == row, f"{path.name}: snapshot {snap.snapshot_id}"
    latest = _parse(files[-1])
    assert {s.snapshot_id for s in latest.snapshots} == set(spark)
    assert latest.current_snapshot_id == latest.refs["main"].snapshot_id


@pytest.mark.parametrize("name", TABLE_NAMES)
def test_refs_and_metadata_log_agree_with_spark(
    spark_tables: dict[str, SparkTable], spark_metadata: Any, name: str
) -> None:
    meta = spark_metadata(name)
    files = spark_tables[name].metadata_files()
    md = _parse(files[-1])
    refs = {
        ref_name: {
            "name": ref_name,
            "type": str(ref.ref_type).upper(),
            "snapshot_id": ref.snapshot_id,
            "max_reference_age_in_ms": ref.max_ref_age_ms,
            "min_snapshots_to_keep": ref.min_snapshots_to_keep,
            "max_snapshot_age_in_ms": ref.max_snapshot_age_ms,
        }
        for ref_name, ref in md.refs.items()
    }
    assert refs == {r["name"]: r for r in meta["refs"]}
    # Spark lists the log plus the current file; floe's log has the earlier files only.
    log = [(iso_ms(e.timestamp_ms), e.metadata_file) for e in md.metadata_log]
    spark_log = [(r["timestamp"], r["file"]) for r in meta["metadata_log_entries"]]
    assert log == spark_log[:-1]
    assert spark_log[-1] == (iso_ms(md.last_updated_ms), str(files[-1]))
    # Each version's log names exactly the files before it.
    for i, path in enumerate(files):
        names = [Path(e.metadata_file).name for e in _parse(path).metadata_log]
        assert names == [p.name for p in files[:i]], path.name


def test_branch_and_tag_resolve_to_spark_snapshots(
    spark_tables: dict[str, SparkTable], oracle: Any
) -> None:
    table = spark_tables["refs_v2"]
    md = _parse(table.metadata_files()[-1])
    assert set(md.refs) == {"main", "first_tag", "dev"}
    for ref in ("first_tag", "dev"):
        snap = md.snapshot_by_ref(ref)
        assert snap is not None
        kind = "TAG" if ref == "first_tag" else "BRANCH"
        rows = oracle.sql(
            f"SELECT id FROM {table.ident} VERSION AS OF '{ref}' ORDER BY id"
        )
        spark_ids = [r["id"] for r in rows]
        expected = {"first_tag": [1], "dev": [2]}[ref]
        assert spark_ids == expected
        assert str(md.refs[ref].ref_type).upper() == kind
    dev = md.refs["dev"]
    assert dev.min_snapshots_to_keep == 2
    assert dev.max_ref_age_ms == 7 * 24 * 3600 * 1000
    assert md.refs["first_tag"].max_ref_age_ms == 30 * 24 * 3600 * 1000
