"""Producing snapshots (Java ``SnapshotProducer`` / ``MergingSnapshotProducer``).

A :class:`SnapshotProducer` is a pending operation of a transaction: ``apply(base)`` writes
what the new snapshot needs against that base and returns the updates that add it. It is
called again on every retry of the commit loop with the refreshed base, and it reuses what
does not depend on the base: the manifests of the added files keep their unassigned sequence
numbers (spec "Sequence Number Inheritance"), so a retry only rewrites the manifest list
with the new sequence number. Manifests rewritten to delete files and merged manifests are
cached per input manifest and reused when the same inputs come back.

Operations: a fast append (new manifests + the parent's, unchanged), a merge append (small
manifests of a spec merged once there are ``commit.manifest.min-count-to-merge`` of them),
and overwrite / delete by file, which verify at every attempt that the files they remove
are still live (spec "Commit Conflict Resolution and Retry").
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from floe import clock
from floe.errors import CommitConflict, FloeError, ValidationError
from floe.io import FileIO
from floe.manifest import (
    DataFile,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestListWriter,
    ManifestWriter,
    UNASSIGNED_SEQ,
    read_manifest_list,
)
from floe.scan.manifests import read_entries
from floe.metadata import TableMetadata
from floe.properties import (
    MANIFEST_MERGE_ENABLED as MERGE_ENABLED,
)
from floe.properties import (
    MANIFEST_MERGE_ENABLED_DEFAULT as MERGE_ENABLED_DEFAULT,
)
from floe.properties import (
    MANIFEST_MIN_COUNT_TO_MERGE as MIN_COUNT_TO_MERGE,
)
from floe.properties import (
    MANIFEST_MIN_COUNT_TO_MERGE_DEFAULT as MIN_COUNT_TO_MERGE_DEFAULT,
)
from floe.properties import (
    MANIFEST_TARGET_SIZE,
    MANIFEST_TARGET_SIZE_DEFAULT,
    bool_property,
    int_property,
)
from floe.snapshots import MAIN_BRANCH, Operation, Snapshot, SnapshotRefType
from floe.table.updates import AddSnapshot, SetSnapshotRef, TableRequirement, TableUpdate

if TYPE_CHECKING:
    from floe.table.validation import CommitValidation

__all__ = ["PendingOperation", "SnapshotProducer", "new_snapshot_id", "snapshot_summary",
           "branch_head", "set_branch"]

log = logging.getLogger(__name__)

# SnapshotSummary keys (Java SnapshotSummary)
ADDED_DATA_FILES = "added-data-files"
DELETED_DATA_FILES = "deleted-data-files"
ADDED_DELETE_FILES = "added-delete-files"
REMOVED_DELETE_FILES = "removed-delete-files"
ADDED_POS_DELETE_FILES = "added-position-delete-files"
ADDED_EQ_DELETE_FILES = "added-equality-delete-files"
REMOVED_POS_DELETE_FILES = "removed-position-delete-files"
REMOVED_EQ_DELETE_FILES = "removed-equality-delete-files"
ADDED_RECORDS = "added-records"
DELETED_RECORDS = "deleted-records"
ADDED_FILES_SIZE = "added-files-size"
REMOVED_FILES_SIZE = "removed-files-size"
ADDED_POS_DELETES = "added-position-deletes"
REMOVED_POS_DELETES = "removed-position-deletes"
ADDED_EQ_DELETES = "added-equality-deletes"
REMOVED_EQ_DELETES = "removed-equality-deletes"
CHANGED_PARTITION_COUNT = "changed-partition-count"
TOTAL_RECORDS = "total-records"
TOTAL_FILES_SIZE = "total-files-size"
TOTAL_DATA_FILES = "total-data-files"
TOTAL_DELETE_FILES = "total-delete-files"
TOTAL_POS_DELETES = "total-position-deletes"
TOTAL_EQ_DELETES = "total-equality-deletes"
# Java EnvironmentContext: the engine that wrote a snapshot (Spark writes spark / 3.5.8)
ENGINE_NAME = "engine-name"
ENGINE_VERSION = "engine-version"


@functools.cache
def _engine() -> dict[str, str]:
    try:
        version = importlib.metadata.version("floe")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return {ENGINE_NAME: "floe", ENGINE_VERSION: version}


def new_snapshot_id() -> int:
    """A positive random 63-bit id, as Java derives from a random UUID."""
    u = uuid.uuid4().int
    return ((u >> 64) ^ (u & 0xFFFFFFFFFFFFFFFF)) & 0x7FFFFFFFFFFFFFFF


def branch_head(md: TableMetadata, branch: str) -> Snapshot | None:
    """The snapshot a commit to ``branch`` builds on (Java ``SnapshotUtil.latestSnapshot``):
    the branch's head, or the current snapshot for main and for a branch that does not exist
    yet (the commit creates it there). A tag is refused: only branches take commits."""
    ref = md.refs.get(branch)
    if ref is None or branch == MAIN_BRANCH:
        return md.current_snapshot()
    if not ref.is_branch:
        raise ValidationError(f"cannot commit to {branch!r}: it is a tag, not a branch")
    return md.snapshot_by_id(ref.snapshot_id)


def set_branch(md: TableMetadata, branch: str, snapshot_id: int) -> SetSnapshotRef:
    """Move ``branch`` to ``snapshot_id``, keeping its retention settings (Java
    ``SnapshotRef.builderFrom``)."""
    ref = md.refs.get(branch)
    if ref is None:
        return SetSnapshotRef(branch, snapshot_id, SnapshotRefType.BRANCH)
    return SetSnapshotRef(branch, snapshot_id, ref.ref_type, ref.min_snapshots_to_keep,
                          ref.max_snapshot_age_ms, ref.max_ref_age_ms)


class PendingOperation:
    """One change of a transaction, re-applied to the refreshed base on every attempt."""

    #: checked against every base the operation is applied to (captured at creation)
    requirements: Sequence[TableRequirement] = ()

    def apply(self, base: TableMetadata) -> list[TableUpdate]:
        raise NotImplementedError

    def clean_up(self, committed: bool) -> None:
        """After the final attempt: ``committed`` → delete what losing attempts wrote;
        else delete everything this operation wrote. Never called when the outcome is
        unknown."""


class MetadataOperation(PendingOperation):
    """Fixed updates (properties, schema, spec, ...) with the requirements they rely on."""

    def __init__(self, updates: Sequence[TableUpdate],
                 requirements: Sequence[TableRequirement] = ()) -> None:
        self.updates = list(updates)
        self.requirements = list(requirements)

    def apply(self, base: TableMetadata) -> list[TableUpdate]:
        return list(self.updates)


def _counts(files: Iterable[DataFile]) -> dict[str, int]:
    c = dict.fromkeys(("data", "delete", "pos_files", "eq_files", "records", "size", "pos",
                       "eq"), 0)
    for f in files:
        c["size"] += f.file_size_in_bytes
        if f.content == FileContent.DATA:
            c["data"] += 1
            c["records"] += f.record_count
        else:
            c["delete"] += 1
            if f.content == FileContent.POSITION_DELETES:
                c["pos_files"] += 1
                c["pos"] += f.record_count
            else:
                c["eq_files"] += 1
                c["eq"] += f.record_count
    return c


def snapshot_summary(
    operation: Operation,
    parent: Snapshot | None,
    added: Sequence[DataFile],
    removed: Sequence[DataFile],
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    """Java ``SnapshotSummary.Builder``: added / removed counts (only when non-zero), the
    changed partition count, totals carried from the parent's summary, and the engine
    (``engine-name`` floe and its version, as Java adds its ``EnvironmentContext``)."""
    a, r = _counts(added), _counts(removed)
    out: dict[str, str] = {"operation": str(operation)}

    def put(key: str, value: int) -> None:
        if value > 0:
            out[key] = str(value)

    put(ADDED_DATA_FILES, a["data"])
    put(DELETED_DATA_FILES, r["data"])
    put(ADDED_DELETE_FILES, a["delete"])
    put(ADDED_EQ_DELETE_FILES, a["eq_files"])
    put(REMOVED_EQ_DELETE_FILES, r["eq_files"])
    put(ADDED_POS_DELETE_FILES, a["pos_files"])
    put(REMOVED_POS_DELETE_FILES, r["pos_files"])
    put(REMOVED_DELETE_FILES, r["delete"])
    put(ADDED_RECORDS, a["records"])
    put(DELETED_RECORDS, r["records"])
    put(ADDED_FILES_SIZE, a["size"])
    put(REMOVED_FILES_SIZE, r["size"])
    put(ADDED_POS_DELETES, a["pos"])
    put(REMOVED_POS_DELETES, r["pos"])
    put(ADDED_EQ_DELETES, a["eq"])
    put(REMOVED_EQ_DELETES, r["eq"])
    partitions = {(f.spec_id, f.partition) for f in (*added, *removed)}
    out[CHANGED_PARTITION_COUNT] = str(len(partitions))
    previous = parent.summary if parent is not None else {}
    for key, delta in (
        (TOTAL_RECORDS, a["records"] - r["records"]),
        (TOTAL_FILES_SIZE, a["size"] - r["size"]),
        (TOTAL_DATA_FILES, a["data"] - r["data"]),
        (TOTAL_DELETE_FILES, a["delete"] - r["delete"]),
        (TOTAL_POS_DELETES, a["pos"] - r["pos"]),
        (TOTAL_EQ_DELETES, a["eq"] - r["eq"]),
    ):
        # Java: a total is only kept when the parent had it (or there is no parent)
        if parent is None or key in previous:
            try:
                out[key] = str(int(previous.get(key, "0")) + delta)
            except ValueError:
                continue
    out.update(_engine())
    if extra:
        out.update(extra)
    return out


class SnapshotProducer(PendingOperation):
    """Adds one snapshot to a branch: ``added`` files in new manifests, ``deleted`` paths
    removed (each must be live at every attempt), optionally merging manifests.

    ``branch`` is the branch the snapshot is committed to (created at the current snapshot
    when it does not exist); ``stage_only`` adds the snapshot without moving any branch
    (write-audit-publish). At every attempt, ``checks`` run against the base and
    ``validation`` against the commits that landed since the operation started; either
    raises CommitConflict (final) or ValidationError. ``data_sequence_number`` gives the
    added files an explicit data sequence number (a rewrite keeps the starting one).
    """

    def __init__(
        self,
        io: FileIO,
        *,
        added: Sequence[DataFile] = (),
        deleted: Iterable[str] = (),
        merge: bool = False,
        operation: Operation | None = None,
        owned_files: Iterable[str] = (),
        summary_properties: dict[str, str] | None = None,
        branch: str = MAIN_BRANCH,
        stage_only: bool = False,
        validation: CommitValidation | None = None,
        checks: Sequence[Callable[[TableMetadata], None]] = (),
        data_sequence_number: int | None = None,
    ) -> None:
        self.io = io
        self.branch = branch
        self.stage_only = stage_only
        self.validation = validation
        self.checks = list(checks)
        self.data_sequence_number = data_sequence_number
        self.added = list(added)
        self.deleted = frozenset(deleted)
        self.merge = merge
        if operation is None:
            if self.deleted:
                operation = Operation.OVERWRITE if self.added else Operation.DELETE
            else:
                operation = Operation.APPEND
        self.operation = operation
        self.owned_files = list(owned_files)
        self.summary_properties = summary_properties
        self.commit_uuid = uuid.uuid4()
        self.snapshot_id = new_snapshot_id()
        self.attempt = 0
        self.manifest_lists: list[str] = []
        self.written_manifests: list[str] = []
        self._manifest_count = 0
        self._new_manifests: list[ManifestFile] | None = None
        self._rewritten: dict[str, tuple[ManifestFile | None, list[ManifestEntry]]] = {}
        self._old_deletes: dict[tuple[str, int],
                                tuple[ManifestFile | None, list[ManifestEntry]]] = {}
        self._merged: dict[tuple[str, ...], ManifestFile] = {}
        self._last_manifests: list[ManifestFile] = []
        self.committed_snapshot: Snapshot | None = None

    # -- apply ---------------------------------------------------------------------------

    def apply(self, base: TableMetadata) -> list[TableUpdate]:
        self.attempt += 1
        if base.snapshot_by_id(self.snapshot_id) is not None:
            raise ValidationError(f"snapshot id {self.snapshot_id} is already in the table")
        for check in self.checks:
            check(base)
        parent = branch_head(base, self.branch)
        if self.validation is not None:
            self.validation.validate(self.io, base, parent)
        sequence_number = base.next_sequence_number()
        existing = self._parent_manifests(parent)
        removed: list[DataFile] = []
        if self.deleted:
            existing, removed = self._remove_files(base, existing)
        merging = self.merge or bool(self.deleted) or self.operation != Operation.APPEND
        if merging and base.format_version >= 2:
            existing, dropped = self._drop_old_deletes(base, existing)
            removed += dropped
        new = self._write_new_manifests(base)
        if merging:
            # Java MergingSnapshotProducer: keep manifests with live files or written now
            existing = [m for m in existing if m.has_added_files() or m.has_existing_files()
                        or m.added_snapshot_id == self.snapshot_id]
        manifests = self._merge(base, new, existing) if self.merge else new + existing
        list_path = (f"{base.location.rstrip('/')}/metadata/snap-{self.snapshot_id}-"
                     f"{self.attempt}-{self.commit_uuid}.avro")
        writer = ManifestListWriter(
            self.io, list_path, format_version=min(base.format_version, 2),
            snapshot_id=self.snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=sequence_number,
        )
        self.manifest_lists.append(list_path)
        writer.add_manifests(manifests)
        writer.close()
        self._last_manifests = manifests
        snapshot = Snapshot(
            snapshot_id=self.snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=sequence_number,
            timestamp_ms=clock.now_ms(),
            manifest_list=list_path,
            summary=snapshot_summary(self.operation, parent, self.added, removed,
                                     self.summary_properties),
            schema_id=base.current_schema_id,
        )
        self.committed_snapshot = snapshot
        if self.stage_only:
            return [AddSnapshot(snapshot)]
        return [AddSnapshot(snapshot), set_branch(base, self.branch, self.snapshot_id)]

    def _parent_manifests(self, parent: Snapshot | None) -> list[ManifestFile]:
        if parent is None:
            return []
        if parent.manifest_list is None:
            raise ValidationError(
                f"snapshot {parent.snapshot_id} has no manifest list (a v1 'manifests' "
                f"snapshot); floe cannot commit on top of it")
        return read_manifest_list(self.io, parent.manifest_list)

    def _manifest_path(self, base: TableMetadata) -> str:
        path = (f"{base.location.rstrip('/')}/metadata/{self.commit_uuid}-"
                f"m{self._manifest_count}.avro")
        self._manifest_count += 1
        self.written_manifests.append(path)
        return path

    def _writer(self, base: TableMetadata, spec_id: int, content: ManifestContent
                ) -> ManifestWriter:
        spec = base.spec_by_id(spec_id)
        if spec is None:
            raise ValidationError(f"partition spec {spec_id} is not in the table")
        return ManifestWriter(
            self.io, self._manifest_path(base), spec=spec, schema=base.schema(),
            format_version=min(base.format_version, 2), snapshot_id=self.snapshot_id,
            content=content,
        )

    def _write_new_manifests(self, base: TableMetadata) -> list[ManifestFile]:
        """Manifests of the added files, written once; later attempts reuse them."""
        if self._new_manifests is None:
            groups: dict[tuple[int, ManifestContent], list[DataFile]] = {}
            for f in self.added:
                content = (ManifestContent.DATA if f.content == FileContent.DATA
                           else ManifestContent.DELETES)
                groups.setdefault((f.spec_id, content), []).append(f)
            out = []
            for (spec_id, content), files in groups.items():
                writer = self._writer(base, spec_id, content)
                for f in files:
                    writer.add(f, self.data_sequence_number)
                out.append(writer.close())
            self._new_manifests = out
        return list(self._new_manifests)

    def _remove_files(
        self, base: TableMetadata, manifests: list[ManifestFile]
    ) -> tuple[list[ManifestFile], list[DataFile]]:
        """Rewrite the manifests holding deleted files; every deleted path must be live."""
        kept: list[ManifestFile] = []
        removed: list[DataFile] = []
        for m in manifests:
            if m.manifest_path not in self._rewritten:
                self._rewritten[m.manifest_path] = self._rewrite(base, m)
            rewritten, entries = self._rewritten[m.manifest_path]
            kept.append(rewritten if rewritten is not None else m)
            removed += [e.data_file for e in entries]
        found = {f.file_path for f in removed}
        missing = sorted(self.deleted - found)
        if missing:
            raise CommitConflict(
                f"cannot {self.operation}: file {missing[0]} is not live in the current table "
                f"state (it was removed by a concurrent commit, or never was in the table)"
                + (f"; {len(missing) - 1} more missing" if len(missing) > 1 else ""))
        return kept, removed

    def _drop_old_deletes(self, base: TableMetadata, manifests: list[ManifestFile]
                          ) -> tuple[list[ManifestFile], list[DataFile]]:
        """Java ``dropDeleteFilesOlderThan``: a delete file whose data sequence number is
        below every live data file's can apply to nothing; it is removed in this commit."""
        floor = min((m.min_sequence_number for m in manifests
                     if m.content == ManifestContent.DATA
                     and m.min_sequence_number != UNASSIGNED_SEQ
                     and (m.has_added_files() or m.has_existing_files())),
                    default=base.last_sequence_number)
        floor = min(floor, base.last_sequence_number)
        if self.data_sequence_number is not None and any(
                int(f.content) == 0 for f in self.added):
            # files this commit adds at an older sequence number (compaction's starting
            # sequence number) still need the deletes committed since: keep them
            floor = min(floor, self.data_sequence_number)
        kept: list[ManifestFile] = []
        dropped: list[DataFile] = []
        for m in manifests:
            if m.content != ManifestContent.DELETES or m.min_sequence_number >= floor:
                kept.append(m)
                continue
            key = (m.manifest_path, floor)
            if key not in self._old_deletes:
                self._old_deletes[key] = self._rewrite_where(
                    base, m, lambda e: (e.sequence_number or 0) < floor)
            rewritten, entries = self._old_deletes[key]
            kept.append(rewritten if rewritten is not None else m)
            dropped += [e.data_file for e in entries]
        return kept, dropped

    def _rewrite(self, base: TableMetadata, m: ManifestFile
                 ) -> tuple[ManifestFile | None, list[ManifestEntry]]:
        return self._rewrite_where(base, m, lambda e: e.data_file.file_path in self.deleted)

    def _rewrite_where(self, base: TableMetadata, m: ManifestFile,
                       doomed: Callable[[ManifestEntry], bool]
                       ) -> tuple[ManifestFile | None, list[ManifestEntry]]:
        """``m`` with the live entries ``doomed`` selects marked DELETED (None when none
        is), and those entries."""
        entries = read_entries(self.io, m, discard_deleted=True, lazy_stats=False)
        hits = [e for e in entries if doomed(e)]
        if not hits:
            return None, []
        writer = self._writer(base, m.partition_spec_id, m.content)
        for e in entries:
            if doomed(e):
                writer.delete(e)
            else:
                writer.existing(e)
        return writer.close(), hits

    # -- merging (Java ManifestMergeManager) ---------------------------------------------

    def _merge(self, base: TableMetadata, new: list[ManifestFile],
               existing: list[ManifestFile]) -> list[ManifestFile]:
        if not bool_property(base, MERGE_ENABLED, MERGE_ENABLED_DEFAULT):
            return new + existing
        min_count = int_property(base, MIN_COUNT_TO_MERGE, MIN_COUNT_TO_MERGE_DEFAULT)
        target = int_property(base, MANIFEST_TARGET_SIZE, MANIFEST_TARGET_SIZE_DEFAULT)
        new_paths = {m.manifest_path for m in new}
        out: list[ManifestFile] = []
        groups: dict[int, list[ManifestFile]] = {}
        for m in new + existing:
            if m.content != ManifestContent.DATA:
                out.append(m)
                continue
            groups.setdefault(m.partition_spec_id, []).append(m)
        merged: list[ManifestFile] = []
        for spec_id, group in sorted(groups.items(), reverse=True):
            for bin_ in _pack_end(group, target):
                has_new = any(m.manifest_path in new_paths for m in bin_)
                if len(bin_) == 1 or (has_new and len(bin_) < min_count):
                    merged += bin_
                else:
                    merged.append(self._merged_manifest(base, spec_id, bin_))
        return merged + out

    def _merged_manifest(self, base: TableMetadata, spec_id: int,
                         bin_: list[ManifestFile]) -> ManifestFile:
        key = tuple(m.manifest_path for m in bin_)
        if key in self._merged:
            return self._merged[key]
        own = {m.manifest_path for m in self._new_manifests or ()}
        writer = self._writer(base, spec_id, ManifestContent.DATA)
        for m in bin_:
            if m.manifest_path in own:
                for f in self.added:
                    if f.content == FileContent.DATA and f.spec_id == spec_id:
                        writer.add(f, self.data_sequence_number)
                continue
            for e in read_entries(self.io, m, lazy_stats=False):
                if e.status == ManifestEntryStatus.DELETED:
                    if e.snapshot_id == self.snapshot_id:
                        writer.add_entry(e)  # deleted by this very snapshot: keep the tombstone
                elif e.status == ManifestEntryStatus.ADDED and e.snapshot_id == self.snapshot_id:
                    writer.add_entry(e)
                else:
                    writer.existing(e)
        result = writer.close()
        self._merged[key] = result
        return result

    # -- clean-up ------------------------------------------------------------------------

    def clean_up(self, committed: bool) -> None:
        if committed:
            keep = {m.manifest_path for m in self._last_manifests}
            doomed = [p for p in self.manifest_lists[:-1]]
            doomed += [p for p in self.written_manifests if p not in keep]
        else:
            doomed = self.manifest_lists + self.written_manifests + self.owned_files
        for path in doomed:
            try:
                self.io.delete(path, missing_ok=True)
            except (OSError, FloeError) as e:
                log.warning("could not delete %s: %s", path, e)


def _pack_end(items: list[ManifestFile], target: int) -> list[list[ManifestFile]]:
    """Bins of about ``target`` bytes, packed from the end so the first bin (which holds the
    new manifests) is the one left short (Java ``BinPacking.ListPacker.packEnd``)."""
    bins: list[list[ManifestFile]] = []
    current: list[ManifestFile] = []
    size = 0
    for m in reversed(items):
        if current and size + m.manifest_length > target:
            bins.append(current)
            current, size = [], 0
        current.insert(0, m)
        size += m.manifest_length
    if current:
        bins.append(current)
    bins.reverse()
    return bins

