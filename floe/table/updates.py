"""Table changes as data: updates folded over metadata, requirements checked against it.

The shapes follow the spec's REST "commit table" request (``TableUpdate`` /
``TableRequirement``) and PyIceberg: each update is a small frozen value, one function
(:func:`apply_updates`) folds a list of them over a base :class:`TableMetadata`, and each
requirement's ``validate(base)`` raises :class:`CommitConflict` when the base no longer
satisfies it. The same objects serve the file-system commit and the SQL check-and-put.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from floe.clock import now_ms as clock_now_ms
from floe.errors import CommitConflict, ValidationError
from floe.metadata import (
    HISTORY_TOLERANCE_MS,
    SUPPORTED_FORMAT_VERSIONS,
    TableMetadata,
    check_history_order,
)
from floe.partitioning import PartitionSpec
from floe.properties import PREVIOUS_VERSIONS_MAX, PREVIOUS_VERSIONS_MAX_DEFAULT, int_property
from floe.schema import Schema
from floe.snapshots import (
    MAIN_BRANCH,
    MetadataLogEntry,
    PartitionStatisticsFile,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    SnapshotRefType,
    StatisticsFile,
)
from floe.sorting import UNSORTED_SORT_ORDER, SortOrder

__all__ = [
    "LAST_ADDED",
    "TableUpdate", "AssignUUID", "UpgradeFormatVersion", "AddSchema", "SetCurrentSchema",
    "AddPartitionSpec", "SetDefaultSpec", "AddSortOrder", "SetDefaultSortOrder", "AddSnapshot",
    "SetSnapshotRef", "RemoveSnapshots", "RemoveSnapshotRef", "RemovePartitionStatistics",
    "RemoveSchemas", "RemovePartitionSpecs", "SetPartitionStatistics", "SetStatistics",
    "RemoveStatistics", "SetProperties", "RemoveProperties", "SetLocation",
    "TableRequirement", "AssertCreate", "AssertTableUUID", "AssertRefSnapshotId",
    "AssertCurrentSchemaId", "AssertLastAssignedFieldId", "AssertDefaultSpecId",
    "AssertLastAssignedPartitionId", "AssertDefaultSortOrderId",
    "apply_updates", "validate_requirements", "requirements_for", "StaleUpdate",
]

class StaleUpdate(ValidationError):
    """An update whose values the table has moved past (a snapshot whose sequence number is
    not above the table's last one): made on metadata that is no longer current, so a catalog
    that applies updates itself answers it as a conflict the writer retries on fresh metadata
    (Java's ``RetryableValidationException``), not as a bad request."""


#: ``SetCurrentSchema(-1)`` etc.: the schema / spec / sort order added earlier in the same
#: list of updates (the REST spec's convention).
LAST_ADDED = -1


# -- updates ----------------------------------------------------------------------------------


class TableUpdate:
    """One change to table metadata; ``apply`` edits the fold's working state."""

    action: str = ""

    def apply(self, b: _Builder) -> None:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class AssignUUID(TableUpdate):
    uuid: str
    action = "assign-uuid"

    def apply(self, b: _Builder) -> None:
        if b.md.table_uuid is not None and b.md.table_uuid != self.uuid:
            raise ValidationError(
                f"cannot reassign table UUID {b.md.table_uuid} to {self.uuid}")
        b.replace(table_uuid=self.uuid)


@dataclass(frozen=True, slots=True)
class UpgradeFormatVersion(TableUpdate):
    format_version: int
    action = "upgrade-format-version"

    def apply(self, b: _Builder) -> None:
        if self.format_version not in SUPPORTED_FORMAT_VERSIONS:
            raise ValidationError(f"unsupported format version {self.format_version}")
        if self.format_version < b.md.format_version:
            raise ValidationError(
                f"cannot downgrade format version {b.md.format_version} to "
                f"{self.format_version}")
        b.replace(format_version=self.format_version)


@dataclass(frozen=True, slots=True)
class AddSchema(TableUpdate):
    """Add a schema (its id is reassigned: an identical schema is reused, else max + 1)."""

    schema: Schema
    last_column_id: int | None = None
    action = "add-schema"

    def apply(self, b: _Builder) -> None:
        md = b.md
        for existing in md.schemas:
            if (existing.fields == self.schema.fields
                    and existing.identifier_field_ids == self.schema.identifier_field_ids):
                b.last_added_schema_id = existing.schema_id
                return
        new_id = max((s.schema_id for s in md.schemas), default=-1) + 1
        schema = Schema(*self.schema.fields, schema_id=new_id,
                        identifier_field_ids=list(self.schema.identifier_field_ids))
        last = max(md.last_column_id, self.last_column_id or 0, schema.highest_field_id)
        b.replace(schemas=md.schemas + (schema,), last_column_id=last)
        b.last_added_schema_id = new_id


@dataclass(frozen=True, slots=True)
class SetCurrentSchema(TableUpdate):
    schema_id: int
    action = "set-current-schema"

    def apply(self, b: _Builder) -> None:
        sid = b.resolve(self.schema_id, b.last_added_schema_id, "schema")
        if b.md.schema_by_id(sid) is None:
            raise ValidationError(f"cannot set current schema to unknown schema {sid}")
        b.replace(current_schema_id=sid)


@dataclass(frozen=True, slots=True)
class AddPartitionSpec(TableUpdate):
    spec: PartitionSpec
    action = "add-spec"

    def apply(self, b: _Builder) -> None:
        md = b.md
        for existing in md.partition_specs:
            # Java reuseOrCreateNewSpecId: fields equal apart from their ids
            if existing.compatible_with(self.spec):
                b.last_added_spec_id = existing.spec_id
                return
        new_id = max((s.spec_id for s in md.partition_specs), default=-1) + 1
        spec = self.spec.with_spec_id(new_id)
        b.replace(partition_specs=md.partition_specs + (spec,),
                  last_partition_id=max(md.last_partition_id, spec.last_assigned_field_id))
        b.last_added_spec_id = new_id


@dataclass(frozen=True, slots=True)
class SetDefaultSpec(TableUpdate):
    spec_id: int
    action = "set-default-spec"

    def apply(self, b: _Builder) -> None:
        sid = b.resolve(self.spec_id, b.last_added_spec_id, "partition spec")
        if b.md.spec_by_id(sid) is None:
            raise ValidationError(f"cannot set default spec to unknown spec {sid}")
        b.replace(default_spec_id=sid)


@dataclass(frozen=True, slots=True)
class AddSortOrder(TableUpdate):
    sort_order: SortOrder
    action = "add-sort-order"

    def apply(self, b: _Builder) -> None:
        md = b.md
        if self.sort_order.is_unsorted:
            # a table created sorted has no order 0 until it is first made unsorted (Java)
            if md.sort_order_by_id(0) is None:
                b.replace(sort_orders=md.sort_orders + (UNSORTED_SORT_ORDER,))
            b.last_added_order_id = 0
            return
        for existing in md.sort_orders:
            if existing.same_order(self.sort_order):
                b.last_added_order_id = existing.order_id
                return
        new_id = max((o.order_id for o in md.sort_orders), default=0) + 1
        b.replace(sort_orders=md.sort_orders + (self.sort_order.with_order_id(new_id),))
        b.last_added_order_id = new_id


@dataclass(frozen=True, slots=True)
class SetDefaultSortOrder(TableUpdate):
    sort_order_id: int
    action = "set-default-sort-order"

    def apply(self, b: _Builder) -> None:
        oid = b.resolve(self.sort_order_id, b.last_added_order_id, "sort order")
        if b.md.sort_order_by_id(oid) is None:
            raise ValidationError(f"cannot set default sort order to unknown order {oid}")
        b.replace(default_sort_order_id=oid)


@dataclass(frozen=True, slots=True)
class AddSnapshot(TableUpdate):
    snapshot: Snapshot
    action = "add-snapshot"

    def apply(self, b: _Builder) -> None:
        md, snap = b.md, self.snapshot
        if md.snapshot_by_id(snap.snapshot_id) is not None:
            raise ValidationError(f"snapshot id {snap.snapshot_id} already exists")
        if md.format_version >= 2 and snap.sequence_number <= md.last_sequence_number \
                and snap.parent_snapshot_id is not None:
            raise StaleUpdate(
                f"cannot add snapshot with sequence number {snap.sequence_number}: not above "
                f"the last sequence number {md.last_sequence_number}")
        parent = (md.snapshot_by_id(snap.parent_snapshot_id)
                  if snap.parent_snapshot_id is not None else None)
        if parent is not None and snap.timestamp_ms - parent.timestamp_ms < -HISTORY_TOLERANCE_MS:
            raise ValidationError(
                f"snapshot {snap.snapshot_id} is stamped {snap.timestamp_ms}, more than a "
                f"minute before its parent {parent.snapshot_id} at {parent.timestamp_ms}: this "
                f"commit's clock is behind the table's history (check the clock of the machine "
                f"that commits)")
        next_row_id = md.next_row_id
        if md.format_version >= 3 and snap.first_row_id is not None:
            # Spec "Row Lineage": a snapshot's rows take ids from the table's next-row-id on,
            # which then moves past them (Java TableMetadata.Builder.addSnapshot)
            if snap.first_row_id < (next_row_id or 0):
                raise StaleUpdate(
                    f"cannot add snapshot {snap.snapshot_id} with first-row-id "
                    f"{snap.first_row_id}: behind the table's next-row-id {next_row_id}")
            next_row_id = (next_row_id or 0) + (snap.added_rows or 0)
        b.replace(snapshots=md.snapshots + (snap,),
                  last_sequence_number=max(md.last_sequence_number, snap.sequence_number),
                  next_row_id=next_row_id)
        b.added_snapshots[snap.snapshot_id] = snap
        b.timestamp_ms = snap.timestamp_ms


@dataclass(frozen=True, slots=True)
class SetSnapshotRef(TableUpdate):
    ref_name: str
    snapshot_id: int
    ref_type: SnapshotRefType = SnapshotRefType.BRANCH
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None
    action = "set-snapshot-ref"

    def apply(self, b: _Builder) -> None:
        md = b.md
        snap = md.snapshot_by_id(self.snapshot_id)
        if snap is None:
            raise ValidationError(f"cannot set ref {self.ref_name!r} to unknown snapshot "
                                  f"{self.snapshot_id}")
        ref = SnapshotRef(self.snapshot_id, self.ref_type, self.min_snapshots_to_keep,
                          self.max_snapshot_age_ms, self.max_ref_age_ms)
        if md.refs.get(self.ref_name) == ref:
            return
        changes: dict[str, object] = {"refs": {**md.refs, self.ref_name: ref}}
        if self.ref_name == MAIN_BRANCH:
            if not ref.is_branch:
                raise ValidationError("the main ref must be a branch")
            changes["current_snapshot_id"] = self.snapshot_id
            # Java: an added snapshot logs its own timestamp, a rollback logs "now"
            ts = snap.timestamp_ms if self.snapshot_id in b.added_snapshots else b.now_ms
            changes["snapshot_log"] = md.snapshot_log + (SnapshotLogEntry(ts, self.snapshot_id),)
        b.replace(**changes)


@dataclass(frozen=True, slots=True)
class RemoveSnapshots(TableUpdate):
    """Drop snapshots with their refs, statistics and partition statistics. The snapshot log
    keeps only the entries after the last one of a removed snapshot (Java
    ``updateSnapshotLog``: history before a gap need not be ancestry of the current state)."""

    snapshot_ids: tuple[int, ...]
    action = "remove-snapshots"

    def apply(self, b: _Builder) -> None:
        md, gone = b.md, set(self.snapshot_ids)
        refs = {n: r for n, r in md.refs.items() if r.snapshot_id not in gone}
        current = md.current_snapshot_id if md.current_snapshot_id not in gone else None
        log: list[SnapshotLogEntry] = []
        for entry in md.snapshot_log:
            if entry.snapshot_id in gone:
                log.clear()
            else:
                log.append(entry)
        b.replace(
            snapshots=tuple(s for s in md.snapshots if s.snapshot_id not in gone),
            snapshot_log=tuple(log),
            refs=refs, current_snapshot_id=current,
            statistics=tuple(s for s in md.statistics if s.snapshot_id not in gone),
            partition_statistics=tuple(s for s in md.partition_statistics
                                       if s.snapshot_id not in gone),
        )


@dataclass(frozen=True, slots=True)
class RemovePartitionStatistics(TableUpdate):
    """Drop the partition-statistics file registered for a snapshot (REST
    ``remove-partition-statistics``; Java's ``removeSnapshots`` does it for every removed
    snapshot). Nothing happens when there is none."""

    snapshot_id: int
    action = "remove-partition-statistics"

    def apply(self, b: _Builder) -> None:
        b.replace(partition_statistics=tuple(
            s for s in b.md.partition_statistics if s.snapshot_id != self.snapshot_id))


@dataclass(frozen=True, slots=True)
class SetStatistics(TableUpdate):
    """Register a table-statistics (Puffin) file, replacing the one of the same snapshot
    (REST ``set-statistics``)."""

    statistics: StatisticsFile
    action = "set-statistics"

    def apply(self, b: _Builder) -> None:
        new = self.statistics
        if b.md.snapshot_by_id(new.snapshot_id) is None:
            raise ValidationError(
                f"cannot set statistics of snapshot {new.snapshot_id}: no such snapshot")
        b.replace(statistics=tuple(
            s for s in b.md.statistics if s.snapshot_id != new.snapshot_id) + (new,))


@dataclass(frozen=True, slots=True)
class RemoveStatistics(TableUpdate):
    """Drop the table-statistics file of a snapshot (REST ``remove-statistics``)."""

    snapshot_id: int
    action = "remove-statistics"

    def apply(self, b: _Builder) -> None:
        b.replace(statistics=tuple(
            s for s in b.md.statistics if s.snapshot_id != self.snapshot_id))


@dataclass(frozen=True, slots=True)
class SetPartitionStatistics(TableUpdate):
    """Register a partition-statistics file, replacing the one of the same snapshot (REST
    ``set-partition-statistics``)."""

    partition_statistics: PartitionStatisticsFile
    action = "set-partition-statistics"

    def apply(self, b: _Builder) -> None:
        new = self.partition_statistics
        if b.md.snapshot_by_id(new.snapshot_id) is None:
            raise ValidationError(
                f"cannot set partition statistics of snapshot {new.snapshot_id}: no such "
                f"snapshot")
        b.replace(partition_statistics=tuple(
            s for s in b.md.partition_statistics if s.snapshot_id != new.snapshot_id) + (new,))


@dataclass(frozen=True, slots=True)
class RemoveSchemas(TableUpdate):
    schema_ids: tuple[int, ...]
    action = "remove-schemas"

    def apply(self, b: _Builder) -> None:
        if b.md.current_schema_id in self.schema_ids:
            raise ValidationError(f"cannot remove the current schema {b.md.current_schema_id}")
        b.replace(schemas=tuple(s for s in b.md.schemas if s.schema_id not in self.schema_ids))


@dataclass(frozen=True, slots=True)
class RemovePartitionSpecs(TableUpdate):
    spec_ids: tuple[int, ...]
    action = "remove-partition-specs"

    def apply(self, b: _Builder) -> None:
        if b.md.default_spec_id in self.spec_ids:
            raise ValidationError(
                f"cannot remove the default partition spec {b.md.default_spec_id}")
        b.replace(partition_specs=tuple(
            s for s in b.md.partition_specs if s.spec_id not in self.spec_ids))


@dataclass(frozen=True, slots=True)
class RemoveSnapshotRef(TableUpdate):
    ref_name: str
    action = "remove-snapshot-ref"

    def apply(self, b: _Builder) -> None:
        md = b.md
        if self.ref_name not in md.refs:
            return
        refs = {n: r for n, r in md.refs.items() if n != self.ref_name}
        if self.ref_name == MAIN_BRANCH:
            b.replace(refs=refs, current_snapshot_id=None)
        else:
            b.replace(refs=refs)


@dataclass(frozen=True, slots=True)
class SetProperties(TableUpdate):
    updates: Mapping[str, str] = field(default_factory=dict)
    action = "set-properties"

    def apply(self, b: _Builder) -> None:
        for k, v in self.updates.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ValidationError(f"table properties are strings: {k!r}={v!r}")
        b.replace(properties={**b.md.properties, **self.updates})


@dataclass(frozen=True, slots=True)
class RemoveProperties(TableUpdate):
    removals: tuple[str, ...]
    action = "remove-properties"

    def apply(self, b: _Builder) -> None:
        b.replace(properties={k: v for k, v in b.md.properties.items()
                              if k not in self.removals})


@dataclass(frozen=True, slots=True)
class SetLocation(TableUpdate):
    location: str
    action = "set-location"

    def apply(self, b: _Builder) -> None:
        if not self.location:
            raise ValidationError("table location must not be empty")
        b.replace(location=self.location.rstrip("/") or self.location)


class _Builder:
    """Working state of one fold: the metadata so far plus ids added earlier in the list."""

    def __init__(self, md: TableMetadata, now_ms: int) -> None:
        self.md = md
        self.now_ms = now_ms
        self.timestamp_ms: int | None = None
        self.last_added_schema_id: int | None = None
        self.last_added_spec_id: int | None = None
        self.last_added_order_id: int | None = None
        self.added_snapshots: dict[int, Snapshot] = {}

    def replace(self, **changes: object) -> None:
        self.md = dataclasses.replace(self.md, **changes)  # type: ignore[arg-type]

    @staticmethod
    def resolve(value: int, last_added: int | None, what: str) -> int:
        if value != LAST_ADDED:
            return value
        if last_added is None:
            raise ValidationError(f"no {what} was added before referring to the last added one")
        return last_added


def apply_updates(
    base: TableMetadata,
    updates: Sequence[TableUpdate],
    base_location: str | None = None,
    *,
    now_ms: int | None = None,
) -> TableMetadata:
    """Fold ``updates`` over ``base`` (Java ``TableMetadata.Builder``).

    Sets ``last-updated-ms`` (the added snapshot's timestamp, else now by
    :func:`floe.clock.now_ms`); when ``base_location`` is given, records it in the
    ``metadata-log`` and trims the log to ``write.metadata.previous-versions-max`` entries
    (default 100, at least 1). The result is checked as Java checks metadata it builds
    (:func:`floe.metadata.check_history_order`): history that goes back in time by more
    than a minute is a :class:`ValidationError`, and the commit fails without retrying.
    """
    now = now_ms if now_ms is not None else clock_now_ms()
    b = _Builder(base, now)
    for update in updates:
        update.apply(b)
    if not updates:
        return base
    changes: dict[str, object] = {
        "last_updated_ms": b.timestamp_ms if b.timestamp_ms is not None else now}
    if base_location is not None:
        keep = max(1, int_property(b.md, PREVIOUS_VERSIONS_MAX, PREVIOUS_VERSIONS_MAX_DEFAULT))
        log = b.md.metadata_log + (MetadataLogEntry(base.last_updated_ms, base_location),)
        changes["metadata_log"] = log[-keep:]
    b.replace(**changes)
    check_history_order(b.md)
    return b.md


# -- requirements -----------------------------------------------------------------------------


class TableRequirement:
    """A precondition on the base metadata (``None`` when the table does not exist)."""

    type: str = ""

    def validate(self, base: TableMetadata | None) -> None:
        raise NotImplementedError

    @staticmethod
    def _need(base: TableMetadata | None) -> TableMetadata:
        if base is None:
            raise CommitConflict("requirement failed: the table does not exist")
        return base


@dataclass(frozen=True, slots=True)
class AssertCreate(TableRequirement):
    type = "assert-create"

    def validate(self, base: TableMetadata | None) -> None:
        if base is not None:
            raise CommitConflict("requirement failed: the table already exists")


@dataclass(frozen=True, slots=True)
class AssertTableUUID(TableRequirement):
    uuid: str | None
    type = "assert-table-uuid"

    def validate(self, base: TableMetadata | None) -> None:
        md = self._need(base)
        if md.table_uuid != self.uuid:
            raise CommitConflict(
                f"requirement failed: table UUID changed from {self.uuid} to {md.table_uuid} "
                f"(the table was dropped and re-created or replaced underneath this writer)")


@dataclass(frozen=True, slots=True)
class AssertRefSnapshotId(TableRequirement):
    ref: str
    snapshot_id: int | None
    type = "assert-ref-snapshot-id"

    def validate(self, base: TableMetadata | None) -> None:
        md = self._need(base)
        current = md.refs.get(self.ref)
        actual = current.snapshot_id if current is not None else None
        if actual != self.snapshot_id:
            raise CommitConflict(
                f"requirement failed: ref {self.ref!r} is at snapshot {actual}, expected "
                f"{self.snapshot_id}")


def _check_int(actual: int, expected: int, what: str) -> None:
    if actual != expected:
        raise CommitConflict(
            f"requirement failed: {what} changed from {expected} to {actual} (a concurrent "
            f"commit changed it)")


@dataclass(frozen=True, slots=True)
class AssertCurrentSchemaId(TableRequirement):
    value: int
    type = "assert-current-schema-id"

    def validate(self, base: TableMetadata | None) -> None:
        _check_int(self._need(base).current_schema_id, self.value, "current schema id")


@dataclass(frozen=True, slots=True)
class AssertLastAssignedFieldId(TableRequirement):
    value: int
    type = "assert-last-assigned-field-id"

    def validate(self, base: TableMetadata | None) -> None:
        _check_int(self._need(base).last_column_id, self.value, "last assigned field id")


@dataclass(frozen=True, slots=True)
class AssertDefaultSpecId(TableRequirement):
    value: int
    type = "assert-default-spec-id"

    def validate(self, base: TableMetadata | None) -> None:
        _check_int(self._need(base).default_spec_id, self.value, "default spec id")


@dataclass(frozen=True, slots=True)
class AssertLastAssignedPartitionId(TableRequirement):
    value: int
    type = "assert-last-assigned-partition-id"

    def validate(self, base: TableMetadata | None) -> None:
        _check_int(self._need(base).last_partition_id, self.value, "last assigned partition id")


@dataclass(frozen=True, slots=True)
class AssertDefaultSortOrderId(TableRequirement):
    value: int
    type = "assert-default-sort-order-id"

    def validate(self, base: TableMetadata | None) -> None:
        _check_int(self._need(base).default_sort_order_id, self.value, "default sort order id")


def validate_requirements(
    requirements: Iterable[TableRequirement], base: TableMetadata | None
) -> None:
    for requirement in requirements:
        requirement.validate(base)


def requirements_for(
    base: TableMetadata, updates: Sequence[TableUpdate]
) -> list[TableRequirement]:
    """What a catalog that applies ``updates`` to its own current metadata (a REST catalog)
    must check first so that they mean what they meant on ``base`` (Java
    ``UpdateRequirements.forUpdateTable``): the table UUID; each ref set is still where it
    was; the last column / partition ids before a schema / spec is added; the current
    schema, default spec and default sort order before they change; no branch moved before
    schemas or specs are removed. Floe adds one Java leaves out: removing snapshots also
    requires every ref of ``base`` unchanged, since the files only those snapshots reached
    are deleted after the commit."""
    out: list[TableRequirement] = (
        [AssertTableUUID(base.table_uuid)] if base.table_uuid is not None else [])
    refs_done: set[str] = set()
    done: set[str] = set()

    def once(key: str, requirement: TableRequirement) -> None:
        if key not in done:
            done.add(key)
            out.append(requirement)

    def ref(name: str) -> None:
        if name not in refs_done:
            refs_done.add(name)
            current = base.refs.get(name)
            out.append(AssertRefSnapshotId(name, current.snapshot_id if current else None))

    for update in updates:
        if isinstance(update, SetSnapshotRef):
            ref(update.ref_name)
        elif isinstance(update, AddSchema):
            once("field-id", AssertLastAssignedFieldId(base.last_column_id))
        elif isinstance(update, SetCurrentSchema):
            once("schema", AssertCurrentSchemaId(base.current_schema_id))
        elif isinstance(update, AddPartitionSpec):
            once("partition-id", AssertLastAssignedPartitionId(base.last_partition_id))
        elif isinstance(update, SetDefaultSpec):
            once("spec", AssertDefaultSpecId(base.default_spec_id))
        elif isinstance(update, SetDefaultSortOrder):
            once("order", AssertDefaultSortOrderId(base.default_sort_order_id))
        elif isinstance(update, RemovePartitionSpecs | RemoveSchemas | RemoveSnapshots):
            if isinstance(update, RemovePartitionSpecs):
                once("spec", AssertDefaultSpecId(base.default_spec_id))
            elif isinstance(update, RemoveSchemas):
                once("schema", AssertCurrentSchemaId(base.current_schema_id))
            for name, r in sorted(base.refs.items()):
                if isinstance(update, RemoveSnapshots) or (r.is_branch
                                                           and name != MAIN_BRANCH):
                    ref(name)
    return out
