"""Snapshot production: fast and merge append, overwrite and delete by file, summaries, and the
data writer's metrics modes and file rolling."""

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.cli import main
from floe.conversions import from_bytes
from floe.manifest import ManifestEntryStatus, read_manifest, read_manifest_list
from floe.schema import Schema
from floe.table.writer import parse_metrics_mode, write_data_files
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "s", STRING))


def rows(*ids):
    return pa.table({"id": pa.array(ids, pa.int64()), "s": [f"value-{i:030d}" for i in ids]})


@pytest.fixture
def catalog(tmp_path):
    return FileSystemCatalog("fs", str(tmp_path / "wh"))


def manifests(table):
    return read_manifest_list(table.io, table.current_snapshot().manifest_list)


def live(table):
    out = []
    for m in manifests(table):
        out += [e for e in read_manifest(table.io, m, discard_deleted=True)]
    return out


def test_merge_append_merges_at_min_count(catalog):
    t = catalog.create_table("db.t", SCHEMA,
                             properties={"commit.manifest.min-count-to-merge": "3"})
    t.append(rows(1)).append(rows(2))
    assert len(manifests(t)) == 2
    t.append(rows(3))  # three manifests of spec 0 → one merged manifest
    (merged,) = manifests(t)
    assert merged.added_files_count == 1 and merged.existing_files_count == 2
    statuses = sorted(e.status for e in read_manifest(t.io, merged))
    assert statuses == [ManifestEntryStatus.EXISTING, ManifestEntryStatus.EXISTING,
                        ManifestEntryStatus.ADDED]
    seqs = sorted(e.sequence_number for e in read_manifest(t.io, merged))
    assert seqs == [1, 2, 3]  # existing entries keep theirs, the new one inherits 3
    assert t.current_snapshot().summary["total-data-files"] == "3"


def test_merge_disabled_and_fast_append_keep_manifests(catalog):
    t = catalog.create_table("db.t", SCHEMA, properties={
        "commit.manifest.min-count-to-merge": "2", "commit.manifest-merge.enabled": "false"})
    for i in range(4):
        t.append(rows(i))
    assert len(manifests(t)) == 4


def test_overwrite_and_delete_by_file_with_summaries(catalog):
    t = catalog.create_table("db.t", SCHEMA)
    t.append(rows(1, 2)).append(rows(3))
    first, second = sorted((e.data_file for e in live(t)), key=lambda f: f.record_count)
    replacement = write_data_files(t.io, t.metadata, rows(30, 31, 32))
    t.new_transaction().overwrite([first.file_path], replacement).commit()
    snap = t.current_snapshot()
    s = snap.summary
    assert s["operation"] == "overwrite"
    assert (s["added-data-files"], s["deleted-data-files"]) == ("1", "1")
    assert (s["added-records"], s["deleted-records"]) == ("3", "1")
    assert s["removed-files-size"] == str(first.file_size_in_bytes)
    assert s["total-records"] == "5" and s["total-data-files"] == "2"
    assert {e.data_file.record_count for e in live(t)} == {2, 3}
    t.delete_files([second.file_path])
    s = t.current_snapshot().summary
    assert s["operation"] == "delete" and s["deleted-records"] == "2"
    assert s["total-records"] == "3" and s["total-data-files"] == "1"
    deleted = [e for m in manifests(t) for e in read_manifest(t.io, m)
               if e.status == ManifestEntryStatus.DELETED
               and e.snapshot_id == t.current_snapshot().snapshot_id]
    assert [e.data_file.file_path for e in deleted] == [second.file_path]


def test_snapshot_ids_unique_and_log_and_refs(catalog):
    t = catalog.create_table("db.t", SCHEMA)
    for i in range(5):
        t.append(rows(i))
    md = t.metadata
    ids = [s.snapshot_id for s in md.snapshots]
    assert len(set(ids)) == 5 and all(i > 0 for i in ids)
    assert [e.snapshot_id for e in md.snapshot_log] == ids
    assert md.refs["main"].snapshot_id == ids[-1]
    assert md.last_updated_ms == md.snapshots[-1].timestamp_ms


@pytest.mark.parametrize("mode, lower", [
    ("none", None), ("counts", None), ("truncate(4)", "valu"), ("full", "value-" + "0" * 29 + "1"),
])
def test_metrics_modes(catalog, mode, lower):
    t = catalog.create_table("db.t", SCHEMA, properties={"write.metadata.metrics.column.s": mode})
    (f,) = write_data_files(t.io, t.metadata, rows(1, 2))
    assert (2 in f.value_counts) == (mode != "none")
    got = f.lower_bounds.get(2)
    assert (from_bytes(STRING, got) if got is not None else None) == lower
    assert 1 in f.lower_bounds  # the other column keeps the default truncate(16)


def test_metrics_default_and_bad_mode(catalog):
    t = catalog.create_table("db.t", SCHEMA, properties={"write.metadata.metrics.default": "counts"})
    (f,) = write_data_files(t.io, t.metadata, rows(1))
    assert not f.lower_bounds and f.value_counts[1] == 1
    with pytest.raises(ValueError, match="metrics mode"):
        parse_metrics_mode("truncate(x)")


def test_target_file_size_rolls_files(catalog):
    t = catalog.create_table("db.t", SCHEMA,
                             properties={"write.target-file-size-bytes": "4096"})
    files = write_data_files(t.io, t.metadata, rows(*range(2000)))
    assert len(files) > 2 and sum(f.record_count for f in files) == 2000
    names = [f.file_path.rsplit("/", 1)[1] for f in files]
    assert names[0].startswith("00000-0-") and names[0].endswith("-00001.parquet")
    assert names[1].endswith("-00002.parquet")


def test_cli_create_and_append(tmp_path, capsys):
    import pyarrow.parquet as pq

    src = tmp_path / "in.parquet"
    pq.write_table(rows(1, 2, 3), src)
    table = tmp_path / "t"
    assert main(["create", str(table), "--schema-from", str(src), "--partition-by",
                 "bucket(2, id)", "--format-version", "1", "--property", "k=v"]) == 0
    assert capsys.readouterr().out.strip().endswith("v1.metadata.json")
    assert main(["append", str(table), str(src), str(src)]) == 0
    assert capsys.readouterr().out.strip().endswith("v2.metadata.json")
    from floe.catalog.filesystem import directory_table

    t = directory_table(str(table))
    assert t.format_version == 1 and t.properties["k"] == "v"
    assert t.current_snapshot().summary["total-records"] == "6"
    assert len(t.snapshots()) == 1
    assert main(["append", str(tmp_path / "missing"), str(src)]) == 1
    assert "no Iceberg table" in capsys.readouterr().err
