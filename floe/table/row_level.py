"""Row-level deletes and overwrites, planned and staged into a transaction, committed and
validated the way Spark + Iceberg Java commit them.

Spec "Row-level Deletes" and "Commit Conflict Resolution and Retry"; the Java behaviour is
that of ``SparkTable.deleteWhere`` (metadata-only delete: ``DeleteFiles.deleteFromRowFilter``),
``SparkWrite.CopyOnWriteOperation`` (``OverwriteFiles``), ``SparkPositionDeltaWrite``
(``RowDelta``), ``SparkWrite.OverwriteByFilter`` (``OverwriteFiles.overwriteByRowFilter``) and
``SparkWrite.DynamicOverwrite`` (``ReplacePartitions``) at Iceberg 1.10.

A delete is planned on the head of its branch (:func:`plan_delete`): data files whose rows all
match the filter (strict partition projection or strict metrics) are removed whole and never
read; files that may match partly are rewritten without the matching rows (copy-on-write) or
get position deletes for the matching rows that are still live (merge-on-read). When no file
matches partly the delete is metadata-only, as Spark's ``deleteWhere``: an ``OPERATION
delete`` snapshot whose removed files are worked out again against every base the commit is
applied to, like Java's row-filter delete. Filters follow SQL: a row where the filter is NULL
is not deleted.

Validation per isolation level (``write.delete.isolation-level``, default serializable), as
Spark enables Java's checks:

========================  =====================================  ===========================
operation                 serializable                           snapshot
========================  =====================================  ===========================
copy-on-write delete      new data matching the filter;          replaced files
                          new deletes for the replaced files
merge-on-read delete      new data matching the filter;          referenced files still live
                          files the position deletes reference
                          still live
overwrite by filter       new data, new deletes and removed      new deletes and removed
                          data matching the filter               data matching the filter
dynamic overwrite         the same, limited to the partitions    (same, partitions)
========================  =====================================  ===========================

Spark's overwrites validate only when given an isolation level; without one floe still checks
that no delete was added for a file it rewrote (Java never rewrites there, it refuses files
that match partly), because rewriting such a file would resurrect the deleted rows.
Whole-file removals of a metadata-only delete, an overwrite by filter and a dynamic overwrite
are re-evaluated at every commit attempt, so rows appended meanwhile are replaced as Java
replaces them.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from floe.errors import CommitConflict, FloeError, InvalidArgument, ValidationError
from floe.expressions import (
    IN_PREDICATE_LIMIT,
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThanOrEqual,
    Or,
    StrictMetricsEvaluator,
    arrow_filter,
    bind,
    walk_predicates,
)
from floe.io import FileIO
from floe.table.delete_writer import (
    equality_delete_schema,
    write_equality_deletes,
    write_position_deletes,
)
from floe.io.parquet import to_arrow_type
from floe.scan.readers import ROW_POSITION, ReadOptions, read_task
from floe.manifest import DataFile, ManifestContent, read_manifest_list
from floe.metadata import TableMetadata
from floe.properties import (
    COPY_ON_WRITE,
    DELETE_ISOLATION_LEVEL,
    DELETE_MODE,
    MERGE_ON_READ,
    SERIALIZABLE,
    SNAPSHOT,
    choice_property,
)
from floe.scan import _expr
from floe.scan.filters import ScanFilter
from floe.scan.manifests import DEFAULT_CACHE, read_live_entries
from floe.scan.planning import FileScanTask, ScanPlan, plan_files
from floe.schema import Schema
from floe.snapshots import MAIN_BRANCH, Operation, Snapshot
from floe.table.snapshot_producer import PendingOperation, SnapshotProducer, branch_head
from floe.table.updates import TableUpdate
from floe.table.validation import CommitValidation
from floe.table.writer import write_data_files
from floe.types import DoubleType, FloatType

if TYPE_CHECKING:
    from floe.table.transaction import Transaction

__all__ = [
    "DeletePlan",
    "EQUALITY_SCOPES",
    "check_delete",
    "plan_delete",
    "stage_delete",
    "stage_equality_delete",
    "stage_overwrite_by_filter",
    "stage_overwrite_partitions",
    "overwrite_by_filter_operation",
    "replace_partitions_operation",
    "check_rows_match",
    "remove_written",
]

log = logging.getLogger(__name__)

DELETE_MODES = (COPY_ON_WRITE, MERGE_ON_READ)
ISOLATION_LEVELS = (SERIALIZABLE, SNAPSHOT)
#: ``auto``: one file if every spec of the table is unpartitioned, else one per partition
#: whose live files may hold a key; ``partition``: the same, refused on an unpartitioned
#: table; ``global``: one file in an unpartitioned spec, applying to every partition.
EQUALITY_SCOPES = ("auto", "partition", "global")
#: Java ``SnapshotSummary.REPLACE_PARTITIONS_PROP``.
REPLACE_PARTITIONS = "replace-partitions"
#: Partial files read and rewritten at once (Parquet decoding and writing release the GIL).
READ_THREADS = min(4, os.cpu_count() or 1)

T = TypeVar("T")
R = TypeVar("R")


# -- planning -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeletePlan:
    """What a delete would do, computed without writing anything (the explorer's preview).

    ``removed`` are data files every row of which matches (strict partition projection or
    strict metrics): removed whole, never read. ``partial`` may hold matching rows: rewritten
    (copy-on-write) or given position deletes (merge-on-read). No ``partial`` file means a
    metadata-only delete. ``removed_delete_files`` are delete files all of whose rows match
    the filter: the row-filter operations (a metadata-only delete, an overwrite by filter)
    drop them, as Java's row-filter delete does; copy-on-write and merge-on-read leave them,
    as Spark's do.
    """

    metadata: TableMetadata
    mode: str
    branch: str
    snapshot_id: int | None
    schema: Schema
    row_filter: BooleanExpression
    bound_filter: BooleanExpression
    removed: tuple[FileScanTask, ...]
    partial: tuple[FileScanTask, ...]
    removed_delete_files: tuple[DataFile, ...]
    case_sensitive: bool = True

    @property
    def metadata_only(self) -> bool:
        return not self.partial

    @property
    def matches_nothing(self) -> bool:
        """The filter is false for every row (Spark skips such a delete)."""
        return isinstance(self.bound_filter, AlwaysFalse)

    @property
    def rows_in_removed_files(self) -> int:
        """Rows the removed files hold (before the deletes already applied to them)."""
        return sum(t.data_file.record_count for t in self.removed)

    @property
    def rows_in_partial_files(self) -> int:
        return sum(t.data_file.record_count for t in self.partial)

    @property
    def estimated_deleted_rows(self) -> int:
        """An estimate: every row of the files removed whole plus half of the rows of the
        files that may match partly (how many do is only known by reading them)."""
        return self.rows_in_removed_files + self.rows_in_partial_files // 2

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "branch": self.branch,
            "snapshot_id": self.snapshot_id,
            "row_filter": str(self.row_filter),
            "metadata_only": self.metadata_only,
            "removed_files": [t.data_file.file_path for t in self.removed],
            "partial_files": [t.data_file.file_path for t in self.partial],
            "removed_delete_files": [f.file_path for f in self.removed_delete_files],
            "rows_in_removed_files": self.rows_in_removed_files,
            "rows_in_partial_files": self.rows_in_partial_files,
            "estimated_deleted_rows": self.estimated_deleted_rows,
        }


def _choice(value: str, choices: tuple[str, ...], what: str) -> str:
    v = value.strip().lower()
    if v not in choices:
        raise ValidationError(f"unknown {what} {value!r}: use one of {', '.join(choices)}")
    return v


def _delete_mode(md: TableMetadata, mode: str | None) -> str:
    if mode is None:
        return choice_property(md, DELETE_MODE, DELETE_MODES, COPY_ON_WRITE)
    return _choice(mode, DELETE_MODES, "delete mode")


def _isolation(md: TableMetadata, level: str | None, default_from_table: bool) -> str | None:
    """The isolation level: given, else the table's ``write.delete.isolation-level`` for a
    delete; None (no validation, Spark's default) for an overwrite."""
    if level is not None:
        return _choice(level, ISOLATION_LEVELS, "isolation level")
    if default_from_table:
        return choice_property(md, DELETE_ISOLATION_LEVEL, ISOLATION_LEVELS, SERIALIZABLE)
    return None


def _plan_ref(md: TableMetadata, branch: str) -> tuple[Snapshot | None, str | None]:
    """The branch head a commit builds on, and the ref to plan with (a branch that does not
    exist yet starts at the current snapshot)."""
    head = branch_head(md, branch)
    return head, branch if branch in md.refs else None


@dataclass(frozen=True)
class _Classified:
    plan: ScanPlan
    removed: tuple[FileScanTask, ...]
    partial: tuple[FileScanTask, ...]


def _classify(io: FileIO, md: TableMetadata, branch: str, row_filter: Any,
              case_sensitive: bool) -> _Classified:
    """Candidates of the filter on the branch head, split into fully and partly matching."""
    _, ref = _plan_ref(md, branch)
    plan = plan_files(io, md, ref=ref, row_filter=row_filter, case_sensitive=case_sensitive)
    if isinstance(plan.bound_filter, AlwaysFalse):
        return _Classified(plan, (), ())
    strict = StrictMetricsEvaluator(plan.schema, plan.bound_filter, case_sensitive)
    removed: list[FileScanTask] = []
    partial: list[FileScanTask] = []
    for task in plan.tasks:
        # a None residual: the partition alone proves every row matches
        if task.residual is None or strict.eval(task.data_file):
            removed.append(task)
        else:
            partial.append(task)
    return _Classified(plan, tuple(removed), tuple(partial))


def _matching_delete_files(io: FileIO, md: TableMetadata, plan: ScanPlan) -> list[DataFile]:
    """Live delete files all of whose rows match the filter: their partition does (strict
    projection) or their own metrics do (Java ``ManifestFilterManager`` with a row filter)."""
    snap = plan.snapshot
    if snap is None or snap.manifest_list is None or plan.bound_filter is None:
        return []
    manifests = [m for m in read_manifest_list(io, snap.manifest_list)
                 if m.content == ManifestContent.DELETES]
    if not manifests:
        return []
    scan_filter = ScanFilter(md, plan.schema, plan.row_filter, plan.case_sensitive)
    strict = StrictMetricsEvaluator(plan.schema, plan.bound_filter, plan.case_sensitive)
    out = []
    for m, live in zip(manifests, read_live_entries(io, manifests, DEFAULT_CACHE), strict=True):
        spec_filter = scan_filter.for_spec(m.partition_spec_id)
        for e in live:
            df = e.data_file
            if spec_filter.residual_for(tuple(df.partition)) is None or strict.eval(df):
                out.append(df)
    return out


def _require_filter(row_filter: Any) -> None:
    if row_filter is None or (isinstance(row_filter, str) and not row_filter.strip()):
        raise ValidationError("give a filter for the rows to delete ('true' deletes every row)")


def check_delete(md: TableMetadata, row_filter: Any, *, mode: str | None = None,
                 branch: str = MAIN_BRANCH) -> str:
    """The checks :func:`plan_delete` makes before reading any manifest (a caller may run
    them first, e.g. before queueing a task): a filter is given, the mode is known and the
    table's format version can take it, the branch can take a commit. Returns the mode;
    InvalidArgument naming the argument (an unknown column is found when the filter is
    bound)."""
    try:
        _require_filter(row_filter)
    except ValidationError as e:
        raise InvalidArgument("row_filter", str(e)) from None
    try:
        chosen = _delete_mode(md, mode)
    except ValidationError as e:
        raise InvalidArgument("mode", str(e)) from None
    if chosen == MERGE_ON_READ and md.format_version != 2:
        why = ("format version 1 has no delete files" if md.format_version < 2 else
               "floe does not write the deletion vectors format version 3 needs")
        raise InvalidArgument(
            "mode", f"cannot delete merge-on-read from table {md.location}: {why}; use "
                    "copy-on-write")
    try:
        _plan_ref(md, branch)
    except ValidationError as e:
        raise InvalidArgument("branch", str(e)) from None
    return chosen


def plan_delete(io: FileIO, md: TableMetadata, row_filter: Any, *, mode: str | None = None,
                branch: str = MAIN_BRANCH, case_sensitive: bool = True) -> DeletePlan:
    """Plan a delete of the rows matching ``row_filter`` on ``branch``; nothing is written.

    ``mode`` defaults to ``write.delete.mode`` (copy-on-write). Merge-on-read needs format
    version 2 (v1 has no delete files; v3 would need deletion vectors, which floe does not
    write). An unknown column is a ValidationError from binding the filter.
    """
    chosen = check_delete(md, row_filter, mode=mode, branch=branch)
    head, _ = _plan_ref(md, branch)
    c = _classify(io, md, branch, row_filter, case_sensitive)
    dangling = _matching_delete_files(io, md, c.plan)
    return DeletePlan(
        metadata=md, mode=chosen, branch=branch,
        snapshot_id=head.snapshot_id if head is not None else None, schema=c.plan.schema,
        row_filter=c.plan.row_filter, bound_filter=c.plan.bound_filter, removed=c.removed,
        partial=c.partial, removed_delete_files=tuple(dangling),
        case_sensitive=case_sensitive)


# -- reading the partial files --------------------------------------------------------------------


class _Outside:
    """Residual for copy-on-write: keeps the rows the filter does not select (false or NULL:
    SQL's DELETE keeps those), counting the rows it drops."""

    def __init__(self, residual: _expr.ArrowResidual) -> None:
        self.field_ids = residual.field_ids
        # arrow_filter is two-valued (null → false), so its negation keeps NULL rows
        self._keep = ~residual.expression
        self.matched = 0

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        kept = batch.filter(self._keep)
        self.matched += batch.num_rows - kept.num_rows
        return kept


def _residual(plan: DeletePlan, task: FileScanTask) -> _expr.ArrowResidual:
    got = _expr.arrow_residual(task.residual, plan.schema, plan.case_sensitive)
    if got is None:  # _classify removes such files whole
        raise AssertionError(f"{task.file_path} has no residual but was planned as partial")
    return got


def _in_threads(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    if READ_THREADS <= 1 or len(items) <= 1:
        return [fn(i) for i in items]
    with ThreadPoolExecutor(max_workers=READ_THREADS, thread_name_prefix="floe-delete") as pool:
        return list(pool.map(fn, items))


def remove_written(io: FileIO, written: Iterable[str]) -> None:
    """Delete files an operation wrote and will not commit; a failure is only logged."""
    for path in written:
        try:
            io.delete(path, missing_ok=True)
        except (OSError, FloeError) as e:
            log.warning("could not delete %s: %s", path, e)


def _copy_on_write(io: FileIO, plan: DeletePlan, operation_id: uuid.UUID, written: list[str]
                   ) -> tuple[list[DataFile], list[DataFile]]:
    """Rewrite the partial files that hold a matching live row without those rows:
    (files rewritten, new data files). A file where nothing matched is left alone (Spark's
    runtime file filter skips it too)."""
    options = ReadOptions(plan.metadata, plan.schema, case_sensitive=plan.case_sensitive)

    def rewrite(item: tuple[int, FileScanTask]) -> tuple[DataFile | None, list[DataFile]]:
        i, task = item
        keep = _Outside(_residual(plan, task))
        batches = list(read_task(io, task, options, keep))
        if keep.matched == 0:
            return None, []
        if not batches:
            return task.data_file, []
        rows = pa.Table.from_batches(batches, schema=options.output_arrow)
        return task.data_file, write_data_files(io, plan.metadata, rows,
                                                operation_id=operation_id, task_id=i + 1,
                                                written=written)

    rewritten: list[DataFile] = []
    added: list[DataFile] = []
    for old, new in _in_threads(rewrite, list(enumerate(plan.partial))):
        if old is not None:
            rewritten.append(old)
            added += new
    return rewritten, added


def _position_deletes(io: FileIO, plan: DeletePlan, operation_id: uuid.UUID,
                      written: list[str]) -> tuple[list[DataFile], list[str]]:
    """One position delete file per partition (spec and tuple) for the live matching rows of
    the partial files (Java's default ``write.delete.granularity=partition``): (delete
    files, the data files they reference)."""
    names = sorted({p.ref.name for p in walk_predicates(plan.bound_filter)})
    options = ReadOptions(plan.metadata, plan.schema, names or None,
                          case_sensitive=plan.case_sensitive)

    def positions(task: FileScanTask) -> pa.Array | None:
        parts = [b.column(ROW_POSITION) for b in read_task(io, task, options,
                                                            _residual(plan, task),
                                                            positions=True)]
        return pa.concat_arrays(parts) if parts else None

    grouped: dict[tuple[int, tuple[Any, ...]], dict[str, pa.Array]] = {}
    for task, pos in zip(plan.partial, _in_threads(positions, list(plan.partial)), strict=True):
        if pos is not None and len(pos):
            key = (task.spec_id, tuple(task.data_file.partition))
            grouped.setdefault(key, {})[task.file_path] = pos
    files = [write_position_deletes(io, plan.metadata, spec_id, partition, deletes,
                                    operation_id=operation_id, task_id=i + 1, written=written)
             for i, ((spec_id, partition), deletes) in enumerate(grouped.items())]
    return files, [path for deletes in grouped.values() for path in deletes]


# -- operations whose removed files are worked out at every attempt ---------------------------


class _Reevaluated(PendingOperation):
    """A snapshot whose removed files depend on the base it is applied to (Java's
    ``deleteByRowFilter`` / ``dropPartition``, evaluated when the commit is applied).

    ``removed_for(base)`` names the files to remove at that base; a new
    :class:`SnapshotProducer` is made whenever that set changes, and the producers of earlier
    attempts are cleaned up like failed attempts. ``owned_files`` (the files this operation
    wrote) are deleted when the commit fails.
    """

    def __init__(self, io: FileIO, removed_for: Callable[[TableMetadata], frozenset[str]], *,
                 added: Sequence[DataFile], owned_files: Iterable[str], operation: Operation,
                 branch: str, validation: CommitValidation | None,
                 summary_properties: dict[str, str] | None = None) -> None:
        self.io = io
        self.removed_for = removed_for
        self.added = list(added)
        self.owned_files = list(owned_files)
        self.operation = operation
        self.branch = branch
        self.validation = validation
        self.summary_properties = summary_properties
        self.producer: SnapshotProducer | None = None
        self._retired: list[SnapshotProducer] = []

    def apply(self, base: TableMetadata) -> list[TableUpdate]:
        removed = self.removed_for(base)
        if self.producer is None or self.producer.deleted != removed:
            if self.producer is not None:
                self._retired.append(self.producer)
            self.producer = SnapshotProducer(
                self.io, added=self.added, deleted=removed, operation=self.operation,
                branch=self.branch, validation=self.validation,
                summary_properties=self.summary_properties)
        return self.producer.apply(base)

    def clean_up(self, committed: bool) -> None:
        for p in self._retired:
            p.clean_up(False)
        if self.producer is not None:
            self.producer.clean_up(committed)
        if not committed:
            remove_written(self.io, self.owned_files)


def _filter_removals(io: FileIO, plan: DeletePlan, rewritten: Iterable[DataFile]
                     ) -> Callable[[TableMetadata], frozenset[str]]:
    """Removed files of a row-filter delete at a base: every data file whose rows all match,
    the delete files whose rows all match and the files rewritten at planning. A file that
    matches partly and was not rewritten (a concurrent commit added it) fails the commit, as
    Java's "Cannot delete file where some, but not all, rows match filter"."""
    rewritten_paths = frozenset(f.file_path for f in rewritten)
    planned = frozenset(t.file_path for t in plan.removed) | rewritten_paths | frozenset(
        f.file_path for f in plan.removed_delete_files)

    def removed_for(base: TableMetadata) -> frozenset[str]:
        head = branch_head(base, plan.branch)
        if (head.snapshot_id if head else None) == plan.snapshot_id:
            return planned
        c = _classify(io, base, plan.branch, plan.row_filter, plan.case_sensitive)
        late = [t.file_path for t in c.partial if t.file_path not in rewritten_paths]
        if late:
            raise CommitConflict(
                f"cannot remove the rows matching {plan.row_filter}: data file {late[0]}, "
                f"committed after snapshot {plan.snapshot_id}, matches only partly; run the "
                "operation again")
        dangling = _matching_delete_files(io, base, c.plan)
        return (frozenset(t.file_path for t in c.removed) | rewritten_paths
                | frozenset(f.file_path for f in dangling))

    return removed_for


# -- staging ------------------------------------------------------------------------------------


def _io(txn: Transaction) -> FileIO:
    return txn.table.io


def stage_delete(txn: Transaction, row_filter: Any, *, mode: str | None = None,
                 branch: str = MAIN_BRANCH, isolation_level: str | None = None,
                 case_sensitive: bool = True) -> None:
    """Plan the delete now, write what it needs (rewritten files or position deletes) and add
    its snapshot to ``txn``. A filter that is false for every row stages nothing (Spark skips
    it); a delete that matches no row still commits an empty snapshot, as Spark does."""
    md, io = txn.base_metadata, _io(txn)
    plan = plan_delete(io, md, row_filter, mode=mode, branch=branch,
                       case_sensitive=case_sensitive)
    level = _isolation(md, isolation_level, default_from_table=True)
    if plan.matches_nothing:
        return
    if plan.metadata_only:
        # Spark's deleteWhere: DeleteFiles, re-evaluated per attempt, never validated
        txn.add_operation(_Reevaluated(
            io, _filter_removals(io, plan, ()), added=(), owned_files=(),
            operation=Operation.DELETE, branch=branch, validation=None))
        return
    written: list[str] = []
    op_id = uuid.uuid4()
    try:
        if plan.mode == COPY_ON_WRITE:
            rewritten, added = _copy_on_write(io, plan, op_id, written)
            removed = [t.data_file for t in plan.removed] + rewritten
            validation = CommitValidation(
                plan.snapshot_id, conflict_filter=plan.row_filter,
                no_new_data=level == SERIALIZABLE, replaced_files=removed,
                case_sensitive=case_sensitive)
            operation = Operation.DELETE if removed and not added else Operation.OVERWRITE
        else:
            added, referenced = _position_deletes(io, plan, op_id, written)
            removed = [t.data_file for t in plan.removed]
            validation = CommitValidation(
                plan.snapshot_id, conflict_filter=plan.row_filter,
                no_new_data=level == SERIALIZABLE, required_files=referenced,
                required_files_skip_deletes=True, case_sensitive=case_sensitive)
            operation = Operation.DELETE if removed or added else Operation.OVERWRITE
    except BaseException:
        remove_written(io, written)
        raise
    txn.overwrite([f.file_path for f in removed], added, owned_files=written,
                  operation=operation, branch=branch, validation=validation)


def check_rows_match(schema: Schema, bound: BooleanExpression, row_filter: Any,
                      rows: pa.Table, case_sensitive: bool) -> None:
    """Java ``validateAddedFilesMatchOverwriteFilter`` on the rows themselves (exact, where
    Java can only use the written files' metrics): every new row must match the filter."""
    if rows.num_rows == 0 or isinstance(bound, AlwaysTrue):
        return
    try:
        outside = rows.filter(~arrow_filter(schema, bound, case_sensitive))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError) as e:
        raise ValidationError(f"cannot check the new rows against {row_filter}: {e}") from None
    if outside.num_rows:
        raise ValidationError(
            f"cannot overwrite the rows matching {row_filter}: {outside.num_rows} of the "
            f"{rows.num_rows} new rows do not match it, e.g. {outside.slice(0, 1).to_pylist()[0]}")


def stage_overwrite_by_filter(txn: Transaction, row_filter: Any, rows: pa.Table, *,
                              branch: str = MAIN_BRANCH, isolation_level: str | None = None,
                              case_sensitive: bool = True) -> None:
    """Replace the rows matching ``row_filter`` by ``rows`` in one snapshot (Java
    ``OverwriteFiles.overwriteByRowFilter``, which floe extends to files that match partly by
    rewriting them copy-on-write). Rows outside the filter are refused before anything is
    written."""
    md, io = txn.base_metadata, _io(txn)
    plan = plan_delete(io, md, row_filter, mode=COPY_ON_WRITE, branch=branch,
                       case_sensitive=case_sensitive)
    level = _isolation(md, isolation_level, default_from_table=False)
    check_rows_match(plan.schema, plan.bound_filter, plan.row_filter, rows, case_sensitive)
    written: list[str] = []
    op_id = uuid.uuid4()
    try:
        new = write_data_files(io, md, rows, operation_id=op_id, written=written) \
            if rows.num_rows else []
    except BaseException:
        remove_written(io, written)
        raise
    txn.add_operation(overwrite_by_filter_operation(io, plan, new, written, op_id,
                                                    isolation_level=level))


def overwrite_by_filter_operation(io: FileIO, plan: DeletePlan, new_files: Sequence[DataFile],
                                  written: list[str], operation_id: uuid.UUID, *,
                                  isolation_level: str | None,
                                  summary_properties: dict[str, str] | None = None
                                  ) -> PendingOperation:
    """The snapshot of an overwrite by filter whose new files are written: the files of
    ``plan`` (a copy-on-write :func:`plan_delete`) that match partly are rewritten without the
    matching rows (their paths join ``written``), the removals are worked out again at every
    attempt, validated from the plan's snapshot per ``isolation_level``. On failure every
    file of ``written`` is deleted."""
    try:
        rewritten, survivors = _copy_on_write(io, plan, operation_id, written)
    except BaseException:
        remove_written(io, written)
        raise
    added = [*new_files, *survivors]
    level = isolation_level
    validation = CommitValidation(
        plan.snapshot_id, conflict_filter=plan.row_filter,
        no_new_data=level == SERIALIZABLE, no_new_deletes=level is not None,
        no_removed_data=level is not None, replaced_files=rewritten,
        case_sensitive=plan.case_sensitive)
    # Java: a row filter counts as deleting even when it matches nothing
    operation = Operation.OVERWRITE if added else Operation.DELETE
    return _Reevaluated(
        io, _filter_removals(io, plan, rewritten), added=added, owned_files=written,
        operation=operation, branch=plan.branch, validation=validation,
        summary_properties=summary_properties)


def stage_overwrite_partitions(txn: Transaction, rows: pa.Table, *, branch: str = MAIN_BRANCH,
                               isolation_level: str | None = None) -> None:
    """Dynamic partition overwrite (Java ``ReplacePartitions``): write ``rows`` with the
    table's spec and remove, at commit, every live data and delete file of the partitions
    (spec and tuple) the new files land in; an unpartitioned spec replaces the whole table.
    No rows: nothing is staged (Spark skips an empty dynamic overwrite)."""
    md, io = txn.base_metadata, _io(txn)
    level = _isolation(md, isolation_level, default_from_table=False)
    head = branch_head(md, branch)
    if rows.num_rows == 0:
        return
    written: list[str] = []
    try:
        files = write_data_files(io, md, rows, written=written)
    except BaseException:
        remove_written(io, written)
        raise
    txn.add_operation(replace_partitions_operation(
        io, md, files, written, branch=branch,
        start_snapshot_id=head.snapshot_id if head is not None else None,
        isolation_level=level))


def replace_partitions_operation(io: FileIO, md: TableMetadata, files: Sequence[DataFile],
                                 written: Iterable[str], *, branch: str,
                                 start_snapshot_id: int | None, isolation_level: str | None,
                                 case_sensitive: bool = True,
                                 summary_properties: dict[str, str] | None = None
                                 ) -> PendingOperation:
    """The snapshot of a dynamic partition overwrite whose new ``files`` are written (Java
    ``ReplacePartitions``): at every attempt it removes the live files of the partitions
    (spec id and tuple) the new files are in, all of them when the files' spec is
    unpartitioned; validated from ``start_snapshot_id`` per ``isolation_level``."""
    specs = [md.spec_by_id(f.spec_id) for f in files]
    unpartitioned = all(s is not None and s.is_unpartitioned for s in specs)
    partitions = None if unpartitioned else frozenset(
        (f.spec_id, tuple(f.partition)) for f in files)

    def removed_for(base: TableMetadata) -> frozenset[str]:
        snap = branch_head(base, branch)
        if snap is None or snap.manifest_list is None:
            return frozenset()
        manifests = read_manifest_list(io, snap.manifest_list)
        out = set()
        for m, live in zip(manifests, read_live_entries(io, manifests, DEFAULT_CACHE),
                           strict=True):
            for e in live:
                key = (m.partition_spec_id, tuple(e.data_file.partition))
                if partitions is None or key in partitions:
                    out.add(e.data_file.file_path)
        return frozenset(out)

    level = isolation_level
    validation = None
    if level is not None:
        validation = CommitValidation(
            start_snapshot_id, conflict_partitions=partitions,
            no_new_data=level == SERIALIZABLE, no_new_deletes=True, no_removed_data=True,
            case_sensitive=case_sensitive)
    return _Reevaluated(
        io, removed_for, added=files, owned_files=written, operation=Operation.OVERWRITE,
        branch=branch, validation=validation,
        summary_properties={REPLACE_PARTITIONS: "true", **(summary_properties or {})})


# -- equality deletes ---------------------------------------------------------------------------


def _key_columns(schema: Schema, columns: Sequence[str], ids: Sequence[int], keys: pa.Table
                 ) -> pa.Table:
    """``keys`` as one column per equality column (by name, else by position), cast to the
    columns' types."""
    if all(c in keys.column_names for c in columns):
        arrays = [keys.column(c) for c in columns]
    elif keys.num_columns == len(columns):
        arrays = list(keys.columns)
    else:
        raise ValidationError(
            f"equality delete keys have columns {keys.column_names}; expected {list(columns)}")
    out = []
    for name, fid, arr in zip(columns, ids, arrays, strict=True):
        t = schema.find_type(fid)
        try:
            out.append(arr.combine_chunks().cast(to_arrow_type(t)))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise ValidationError(
                f"equality delete keys for column {name!r} ({arr.type}) do not fit its type "
                f"{t}: {e}") from None
    return pa.table(out, names=list(columns))


def _keys_filter(schema: Schema, columns: Sequence[str], ids: Sequence[int], keys: pa.Table
                 ) -> BooleanExpression:
    """A filter every row a key deletes satisfies, to find the partitions whose files may
    hold one: per column the key values (or their range when there are many), or NULL."""
    out: BooleanExpression = AlwaysTrue()
    for name, fid, arr in zip(columns, ids, keys.columns, strict=True):
        if isinstance(schema.find_type(fid), (FloatType, DoubleType)):
            continue  # NaN keys cannot be literals: no pruning on this column
        col = arr.combine_chunks()
        values = [v for v in col.unique().to_pylist() if v is not None]
        pred: BooleanExpression
        if len(values) <= IN_PREDICATE_LIMIT:
            pred = In(name, values)
        else:
            pred = And(GreaterThanOrEqual(name, min(values)), LessThanOrEqual(name, max(values)))
        if col.null_count:
            pred = Or(pred, IsNull(name))
        try:
            bind(schema, pred)
        except ValidationError:
            continue  # a value floe cannot turn into a literal of this type: no pruning
        out = And(out, pred)
    return out


def stage_equality_delete(txn: Transaction, columns: Sequence[str], keys: pa.Table, *,
                          scope: str = "auto", branch: str = MAIN_BRANCH) -> None:
    """Equality deletes (Java ``RowDelta.addDeletes``, an ``OPERATION delete`` snapshot): rows
    whose ``columns`` equal a row of ``keys`` are deleted (NULL equals NULL), for data files
    committed before them. ``scope`` is one of :data:`EQUALITY_SCOPES`; ``auto`` writes one
    file per partition (of any spec) whose live data files may hold a key by their bounds,
    and stages nothing when there is none. Format version 1 is refused."""
    md, io = txn.base_metadata, _io(txn)
    ident = txn.table.identifier
    if md.format_version < 2:
        raise ValidationError(
            f"cannot write equality deletes to table {ident}: format version "
            f"{md.format_version} has no delete files")
    scope = _choice(scope, EQUALITY_SCOPES, "equality delete scope")
    schema = md.schema()
    if not columns:
        raise ValidationError("give the equality columns of the delete")
    try:
        ids = [schema.find_field_id(c) for c in columns]
        equality_delete_schema(schema, ids)
    except ValidationError as e:
        raise ValidationError(f"cannot delete by equality from table {ident}: {e}") from None
    key_table = _key_columns(schema, columns, ids, keys)
    if key_table.num_rows == 0:
        return
    _, ref = _plan_ref(md, branch)
    all_unpartitioned = all(s.is_unpartitioned for s in md.partition_specs)
    targets: list[tuple[int, tuple[Any, ...]]]
    if scope == "global":
        specs = [md.spec()] if md.spec().is_unpartitioned else sorted(
            (s for s in md.partition_specs if s.is_unpartitioned), key=lambda s: s.spec_id)
        if not specs:
            raise ValidationError(
                f"table {ident} never had an unpartitioned spec: a global equality delete "
                "needs one (use scope 'auto' or 'partition')")
        targets = [(specs[0].spec_id, ())]
    elif scope == "auto" and all_unpartitioned:
        targets = [(md.spec().spec_id, ())]
    else:
        if all_unpartitioned:
            raise ValidationError(
                f"table {ident} is unpartitioned: use equality delete scope 'auto' or 'global'")
        plan = plan_files(io, md, ref=ref, row_filter=_keys_filter(schema, columns, ids,
                                                                   key_table))
        targets = list(dict.fromkeys((t.spec_id, tuple(t.data_file.partition))
                                     for t in plan.tasks))
        if not targets:
            return  # no live data file can hold a key: nothing to delete
    written: list[str] = []
    op_id = uuid.uuid4()
    try:
        files = [write_equality_deletes(io, md, spec_id, partition, ids, key_table,
                                        operation_id=op_id, task_id=i + 1, written=written)
                 for i, (spec_id, partition) in enumerate(targets)]
    except BaseException:
        remove_written(io, written)
        raise
    txn.overwrite((), files, owned_files=written, operation=Operation.DELETE, branch=branch)

