"""Transactions and the commit loop (Java ``BaseTransaction`` + ``SnapshotProducer.commit``).

A transaction collects pending operations. :meth:`Transaction.commit` is the one commit
loop: apply every operation to the base and hand the updates with the requirements they
rely on to the catalog (:meth:`Catalog.commit_updates`: a file-system or SQL catalog folds
them and swaps its pointer, a REST catalog sends them). On :class:`CommitConflict` from the
catalog it refreshes the table, re-applies the
operations against the fresh base (which re-validates them: requirements, files still live)
and retries with exponential backoff and jitter, governed by ``commit.retry.*``. A
conflict found by validation is final. When the swap's outcome is unknown nothing is
deleted; after success the files of losing attempts are deleted, after a final failure
every file the attempts wrote.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from floe.errors import CommitConflict, CommitNotApplied, CommitStateUnknown, ValidationError
from floe.manifest import DataFile
from floe.metadata import TableMetadata
from floe.partitioning import PartitionSpec
from floe.schema import Schema
from floe.snapshots import MAIN_BRANCH, Operation, SnapshotRefType
from floe.sorting import SortOrder
from floe.properties import (
    COMMIT_MAX_WAIT_MS,
    COMMIT_MIN_WAIT_MS,
    COMMIT_NUM_RETRIES,
    COMMIT_TOTAL_TIMEOUT_MS,
    MANIFEST_MERGE_ENABLED,
    MANIFEST_MERGE_ENABLED_DEFAULT,
    WAP_ID,
    bool_property,
    int_property,
)
from floe.table.snapshot_producer import (
    MetadataOperation,
    PendingOperation,
    SnapshotProducer,
)
from floe.table.updates import (
    LAST_ADDED,
    AddPartitionSpec,
    AddSchema,
    AddSortOrder,
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
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetProperties,
    SetSnapshotRef,
    TableRequirement,
    TableUpdate,
    UpgradeFormatVersion,
    apply_updates,
    validate_requirements,
)
from floe.table.writer import write_data_files

if TYPE_CHECKING:
    from floe.table.manage_snapshots import ManageSnapshots
    from floe.table.table import Table
    from floe.table.update_schema import UpdateSchema
    from floe.table.update_spec import ReplaceSortOrder, UpdateSpec
    from floe.table.validation import CommitValidation

__all__ = ["RetryPolicy", "Transaction"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``commit.retry.*`` table properties (Java defaults: 4 retries, 100 ms … 60 s,
    30 minutes in total)."""

    num_retries: int = 4
    min_wait_ms: int = 100
    max_wait_ms: int = 60_000
    total_timeout_ms: int = 1_800_000

    @classmethod
    def from_metadata(cls, md: TableMetadata) -> RetryPolicy:
        d = cls()
        policy = cls(
            int_property(md, COMMIT_NUM_RETRIES, d.num_retries),
            int_property(md, COMMIT_MIN_WAIT_MS, d.min_wait_ms),
            int_property(md, COMMIT_MAX_WAIT_MS, d.max_wait_ms),
            int_property(md, COMMIT_TOTAL_TIMEOUT_MS, d.total_timeout_ms),
        )
        if min(policy.num_retries, policy.min_wait_ms, policy.max_wait_ms,
               policy.total_timeout_ms) < 0:
            raise ValidationError(f"commit.retry.* properties must not be negative: {policy}")
        return policy

    def delay_ms(self, failed_attempts: int, elapsed_ms: float) -> float | None:
        """Wait before the next attempt, or None when retries are exhausted (Java
        ``Tasks``: ``min(min_wait * 2^(n-1), max_wait)`` plus up to 10% jitter)."""
        if failed_attempts > self.num_retries:
            return None
        delay: float = min(self.min_wait_ms * 2 ** (failed_attempts - 1), self.max_wait_ms)
        delay += random.uniform(0, 0.1 * delay)
        if elapsed_ms + delay > self.total_timeout_ms:
            return None
        return delay


class Transaction:
    """Changes to one table, committed atomically by :meth:`commit`.

    Builders return the transaction, so calls chain. Requirements that a change relies on
    (the schema it was based on, ...) are captured from the metadata the transaction
    started from and checked against every refreshed base.
    """

    def __init__(self, table: Table) -> None:
        self.table = table
        self.start_metadata = table.metadata
        self.operations: list[PendingOperation] = []
        self.requirements: list[TableRequirement] = [AssertTableUUID(table.metadata.table_uuid)]
        self.attempts = 0
        self._done = False

    @property
    def _base(self) -> TableMetadata:
        return self.start_metadata

    def _add(self, op: PendingOperation) -> Transaction:
        if self._done:
            raise ValidationError("this transaction was already committed")
        self.operations.append(op)
        return self

    def _updates(self, updates: Sequence[TableUpdate],
                 requirements: Sequence[TableRequirement] = ()) -> Transaction:
        return self._add(MetadataOperation(updates, requirements))

    def add_updates(self, updates: Sequence[TableUpdate],
                    requirements: Sequence[TableRequirement] = ()) -> Transaction:
        """Stage fixed metadata updates, checked at commit against ``requirements``."""
        return self._updates(updates, requirements)

    def add_operation(self, op: PendingOperation) -> Transaction:
        """Stage an operation that is re-applied to the refreshed base on every attempt."""
        return self._add(op)

    @property
    def base_metadata(self) -> TableMetadata:
        """The metadata the next change builds on: the start metadata with the metadata-only
        changes staged so far applied (so a spec change sees a column added before it in the
        same transaction, as in Java's transaction table)."""
        md = self._base
        for op in self.operations:
            if isinstance(op, MetadataOperation):
                md = apply_updates(md, op.apply(md))
        return md

    # -- evolution builders (each stages its changes into this transaction on commit()) ----

    def update_schema(self, *, allow_incompatible: bool = False,
                      case_sensitive: bool = True) -> UpdateSchema:
        from floe.table.update_schema import UpdateSchema

        return UpdateSchema(self, allow_incompatible=allow_incompatible,
                            case_sensitive=case_sensitive)

    def update_spec(self, *, case_sensitive: bool = True) -> UpdateSpec:
        from floe.table.update_spec import UpdateSpec

        return UpdateSpec(self, case_sensitive=case_sensitive)

    def replace_sort_order(self, *, case_sensitive: bool = True) -> ReplaceSortOrder:
        from floe.table.update_spec import ReplaceSortOrder

        return ReplaceSortOrder(self, case_sensitive=case_sensitive)

    def manage_snapshots(self) -> ManageSnapshots:
        """Rollback, set-current, cherry-pick, branches and tags, staged in this transaction."""
        from floe.table.manage_snapshots import ManageSnapshots

        return ManageSnapshots(self)

    # -- metadata changes ----------------------------------------------------------------

    def set_properties(self, updates: Mapping[str, str]) -> Transaction:
        return self._updates([SetProperties(dict(updates))])

    def remove_properties(self, keys: Iterable[str]) -> Transaction:
        return self._updates([RemoveProperties(tuple(keys))])

    def set_location(self, location: str) -> Transaction:
        return self._updates([SetLocation(location)])

    def upgrade_format_version(self, format_version: int) -> Transaction:
        return self._updates([UpgradeFormatVersion(format_version)])

    def set_schema(self, schema: Schema) -> Transaction:
        """Add ``schema`` (field ids already assigned) and make it current. Fails at commit
        when the current schema or the last column id changed underneath."""
        base = self._base
        last = max(base.last_column_id, schema.highest_field_id)
        return self._updates(
            [AddSchema(schema, last), SetCurrentSchema(LAST_ADDED)],
            [AssertCurrentSchemaId(base.current_schema_id),
             AssertLastAssignedFieldId(base.last_column_id)],
        )

    def set_spec(self, spec: PartitionSpec) -> Transaction:
        """Add ``spec`` and make it the default; fails when the spec changed underneath."""
        base = self._base
        return self._updates(
            [AddPartitionSpec(spec), SetDefaultSpec(LAST_ADDED)],
            [AssertDefaultSpecId(base.default_spec_id),
             AssertLastAssignedPartitionId(base.last_partition_id)],
        )

    def set_sort_order(self, order: SortOrder) -> Transaction:
        return self._updates(
            [AddSortOrder(order), SetDefaultSortOrder(LAST_ADDED)],
            [AssertDefaultSortOrderId(self._base.default_sort_order_id)],
        )

    def set_ref(self, name: str, snapshot_id: int,
                ref_type: SnapshotRefType = SnapshotRefType.BRANCH) -> Transaction:
        """Point a branch or tag at a snapshot; fails if the ref moved underneath."""
        current = self._base.refs.get(name)
        return self._updates(
            [SetSnapshotRef(name, snapshot_id, ref_type)],
            [AssertRefSnapshotId(name, current.snapshot_id if current else None)],
        )

    def remove_ref(self, name: str) -> Transaction:
        return self._updates([RemoveSnapshotRef(name)])

    def remove_snapshots(self, snapshot_ids: Iterable[int]) -> Transaction:
        return self._updates([RemoveSnapshots(tuple(snapshot_ids))])

    # -- snapshots -----------------------------------------------------------------------

    def append(self, rows: pa.Table, *,
               branch: str = MAIN_BRANCH, wap_id: str | None = None) -> Transaction:
        """Write ``rows`` now as data files of the table's schema and spec, and append them
        at commit (a merge append) to ``branch``. With ``wap_id`` the snapshot is staged
        (write-audit-publish): added with ``wap.id`` in its summary, no branch moves. The
        files are deleted if the commit fails."""
        written: list[str] = []
        try:
            files = write_data_files(self.table.io, self._base, rows, written=written)
        except BaseException:
            for path in written:
                self.table.io.delete(path, missing_ok=True)
            raise
        return self.append_files(files, owned_files=written, branch=branch, wap_id=wap_id)

    def append_files(
        self, files: Sequence[DataFile], *, merge: bool | None = None,
        owned_files: Iterable[str] = (),
        branch: str = MAIN_BRANCH, wap_id: str | None = None,
    ) -> Transaction:
        """Append existing data files. ``merge=None`` follows ``commit.manifest-merge.enabled``
        (a merge append); ``owned_files`` are deleted if the commit fails."""
        if merge is None:
            merge = bool_property(self._base, MANIFEST_MERGE_ENABLED,
                                  MANIFEST_MERGE_ENABLED_DEFAULT)
        return self._add(SnapshotProducer(
            self.table.io, added=files, merge=merge, operation=Operation.APPEND,
            owned_files=owned_files, branch=branch,
            stage_only=wap_id is not None,
            summary_properties={WAP_ID: wap_id} if wap_id is not None else None))

    def fast_append(self, files: Sequence[DataFile], *, owned_files: Iterable[str] = (),
                    branch: str = MAIN_BRANCH) -> Transaction:
        """One new manifest, the parent's manifests carried over unchanged."""
        return self.append_files(files, merge=False, owned_files=owned_files, branch=branch)

    def overwrite(self, delete_paths: Iterable[str], add_files: Sequence[DataFile] = (), *,
                  owned_files: Iterable[str] = (), operation: Operation | None = None,
                  branch: str = MAIN_BRANCH,
                  validation: CommitValidation | None = None,
                  summary_properties: dict[str, str] | None = None) -> Transaction:
        """Remove files by path and add others in one snapshot (``overwrite``, or
        ``replace`` for a rewrite that keeps the rows). Each removed file must still be live
        when the commit happens, else CommitConflict; ``validation`` checks the commits that
        landed since the operation started."""
        return self._add(SnapshotProducer(
            self.table.io, added=add_files, deleted=delete_paths, operation=operation,
            owned_files=owned_files, branch=branch,
            validation=validation, summary_properties=summary_properties))

    def delete_files(self, paths: Iterable[str], *, branch: str = MAIN_BRANCH) -> Transaction:
        """Remove data or delete files by path (a ``delete`` snapshot)."""
        return self._add(SnapshotProducer(
            self.table.io, deleted=paths, operation=Operation.DELETE, branch=branch))

    # -- row-level changes (floe.table.row_level): planned now, re-validated per attempt --

    def delete_where(self, row_filter: Any, *, mode: str | None = None,
                     branch: str = MAIN_BRANCH, isolation_level: str | None = None,
                     case_sensitive: bool = True) -> Transaction:
        """Delete the rows matching ``row_filter``: copy-on-write or merge-on-read (``mode``,
        default ``write.delete.mode``), validated per ``write.delete.isolation-level``."""
        from floe.table import row_level

        row_level.stage_delete(self, row_filter, mode=mode, branch=branch,
                               isolation_level=isolation_level, case_sensitive=case_sensitive)
        return self

    def overwrite_by_filter(self, row_filter: Any, rows: pa.Table, *,
                            branch: str = MAIN_BRANCH, isolation_level: str | None = None,
                            case_sensitive: bool = True) -> Transaction:
        """Replace the rows matching ``row_filter`` by ``rows`` (which must match it) in one
        snapshot."""
        from floe.table import row_level

        row_level.stage_overwrite_by_filter(
            self, row_filter, rows, branch=branch, isolation_level=isolation_level,
            case_sensitive=case_sensitive)
        return self

    def overwrite_partitions(self, rows: pa.Table, *, branch: str = MAIN_BRANCH,
                             isolation_level: str | None = None) -> Transaction:
        """Dynamic partition overwrite: replace every partition ``rows`` write to."""
        from floe.table import row_level

        row_level.stage_overwrite_partitions(self, rows, branch=branch,
                                             isolation_level=isolation_level)
        return self

    def delete_equal(self, columns: Sequence[str], keys: pa.Table, *, scope: str = "auto",
                     branch: str = MAIN_BRANCH) -> Transaction:
        """Equality deletes: rows whose ``columns`` equal a row of ``keys`` (null = null),
        per partition (``auto`` / ``partition``) or global (``global``, needs an
        unpartitioned spec)."""
        from floe.table import row_level

        row_level.stage_equality_delete(self, columns, keys, scope=scope, branch=branch)
        return self

    # -- the commit loop -----------------------------------------------------------------

    def _apply(self, base: TableMetadata
               ) -> tuple[list[TableRequirement], list[TableUpdate]]:
        """Every operation applied to ``base``: the requirements they rely on (checked here
        against ``base``) and the updates they make, for :meth:`Catalog.commit_updates`."""
        validate_requirements(self.requirements, base)
        requirements = list(self.requirements)
        md = base
        updates: list[TableUpdate] = []
        for op in self.operations:
            validate_requirements(op.requirements, base)
            requirements += [r for r in op.requirements if r not in requirements]
            op_updates = op.apply(md)
            md = apply_updates(md, op_updates)
            updates += op_updates
        return requirements, updates

    def commit(self) -> Table:
        """Commit every pending operation atomically; returns the refreshed table."""
        if self._done:
            raise ValidationError("this transaction was already committed")
        self._done = True
        table = self.table
        if not self.operations:
            return table  # nothing staged: no new metadata version
        try:
            # Java refreshes before every attempt: the first one too, so a long-lived Table
            # does not build on metadata (or files) that are long gone
            table.refresh(force=True)
        except Exception:
            self._clean_up(committed=False)
            raise
        base, base_location = table.metadata, table.metadata_location
        policy = RetryPolicy.from_metadata(base)
        started = time.monotonic()
        outcome_known = True
        try:
            while True:
                self.attempts += 1
                requirements, updates = self._apply(base)
                try:
                    location, new_metadata = table.catalog.commit_updates(
                        table.identifier, base_location, base, requirements, updates)
                    break
                except CommitConflict as e:
                    delay = policy.delay_ms(self.attempts, (time.monotonic() - started) * 1000)
                    if delay is None:
                        raise CommitConflict(
                            f"table {table.identifier}: commit failed after {self.attempts} "
                            f"attempt(s), the last conflict: {e}") from e
                    log.info("table %s: %s; retrying in %.0f ms", table.identifier, e, delay)
                    time.sleep(delay / 1000)
                    table.refresh()
                    base, base_location = table.metadata, table.metadata_location
                except CommitStateUnknown:
                    outcome_known = False
                    raise
                except (ValidationError, CommitNotApplied):
                    raise  # the catalog refused, or failed, before publishing anything
                except Exception:
                    outcome_known = False  # the swap failed in an unexpected way
                    raise
        except Exception:
            if outcome_known:
                self._clean_up(committed=False)
            raise
        table.metadata, table.metadata_location = new_metadata, location
        self._clean_up(committed=True)
        return table

    def _clean_up(self, committed: bool) -> None:
        for op in self.operations:
            op.clean_up(committed)
