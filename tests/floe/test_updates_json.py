"""Table updates and requirements in the REST protocol's JSON (floe.table.updates_json):
every update and requirement floe has, written with the OpenAPI spec's field names, read back
equal, and read by PyIceberg's own models of the same JSON (and back); the requirements a
REST commit derives from its updates (Java's UpdateRequirements)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from floe.errors import ValidationError
from floe.metadata import new_table_metadata
from floe.partitioning import PartitionField, PartitionSpec
from floe.schema import Schema
from floe.snapshots import (
    BlobMetadata,
    PartitionStatisticsFile,
    Snapshot,
    SnapshotRef,
    SnapshotRefType,
    StatisticsFile,
)
from floe.sorting import NullOrder, SortDirection, SortField, SortOrder
from floe.table import updates as updates_module
from floe.table.updates import (
    LAST_ADDED,
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
    AssignUUID,
    RemovePartitionSpecs,
    RemovePartitionStatistics,
    RemoveProperties,
    RemoveSchemas,
    RemoveSnapshotRef,
    RemoveSnapshots,
    RemoveStatistics,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetPartitionStatistics,
    SetProperties,
    SetSnapshotRef,
    SetStatistics,
    TableRequirement,
    TableUpdate,
    UpgradeFormatVersion,
    apply_updates,
    requirements_for,
)
from floe.table.updates_json import (
    commit_request_from_json,
    commit_request_to_json,
    requirement_from_json,
    requirement_to_json,
    update_from_json,
    update_to_json,
)
from floe.transforms import parse_transform
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING),
                schema_id=3, identifier_field_ids=[1])
SPEC = PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "cat"), spec_id=1)
ORDER = SortOrder(SortField(1, parse_transform("identity"), SortDirection.DESC,
                            NullOrder.NULLS_LAST), order_id=2)
SNAPSHOT = Snapshot(
    snapshot_id=3055729675574597004, parent_snapshot_id=3051729675574597004,
    sequence_number=7, timestamp_ms=1555100955770,
    manifest_list="s3://b/t/metadata/snap-3055729675574597004-1-c87bfec7.avro",
    summary={"operation": "append", "added-data-files": "4", "total-records": "100"},
    schema_id=3)
THETA = "apache-datasketches-theta-v1"
STATS = StatisticsFile(3055729675574597004, "s3://b/t/metadata/stats.puffin", 413, 42,
                       (BlobMetadata(THETA, 3055729675574597004, 7, (1,), {"ndv": "3"}),))
PART_STATS = PartitionStatisticsFile(3055729675574597004, "s3://b/t/metadata/p.parquet", 43)

#: Each update floe has with the JSON the REST spec (and Java's MetadataUpdateParser) writes.
UPDATES: list[tuple[TableUpdate, dict[str, Any]]] = [
    (AssignUUID("9c12d441-03fe-4693-9a96-a0705ddf69c1"),
     {"action": "assign-uuid", "uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1"}),
    (UpgradeFormatVersion(3), {"action": "upgrade-format-version", "format-version": 3}),
    (AddSchema(SCHEMA, 2), {"action": "add-schema", "schema": SCHEMA.to_json(),
                            "last-column-id": 2}),
    (AddSchema(SCHEMA), {"action": "add-schema", "schema": SCHEMA.to_json()}),
    (SetCurrentSchema(LAST_ADDED), {"action": "set-current-schema", "schema-id": -1}),
    (AddPartitionSpec(SPEC), {"action": "add-spec", "spec": {"spec-id": 1, "fields": [
        {"name": "cat", "transform": "identity", "source-id": 2, "field-id": 1000}]}}),
    (SetDefaultSpec(1), {"action": "set-default-spec", "spec-id": 1}),
    (AddSortOrder(ORDER), {"action": "add-sort-order", "sort-order": {"order-id": 2, "fields": [
        {"transform": "identity", "source-id": 1, "direction": "desc",
         "null-order": "nulls-last"}]}}),
    (SetDefaultSortOrder(LAST_ADDED), {"action": "set-default-sort-order", "sort-order-id": -1}),
    (AddSnapshot(SNAPSHOT), {"action": "add-snapshot", "snapshot": {
        "sequence-number": 7, "snapshot-id": 3055729675574597004,
        "parent-snapshot-id": 3051729675574597004, "timestamp-ms": 1555100955770,
        "summary": {"operation": "append", "added-data-files": "4", "total-records": "100"},
        "manifest-list": "s3://b/t/metadata/snap-3055729675574597004-1-c87bfec7.avro",
        "schema-id": 3}}),
    (SetSnapshotRef("main", 3055729675574597004),
     {"action": "set-snapshot-ref", "ref-name": "main", "snapshot-id": 3055729675574597004,
      "type": "branch"}),
    (SetSnapshotRef("audit", 3055729675574597004, SnapshotRefType.BRANCH, 5, 86400000, 604800000),
     {"action": "set-snapshot-ref", "ref-name": "audit", "snapshot-id": 3055729675574597004,
      "type": "branch", "min-snapshots-to-keep": 5, "max-snapshot-age-ms": 86400000,
      "max-ref-age-ms": 604800000}),
    (SetSnapshotRef("v1", 3055729675574597004, SnapshotRefType.TAG, max_ref_age_ms=1000),
     {"action": "set-snapshot-ref", "ref-name": "v1", "snapshot-id": 3055729675574597004,
      "type": "tag", "max-ref-age-ms": 1000}),
    (RemoveSnapshots((1, 2)), {"action": "remove-snapshots", "snapshot-ids": [1, 2]}),
    (RemoveSnapshotRef("audit"), {"action": "remove-snapshot-ref", "ref-name": "audit"}),
    (SetLocation("s3://b/t2"), {"action": "set-location", "location": "s3://b/t2"}),
    (SetProperties({"a": "1", "b": ""}),
     {"action": "set-properties", "updates": {"a": "1", "b": ""}}),
    (RemoveProperties(("a", "b")), {"action": "remove-properties", "removals": ["a", "b"]}),
    (SetStatistics(STATS), {"action": "set-statistics", "snapshot-id": 3055729675574597004,
                            "statistics": {
                                "snapshot-id": 3055729675574597004,
                                "statistics-path": "s3://b/t/metadata/stats.puffin",
                                "file-size-in-bytes": 413, "file-footer-size-in-bytes": 42,
                                "blob-metadata": [{
                                    "type": THETA, "snapshot-id": 3055729675574597004,
                                    "sequence-number": 7, "fields": [1],
                                    "properties": {"ndv": "3"}}]}}),
    (RemoveStatistics(3055729675574597004),
     {"action": "remove-statistics", "snapshot-id": 3055729675574597004}),
    (SetPartitionStatistics(PART_STATS), {"action": "set-partition-statistics",
                                          "partition-statistics": {
                                              "snapshot-id": 3055729675574597004,
                                              "statistics-path": "s3://b/t/metadata/p.parquet",
                                              "file-size-in-bytes": 43}}),
    (RemovePartitionStatistics(3055729675574597004),
     {"action": "remove-partition-statistics", "snapshot-id": 3055729675574597004}),
    (RemovePartitionSpecs((0, 1)), {"action": "remove-partition-specs", "spec-ids": [0, 1]}),
    (RemoveSchemas((0,)), {"action": "remove-schemas", "schema-ids": [0]}),
]

REQUIREMENTS: list[tuple[TableRequirement, dict[str, Any]]] = [
    (AssertCreate(), {"type": "assert-create"}),
    (AssertTableUUID("9c12d441-03fe-4693-9a96-a0705ddf69c1"),
     {"type": "assert-table-uuid", "uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1"}),
    (AssertRefSnapshotId("main", 3055729675574597004),
     {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 3055729675574597004}),
    # null: the ref must not exist (the key is required and written as null)
    (AssertRefSnapshotId("audit", None),
     {"type": "assert-ref-snapshot-id", "ref": "audit", "snapshot-id": None}),
    (AssertCurrentSchemaId(3), {"type": "assert-current-schema-id", "current-schema-id": 3}),
    (AssertLastAssignedFieldId(2),
     {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 2}),
    (AssertDefaultSpecId(1), {"type": "assert-default-spec-id", "default-spec-id": 1}),
    (AssertLastAssignedPartitionId(1000),
     {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 1000}),
    (AssertDefaultSortOrderId(2),
     {"type": "assert-default-sort-order-id", "default-sort-order-id": 2}),
]


def _ids(cases: list[tuple[Any, dict[str, Any]]]) -> list[str]:
    return [str(expected.get("action") or expected.get("type")) for _, expected in cases]


@pytest.mark.parametrize(("update", "expected"), UPDATES, ids=_ids(UPDATES))
def test_every_update_is_written_with_the_spec_field_names_and_read_back(
        update: TableUpdate, expected: dict[str, Any]) -> None:
    assert update_to_json(update) == expected
    assert update_from_json(expected) == update


@pytest.mark.parametrize(("requirement", "expected"), REQUIREMENTS, ids=_ids(REQUIREMENTS))
def test_every_requirement_is_written_with_the_spec_field_names_and_read_back(
        requirement: TableRequirement, expected: dict[str, Any]) -> None:
    assert requirement_to_json(requirement) == expected
    assert requirement_from_json(expected) == requirement


def test_every_update_and_requirement_floe_has_has_a_wire_form() -> None:
    def concrete(base: type) -> set[type]:
        return {c for _, c in inspect.getmembers(updates_module, inspect.isclass)
                if issubclass(c, base) and c is not base}

    assert concrete(TableUpdate) == {type(u) for u, _ in UPDATES}
    assert concrete(TableRequirement) == {type(r) for r, _ in REQUIREMENTS}


@pytest.mark.parametrize(("update", "expected"), UPDATES, ids=_ids(UPDATES))
def test_pyiceberg_reads_floes_updates_and_floe_reads_pyicebergs(
        update: TableUpdate, expected: dict[str, Any]) -> None:
    from pydantic import TypeAdapter
    from pyiceberg.table.update import TableUpdate as PyIcebergUpdate

    theirs = TypeAdapter(PyIcebergUpdate).validate_python(update_to_json(update))
    if isinstance(update, AddSchema):  # PyIceberg drops the deprecated last-column-id
        update = AddSchema(update.schema)
    assert update_from_json(theirs.model_dump(mode="json", by_alias=True,
                                              exclude_none=True)) == update


@pytest.mark.parametrize(("requirement", "expected"), REQUIREMENTS, ids=_ids(REQUIREMENTS))
def test_pyiceberg_reads_floes_requirements_and_floe_reads_pyicebergs(
        requirement: TableRequirement, expected: dict[str, Any]) -> None:
    from pydantic import TypeAdapter
    from pyiceberg.table.update import TableRequirement as PyIcebergRequirement

    theirs = TypeAdapter(PyIcebergRequirement).validate_python(requirement_to_json(requirement))
    assert requirement_from_json(theirs.model_dump(mode="json", by_alias=True)) == requirement


def test_javas_legacy_property_keys_and_an_unbound_spec_are_read() -> None:
    assert update_from_json({"action": "set-properties", "updated": {"k": "v"}}) == \
        SetProperties({"k": "v"})
    assert update_from_json({"action": "remove-properties", "removed": ["k"]}) == \
        RemoveProperties(("k",))
    spec = update_from_json({"action": "add-spec", "spec": {"fields": [
        {"name": "cat", "transform": "identity", "source-id": 2}]}})
    assert isinstance(spec, AddPartitionSpec) and spec.spec.compatible_with(SPEC)


@pytest.mark.parametrize(("doc", "message"), [
    ({"action": "add-snapshot"}, "update 'add-snapshot': missing field 'snapshot'"),
    ({"action": "set-current-schema", "schema-id": "3"},
     "update 'set-current-schema': 'schema-id' must be an integer"),
    ({"action": "add-view-version", "view-version": {}},
     "table update action 'add-view-version' is not supported by floe"),
    ({"action": "drop-everything"}, "table update action 'drop-everything' is unknown"),
    ({"updates": {}}, "a table update needs a string 'action'"),
    ({"action": "set-snapshot-ref", "ref-name": "x", "snapshot-id": 1, "type": "twig"},
     "invalid ref type 'twig'"),
    ([], "a table update must be a JSON object"),
])
def test_a_malformed_update_is_one_line_naming_the_action_and_field(
        doc: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(")):
        update_from_json(doc)


def test_a_malformed_requirement_names_it() -> None:
    with pytest.raises(ValidationError, match="requirement 'assert-ref-snapshot-id': missing "
                                              "field 'snapshot-id'"):
        requirement_from_json({"type": "assert-ref-snapshot-id", "ref": "main"})
    with pytest.raises(ValidationError, match="type 'assert-nothing' is unknown"):
        requirement_from_json({"type": "assert-nothing"})


def test_a_commit_request_round_trips() -> None:
    requirements = [r for r, _ in REQUIREMENTS]
    updates = [u for u, _ in UPDATES]
    doc = commit_request_to_json(requirements, updates, (("a", "b"), "t"))
    assert doc["identifier"] == {"namespace": ["a", "b"], "name": "t"}
    assert [d["type"] for d in doc["requirements"]] == [e["type"] for _, e in REQUIREMENTS]
    assert commit_request_from_json(doc) == ((("a", "b"), "t"), requirements, updates)
    assert commit_request_from_json({"updates": []}) == (None, [], [])


# -- what a REST commit requires (Java UpdateRequirements.forUpdateTable) -------------------


def _base() -> Any:
    md = new_table_metadata(Schema(NestedField(1, "id", LONG, required=True)),
                            PartitionSpec(), SortOrder(order_id=0), "s3://b/t")
    snaps = [Snapshot(i, i - 1 if i > 1 else None, i, 1000 * i, f"s3://b/t/m{i}.avro",
                      {"operation": "append"}) for i in (1, 2, 3)]
    return apply_updates(md, [*(AddSnapshot(s) for s in snaps), SetSnapshotRef("main", 3),
                              SetSnapshotRef("dev", 2), SetSnapshotRef("v1", 1,
                                                                       SnapshotRefType.TAG)])


def test_a_commit_requires_the_uuid_and_every_ref_it_moves_where_it_was() -> None:
    base = _base()
    snap = Snapshot(4, 3, 4, 5000, "s3://b/t/m4.avro", {"operation": "append"})
    got = requirements_for(base, [AddSnapshot(snap), SetSnapshotRef("main", 4),
                                  SetSnapshotRef("main", 4), SetSnapshotRef("new", 4)])
    assert got == [AssertTableUUID(base.table_uuid), AssertRefSnapshotId("main", 3),
                   AssertRefSnapshotId("new", None)]


def test_evolution_requires_the_ids_it_builds_on() -> None:
    base = _base()
    got = requirements_for(base, [
        AddSchema(SCHEMA), SetCurrentSchema(LAST_ADDED), AddSchema(SCHEMA),
        AddPartitionSpec(SPEC), SetDefaultSpec(LAST_ADDED),
        AddSortOrder(ORDER), SetDefaultSortOrder(LAST_ADDED), SetProperties({"a": "b"})])
    assert got == [AssertTableUUID(base.table_uuid),
                   AssertLastAssignedFieldId(base.last_column_id),
                   AssertCurrentSchemaId(base.current_schema_id),
                   AssertLastAssignedPartitionId(base.last_partition_id),
                   AssertDefaultSpecId(base.default_spec_id),
                   AssertDefaultSortOrderId(base.default_sort_order_id)]


def test_removals_require_the_refs_unchanged() -> None:
    base = _base()
    # Java: removing schemas or specs needs every branch but main where it was
    assert requirements_for(base, [RemoveSchemas((5,))])[1:] == [
        AssertCurrentSchemaId(base.current_schema_id), AssertRefSnapshotId("dev", 2)]
    # floe: removing snapshots (whose files are then deleted) needs every ref where it was
    assert requirements_for(base, [RemoveSnapshotRef("v1"), RemoveSnapshots((1,))])[1:] == [
        AssertRefSnapshotId("dev", 2), AssertRefSnapshotId("main", 3),
        AssertRefSnapshotId("v1", 1)]


def test_snapshot_ref_retention_survives_the_round_trip_as_a_ref() -> None:
    update = update_from_json(update_to_json(UPDATES[11][0]))
    assert isinstance(update, SetSnapshotRef)
    assert SnapshotRef(update.snapshot_id, update.ref_type, update.min_snapshots_to_keep,
                       update.max_snapshot_age_ms, update.max_ref_age_ms).to_json() == {
        "snapshot-id": 3055729675574597004, "type": "branch", "min-snapshots-to-keep": 5,
        "max-snapshot-age-ms": 86400000, "max-ref-age-ms": 604800000}
