"""Updates and requirements as data; the commit loop (retry, give up, unknown state) and the
per-operation validation of issue 3, on real file-system tables."""

import os

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.clock import ManualClock, use_clock
from floe.errors import CommitConflict, CommitStateUnknown, ValidationError
from floe.manifest import read_manifest_list
from floe.metadata import new_table_metadata
from floe.partitioning import UNPARTITIONED, parse_partition_by
from floe.schema import Schema
from floe.snapshots import Snapshot
from floe.sorting import UNSORTED_SORT_ORDER
from floe.table.transaction import RetryPolicy
from floe.table.updates import (
    LAST_ADDED,
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
    RemoveProperties,
    RemoveSnapshotRef,
    RemoveSnapshots,
    SetCurrentSchema,
    SetDefaultSpec,
    SetLocation,
    SetProperties,
    SetSnapshotRef,
    UpgradeFormatVersion,
    apply_updates,
)
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "name", STRING))
FAST = {"commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "5"}


def rows(ids):
    return pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]})


def base_md(version=2):
    with use_clock(ManualClock(0)):  # created at the epoch: the snapshots below come later
        return new_table_metadata(SCHEMA, UNPARTITIONED, UNSORTED_SORT_ORDER, "/tmp/t", {},
                                  version)


def snap(sid, parent=None, seq=1, ts=1000):
    return Snapshot(sid, parent, seq, ts, f"/tmp/t/metadata/snap-{sid}.avro",
                    {"operation": "append"}, 0)


@pytest.fixture
def catalog(tmp_path):
    return FileSystemCatalog("fs", str(tmp_path / "wh"))


def make_table(catalog, name="t", props=FAST, version=2, spec=UNPARTITIONED):
    return catalog.create_table(f"db.{name}", SCHEMA, spec=spec, properties=props,
                                format_version=version)


def all_files(root):
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


# -- updates ------------------------------------------------------------------------------


def test_add_snapshot_and_main_ref_update_log_and_sequence():
    md = apply_updates(base_md(), [AddSnapshot(snap(7, ts=1234)), SetSnapshotRef("main", 7)],
                       "/tmp/t/metadata/v1.metadata.json", now_ms=99999)
    assert md.current_snapshot_id == 7 and md.last_sequence_number == 1
    assert md.last_updated_ms == 1234  # an added snapshot's timestamp
    assert [(e.timestamp_ms, e.snapshot_id) for e in md.snapshot_log] == [(1234, 7)]
    assert md.metadata_log[-1].metadata_file.endswith("v1.metadata.json")
    assert md.refs["main"].snapshot_id == 7


def test_rollback_logs_now_and_remove_snapshots_drops_refs():
    md = apply_updates(base_md(), [AddSnapshot(snap(1)), SetSnapshotRef("main", 1),
                                   AddSnapshot(snap(2, 1, 2)), SetSnapshotRef("main", 2)])
    back = apply_updates(md, [SetSnapshotRef("main", 1)], now_ms=5555)
    assert back.current_snapshot_id == 1 and back.snapshot_log[-1].timestamp_ms == 5555
    gone = apply_updates(md, [RemoveSnapshots((2,))])
    assert gone.current_snapshot_id is None and "main" not in gone.refs
    assert [s.snapshot_id for s in gone.snapshots] == [1]
    assert apply_updates(md, [RemoveSnapshotRef("main")]).current_snapshot_id is None


def test_schema_spec_properties_location_version_updates():
    md = base_md(1)
    wider = Schema(*SCHEMA.fields, NestedField(3, "x", LONG))
    spec = parse_partition_by("bucket(4, id)", SCHEMA)
    out = apply_updates(md, [
        AddSchema(wider, 3), SetCurrentSchema(LAST_ADDED), AddPartitionSpec(spec),
        SetDefaultSpec(LAST_ADDED), SetProperties({"a": "1", "b": "2"}),
        RemoveProperties(("a",)), SetLocation("/elsewhere/"), UpgradeFormatVersion(2),
    ])
    assert out.current_schema_id == 1 and out.last_column_id == 3
    assert out.default_spec_id == 1 and out.last_partition_id == 1000
    assert out.properties.get("b") == "2" and "a" not in out.properties
    assert out.location == "/elsewhere" and out.format_version == 2
    # the same schema again is reused, not added twice
    again = apply_updates(out, [AddSchema(wider), SetCurrentSchema(LAST_ADDED)])
    assert len(again.schemas) == 2
    with pytest.raises(ValidationError):
        apply_updates(out, [UpgradeFormatVersion(1)])
    with pytest.raises(ValidationError):
        apply_updates(md, [SetCurrentSchema(LAST_ADDED)])
    with pytest.raises(ValidationError):
        apply_updates(md, [SetSnapshotRef("main", 42)])


def test_metadata_log_is_trimmed_to_previous_versions_max():
    md = apply_updates(base_md(), [SetProperties({"write.metadata.previous-versions-max": "2"})])
    for i in range(5):
        md = apply_updates(md, [SetProperties({"i": str(i)})], f"/m/v{i}.metadata.json")
    assert [e.metadata_file for e in md.metadata_log] == ["/m/v3.metadata.json",
                                                           "/m/v4.metadata.json"]


# -- requirements ---------------------------------------------------------------------------

MD = base_md()


@pytest.mark.parametrize("requirement, ok", [
    (AssertCreate(), False),
    (AssertTableUUID(MD.table_uuid), True),
    (AssertTableUUID("00000000-0000-0000-0000-000000000000"), False),
    (AssertRefSnapshotId("main", None), True),
    (AssertRefSnapshotId("main", 5), False),
    (AssertCurrentSchemaId(0), True),
    (AssertCurrentSchemaId(1), False),
    (AssertLastAssignedFieldId(2), True),
    (AssertLastAssignedFieldId(3), False),
    (AssertDefaultSpecId(0), True),
    (AssertDefaultSpecId(1), False),
    (AssertLastAssignedPartitionId(999), True),
    (AssertLastAssignedPartitionId(1000), False),
    (AssertDefaultSortOrderId(0), True),
    (AssertDefaultSortOrderId(1), False),
])
def test_requirements(requirement, ok):
    if ok:
        requirement.validate(MD)
    else:
        with pytest.raises(CommitConflict, match="requirement failed"):
            requirement.validate(MD)


def test_assert_create_passes_without_a_table():
    AssertCreate().validate(None)
    with pytest.raises(CommitConflict):
        AssertCurrentSchemaId(0).validate(None)


def test_retry_policy_backoff_and_limits():
    p = RetryPolicy(num_retries=3, min_wait_ms=100, max_wait_ms=250, total_timeout_ms=10_000)
    assert 100 <= p.delay_ms(1, 0) <= 110
    assert 200 <= p.delay_ms(2, 0) <= 220
    assert 250 <= p.delay_ms(3, 0) <= 275  # capped at max-wait
    assert p.delay_ms(4, 0) is None  # retries exhausted
    assert p.delay_ms(1, 9_950) is None  # total timeout


# -- the commit loop ------------------------------------------------------------------------


class Racing(FileSystemCatalog):
    """Lets another writer commit first, ``races`` times, right before our pointer swap."""

    races = 0
    rival = None

    def _commit(self, ident, base_location, new_metadata):
        if base_location is not None and self.races > 0:
            self.races -= 1
            self.rival()
        return super()._commit(ident, base_location, new_metadata)


def racing(tmp_path, races, props=FAST):
    catalog = Racing("race", str(tmp_path / "wh"))
    make_table(catalog, props=props)
    other = FileSystemCatalog("fs", str(tmp_path / "wh")).load_table("db.t")
    counter = iter(range(100, 1000))
    catalog.rival = lambda: other.append(rows([next(counter)]))
    catalog.races = races
    return catalog, catalog.load_table("db.t")


def test_conflict_is_retried_with_a_new_sequence_number_and_only_the_list_rewritten(tmp_path):
    catalog, table = racing(tmp_path, races=1)
    txn = table.new_transaction().append(rows([2, 3]))
    producer = txn.operations[0]
    txn.commit()
    assert txn.attempts == 2
    assert len(producer.written_manifests) == 1  # the manifest was reused on retry
    first_list, second_list = producer.manifest_lists
    assert not os.path.exists(first_list) and os.path.exists(second_list)
    md = catalog.load_table("db.t").metadata
    current = md.current_snapshot()
    assert current.sequence_number == 2 and current.parent_snapshot_id == md.snapshots[0].snapshot_id
    manifests = read_manifest_list(catalog.io, current.manifest_list)
    assert {m.manifest_path for m in manifests} >= set(producer.written_manifests)
    assert sorted(m.sequence_number for m in manifests) == [1, 2]
    assert current.summary["total-records"] == "3"
    assert current.summary["added-records"] == "2"


def test_retries_exhausted_leave_the_table_unchanged_and_clean_up(tmp_path):
    catalog, table = racing(tmp_path, races=3, props={**FAST, "commit.retry.num-retries": "2"})
    txn = table.new_transaction().append(rows([2]))
    rival_files = []
    real_rival = catalog.rival

    def rival():
        real_rival()
        rival_files.append(catalog.metadata_location("db.t"))

    catalog.rival = rival
    with pytest.raises(CommitConflict, match="after 3 attempt"):
        txn.commit()
    assert catalog.metadata_location("db.t") == rival_files[-1]  # the rival's commit stands
    producer = txn.operations[0]
    written = producer.owned_files + producer.written_manifests + producer.manifest_lists
    assert len(producer.manifest_lists) == 3
    assert written and not any(os.path.exists(p) for p in written)
    md = catalog.load_table("db.t").metadata
    assert len(md.snapshots) == 3


def test_retries_exhausted_against_a_catalog_that_always_conflicts(tmp_path):
    class Busy(FileSystemCatalog):
        def _commit(self, ident, base_location, new_metadata):
            if base_location is None:
                return super()._commit(ident, base_location, new_metadata)
            raise CommitConflict("busy")

    catalog = Busy("busy", str(tmp_path / "wh"))
    table = make_table(catalog, props={**FAST, "commit.retry.num-retries": "3"})
    before = all_files(tmp_path)
    txn = table.new_transaction().append(rows([1]))
    with pytest.raises(CommitConflict, match="after 4 attempt"):
        txn.commit()
    assert txn.attempts == 4
    assert all_files(tmp_path) == before


@pytest.mark.parametrize("published", [True, False])
def test_unknown_commit_state_keeps_every_file(tmp_path, published):
    class Flaky(FileSystemCatalog):
        def _commit(self, ident, base_location, new_metadata):
            if base_location is None:
                return super()._commit(ident, base_location, new_metadata)
            if published:
                super()._commit(ident, base_location, new_metadata)
            raise CommitStateUnknown("the connection dropped after the swap was sent")

    catalog = Flaky("flaky", str(tmp_path / "wh"))
    table = make_table(catalog)
    txn = table.new_transaction().append(rows([1, 2]))
    producer = txn.operations[0]
    with pytest.raises(CommitStateUnknown):
        txn.commit()
    written = producer.owned_files + producer.written_manifests + producer.manifest_lists
    assert written and all(os.path.exists(p) for p in written)
    reloaded = FileSystemCatalog("fs", str(tmp_path / "wh")).load_table("db.t")
    assert len(reloaded.snapshots()) == (1 if published else 0)


def test_table_uuid_changed_under_a_writer(catalog, tmp_path):
    table = make_table(catalog)
    table.append(rows([1]))
    catalog.drop_table("db.t", purge=True)
    make_table(catalog)  # a different table under the same name
    catalog.load_table("db.t").append(rows([9]))  # both are at v2 now
    before = all_files(tmp_path)
    with pytest.raises(CommitConflict, match="UUID changed"):
        table.append(rows([2]))
    assert all_files(tmp_path) == before


# -- per-operation validation (issue 3 acceptance) ------------------------------------------


def _files(table):
    from floe.inspect import file_rows

    return [f["file_path"] for f in file_rows(table.io, table.metadata, table.current_snapshot())]


def test_delete_of_a_file_a_concurrent_commit_removed_fails_clearly(catalog, tmp_path):
    table = make_table(catalog)
    table.append(rows([1])).append(rows([2]))
    victim = _files(table)[0]
    stale = catalog.load_table("db.t")
    table.delete_files([victim])
    before = all_files(tmp_path)
    with pytest.raises(CommitConflict, match=f"file {victim} is not live.*concurrent commit"):
        stale.delete_files([victim])
    assert all_files(tmp_path) == before


def test_a_schema_change_racing_another_schema_change_fails(catalog):
    table = make_table(catalog)
    stale = catalog.load_table("db.t")
    table.new_transaction().set_schema(
        Schema(*SCHEMA.fields, NestedField(3, "a", LONG))).commit()
    with pytest.raises(CommitConflict, match="current schema id changed"):
        stale.new_transaction().set_schema(
            Schema(*SCHEMA.fields, NestedField(3, "b", STRING))).commit()
    assert [f.name for f in catalog.load_table("db.t").schema().fields] == ["id", "name", "a"]


def test_a_spec_change_racing_another_spec_change_fails(catalog):
    table = make_table(catalog)
    stale = catalog.load_table("db.t")
    table.new_transaction().set_spec(parse_partition_by("bucket(4, id)", SCHEMA)).commit()
    with pytest.raises(CommitConflict, match="default spec id changed"):
        stale.new_transaction().set_spec(parse_partition_by("truncate(2, name)", SCHEMA)).commit()


@pytest.mark.parametrize("other", ["append", "schema", "spec", "properties", "delete"])
def test_appends_racing_anything_succeed(catalog, other):
    table = make_table(catalog)
    table.append(rows([1]))
    stale = catalog.load_table("db.t")
    if other == "append":
        table.append(rows([5]))
    elif other == "schema":
        table.new_transaction().set_schema(Schema(*SCHEMA.fields, NestedField(3, "a", LONG))).commit()
    elif other == "spec":
        table.new_transaction().set_spec(parse_partition_by("bucket(4, id)", SCHEMA)).commit()
    elif other == "properties":
        table.set_properties({"k": "v"})
    else:
        table.delete_files(_files(table))
    stale.append(rows([7]))
    fresh = catalog.load_table("db.t")
    assert fresh.current_snapshot().summary["operation"] == "append"
    assert len(fresh.snapshots()) == (3 if other in ("append", "delete") else 2)


def test_one_transaction_several_operations_one_commit(catalog):
    table = make_table(catalog)
    version_before = catalog.metadata_location("db.t")
    (table.new_transaction().set_properties({"owner": "me"}).append(rows([1]))
     .append(rows([2])).commit())
    md = catalog.load_table("db.t").metadata
    assert catalog.metadata_location("db.t").endswith("v2.metadata.json")
    assert version_before.endswith("v1.metadata.json")
    assert md.properties["owner"] == "me" and len(md.snapshots) == 2
    assert md.current_snapshot().summary["total-records"] == "2"
    assert md.snapshots[1].parent_snapshot_id == md.snapshots[0].snapshot_id


def test_a_transaction_commits_once(catalog):
    txn = make_table(catalog).new_transaction().set_properties({"a": "b"})
    txn.commit()
    with pytest.raises(ValidationError, match="already committed"):
        txn.commit()
