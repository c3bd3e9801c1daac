"""Reads between two snapshots: the rows appended, and the changelog of inserted and deleted rows.

Both read a range ``(from_snapshot_id, to_snapshot_id]``: the snapshots committed after the
*from* snapshot (exclusive) up to the *to* snapshot (inclusive, default the current one),
which must be on one lineage (*from* an ancestor of *to*; a branch's lineage works like
main's). Like Java's incremental scans, rows are read with the table's current schema.

* :func:`plan_appends` (Java ``BaseIncrementalAppendScan``): the data files the ``append``
  snapshots of the range added, as a :class:`~floe.scan.planning.ScanPlan` that
  :func:`floe.scan.readers.read_plan` reads. ``replace`` snapshots (compaction) add no rows and
  are skipped. Java also skips ``overwrite`` and ``delete`` snapshots silently, which hides
  rows they removed or rewrote; floe refuses them and points at the changelog instead.
* :func:`changelog` (Java ``BaseIncrementalChangelogScan`` read through Spark's
  ``create_changelog_view`` with its defaults): per snapshot, in commit order, the rows it
  inserted and deleted, with ``_change_type`` (``INSERT`` / ``DELETE``), ``_change_ordinal``
  (0 for the first snapshot of the range; ``replace`` snapshots are skipped and take no
  ordinal) and ``_commit_snapshot_id``. Carry-over rows, a row deleted and re-inserted
  unchanged by one snapshot (a copy-on-write rewrite keeps the rows it does not delete),
  are cancelled as multisets per snapshot like Spark's ``RemoveCarryoverIterator``.

Each snapshot's changes are computed from the files it changed (:func:`plan_changelog`):

- a data file it added → its rows (after the delete files live at the snapshot) inserted;
- a data file it removed → the rows that were live before it (the file after the delete
  files live at the parent, Java's ``DeletedDataFileScanTask`` "existing deletes") deleted;
- a data file it kept, to which a delete file it added or removed applies (merge-on-read
  position / equality deletes, deletion vectors) → read once with the parent's deletes and
  once with the snapshot's, as a deletion of the first and an insertion of the second;
  the carry-over cancellation leaves exactly the rows the new deletes removed (Java's
  ``DeletedRowsScanTask``; Java 1.10 itself refuses changelogs over delete files).

Memory is bounded by one snapshot's changed rows: carry-overs can only be told once both
sides of a snapshot are known, so a snapshot that both deletes and inserts rows is held in
memory while it is cancelled; a snapshot with one side only is streamed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from floe.errors import CommitConflict, NotFound, ValidationError
from floe.io.parquet import schema_to_arrow
from floe.scan.readers import DEFAULT_BATCH_SIZE, read_plan
from floe.manifest import (
    DataFile,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    read_manifest_list,
)
from floe.metadata import TableMetadata
from floe.scan.delete_index import DeleteFile, DeleteFileIndex
from floe.scan.filters import ScanFilter
from floe.scan.manifests import DEFAULT_CACHE, read_live_entries
from floe.scan.planning import FileScanTask, ScanPlan, TaskList
from floe.snapshots import Operation, Snapshot
from floe.scan.history import entries_added_by, snapshots_since

__all__ = [
    "CHANGE_TYPE", "CHANGE_ORDINAL", "COMMIT_SNAPSHOT_ID", "INSERT", "DELETE",
    "SnapshotChanges", "snapshot_range", "plan_appends", "plan_changelog", "changelog",
    "changelog_arrow_schema", "remove_carryovers",
]

#: Java ``MetadataColumns`` names of the changelog's columns, and its change types.
CHANGE_TYPE = "_change_type"
CHANGE_ORDINAL = "_change_ordinal"
COMMIT_SNAPSHOT_ID = "_commit_snapshot_id"
INSERT = "INSERT"
DELETE = "DELETE"

_META_COLUMNS = (CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID)
_ALL_OPERATIONS = frozenset(Operation)
_ROWS_CHANGED = frozenset({Operation.OVERWRITE, Operation.DELETE})


# -- the range -------------------------------------------------------------------------------


def snapshot_range(md: TableMetadata, from_snapshot_id: int,
                   to_snapshot_id: int | None = None) -> list[Snapshot]:
    """The snapshots after ``from_snapshot_id`` up to ``to_snapshot_id`` (default: the
    current snapshot), oldest first (Java ``SnapshotUtil.ancestorsBetween``).

    NotFound for an unknown id; ValidationError when *from* is not an ancestor of *to*
    (a reversed range, or two branches). ``from == to`` is an empty range (Java refuses it).
    """
    if md.snapshot_by_id(from_snapshot_id) is None:
        raise NotFound(f"snapshot {from_snapshot_id} does not exist in table {md.location}")
    if to_snapshot_id is None:
        to_snap = md.current_snapshot()
        if to_snap is None:
            raise ValidationError(f"table {md.location} has no current snapshot to read up to; "
                                  "give the end snapshot")
    else:
        to_snap = md.snapshot_by_id(to_snapshot_id)
        if to_snap is None:
            raise NotFound(f"snapshot {to_snapshot_id} does not exist in table {md.location}")
    to_id = to_snap.snapshot_id
    try:
        newest_first = snapshots_since(md, to_snap, from_snapshot_id)
    except CommitConflict:
        if any(s.snapshot_id == to_id for s in md.ancestors_of(from_snapshot_id)):
            raise ValidationError(
                f"the range is reversed: snapshot {to_id} is older than snapshot "
                f"{from_snapshot_id} (give the older snapshot as the start)") from None
        raise ValidationError(
            f"snapshot {from_snapshot_id} is not an ancestor of snapshot {to_id}: an "
            f"incremental read needs both on one lineage") from None
    return newest_first[::-1]


def _check_readable(snapshots: Iterable[Snapshot]) -> None:
    for s in snapshots:
        if not s.manifest_list:
            raise ValidationError(
                f"snapshot {s.snapshot_id} lists its manifests inline (format v1 without a "
                "manifest list), which floe does not read")
        if s.operation is None:
            raise ValidationError(
                f"snapshot {s.snapshot_id} has no known operation in its summary "
                f"({s.summary.get('operation')!r}): floe cannot tell what it changed")


# -- appends ---------------------------------------------------------------------------------


def plan_appends(io: Any, md: TableMetadata, from_snapshot_id: int,
                 to_snapshot_id: int | None = None, row_filter: Any = None,
                 case_sensitive: bool = True) -> ScanPlan:
    """The rows the ``append`` snapshots of ``(from, to]`` added, as a plan for
    :func:`floe.scan.readers.read_plan` (Java ``BaseIncrementalAppendScan``).

    The data files ADDED by each append snapshot, read from the manifests that snapshot
    wrote, oldest snapshot first; ``row_filter`` prunes them by partition and metrics and
    leaves the residual, as in :func:`~floe.scan.planning.plan_files`. No delete file
    applies to them: deletes of rows appended in the range could only come from an
    ``overwrite`` / ``delete`` snapshot in the range, which is refused (ValidationError
    naming it); ``replace`` snapshots are skipped.
    """
    snapshots = snapshot_range(md, from_snapshot_id, to_snapshot_id)
    _check_readable(snapshots)
    for s in snapshots:
        if s.operation in _ROWS_CHANGED:
            raise ValidationError(
                f"snapshot {s.snapshot_id} ({s.operation}) changes existing rows, which a read "
                f"of appended rows cannot show: read the range with --changelog")
    schema = md.schema()
    scan_filter = ScanFilter(md, schema, row_filter, case_sensitive)
    end = md.snapshot_by_id(to_snapshot_id) if to_snapshot_id is not None \
        else md.current_snapshot()
    plan = ScanPlan(md, end, schema, scan_filter.expression, scan_filter.bound,
                    case_sensitive=case_sensitive)
    appends = [s for s in snapshots if s.operation == Operation.APPEND]
    funnel = plan.funnel
    for _, e in entries_added_by(io, appends, ManifestContent.DATA, {Operation.APPEND}):
        if e.status != ManifestEntryStatus.ADDED:
            continue
        df = e.data_file
        spec_filter = scan_filter.for_spec(df.spec_id)
        funnel.data_files_total += 1
        if not spec_filter.partition(df)[0]:
            continue
        funnel.data_files_after_partition += 1
        if not spec_filter.metrics(df)[0]:
            continue
        funnel.data_files_after_metrics += 1
        plan.tasks.append(_task(scan_filter, e, ()))
    funnel.tasks = len(plan.tasks)
    return plan


def _kept(scan_filter: ScanFilter, df: DataFile) -> bool:
    """Partition, then metrics pruning, as scan planning does."""
    spec_filter = scan_filter.for_spec(df.spec_id)
    return bool(spec_filter.partition(df)[0] and spec_filter.metrics(df)[0])


def _task(scan_filter: ScanFilter, e: ManifestEntry, deletes: Sequence[DeleteFile]
          ) -> FileScanTask:
    df = e.data_file
    residual = scan_filter.for_spec(df.spec_id).residual_for(df.partition)
    return FileScanTask(df, tuple(deletes), residual, df.spec_id, e.sequence_number or 0)


# -- changelog planning ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SnapshotChanges:
    """The changelog tasks of one snapshot (Java ``ChangelogScanTask``s of one ordinal).

    ``deleted``: tasks whose rows the snapshot deleted (removed data files with the deletes
    live at the parent; kept files touched by new deletes, with the parent's deletes);
    ``inserted``: tasks whose rows it inserted (added data files; the touched kept files with
    the snapshot's deletes). Rows in both are carry-overs and cancel.
    """

    snapshot: Snapshot
    ordinal: int
    deleted: tuple[FileScanTask, ...]
    inserted: tuple[FileScanTask, ...]


def plan_changelog(io: Any, md: TableMetadata, from_snapshot_id: int,
                   to_snapshot_id: int | None = None, row_filter: Any = None,
                   case_sensitive: bool = True) -> Iterator[SnapshotChanges]:
    """The changes of each non-``replace`` snapshot of ``(from, to]``, oldest first, planned
    one snapshot at a time from the manifests it wrote. The range and the filter are
    checked before this returns; manifests are read as the iterator advances."""
    snapshots = snapshot_range(md, from_snapshot_id, to_snapshot_id)
    _check_readable(snapshots)
    scan_filter = ScanFilter(md, md.schema(), row_filter, case_sensitive)
    changing = [s for s in snapshots if s.operation != Operation.REPLACE]
    return (_ChangePlanner(io, md, scan_filter, s).plan(i) for i, s in enumerate(changing))


class _ChangePlanner:
    """The changes of one snapshot (see the module docstring)."""

    def __init__(self, io: Any, md: TableMetadata, scan_filter: ScanFilter,
                 snapshot: Snapshot) -> None:
        self.io = io
        self.md = md
        self.filter = scan_filter
        self.snapshot = snapshot
        self.unpartitioned = [s.spec_id for s in md.partition_specs if s.is_unpartitioned]

    def plan(self, ordinal: int) -> SnapshotChanges:
        snap = self.snapshot
        added: list[ManifestEntry] = []
        removed: list[ManifestEntry] = []
        for _, e in entries_added_by(self.io, [snap], ManifestContent.DATA, _ALL_OPERATIONS):
            (added if e.status == ManifestEntryStatus.ADDED else removed).append(e)
        added_deletes: list[ManifestEntry] = []
        removed_deletes: list[ManifestEntry] = []
        for _, e in entries_added_by(self.io, [snap], ManifestContent.DELETES,
                                     _ALL_OPERATIONS):
            (added_deletes if e.status == ManifestEntryStatus.ADDED
             else removed_deletes).append(e)
        added = [e for e in added if _kept(self.filter, e.data_file)]
        removed = [e for e in removed if _kept(self.filter, e.data_file)]
        touched = self._touched(added, added_deletes + removed_deletes)
        before, after = self._delete_indexes(added + removed + touched, added_deletes,
                                             removed_deletes)
        deleted = [self._task(e, before) for e in removed + touched]
        inserted = [self._task(e, after) for e in added + touched]
        return SnapshotChanges(snap, ordinal, tuple(deleted), tuple(inserted))

    def _task(self, e: ManifestEntry, index: DeleteFileIndex | None) -> FileScanTask:
        df = e.data_file
        seq = e.sequence_number or 0
        deletes = index.for_data_file(df, seq, df.spec_id) if index is not None else []
        return _task(self.filter, e, deletes)

    def _touched(self, added: list[ManifestEntry], delete_changes: list[ManifestEntry]
                 ) -> list[ManifestEntry]:
        """Data files live before and after the snapshot to which a delete file it added
        or removed applies (found through a delete index of those delete files only)."""
        if not delete_changes:
            return []
        delta = DeleteFileIndex(self.md.schema(), self.unpartitioned)
        for e in delete_changes:
            delta.add(e, e.data_file.spec_id)
        new_paths = {e.data_file.file_path for e in added}
        snap = self.snapshot
        assert snap.manifest_list is not None
        out: list[ManifestEntry] = []
        for m in read_manifest_list(self.io, snap.manifest_list):
            if m.content != ManifestContent.DATA:
                continue
            if not (m.has_added_files() or m.has_existing_files()):
                continue
            if not self.filter.for_spec(m.partition_spec_id).manifest(m)[0]:
                continue
            # one manifest at a time: memory stays at the touched files
            (live,) = read_live_entries(self.io, [m], DEFAULT_CACHE, processes=False)
            for e in live:
                df = e.data_file
                if df.file_path in new_paths or not _kept(self.filter, df):
                    continue
                if delta.for_data_file(df, e.sequence_number or 0, df.spec_id):
                    out.append(e)
        return out

    def _delete_indexes(self, files: list[ManifestEntry], added_deletes: list[ManifestEntry],
                        removed_deletes: list[ManifestEntry]
                        ) -> tuple[DeleteFileIndex | None, DeleteFileIndex | None]:
        """Delete indexes of the parent and of the snapshot, holding only the delete files
        that can apply to ``files`` (same partition, global equality deletes, or naming one
        of them)."""
        parent_deletes = self._parent_deletes(files)
        if not parent_deletes and not added_deletes:
            return None, None
        schema = self.md.schema()
        before = DeleteFileIndex(schema, self.unpartitioned)
        after = DeleteFileIndex(schema, self.unpartitioned)
        gone = {e.data_file.file_path for e in removed_deletes}
        for e in parent_deletes:
            before.add(e, e.data_file.spec_id)
            if e.data_file.file_path not in gone:
                after.add(e, e.data_file.spec_id)
        for e in added_deletes:
            after.add(e, e.data_file.spec_id)
        return before, after

    def _parent_deletes(self, files: list[ManifestEntry]) -> list[ManifestEntry]:
        parent_id = self.snapshot.parent_snapshot_id
        parent = self.md.snapshot_by_id(parent_id) if parent_id is not None else None
        if parent is None or parent.manifest_list is None or not files:
            return []
        manifests = [m for m in read_manifest_list(self.io, parent.manifest_list)
                     if m.content == ManifestContent.DELETES]
        if not manifests:
            return []
        keys = {(e.data_file.spec_id, tuple(e.data_file.partition)) for e in files}
        paths = {e.data_file.file_path for e in files}
        out: list[ManifestEntry] = []
        for m in manifests:
            (live,) = read_live_entries(self.io, [m], DEFAULT_CACHE, processes=False)
            for e in live:
                d = e.data_file
                if d.referenced_data_file is not None:
                    if d.referenced_data_file in paths:
                        out.append(e)
                elif (d.spec_id, tuple(d.partition)) in keys or (
                        d.content == FileContent.EQUALITY_DELETES
                        and d.spec_id in self.unpartitioned):
                    out.append(e)
        return out


# -- changelog rows --------------------------------------------------------------------------


def changelog_arrow_schema(md: TableMetadata, columns: Sequence[str] | None = None,
                           case_sensitive: bool = True) -> pa.Schema:
    """The Arrow schema of :func:`changelog`'s batches: the selected columns of the current
    schema, then ``_change_type`` (string), ``_change_ordinal`` (int), ``_commit_snapshot_id``
    (long), like Spark's changelog view."""
    schema = md.schema()
    data = schema.select(*columns, case_sensitive=case_sensitive) if columns else schema
    return pa.schema([
        *schema_to_arrow(data),
        pa.field(CHANGE_TYPE, pa.string(), nullable=False),
        pa.field(CHANGE_ORDINAL, pa.int32(), nullable=False),
        pa.field(COMMIT_SNAPSHOT_ID, pa.int64(), nullable=False),
    ])


def changelog(io: Any, md: TableMetadata, from_snapshot_id: int,
              to_snapshot_id: int | None = None, row_filter: Any = None,
              columns: Sequence[str] | None = None, case_sensitive: bool = True,
              batch_size: int = DEFAULT_BATCH_SIZE) -> Iterator[pa.RecordBatch]:
    """The rows each snapshot of ``(from, to]`` deleted and inserted, snapshot by snapshot in
    commit order, as batches of :func:`changelog_arrow_schema` (what Spark's
    ``create_changelog_view`` returns with its default options: carry-overs removed, no net
    changes, no update images).

    Unknown ids → NotFound; a range not on one lineage, a bad filter or column →
    ValidationError, raised before this returns.
    """
    out_schema = changelog_arrow_schema(md, columns, case_sensitive)
    changes = plan_changelog(io, md, from_snapshot_id, to_snapshot_id, row_filter,
                             case_sensitive)
    return _changelog_batches(io, md, changes, columns, out_schema, case_sensitive, batch_size)


def _changelog_batches(io: Any, md: TableMetadata, changes: Iterator[SnapshotChanges],
                       columns: Sequence[str] | None, out_schema: pa.Schema,
                       case_sensitive: bool, batch_size: int) -> Iterator[pa.RecordBatch]:
    schema = md.schema()

    def plan(c: SnapshotChanges, tasks: tuple[FileScanTask, ...]) -> ScanPlan:
        return ScanPlan(md, c.snapshot, schema, None, tasks=TaskList(tasks),
                        case_sensitive=case_sensitive)

    def tagged(batches: Iterable[pa.RecordBatch], kind: str, c: SnapshotChanges
               ) -> Iterator[pa.RecordBatch]:
        for b in batches:
            n = b.num_rows
            if not n:
                continue
            extra = [pa.repeat(pa.scalar(kind, pa.string()), n),
                     pa.repeat(pa.scalar(c.ordinal, pa.int32()), n),
                     pa.repeat(pa.scalar(c.snapshot.snapshot_id, pa.int64()), n)]
            yield pa.RecordBatch.from_arrays([*b.columns, *extra], schema=out_schema)

    for c in changes:
        if not (c.deleted and c.inserted):  # one side only: nothing can cancel, stream it
            yield from tagged(read_plan(io, plan(c, c.deleted), columns, batch_size), DELETE, c)
            yield from tagged(read_plan(io, plan(c, c.inserted), columns, batch_size), INSERT,
                              c)
            continue
        full = schema_to_arrow(schema)
        gone = pa.Table.from_batches(list(read_plan(io, plan(c, c.deleted), None, batch_size)),
                                     schema=full)
        new = pa.Table.from_batches(list(read_plan(io, plan(c, c.inserted), None, batch_size)),
                                    schema=full)
        gone, new = remove_carryovers(gone, new)
        if columns:  # the selected columns; a cast prunes the struct fields not selected
            data = pa.schema(list(out_schema)[:-len(_META_COLUMNS)])
            gone, new = (t.select(data.names).cast(data) for t in (gone, new))
        yield from tagged(gone.to_batches(max_chunksize=batch_size), DELETE, c)
        yield from tagged(new.to_batches(max_chunksize=batch_size), INSERT, c)


# -- carry-overs -----------------------------------------------------------------------------


def remove_carryovers(deleted: pa.Table, inserted: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Cancel rows deleted and inserted unchanged, as multisets (Spark
    ``RemoveCarryoverIterator`` over the rows of one snapshot): a row value deleted ``d``
    times and inserted ``i`` times remains ``d - i`` times deleted or ``i - d`` times
    inserted. Rows are equal when every column is (null equals null, NaN equals NaN,
    ``-0.0`` differs from ``0.0``, like Java's ``Objects.equals``). Both tables have the
    same schema."""
    if not deleted.num_rows or not inserted.num_rows or not deleted.num_columns:
        return deleted, inserted
    both = pa.concat_tables([deleted, inserted])
    n, n_deleted = both.num_rows, deleted.num_rows
    keys = {f"k{i}": _group_key(both.column(i)) for i in range(both.num_columns)}
    side = pa.concat_arrays([pa.repeat(pa.scalar(-1, pa.int64()), n_deleted),
                             pa.repeat(pa.scalar(1, pa.int64()), n - n_deleted)])
    rows = pa.array(range(n), pa.int64())
    groups = pa.table({**keys, "__side": side, "__row": rows}).group_by(
        list(keys), use_threads=False).aggregate([("__side", "sum"), ("__row", "min")])
    changed = pc.not_equal(groups.column("__side_sum"), 0)
    net = groups.column("__side_sum").filter(changed).to_pylist()
    first = groups.column("__row_min").filter(changed).to_pylist()
    gone = [r for r, k in zip(first, net, strict=True) if k < 0 for _ in range(-k)]
    new = [r for r, k in zip(first, net, strict=True) if k > 0 for _ in range(k)]
    return (both.take(pa.array(sorted(gone), pa.int64())),
            both.take(pa.array(sorted(new), pa.int64())))


def _group_key(col: pa.ChunkedArray) -> pa.ChunkedArray | pa.Array:
    """A column Arrow can group by: nested values (which Arrow cannot hash) by their
    Python representation, which is equal exactly when the values are."""
    t = col.type
    if isinstance(t, pa.ExtensionType):
        col = pa.chunked_array([c.storage for c in col.chunks], t.storage_type)
        t = t.storage_type
    if pa.types.is_nested(t):
        return pa.array([None if v is None else repr(v) for v in col.to_pylist()], pa.string())
    return col
