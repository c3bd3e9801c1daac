"""Table updates and requirements as the REST catalog protocol writes them: the JSON of the
OpenAPI spec's ``TableUpdate`` (discriminated by ``action``) and ``TableRequirement``
(discriminated by ``type``), with Java's ``MetadataUpdateParser`` /
``UpdateRequirementParser`` field names. The REST client sends them (``CommitTableRequest``);
a REST server reads them back with the same functions.

``update_to_json`` / ``update_from_json`` cover every update of :mod:`floe.table.updates`;
an action floe does not model (views, encryption keys) is a :class:`ValidationError` naming
it. Parsing follows Java's leniency where Java has it (``set-properties`` also reads the
legacy ``updated`` key, ``remove-properties`` the legacy ``removed``; ``add-spec`` without a
``spec-id``) and is otherwise strict: a missing or mistyped field is a ValidationError that
names the update and the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from floe.errors import ValidationError
from floe.partitioning import PartitionSpec
from floe.schema import Schema
from floe.snapshots import PartitionStatisticsFile, Snapshot, SnapshotRef, StatisticsFile
from floe.sorting import SortOrder
from floe.table.updates import (
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
)

__all__ = [
    "commit_request_from_json",
    "commit_request_to_json",
    "requirement_from_json",
    "requirement_to_json",
    "update_from_json",
    "update_to_json",
]

JSON = dict[str, Any]


# -- field readers ------------------------------------------------------------------------


def _field(obj: Mapping[str, Any], key: str, what: str) -> Any:
    if key not in obj:
        raise ValidationError(f"{what}: missing field {key!r}")
    return obj[key]


def _int(obj: Mapping[str, Any], key: str, what: str) -> int:
    value = _field(obj, key, what)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValidationError(f"{what}: {key!r} must be an integer, got {value!r:.100}")
    return value


def _opt_int(obj: Mapping[str, Any], key: str, what: str) -> int | None:
    return None if obj.get(key) is None else _int(obj, key, what)


def _str(obj: Mapping[str, Any], key: str, what: str) -> str:
    value = _field(obj, key, what)
    if not isinstance(value, str):
        raise ValidationError(f"{what}: {key!r} must be a string, got {value!r:.100}")
    return value


def _ints(obj: Mapping[str, Any], key: str, what: str) -> tuple[int, ...]:
    value = _field(obj, key, what)
    if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValidationError(f"{what}: {key!r} must be an array of integers")
    return tuple(value)


def _strings(value: Any, key: str, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError(f"{what}: {key!r} must be an array of strings")
    return tuple(value)


def _string_map(value: Any, key: str, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValidationError(f"{what}: {key!r} must be an object of strings")
    return dict(value)


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ValidationError(f"{what} must be a JSON object, got {value!r:.100}")
    return value


# -- updates ------------------------------------------------------------------------------


def _set_ref_to_json(u: SetSnapshotRef) -> JSON:
    ref = SnapshotRef(u.snapshot_id, u.ref_type, u.min_snapshots_to_keep,
                      u.max_snapshot_age_ms, u.max_ref_age_ms)
    return {"ref-name": u.ref_name, **ref.to_json()}


def _set_ref_from_json(o: Mapping[str, Any], what: str) -> SetSnapshotRef:
    name = _str(o, "ref-name", what)
    ref = SnapshotRef.from_json(dict(o), name)
    return SetSnapshotRef(name, ref.snapshot_id, ref.ref_type, ref.min_snapshots_to_keep,
                          ref.max_snapshot_age_ms, ref.max_ref_age_ms)


def _add_schema_to_json(u: AddSchema) -> JSON:
    out: JSON = {"schema": u.schema.to_json()}
    if u.last_column_id is not None:
        out["last-column-id"] = u.last_column_id  # deprecated in the spec; Java still sends it
    return out


def _add_spec_from_json(o: Mapping[str, Any], what: str) -> AddPartitionSpec:
    spec = _object(_field(o, "spec", what), f"{what}: 'spec'")
    # Java's UnboundPartitionSpec may leave the id out: the catalog assigns it
    return AddPartitionSpec(PartitionSpec.from_json({"spec-id": 0, **spec}))


def _set_properties_from_json(o: Mapping[str, Any], what: str) -> SetProperties:
    key = "updates" if "updates" in o or "updated" not in o else "updated"  # legacy name
    return SetProperties(_string_map(_field(o, key, what), key, what))


def _remove_properties_from_json(o: Mapping[str, Any], what: str) -> RemoveProperties:
    key = "removals" if "removals" in o or "removed" not in o else "removed"  # legacy name
    return RemoveProperties(_strings(_field(o, key, what), key, what))


_Encoder = Callable[[Any], JSON]
_Decoder = Callable[[Mapping[str, Any], str], TableUpdate]

#: class → (action, fields of the JSON object, the update from those fields)
_UPDATES: dict[type[TableUpdate], tuple[str, _Encoder, _Decoder]] = {
    AssignUUID: ("assign-uuid", lambda u: {"uuid": u.uuid},
                 lambda o, w: AssignUUID(_str(o, "uuid", w))),
    UpgradeFormatVersion: (
        "upgrade-format-version", lambda u: {"format-version": u.format_version},
        lambda o, w: UpgradeFormatVersion(_int(o, "format-version", w))),
    AddSchema: ("add-schema", _add_schema_to_json,
                lambda o, w: AddSchema(Schema.from_json(_field(o, "schema", w)),
                                       _opt_int(o, "last-column-id", w))),
    SetCurrentSchema: ("set-current-schema", lambda u: {"schema-id": u.schema_id},
                       lambda o, w: SetCurrentSchema(_int(o, "schema-id", w))),
    AddPartitionSpec: ("add-spec", lambda u: {"spec": u.spec.to_json()}, _add_spec_from_json),
    SetDefaultSpec: ("set-default-spec", lambda u: {"spec-id": u.spec_id},
                     lambda o, w: SetDefaultSpec(_int(o, "spec-id", w))),
    AddSortOrder: ("add-sort-order", lambda u: {"sort-order": u.sort_order.to_json()},
                   lambda o, w: AddSortOrder(SortOrder.from_json(_field(o, "sort-order", w)))),
    SetDefaultSortOrder: (
        "set-default-sort-order", lambda u: {"sort-order-id": u.sort_order_id},
        lambda o, w: SetDefaultSortOrder(_int(o, "sort-order-id", w))),
    AddSnapshot: ("add-snapshot", lambda u: {"snapshot": u.snapshot.to_json()},
                  lambda o, w: AddSnapshot(Snapshot.from_json(_field(o, "snapshot", w)))),
    SetSnapshotRef: ("set-snapshot-ref", _set_ref_to_json, _set_ref_from_json),
    RemoveSnapshots: ("remove-snapshots", lambda u: {"snapshot-ids": list(u.snapshot_ids)},
                      lambda o, w: RemoveSnapshots(_ints(o, "snapshot-ids", w))),
    RemoveSnapshotRef: ("remove-snapshot-ref", lambda u: {"ref-name": u.ref_name},
                        lambda o, w: RemoveSnapshotRef(_str(o, "ref-name", w))),
    SetLocation: ("set-location", lambda u: {"location": u.location},
                  lambda o, w: SetLocation(_str(o, "location", w))),
    SetProperties: ("set-properties", lambda u: {"updates": dict(u.updates)},
                    _set_properties_from_json),
    RemoveProperties: ("remove-properties", lambda u: {"removals": list(u.removals)},
                       _remove_properties_from_json),
    SetStatistics: (
        # Java also writes the deprecated top-level snapshot-id; readers take the file's
        "set-statistics", lambda u: {"snapshot-id": u.statistics.snapshot_id,
                                     "statistics": u.statistics.to_json()},
        lambda o, w: SetStatistics(StatisticsFile.from_json(_field(o, "statistics", w)))),
    RemoveStatistics: ("remove-statistics", lambda u: {"snapshot-id": u.snapshot_id},
                       lambda o, w: RemoveStatistics(_int(o, "snapshot-id", w))),
    SetPartitionStatistics: (
        "set-partition-statistics",
        lambda u: {"partition-statistics": u.partition_statistics.to_json()},
        lambda o, w: SetPartitionStatistics(PartitionStatisticsFile.from_json(
            _field(o, "partition-statistics", w)))),
    RemovePartitionStatistics: (
        "remove-partition-statistics", lambda u: {"snapshot-id": u.snapshot_id},
        lambda o, w: RemovePartitionStatistics(_int(o, "snapshot-id", w))),
    RemovePartitionSpecs: ("remove-partition-specs", lambda u: {"spec-ids": list(u.spec_ids)},
                           lambda o, w: RemovePartitionSpecs(_ints(o, "spec-ids", w))),
    RemoveSchemas: ("remove-schemas", lambda u: {"schema-ids": list(u.schema_ids)},
                    lambda o, w: RemoveSchemas(_ints(o, "schema-ids", w))),
}
_UPDATE_BY_ACTION = {action: decode for action, _, decode in _UPDATES.values()}
#: actions of the spec floe does not model (views; v3 encryption keys)
_UNSUPPORTED_ACTIONS = frozenset({"add-view-version", "set-current-view-version",
                                  "add-encryption-key", "remove-encryption-key"})


def update_to_json(update: TableUpdate) -> JSON:
    """``{"action": ..., <fields>}`` as the REST spec's ``TableUpdate``."""
    entry = _UPDATES.get(type(update))
    if entry is None:
        raise ValidationError(f"{type(update).__name__} has no REST form")
    action, encode, _ = entry
    return {"action": action, **encode(update)}


def update_from_json(obj: Any) -> TableUpdate:
    """The update a ``TableUpdate`` JSON object describes (ValidationError naming the action
    and the field for anything malformed or unknown)."""
    o = _object(obj, "a table update")
    action = o.get("action")
    if not isinstance(action, str):
        raise ValidationError("a table update needs a string 'action'")
    action = action.lower()
    decode = _UPDATE_BY_ACTION.get(action)
    if decode is None:
        why = "not supported by floe" if action in _UNSUPPORTED_ACTIONS else "unknown"
        raise ValidationError(f"table update action {action!r} is {why}")
    try:
        return decode(o, f"update {action!r}")
    except ValidationError as e:
        text = str(e)
        raise ValidationError(text if text.startswith("update ") else
                              f"update {action!r}: {text}") from None


# -- requirements -------------------------------------------------------------------------


def _ref_requirement_from_json(o: Mapping[str, Any], what: str) -> AssertRefSnapshotId:
    # "snapshot-id" is required, and null means "the ref must not exist"
    _field(o, "snapshot-id", what)
    return AssertRefSnapshotId(_str(o, "ref", what), _opt_int(o, "snapshot-id", what))


_RequirementDecoder = Callable[[Mapping[str, Any], str], TableRequirement]

_REQUIREMENTS: dict[type[TableRequirement], tuple[str, Callable[[Any], JSON],
                                                  _RequirementDecoder]] = {
    AssertCreate: ("assert-create", lambda r: {}, lambda o, w: AssertCreate()),
    AssertTableUUID: ("assert-table-uuid", lambda r: {"uuid": r.uuid},
                      lambda o, w: AssertTableUUID(_str(o, "uuid", w))),
    AssertRefSnapshotId: (
        "assert-ref-snapshot-id", lambda r: {"ref": r.ref, "snapshot-id": r.snapshot_id},
        _ref_requirement_from_json),
    AssertCurrentSchemaId: (
        "assert-current-schema-id", lambda r: {"current-schema-id": r.value},
        lambda o, w: AssertCurrentSchemaId(_int(o, "current-schema-id", w))),
    AssertLastAssignedFieldId: (
        "assert-last-assigned-field-id", lambda r: {"last-assigned-field-id": r.value},
        lambda o, w: AssertLastAssignedFieldId(_int(o, "last-assigned-field-id", w))),
    AssertDefaultSpecId: (
        "assert-default-spec-id", lambda r: {"default-spec-id": r.value},
        lambda o, w: AssertDefaultSpecId(_int(o, "default-spec-id", w))),
    AssertLastAssignedPartitionId: (
        "assert-last-assigned-partition-id",
        lambda r: {"last-assigned-partition-id": r.value},
        lambda o, w: AssertLastAssignedPartitionId(_int(o, "last-assigned-partition-id", w))),
    AssertDefaultSortOrderId: (
        "assert-default-sort-order-id", lambda r: {"default-sort-order-id": r.value},
        lambda o, w: AssertDefaultSortOrderId(_int(o, "default-sort-order-id", w))),
}
_REQUIREMENT_BY_TYPE = {kind: decode for kind, _, decode in _REQUIREMENTS.values()}


def requirement_to_json(requirement: TableRequirement) -> JSON:
    """``{"type": ..., <fields>}`` as the REST spec's ``TableRequirement``."""
    entry = _REQUIREMENTS.get(type(requirement))
    if entry is None:
        raise ValidationError(f"{type(requirement).__name__} has no REST form")
    kind, encode, _ = entry
    if isinstance(requirement, AssertTableUUID) and requirement.uuid is None:
        raise ValidationError("assert-table-uuid needs a UUID (the table has none)")
    return {"type": kind, **encode(requirement)}


def requirement_from_json(obj: Any) -> TableRequirement:
    o = _object(obj, "a table requirement")
    kind = o.get("type")
    if not isinstance(kind, str):
        raise ValidationError("a table requirement needs a string 'type'")
    decode = _REQUIREMENT_BY_TYPE.get(kind.lower())
    if decode is None:
        raise ValidationError(f"table requirement type {kind!r} is unknown")
    return decode(o, f"requirement {kind.lower()!r}")


# -- the commit request -------------------------------------------------------------------


def commit_request_to_json(
    requirements: Sequence[TableRequirement], updates: Sequence[TableUpdate],
    identifier: tuple[tuple[str, ...], str] | None = None,
) -> JSON:
    """A ``CommitTableRequest``: ``identifier`` (namespace levels, name) when given, then
    ``requirements`` and ``updates``."""
    out: JSON = {}
    if identifier is not None:
        out["identifier"] = {"namespace": list(identifier[0]), "name": identifier[1]}
    out["requirements"] = [requirement_to_json(r) for r in requirements]
    out["updates"] = [update_to_json(u) for u in updates]
    return out


def commit_request_from_json(
    obj: Any,
) -> tuple[tuple[tuple[str, ...], str] | None, list[TableRequirement], list[TableUpdate]]:
    """(identifier or None, requirements, updates) of a ``CommitTableRequest``."""
    o = _object(obj, "a commit request")
    identifier: tuple[tuple[str, ...], str] | None = None
    if o.get("identifier") is not None:
        ident = _object(o["identifier"], "the commit request's 'identifier'")
        what = "the commit request's identifier"
        identifier = (_strings(_field(ident, "namespace", what), "namespace", what),
                      _str(ident, "name", what))
    requirements = o.get("requirements", [])
    updates = o.get("updates", [])
    if not isinstance(requirements, list) or not isinstance(updates, list):
        raise ValidationError("a commit request's 'requirements' and 'updates' are arrays")
    return (identifier, [requirement_from_json(r) for r in requirements],
            [update_from_json(u) for u in updates])
