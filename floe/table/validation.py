"""Validation of an operation against the commits that landed after it started (Java
``MergingSnapshotProducer``'s ``validate*`` methods; spec "Commit Conflict Resolution and
Retry").

An operation that read the table at a *starting snapshot* (a delete that chose which files to
rewrite, a rewrite, a row delta) is re-applied on a newer base when its commit is retried.
Before that is allowed, :class:`CommitValidation` looks only at the snapshots committed to the
branch since the starting snapshot, and only at the manifests those snapshots added, for the
conflicts the operation cares about:

* ``no_new_data``: a data file that may hold rows matching the conflict filter was added
  (Java ``validateAddedDataFiles``; the ``serializable`` isolation level);
* ``no_new_deletes``: a delete file that may apply to rows matching the filter was added
  (``validateNoNewDeleteFiles``);
* ``no_removed_data``: a data file that may hold rows matching the filter was removed
  (``validateDeletedDataFiles``; together with the previous one, what Java's
  ``validateNoConflictingDeletes`` checks for an overwrite);
* ``replaced_files``: a delete file was added that applies to a data file this operation
  removes or rewrites (``validateNoNewDeletesForDataFiles``), so rewriting it would resurrect
  the deleted rows; equality deletes are ignored when the rewritten files keep the starting
  sequence number (compaction), because they still apply to the new files;
* ``required_files``: a data file that new position deletes point at was removed
  (``validateDataFilesExist``); with ``required_files_skip_deletes`` only by an overwrite or a
  rewrite, since rows a concurrent delete removed are gone either way (Java for a DELETE
  command, which does not call ``validateDeletedFiles``).

Every failure is a :class:`~floe.errors.CommitConflict` naming the snapshot and the file.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from floe.errors import CommitConflict
from floe.scan.history import entries_added_by, snapshots_since
from floe.manifest import DataFile, FileContent, ManifestContent, ManifestEntryStatus
from floe.metadata import TableMetadata
from floe.scan.delete_index import DeleteFileIndex
from floe.scan.filters import ScanFilter
from floe.snapshots import Operation, Snapshot

__all__ = ["CommitValidation"]

# Java MergingSnapshotProducer: which operations each check looks at
_ADDS_DATA = frozenset({Operation.APPEND, Operation.OVERWRITE})
_REMOVES_DATA = frozenset({Operation.OVERWRITE, Operation.REPLACE, Operation.DELETE})
_ADDS_DELETES = frozenset({Operation.OVERWRITE, Operation.DELETE})
_REWRITES_DATA = frozenset({Operation.OVERWRITE, Operation.REPLACE})


@dataclass
class CommitValidation:
    """What an operation that read the branch at ``start_snapshot_id`` must not have missed.

    ``conflict_filter`` (a filter string or expression; None = the whole table) limits
    ``no_new_data`` / ``no_new_deletes`` / ``no_removed_data`` to files that may hold
    matching rows; ``conflict_partitions`` (``{(spec_id, partition tuple)}``) limits them to
    those partitions instead (a dynamic partition overwrite).
    """

    start_snapshot_id: int | None
    conflict_filter: Any = None
    conflict_partitions: Collection[tuple[int, tuple[Any, ...]]] | None = None
    no_new_data: bool = False
    no_new_deletes: bool = False
    no_removed_data: bool = False
    replaced_files: Sequence[DataFile] = ()
    replaced_sequence_number: int | None = None
    ignore_equality_deletes: bool = False
    required_files: Collection[str] = ()
    required_files_skip_deletes: bool = False
    case_sensitive: bool = True
    _filter_cache: dict[int, ScanFilter] = field(default_factory=dict, repr=False)

    def validate(self, io: Any, base: TableMetadata, parent: Snapshot | None) -> None:
        """Raise CommitConflict when a commit since the starting snapshot conflicts."""
        if parent is None or parent.snapshot_id == self.start_snapshot_id:
            return
        history = snapshots_since(base, parent, self.start_snapshot_id)
        if not history:
            return
        if self.no_new_data:
            self._check_added_data(io, base, history)
        if self.required_files:
            self._check_required(io, history)
        if self.replaced_files:
            self._check_replaced(io, base, history)
        if self.no_new_deletes:
            self._check_new_deletes(io, base, history)
        if self.no_removed_data:
            self._check_removed_data(io, base, history)

    # -- checks ---------------------------------------------------------------------------

    def _matches(self, base: TableMetadata, df: DataFile) -> bool:
        """May ``df`` hold rows matching the conflict filter (partition, then metrics)?"""
        if self.conflict_partitions is not None:
            return (df.spec_id, tuple(df.partition)) in self.conflict_partitions
        if self.conflict_filter is None:
            return True
        key = base.current_schema_id
        sf = self._filter_cache.get(key)
        if sf is None:
            sf = ScanFilter(base, base.schema(), self.conflict_filter, self.case_sensitive)
            self._filter_cache[key] = sf
        spec_filter = sf.for_spec(df.spec_id)
        return spec_filter.partition(df)[0] and spec_filter.metrics(df)[0]

    def _describe(self) -> str:
        if self.conflict_partitions is not None:
            return "in the replaced partitions"
        return f"matching {self.conflict_filter}" if self.conflict_filter is not None \
            else "in the table"

    def _check_added_data(self, io: Any, base: TableMetadata, history: list[Snapshot]) -> None:
        for snap, e in entries_added_by(io, history, ManifestContent.DATA, _ADDS_DATA):
            if e.status == ManifestEntryStatus.ADDED and self._matches(base, e.data_file):
                raise CommitConflict(
                    f"found conflicting files that can contain rows {self._describe()}: "
                    f"{e.data_file.file_path} was added by snapshot {snap.snapshot_id} "
                    f"({snap.operation}) after the operation started at snapshot "
                    f"{self.start_snapshot_id}")

    def _check_required(self, io: Any, history: list[Snapshot]) -> None:
        required = set(self.required_files)
        ops = _REWRITES_DATA if self.required_files_skip_deletes else _REMOVES_DATA
        for snap, e in entries_added_by(io, history, ManifestContent.DATA, ops):
            if e.status == ManifestEntryStatus.DELETED and e.data_file.file_path in required:
                raise CommitConflict(
                    f"cannot commit, missing data file: {e.data_file.file_path} was removed "
                    f"by snapshot {snap.snapshot_id} ({snap.operation}) after the operation "
                    f"started at snapshot {self.start_snapshot_id}")

    def _new_delete_index(self, io: Any, base: TableMetadata, history: list[Snapshot]
                          ) -> DeleteFileIndex | None:
        unpartitioned = [s.spec_id for s in base.partition_specs if s.is_unpartitioned]
        index = DeleteFileIndex(base.schema(), unpartitioned)
        found = False
        for _, e in entries_added_by(io, history, ManifestContent.DELETES, _ADDS_DELETES):
            if e.status != ManifestEntryStatus.ADDED:
                continue
            if self.ignore_equality_deletes and \
                    e.data_file.content == FileContent.EQUALITY_DELETES:
                continue
            index.add(e, e.data_file.spec_id)
            found = True
        return index if found else None

    def _check_replaced(self, io: Any, base: TableMetadata, history: list[Snapshot]) -> None:
        index = self._new_delete_index(io, base, history)
        if index is None:
            return
        start = base.snapshot_by_id(self.start_snapshot_id) \
            if self.start_snapshot_id is not None else None
        seq = self.replaced_sequence_number
        if seq is None:
            seq = start.sequence_number if start is not None else 0
        for df in self.replaced_files:
            hits = index.for_data_file(df, seq, df.spec_id)
            if hits:
                raise CommitConflict(
                    f"cannot commit, found new delete for replaced data file {df.file_path}: "
                    f"{hits[0].path} was committed after the operation started at snapshot "
                    f"{self.start_snapshot_id}")

    def _check_new_deletes(self, io: Any, base: TableMetadata, history: list[Snapshot]) -> None:
        for snap, e in entries_added_by(io, history, ManifestContent.DELETES, _ADDS_DELETES):
            if e.status == ManifestEntryStatus.ADDED and self._matches(base, e.data_file):
                raise CommitConflict(
                    f"found new conflicting delete files that can apply to rows "
                    f"{self._describe()}: {e.data_file.file_path} was added by snapshot "
                    f"{snap.snapshot_id} after the operation started at snapshot "
                    f"{self.start_snapshot_id}")

    def _check_removed_data(self, io: Any, base: TableMetadata, history: list[Snapshot]
                            ) -> None:
        for snap, e in entries_added_by(io, history, ManifestContent.DATA, _REMOVES_DATA):
            if e.status == ManifestEntryStatus.DELETED and self._matches(base, e.data_file):
                raise CommitConflict(
                    f"found conflicting deleted files that can contain rows "
                    f"{self._describe()}: {e.data_file.file_path} was removed by snapshot "
                    f"{snap.snapshot_id} ({snap.operation}) after the operation started at "
                    f"snapshot {self.start_snapshot_id}")
