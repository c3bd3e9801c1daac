"""``floe describe/snapshots/manifests/files --json`` on tables Iceberg Java wrote, checked
against the metadata JSON and Spark's metadata tables."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from oracle_compare import iso_ms, spark_json
from spark_tables import TABLE_NAMES, SparkTable

from floe.cli import main
from floe.conversions import from_json_value
from floe.metadata import parse_metadata
from floe.types import PrimitiveType

pytestmark = pytest.mark.interop

FILE_CONTENT = {0: "data", 1: "position_deletes", 2: "equality_deletes"}
MANIFEST_CONTENT = {0: "data", 1: "deletes"}


def floe_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    capsys.readouterr()
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _raw(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    doc: dict[str, Any] = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    return doc


def test_the_floe_command_runs_as_a_program(spark_tables: dict[str, SparkTable]) -> None:
    table = spark_tables["evolve_v2"]
    run = subprocess.run(
        [sys.executable, "-m", "floe.cli", "describe", str(table.location), "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["metadata_location"] == str(table.metadata_files()[-1])


@pytest.mark.parametrize("name", TABLE_NAMES)
def test_describe(
    capsys: pytest.CaptureFixture[str], spark_tables: dict[str, SparkTable],
    spark_metadata: Any, name: str
) -> None:
    table = spark_tables[name]
    latest = table.metadata_files()[-1]
    raw = _raw(latest)
    doc = floe_json(capsys, "describe", str(table.location))
    assert doc["metadata_location"] == str(latest)
    for key in ("format-version", "table-uuid", "location", "last-updated-ms",
                "last-column-id", "current-snapshot-id", "current-schema-id",
                "default-spec-id", "last-partition-id", "default-sort-order-id", "properties"):
        assert doc[key.replace("-", "_")] == raw[key], key
    if raw["format-version"] >= 2:
        assert doc["last_sequence_number"] == raw["last-sequence-number"]
    assert [s["schema_id"] for s in doc["schemas"]] == [s["schema-id"] for s in raw["schemas"]]
    assert [len(s["fields"]) for s in doc["schemas"]] == [len(s["fields"]) for s in raw["schemas"]]
    assert [[f["name"] for f in s["fields"]] for s in doc["schemas"]] == [
        [f["name"] for f in s["fields"]] for s in raw["schemas"]
    ]
    assert [{"spec_id": s["spec-id"], "fields": s["fields"]} for s in raw["partition-specs"]] == (
        doc["partition_specs"]
    )
    assert doc["sort_orders"] == raw["sort-orders"]
    spark = spark_metadata(name)
    assert doc["snapshot_count"] == len(spark["snapshots"])
    refs = {
        r["name"]: (r["type"], r["snapshot_id"], r["min_snapshots_to_keep"],
                    r["max_snapshot_age_in_ms"], r["max_reference_age_in_ms"])
        for r in spark["refs"]
    }
    assert {
        r["name"]: (r["type"].upper(), r["snapshot_id"], r["min_snapshots_to_keep"],
                    r["max_snapshot_age_ms"], r["max_ref_age_ms"])
        for r in doc["refs"]
    } == refs


@pytest.mark.parametrize("name", TABLE_NAMES)
def test_snapshots(
    capsys: pytest.CaptureFixture[str], spark_tables: dict[str, SparkTable],
    spark_metadata: Any, name: str
) -> None:
    table = spark_tables[name]
    raw = _raw(table.metadata_files()[-1])
    rows = floe_json(capsys, "snapshots", str(table.location))
    seq = {s["snapshot-id"]: s.get("sequence-number", 0) for s in raw["snapshots"]}
    got = {
        r["snapshot_id"]: {
            "committed_at": iso_ms(r["timestamp_ms"]),
            "snapshot_id": r["snapshot_id"],
            "parent_id": r["parent_id"],
            "operation": r["operation"],
            "manifest_list": r["manifest_list"],
            "summary": {k: v for k, v in r["summary"].items() if k != "operation"},
        }
        for r in rows
    }
    assert got == {r["snapshot_id"]: r for r in spark_metadata(name)["snapshots"]}
    assert {r["snapshot_id"]: r["sequence_number"] for r in rows} == seq
    assert [r["snapshot_id"] for r in rows if r["is_current"]] == [raw["current-snapshot-id"]]


@pytest.mark.parametrize("name", TABLE_NAMES)
def test_manifests_of_every_snapshot(
    capsys: pytest.CaptureFixture[str], spark_tables: dict[str, SparkTable],
    spark_metadata: Any, name: str
) -> None:
    table = spark_tables[name]
    spark = spark_metadata(name)["all_manifests"]
    for snap in spark_metadata(name)["snapshots"]:
        sid = snap["snapshot_id"]
        rows = floe_json(capsys, "manifests", str(table.location), "--snapshot", str(sid))
        got = sorted(
            (
                r["path"], r["length"], r["partition_spec_id"], r["content"],
                r["added_snapshot_id"], r["added_files_count"], r["existing_files_count"],
                r["deleted_files_count"],
                [(p["contains_null"], p["contains_nan"]) for p in r["partitions"]],
            )
            for r in rows
        )
        expected = sorted(
            (
                r["path"], r["length"], r["partition_spec_id"], MANIFEST_CONTENT[r["content"]],
                r["added_snapshot_id"],
                r["added_data_files_count"] + r["added_delete_files_count"],
                r["existing_data_files_count"] + r["existing_delete_files_count"],
                r["deleted_data_files_count"] + r["deleted_delete_files_count"],
                [(p["contains_null"], p["contains_nan"]) for p in r["partition_summaries"]],
            )
            for r in spark
            if r["reference_snapshot_id"] == sid
        )
        assert got == expected, f"snapshot {sid}"


@pytest.mark.parametrize("name", TABLE_NAMES)
def test_files_of_the_current_snapshot(
    capsys: pytest.CaptureFixture[str], spark_tables: dict[str, SparkTable],
    oracle: Any, name: str
) -> None:
    table = spark_tables[name]
    latest = table.metadata_files()[-1]
    md = parse_metadata(latest.read_bytes(), str(latest))
    rows = floe_json(capsys, "files", str(table.location))
    spark_files = {r["file_path"]: r for r in oracle.sql(f"SELECT * FROM {table.ident}.files")}
    assert sorted(r["file_path"] for r in rows) == sorted(spark_files)
    for r in rows:
        s = spark_files[r["file_path"]]
        assert r["content"] == FILE_CONTENT[s["content"]]
        assert r["file_format"].upper() == s["file_format"]
        assert (r["spec_id"], r["record_count"], r["file_size_in_bytes"]) == (
            s["spec_id"], s["record_count"], s["file_size_in_bytes"]
        )
        if s["content"] == 2:
            assert r["equality_ids"] == s["equality_ids"]
        spec = md.spec_by_id(r["spec_id"])
        assert spec is not None
        ptype = {f.name: f.field_type for f in spec.partition_type(md.schema()).fields}
        # the CLI writes the spec's JSON single values; decode them and show them as Spark does
        got = {
            k: spark_json(ptype[k], from_json_value(ptype[k], v))  # type: ignore[arg-type]
            if v is not None and isinstance(ptype[k], PrimitiveType) else v
            for k, v in r["partition"].items()
        }
        expected = {k: v for k, v in (s.get("partition") or {}).items() if k in ptype}
        assert got == expected, r["file_path"]


@pytest.mark.parametrize("name", TABLE_NAMES)
def test_plans_and_files_from_the_manifest_cache_equal_those_without(
    spark_tables: dict[str, SparkTable], name: str, tmp_path: Path
) -> None:
    """The persistent manifest cache (floe.scan.manifest_store) on every table Java wrote
    (every partition transform and type, deletes, evolution): `floe plan --json` and `floe
    files --json` print the same documents with the cache off, while filling it and from
    it."""
    import os

    location = str(spark_tables[name].location)

    def run(command: str, cache: str) -> str:
        got = subprocess.run([sys.executable, "-m", "floe.cli", command, location, "--json"],
                             capture_output=True, text=True, timeout=120, check=False,
                             env={**os.environ, "FLOE_MANIFEST_CACHE": cache})
        assert got.returncode == 0, got.stderr
        return got.stdout

    for command in ("plan", "files"):
        without = run(command, "off")
        assert run(command, str(tmp_path)) == without
        assert run(command, str(tmp_path)) == without
    if json.loads(run("files", "off")):  # a table with live files: they came from the cache
        assert list(tmp_path.rglob("*.arrow"))
