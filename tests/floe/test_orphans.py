"""Orphan-file removal on real file-system tables: planted files of various ages and places,
hidden files (``.crc``, ``_SUCCESS``), symbolic links out of the table, prefix mismatches in
each mode, the age checks, dry run = real run, and the files an interrupted expiration left."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from test_expire import (
    DAY,
    HOUR,
    append_at,
    assert_kept_intact,
    disk_files,
    history_clock,  # noqa: F401 (a fixture: append_at's commits happen on its clock)
    live_files,
    new_table,
    now_ms,
    ref_rows,
    rows,
)

from floe import stats
from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import ValidationError
from floe.maintenance import Cancelled, Progress
from floe.maintenance.expire import expire_snapshots
from floe.maintenance.orphans import _URI, _Matcher, _split, remove_orphan_files
from floe.manifest import DataFile, FileContent, FileFormat
from floe.schema import Schema
from floe.table import Table
from floe.types import LONG, STRING, NestedField

OLD = 10 * DAY


def age(path: str | Path, ms: int = OLD) -> None:
    """Make a file (not a link's target) look ``ms`` old."""
    t = (now_ms() - ms) / 1000
    os.utime(path, (t, t), follow_symlinks=False)


def age_all(t: Table, ms: int = OLD) -> None:
    for p in Path(t.location).rglob("*"):
        if p.is_file() or p.is_symlink():
            age(p, ms)


def plant(path: str | Path, ms: int = OLD, data: bytes = b"orphan") -> str:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    age(path, ms)
    return str(path)


@pytest.fixture
def catalog(tmp_path: Path) -> FileSystemCatalog:
    return FileSystemCatalog("c", str(tmp_path / "wh"))


@pytest.fixture
def table(catalog: FileSystemCatalog) -> Table:
    t = new_table(catalog, properties={"write.metadata.previous-versions-max": "3"})
    base = now_ms() - 20 * DAY
    for i in range(4):
        append_at(t, base + i * DAY, 3 * i, 3 * i + 1, 3 * i + 2)
    t.delete_where("id = 4", mode="merge-on-read")
    t.delete_where("id = 7", mode="copy-on-write")
    t.manage_snapshots().create_tag("t1", t.metadata.snapshots[1].snapshot_id).commit()
    age_all(t)
    # metadata files that fell off the 3-entry metadata log are orphans: start without them
    gone = remove_orphan_files(t).orphan_files
    assert gone and all(p.endswith(".metadata.json") for p in gone)
    return t


def test_planted_files_of_every_kind_and_age(table: Table, tmp_path: Path) -> None:
    loc = table.location
    # one more commit pushes another metadata file off the log
    fell_off = table.refresh().metadata.metadata_log[0].metadata_file
    table.set_properties({"k": "v"})
    age_all(table)
    orphans = {
        plant(f"{loc}/data/s0/old.parquet"),
        plant(f"{loc}/data/a/b/c/nested.parquet"),
        plant(f"{loc}/metadata/unreferenced-m0.avro"),
        plant(f"{loc}/stray.txt"),
        plant(f"{loc}/data/foo.crc"),  # not hidden: just a name
        fell_off,
    }
    kept = {
        plant(f"{loc}/data/young.parquet", ms=2 * DAY),  # younger than the 3-day default
        plant(f"{loc}/data/.old.parquet.crc"),  # hidden: Hadoop checksum
        plant(f"{loc}/data/_SUCCESS"),
        plant(f"{loc}/.hidden/old.parquet"),
        plant(f"{loc}/data/_tmp/old.parquet"),
    }
    before_rows = ref_rows(table)
    before = disk_files(table) | kept
    dry = remove_orphan_files(table, dry_run=True)
    assert set(dry.orphan_files) == orphans
    assert dry.candidate_files == dry.listed_files - 1  # only young.parquet is too young
    assert all(os.path.exists(p) for p in orphans | kept)
    real = remove_orphan_files(table)
    assert real.orphan_files == dry.orphan_files and real.deleted_files == len(orphans)
    assert not any(os.path.exists(p) for p in orphans)
    assert all(os.path.exists(p) for p in kept)
    assert disk_files(table) | kept == before - orphans
    assert_kept_intact(table, before_rows)
    # the metadata log, the current metadata and the version hint stay
    md = table.refresh().metadata
    for e in md.metadata_log:
        assert os.path.exists(e.metadata_file)
    assert os.path.exists(f"{loc}/metadata/version-hint.text")
    assert remove_orphan_files(table, dry_run=True).orphan_files == ()


def test_crc_companion_of_a_deleted_orphan_goes_with_it(table: Table) -> None:
    loc = table.location
    orphan = plant(f"{loc}/data/x.parquet")
    crc = plant(f"{loc}/data/.x.parquet.crc")
    live_crc = plant(f"{live_files(table)[0].rsplit('/', 1)[0]}/."
                     f"{live_files(table)[0].rsplit('/', 1)[1]}.crc")
    result = remove_orphan_files(table)
    assert result.orphan_files == (orphan,)
    assert not os.path.exists(crc) and os.path.exists(live_crc)


def test_symbolic_links_out_of_the_table_are_not_followed(table: Table, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    target_dir = outside / "dir"
    target_file = Path(plant(outside / "file.parquet"))
    inner = Path(plant(target_dir / "inner.parquet"))
    (Path(table.location) / "data" / "link").symlink_to(target_dir, target_is_directory=True)
    (Path(table.location) / "data" / "flink.parquet").symlink_to(target_file)
    age(Path(table.location) / "data" / "link")
    age(Path(table.location) / "data" / "flink.parquet")
    real = remove_orphan_files(table)
    assert real.orphan_files == ()
    assert inner.read_bytes() == b"orphan" and target_file.read_bytes() == b"orphan"
    assert (Path(table.location) / "data" / "flink.parquet").is_symlink()
    assert (Path(table.location) / "data" / "link").is_symlink()


def test_location_must_be_inside_the_table(table: Table, tmp_path: Path) -> None:
    loc = table.location
    in_data = plant(f"{loc}/data/old.parquet")
    in_meta = plant(f"{loc}/metadata/old.avro")
    result = remove_orphan_files(table, location=f"{loc}/data", dry_run=True)
    assert result.orphan_files == (in_data,)
    assert result.location == f"{loc}/data"
    with pytest.raises(ValidationError, match="not inside the location"):
        remove_orphan_files(table, location=str(tmp_path))
    with pytest.raises(ValidationError, match="not inside the location"):
        remove_orphan_files(table, location=f"{loc}/../other")
    assert os.path.exists(in_meta)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"older_than_ms": "hour"}, "newer than 24 hours"),
    ({"older_than_ms": "future", "force": True}, "in the future"),
    ({"prefix_mismatch_mode": "maybe"}, "invalid prefix_mismatch_mode"),
])
def test_refusals(table: Table, kwargs: dict[str, Any], message: str) -> None:
    orphan = plant(f"{table.location}/data/old.parquet")
    kwargs = {k: {"hour": now_ms() - HOUR, "future": now_ms() + DAY}.get(v, v)
              for k, v in kwargs.items()}
    with pytest.raises(ValidationError, match=message):
        remove_orphan_files(table, **kwargs)
    assert os.path.exists(orphan)


def test_short_intervals_need_force(table: Table) -> None:
    fresh = plant(f"{table.location}/data/fresh.parquet", ms=2000)
    assert remove_orphan_files(table, older_than_ms=now_ms() - 1000, force=True).orphan_files \
        == (fresh,)
    assert not os.path.exists(fresh)


def test_gc_disabled_is_refused(catalog: FileSystemCatalog) -> None:
    t = new_table(catalog, properties={"gc.enabled": "false"})
    t.append(rows(1))
    orphan = plant(f"{t.location}/data/old.parquet")
    with pytest.raises(ValidationError, match="gc.enabled is false"):
        remove_orphan_files(t, dry_run=True)
    assert os.path.exists(orphan)


# -- prefix mismatches ------------------------------------------------------------------------


def data(paths: tuple[str, ...]) -> tuple[str, ...]:
    """Without the metadata files that the test's own commits pushed off the metadata log."""
    return tuple(p for p in paths if not p.endswith(".metadata.json"))


def _referenced_elsewhere(t: Table, uri_prefix: str) -> str:
    """Commit a data file whose metadata path has another scheme / authority than the local
    file at the same path; plant that local file (old). Returns the local path."""
    local = f"{t.location}/data/s1/far.parquet"
    t.new_transaction().fast_append([DataFile(
        FileContent.DATA, f"{uri_prefix}{local}", FileFormat.PARQUET, ("s1",), 1, 10,
        spec_id=t.spec().spec_id)]).commit()
    return plant(local)


@pytest.mark.parametrize("prefix", ["hdfs://nn1", "file://otherhost"])
def test_prefix_mismatch_modes(table: Table, prefix: str) -> None:
    local = _referenced_elsewhere(table, prefix)
    plain = plant(f"{table.location}/data/plain.parquet")
    with pytest.raises(ValidationError, match="another scheme or authority"):
        remove_orphan_files(table, dry_run=True)
    with pytest.raises(ValidationError, match="another scheme or authority"):
        remove_orphan_files(table)
    assert os.path.exists(local) and os.path.exists(plain)
    ignored = remove_orphan_files(table, prefix_mismatch_mode="ignore")
    assert data(ignored.orphan_files) == (plain,)
    assert ignored.ignored_prefix_mismatches == (local,)
    assert os.path.exists(local) and not os.path.exists(plain)
    deleted = remove_orphan_files(table, prefix_mismatch_mode="DELETE")
    assert deleted.orphan_files == (local,)
    assert not os.path.exists(local)


def test_equal_schemes_and_authorities_make_a_match(table: Table) -> None:
    hdfs = _referenced_elsewhere(table, "hdfs://nn1")
    assert data(remove_orphan_files(table, equal_schemes={"hdfs,webhdfs": "file"},
                                    equal_authorities={"nn1": ""}).orphan_files) == ()
    assert os.path.exists(hdfs)


@pytest.mark.parametrize(("valid", "equal", "referenced", "conflicts"), [
    ("/t/a", {}, True, []),
    ("file:/t/a", {}, True, []),
    ("file:///t/a", {}, True, []),
    ("file:/t//a/", {}, True, []),
    ("file:/t/a%20b", {}, False, []),  # decoded as floe reads it: /t/a b
    ("/t/b", {}, False, []),
    ("hdfs://nn/t/a", {}, False, [("hdfs", "file"), ("nn", None)]),
    ("hdfs://nn/t/a", {"equal_schemes": {"hdfs": "file"}}, False, [("nn", None)]),
    ("hdfs://nn/t/a", {"equal_schemes": {"hdfs,s3": "file"},
                       "equal_authorities": {"nn": ""}}, True, []),
    ("file://host/t/a", {}, False, [("host", None)]),
    ("FILE:/t/a", {}, True, []),
    ("s3a://b/t/a", {}, False, [("s3", "file"), ("b", None)]),  # s3a = s3n = s3 by default
    # one mapping step, as in Java: s3a -> s3, not on to file
    ("s3a://b/t/a", {"equal_schemes": {"s3": "file"}}, False, [("s3", "file"), ("b", None)]),
])
def test_location_matching(valid: str, equal: dict[str, Any], referenced: bool,
                           conflicts: list[Any]) -> None:
    m = _Matcher(equal.get("equal_schemes"), equal.get("equal_authorities"))
    m.add(valid)
    assert m.match("/t/a") == (referenced, conflicts)


def test_split() -> None:
    assert _split("s3://bucket/a/b") == _URI("s3", "bucket", "/a/b")
    assert _split("/a//b/") == _URI(None, None, "/a/b")
    assert _split("file:/a") == _URI("file", None, "/a")


# -- with expire ----------------------------------------------------------------------------


def test_finds_what_an_expiration_without_cleanup_left(table: Table) -> None:
    plan = expire_snapshots(table, older_than_ms=now_ms(), dry_run=True)
    assert plan.data_files and plan.manifests
    expire_snapshots(table, older_than_ms=now_ms(), clean_expired_files=False)
    before_rows = ref_rows(table)
    age_all(table)
    found = remove_orphan_files(table)
    # what expire would have deleted, plus the metadata files that fell off the log
    extra = set(found.orphan_files) - set(plan.files())
    assert set(plan.files()) <= set(found.orphan_files)
    assert all(p.endswith(".metadata.json") for p in extra)
    assert_kept_intact(table, before_rows)
    assert expire_snapshots(table, dry_run=True).files() == ()


def test_cancel_and_re_run(table: Table) -> None:
    import floe.maintenance.orphans as orphans_module

    planted = {plant(f"{table.location}/data/o{i}.parquet") for i in range(7)}

    def cancel(p: Progress) -> None:
        if p.stage == "deleting files" and p.done > 0:
            raise Cancelled("stop")

    old = orphans_module.DELETE_BATCH
    orphans_module.DELETE_BATCH = 3
    try:
        with pytest.raises(Cancelled):
            remove_orphan_files(table, on_progress=cancel)
    finally:
        orphans_module.DELETE_BATCH = old
    left = {p for p in planted if os.path.exists(p)}
    assert left and left != planted
    assert set(remove_orphan_files(table).orphan_files) == left
    assert not any(os.path.exists(p) for p in planted)
    assert_kept_intact(table)


def test_nothing_old_enough_reads_no_manifest(table: Table) -> None:
    stats.reset()
    result = remove_orphan_files(table, older_than_ms=now_ms() - 30 * DAY)
    assert result.candidate_files == 0 and result.listed_files > 10
    assert stats.reads() == {}


def test_partition_directories_that_look_hidden_are_listed(catalog: FileSystemCatalog) -> None:
    schema = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "_p", STRING))
    from floe.partitioning import parse_partition_by

    t = catalog.create_table("db.h", schema, spec=parse_partition_by("_p", schema))
    t.append(pa.table({"id": pa.array([1], pa.int64()), "_p": ["x"]}))
    age_all(t)
    live = live_files(t)[0]
    assert "/_p=x/" in live
    orphan = plant(f"{t.location}/data/_p=x/orphan.parquet")
    hidden = plant(f"{t.location}/data/_q=x/orphan.parquet")
    assert remove_orphan_files(t).orphan_files == (orphan,)
    assert os.path.exists(live) and os.path.exists(hidden)


def test_result_json(table: Table) -> None:
    orphan = plant(f"{table.location}/data/old.parquet")
    doc = remove_orphan_files(table, dry_run=True).to_json()
    assert doc["orphan_files"] == [orphan] and doc["dry_run"] is True
    assert set(doc) == {"location", "older_than_ms", "dry_run", "orphan_files", "listed_files",
                        "candidate_files", "ignored_prefix_mismatches", "deleted_files",
                        "failed", "note"}
    assert doc["note"] == ""  # there is an orphan: nothing to explain
    assert time.time() * 1000 - doc["older_than_ms"] == pytest.approx(3 * DAY, abs=60_000)


@pytest.mark.parametrize("stage", ["listing files", "reading metadata", "reading manifests"])
def test_cancel_before_deleting_deletes_nothing(table: Table, stage: str) -> None:
    orphan = plant(f"{table.location}/data/old.parquet")
    files = disk_files(table)

    def cancel(p: Progress) -> None:
        if p.stage == stage:
            raise Cancelled(stage)

    with pytest.raises(Cancelled):
        remove_orphan_files(table, on_progress=cancel)
    assert os.path.exists(orphan) and disk_files(table) == files
