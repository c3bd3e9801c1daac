"""Compaction: rewrite small (or delete-laden) data files into files of the target size, the
way Iceberg Java's ``rewrite_data_files`` does (``RewriteDataFilesSparkAction`` and
``RewriteDataFilesCommitManager`` at 1.10), executed locally with Arrow.

:func:`compact` plans (:func:`floe.maintenance.compaction_plan.plan_compaction`) or takes a
plan, then per file group reads every row with all deletes applied (position deletes,
equality deletes, deletion vectors), sorts them for the ``sort`` strategy, writes them with
the table's writer into the output spec, and commits a ``replace`` snapshot
(:func:`commit_groups`, the part another engine reuses) that

* removes the group's data files, each of which must still be live (else CommitConflict),
  and the position delete files the plan proved dangling;
* gives the new files the starting snapshot's sequence number
  (``use-starting-sequence-number``), so equality deletes committed meanwhile still apply to
  them;
* fails when a delete file committed since the starting snapshot applies to a rewritten file
  (Java ``validateNoNewDeletesForDataFiles``; equality deletes ignored with the starting
  sequence number, as Java).

Without ``partial-progress.enabled`` all groups go in one commit: any failure commits nothing
and deletes every file written. With it, every ``ceil(total groups / max-commits)`` finished
groups are committed together; a group that fails to rewrite, or a commit that fails, fails
alone and is reported in the result. ``remove-dangling-deletes`` then removes, in a separate
commit as Java does, the delete files that no longer apply to any live data file.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from floe.errors import CommitConflict, CommitStateUnknown, ValidationError
from floe.inspect import partition_json
from floe.io import FileIO
from floe.io.parquet import schema_to_arrow
from floe.scan.readers import read_plan
from floe.maintenance import Cancelled, ProgressCallback, report
from floe.maintenance.compaction_plan import (
    SORT,
    CompactionPlan,
    FileGroup,
    plan_compaction,
)
from floe.manifest import DataFile
from floe.metadata import TableMetadata
from floe.properties import TARGET_FILE_SIZE
from floe.scan.planning import FileScanTask, ScanPlan, TaskList
from floe.schema import Schema
from floe.snapshots import Operation, Snapshot
from floe.sorting import NullOrder, SortDirection, SortOrder
from floe.table.row_level import remove_written
from floe.table.snapshot_producer import SnapshotProducer
from floe.table.validation import CommitValidation
from floe.table.writer import partition_rows, write_data_files
from floe.transforms import IdentityTransform, transform_arrow
from floe.types import DoubleType, FloatType

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = [
    "CompactionResult",
    "GroupOutput",
    "GroupResult",
    "commit_groups",
    "compact",
    "remove_written",
    "group_scan",
    "output_metadata",
    "rewrite_group",
    "sort_rows",
]

log = logging.getLogger(__name__)

#: The writer's own rolling estimates a file's size from Arrow's in-memory size, which
#: over-estimates Parquet; compaction sizes each output file from the input bytes instead
#: and hands the writer exactly one file's rows.
_NO_ROLL = str(2 ** 62)


# -- sorting -------------------------------------------------------------------------------------


def _column(rows: pa.Table, name: str) -> pa.ChunkedArray | pa.Array:
    """A top-level or nested (``a.b``) column of ``rows``."""
    parts = name.split(".")
    if parts[0] in rows.column_names:
        arr: Any = rows.column(parts[0])
        for p in parts[1:]:
            arr = pc.struct_field(arr, p)
        return arr
    return rows.column(name)


def sort_rows(rows: pa.Table, order: SortOrder, schema: Schema) -> pa.Table:
    """``rows`` sorted by ``order`` (spec "Sorting"): each field is the transform of its source
    column, ascending or descending, with nulls first or last as the field says; NaN sorts
    above every other float (first when descending), as Spark orders it. Stable."""
    if order.is_unsorted or rows.num_rows <= 1:
        return rows
    keys: dict[str, Any] = {}
    sort_keys: list[tuple[str, str]] = []
    for i, f in enumerate(order.fields):
        name = schema.find_column_name(f.source_id)
        if name is None:
            raise ValidationError(f"sort field {f} names column id {f.source_id}, which is not "
                                  "in the table schema")
        source_type = schema.find_type(f.source_id)
        values = _column(rows, name)
        if not isinstance(f.transform, IdentityTransform):
            values = transform_arrow(f.transform, source_type, values)
        ascending = f.direction is SortDirection.ASC
        keys[f"n{i}"] = pc.is_null(values)
        # True sorts after False: descending on "is null" puts the nulls first
        sort_keys.append((f"n{i}", "descending" if f.null_order is NullOrder.NULLS_FIRST
                          else "ascending"))
        if isinstance(source_type, (FloatType, DoubleType)) and isinstance(
                f.transform, IdentityTransform):
            keys[f"nan{i}"] = pc.fill_null(pc.is_nan(values), False)
            sort_keys.append((f"nan{i}", "ascending" if ascending else "descending"))
        keys[f"v{i}"] = values
        sort_keys.append((f"v{i}", "ascending" if ascending else "descending"))
    indices = pc.sort_indices(pa.table(keys), sort_keys=sort_keys)
    return rows.take(indices)


# -- the local engine ----------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupOutput:
    """What an engine wrote for one group: the new data files and every path it wrote (to
    delete when the commit fails)."""

    group: FileGroup
    added: tuple[DataFile, ...]
    written: tuple[str, ...]


def group_scan(md: TableMetadata, snapshot_id: int | None, tasks: Sequence[FileScanTask],
               case_sensitive: bool = True) -> ScanPlan:
    """The scan of (some of) a group's files at the plan's starting snapshot: every row with
    all its deletes applied (no residual: whole files are rewritten, Java's
    ``ignoreResiduals``)."""
    snapshot = md.snapshot_by_id(snapshot_id) if snapshot_id is not None else None
    return ScanPlan(md, snapshot, md.schema(), None, tasks=TaskList(tasks),
                    case_sensitive=case_sensitive)


def _read_group(io: FileIO, plan: CompactionPlan, group: FileGroup) -> Iterator[pa.RecordBatch]:
    """Every row of the group's files (:func:`group_scan`), read by several threads."""
    return read_plan(io, group_scan(plan.metadata, plan.starting_snapshot_id, group.tasks,
                                    plan.case_sensitive))


def output_metadata(md: TableMetadata, group: FileGroup) -> TableMetadata:
    """The metadata the writer sees: the output spec as default, no rolling."""
    return replace(md, default_spec_id=group.output_spec_id,
                   properties={**md.properties, TARGET_FILE_SIZE: _NO_ROLL})


class _Writer:
    """Writes one group's output files, one writer call per file, numbering them."""

    def __init__(self, io: FileIO, md: TableMetadata, group: FileGroup,
                 on_progress: ProgressCallback | None) -> None:
        self.io = io
        self.md = output_metadata(md, group)
        self.group = group
        self.on_progress = on_progress
        self.operation_id = uuid.uuid4()
        self.written: list[str] = []
        self.files: list[DataFile] = []

    def write(self, rows: pa.Table) -> None:
        if rows.num_rows == 0:
            return
        report(self.on_progress, "writing", len(self.files), self.group.expected_output_files,
               f"file group {self.group.global_index}: output file {len(self.files) + 1}")
        self.files += write_data_files(self.io, self.md, rows, operation_id=self.operation_id,
                                       task_id=len(self.files) + 1, written=self.written)

    def write_partitioned(self, plan: CompactionPlan, rows: pa.Table) -> None:
        """Rows of any partitions: per output partition, as many files as its share of the
        input bytes makes (Java's expected output files for that size)."""
        records = max(1, self.group.input_records)
        for _, part in partition_rows(self.md, rows):
            estimate = int(self.group.input_size * part.num_rows / records)
            n = plan.options.expected_output_files(estimate)
            per_file = max(1, -(-part.num_rows // n))
            for start in range(0, part.num_rows, per_file):
                self.write(part.slice(start, per_file))

    def write_streaming(self, batches: Iterator[pa.RecordBatch]) -> None:
        """Rows of one partition, as they are read: a file every ``input rows / expected
        files`` rows, the last file takes what is left (deleted rows make it smaller)."""
        n = self.group.expected_output_files
        per_file = max(1, -(-self.group.input_records // n))
        buffered: list[pa.RecordBatch] = []
        count = 0
        for batch in batches:
            buffered.append(batch)
            count += batch.num_rows
            while count >= per_file and len(self.files) < n - 1:
                rows = pa.Table.from_batches(buffered)
                self.write(rows.slice(0, per_file))
                rest = rows.slice(per_file)
                buffered, count = rest.to_batches(), rest.num_rows
        if count:
            self.write(pa.Table.from_batches(buffered))


def rewrite_group(io: FileIO, plan: CompactionPlan, group: FileGroup, *,
                  on_progress: ProgressCallback | None = None) -> GroupOutput:
    """The local engine: read the group's rows with deletes applied, sort them for the sort
    strategy, write them into the output spec. Files written before a failure (or a
    Cancelled from ``on_progress``) are deleted before the exception propagates."""
    writer = _Writer(io, plan.metadata, group, on_progress)
    try:
        batches = _read_group(io, plan, group)
        if plan.strategy == SORT or group.needs_repartition:
            schema = plan.metadata.schema()
            rows = pa.Table.from_batches(list(batches), schema=schema_to_arrow(schema))
            if plan.strategy == SORT and plan.sort_order is not None:
                rows = sort_rows(rows, plan.sort_order, schema)
            writer.write_partitioned(plan, rows)
        else:
            writer.write_streaming(batches)
    except BaseException:
        remove_written(io, writer.written)
        raise
    return GroupOutput(group, tuple(writer.files), tuple(writer.written))


# -- committing ----------------------------------------------------------------------------------


def commit_groups(table: Table, plan: CompactionPlan, outputs: Sequence[GroupOutput]
                  ) -> Snapshot:
    """One ``replace`` commit of rewritten groups (Java
    ``RewriteDataFilesCommitManager.commitFileGroups``): their data files and dangling
    position deletes out, the new files in at the starting sequence number, validated from
    the starting snapshot. On failure the written files are deleted (not when the outcome is
    unknown) and the error propagates."""
    md = plan.metadata
    replaced = [df for o in outputs for df in o.group.data_files]
    removed = [f.file_path for f in replaced]
    removed += [f.file_path for o in outputs for f in o.group.removed_delete_files]
    use_start = plan.options.use_starting_sequence_number and md.format_version >= 2
    validation = CommitValidation(plan.starting_snapshot_id, replaced_files=replaced,
                                  ignore_equality_deletes=use_start)
    producer = SnapshotProducer(
        table.io, added=[f for o in outputs for f in o.added], deleted=removed,
        operation=Operation.REPLACE, owned_files=[p for o in outputs for p in o.written],
        branch=plan.branch, validation=validation,
        data_sequence_number=plan.starting_sequence_number if use_start else None)
    table.new_transaction().add_operation(producer).commit()
    assert producer.committed_snapshot is not None
    return producer.committed_snapshot


# -- results -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupResult:
    """One file group: what was (or, in a dry run, would be) rewritten and written."""

    global_index: int
    partition: tuple[tuple[str, Any], ...]
    rewritten_files: tuple[str, ...]
    rewritten_bytes: int
    expected_output_files: int
    removed_delete_files: tuple[str, ...]
    added_files: tuple[str, ...] = ()
    added_bytes: int = 0
    snapshot_id: int | None = None
    error: str | None = None

    @classmethod
    def of(cls, md: TableMetadata, group: FileGroup, output: GroupOutput | None = None,
           snapshot_id: int | None = None, error: str | None = None) -> GroupResult:
        return cls(
            global_index=group.global_index,
            partition=tuple(partition_json(md, group.partition_spec_id,
                                           group.partition).items()),
            rewritten_files=tuple(df.file_path for df in group.data_files),
            rewritten_bytes=group.input_size,
            expected_output_files=group.expected_output_files,
            removed_delete_files=tuple(f.file_path for f in group.removed_delete_files),
            added_files=() if output is None else tuple(f.file_path for f in output.added),
            added_bytes=0 if output is None else sum(f.file_size_in_bytes
                                                     for f in output.added),
            snapshot_id=snapshot_id, error=error)

    def to_json(self) -> dict[str, Any]:
        return {
            "global_index": self.global_index,
            "partition": dict(self.partition),
            "rewritten_files": list(self.rewritten_files),
            "rewritten_bytes": self.rewritten_bytes,
            "expected_output_files": self.expected_output_files,
            "removed_delete_files": list(self.removed_delete_files),
            "added_files": list(self.added_files),
            "added_bytes": self.added_bytes,
            "snapshot_id": self.snapshot_id,
            "error": self.error,
        }


@dataclass(frozen=True)
class CompactionResult:
    """The outcome of :func:`compact` (Java ``RewriteDataFiles.Result``; the counts carry the
    names of the ``rewrite_data_files`` procedure's output columns)."""

    table: str
    dry_run: bool
    strategy: str
    starting_snapshot_id: int | None
    groups: tuple[GroupResult, ...]
    failures: tuple[GroupResult, ...] = ()
    snapshot_ids: tuple[int, ...] = ()
    removed_dangling_delete_files: tuple[str, ...] = ()
    note: str = ""

    @property
    def rewritten_data_files_count(self) -> int:
        return sum(len(g.rewritten_files) for g in self.groups)

    @property
    def added_data_files_count(self) -> int:
        return sum(len(g.added_files) for g in self.groups)

    @property
    def rewritten_bytes_count(self) -> int:
        return sum(g.rewritten_bytes for g in self.groups)

    @property
    def failed_data_files_count(self) -> int:
        return sum(len(g.rewritten_files) for g in self.failures)

    @property
    def removed_delete_files_count(self) -> int:
        return (sum(len(g.removed_delete_files) for g in self.groups)
                + len(self.removed_dangling_delete_files))

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "dry_run": self.dry_run,
            "strategy": self.strategy,
            "starting_snapshot_id": self.starting_snapshot_id,
            "snapshot_ids": list(self.snapshot_ids),
            "rewritten_data_files_count": self.rewritten_data_files_count,
            "added_data_files_count": self.added_data_files_count,
            "rewritten_bytes_count": self.rewritten_bytes_count,
            "failed_data_files_count": self.failed_data_files_count,
            "removed_delete_files_count": self.removed_delete_files_count,
            "groups": [g.to_json() for g in self.groups],
            "failures": [g.to_json() for g in self.failures],
            "removed_dangling_delete_files": list(self.removed_dangling_delete_files),
            "note": self.note,
        }


# -- compact -------------------------------------------------------------------------------------


def _plan_for(table: Table, plan: CompactionPlan | Mapping[str, str] | None,
              kwargs: dict[str, Any]) -> CompactionPlan:
    if isinstance(plan, CompactionPlan):
        md = table.metadata
        if plan.table_location != md.location or \
                plan.metadata.table_uuid != md.table_uuid:
            raise ValidationError(
                f"the compaction plan is for table {plan.table_location}, not "
                f"{table.identifier}")
        if any(v is not None for v in kwargs.values()):
            raise ValidationError("give either a plan or planning arguments, not both")
        return plan
    opts = kwargs.pop("options") or {}
    if plan is not None:
        opts = {**plan, **opts}
    return plan_compaction(table, **{k: v for k, v in kwargs.items() if v is not None},
                           options=opts)


def compact(
    table: Table,
    plan: CompactionPlan | Mapping[str, str] | None = None,
    *,
    filter: Any = None,  # noqa: A002 - Java's and the CLI's name
    strategy: str | None = None,
    sort_order: SortOrder | str | None = None,
    options: Mapping[str, str] | None = None,
    branch: str | None = None,
    case_sensitive: bool | None = None,
    dry_run: bool = False,
    on_progress: ProgressCallback | None = None,
) -> CompactionResult:
    """Compact ``table`` with a plan, or plan it now from the options (a mapping as second
    argument, or ``options=``) and the other planning arguments of
    :func:`~floe.maintenance.compaction_plan.plan_compaction`.

    ``dry_run`` returns the planned groups (and the delete files a real run would remove)
    without writing anything. ``on_progress`` gets a report per group and per output file and
    may raise :class:`~floe.maintenance.Cancelled`: nothing more is committed, the files
    written for uncommitted groups are deleted, and Cancelled propagates.
    """
    report(on_progress, "planning")
    the_plan = _plan_for(table, plan, {
        "filter": filter, "strategy": strategy, "sort_order": sort_order, "options": options,
        "branch": branch, "case_sensitive": case_sensitive})
    md = the_plan.metadata
    if dry_run or not the_plan.groups:
        dangling: tuple[str, ...] = ()
        if the_plan.options.remove_dangling_deletes and the_plan.groups:
            from floe.maintenance.rewrite_deletes import dangling_after_compaction

            dangling = tuple(f.file_path for f in dangling_after_compaction(table.io,
                                                                            the_plan))
        return CompactionResult(
            table.location, dry_run, the_plan.strategy, the_plan.starting_snapshot_id,
            tuple(GroupResult.of(md, g) for g in the_plan.groups) if dry_run else (),
            removed_dangling_delete_files=dangling, note=the_plan.note)
    return _Run(table, the_plan, on_progress).run()


class _Run:
    """One execution of a plan: rewrite group by group, commit per batch, report."""

    def __init__(self, table: Table, plan: CompactionPlan,
                 on_progress: ProgressCallback | None) -> None:
        self.table = table
        self.plan = plan
        self.md = plan.metadata
        self.on_progress = on_progress
        self.partial = plan.options.partial_progress_enabled
        self.pending: list[GroupOutput] = []
        self.done: list[GroupResult] = []
        self.failures: list[GroupResult] = []
        self.snapshot_ids: list[int] = []
        self.failed_commits = 0

    def run(self) -> CompactionResult:
        groups = self.plan.groups
        try:
            for i, group in enumerate(groups):
                report(self.on_progress, "rewriting", i, len(groups),
                       f"file group {group.global_index}: {group.input_files_count} files, "
                       f"{group.input_size} bytes")
                self._rewrite(group)
                if self.partial and len(self.pending) >= self.plan.groups_per_commit:
                    self._commit()
            report(self.on_progress, "rewriting", len(groups), len(groups), "all groups written")
            if self.pending:
                self._commit()
        except BaseException:
            for o in self.pending:
                remove_written(self.table.io, o.written)
            raise
        self._check_failed_commits()
        dangling: tuple[str, ...] = ()
        if self.plan.options.remove_dangling_deletes and self.snapshot_ids:
            from floe.maintenance.rewrite_deletes import remove_dangling_deletes

            report(self.on_progress, "removing dangling deletes")
            removed = remove_dangling_deletes(self.table, branch=self.plan.branch)
            dangling = removed.removed_delete_files
        return CompactionResult(
            self.table.location, False, self.plan.strategy, self.plan.starting_snapshot_id,
            tuple(self.done), tuple(self.failures), tuple(self.snapshot_ids), dangling,
            self.plan.note)

    def _rewrite(self, group: FileGroup) -> None:
        try:
            self.pending.append(rewrite_group(self.table.io, self.plan, group,
                                              on_progress=self.on_progress))
        except Cancelled:
            raise
        except Exception as e:
            if not self.partial:
                raise
            log.warning("file group %s failed: %s", group.global_index, e)
            self.failures.append(GroupResult.of(self.md, group, error=_one_line(e)))

    def _commit(self) -> None:
        report(self.on_progress, "committing", len(self.done), len(self.plan.groups),
               f"{len(self.pending)} file group(s)")
        batch, self.pending = self.pending, []
        try:
            snap = commit_groups(self.table, self.plan, batch)
        except CommitStateUnknown:
            raise
        except (CommitConflict, ValidationError) as e:
            if not self.partial:
                raise CommitConflict(
                    f"cannot commit the compaction of table {self.table.identifier}: "
                    f"{_one_line(e)} (it conflicted with a concurrent commit; with "
                    "partial-progress.enabled=true smaller commits fail alone)") from e
            self.failed_commits += 1
            log.warning("compaction commit of %d group(s) failed: %s", len(batch), e)
            self.failures += [GroupResult.of(self.md, o.group, o, error=_one_line(e))
                              for o in batch]
            return
        self.snapshot_ids.append(snap.snapshot_id)
        self.done += [GroupResult.of(self.md, o.group, o, snap.snapshot_id) for o in batch]

    def _check_failed_commits(self) -> None:
        """Java: more failed commits than ``partial-progress.max-failed-commits`` fail the
        run (after the other commits stay committed)."""
        limit = self.plan.options.partial_progress_max_failed_commits
        if self.partial and self.failed_commits > limit:
            raise CommitConflict(
                f"partial-progress.enabled is true but {self.failed_commits} rewrite commits "
                f"of table {self.table.identifier} failed, more than the allowed {limit} "
                f"(partial-progress.max-failed-commits); {len(self.done)} group(s) were "
                "committed")


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__
