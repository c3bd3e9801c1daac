"""Rewrite manifests: cluster a snapshot's manifests by partition (Java ``RewriteManifests`` and
Spark's ``RewriteManifestsSparkAction``).

The live entries of the current snapshot's manifests of one partition spec are sorted by
partition (or by the partition fields named in ``sort_by``, in that order) and written into
``ceil(total size / commit.manifest.target-size-bytes)`` new manifests of about equal entry
counts, as EXISTING entries that keep their snapshot ids and sequence numbers. Data and delete
manifests are rewritten separately, never mixed. The result is one ``replace`` snapshot with
the same files and rows; the commit checks that every replaced manifest is still in the
table's current manifest list (Java ``validateDeletedManifests``) and that the number of live
files is unchanged (``validateFilesCounts``), so a concurrent append is kept and a concurrent
rewrite makes the loser fail.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from floe import clock
from floe.errors import (
    CommitConflict,
    CommitStateUnknown,
    FloeError,
    InvalidArgument,
    ValidationError,
)
from floe.maintenance import ProgressCallback, report
from floe.manifest import (
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    ManifestListWriter,
    ManifestWriter,
    read_manifest_list,
)
from floe.scan.manifests import read_entries
from floe.metadata import TableMetadata
from floe.properties import MANIFEST_TARGET_SIZE, MANIFEST_TARGET_SIZE_DEFAULT, int_property
from floe.snapshots import MAIN_BRANCH, Operation, Snapshot
from floe.table.snapshot_producer import (
    PendingOperation,
    new_snapshot_id,
    set_branch,
    snapshot_summary,
)
from floe.table.updates import AddSnapshot, TableUpdate

if TYPE_CHECKING:
    from floe.io import FileIO
    from floe.partitioning import PartitionSpec
    from floe.table.table import Table

__all__ = ["check_rewrite_manifests", "rewrite_manifests", "RewriteManifestsResult"]

# Java SnapshotSummary keys of a manifest rewrite
CREATED_MANIFESTS = "manifests-created"
KEPT_MANIFESTS = "manifests-kept"
REPLACED_MANIFESTS = "manifests-replaced"
PROCESSED_ENTRIES = "entries-processed"


@dataclass(frozen=True)
class RewriteManifestsResult:
    """What a rewrite did (or, for a dry run, would do)."""

    snapshot_id: int | None
    rewritten_manifests: tuple[str, ...]
    added_manifests: tuple[str, ...]
    entries: int
    dry_run: bool = False
    planned: dict[str, int] = field(default_factory=dict)
    #: the manifests of the branch head that are not rewritten (they stay as they are)
    kept_manifests: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "snapshot_id": self.snapshot_id,
            "dry_run": self.dry_run,
            "rewritten_manifests": list(self.rewritten_manifests),
            "added_manifests": list(self.added_manifests),
            "entries": self.entries,
            "planned_manifests": dict(self.planned),
            "kept_manifests": self.kept_manifests,
        }


def _partition_key(values: tuple[Any, ...], order: Sequence[int]) -> tuple[Any, ...]:
    """A sort key for partition tuples: nulls first, then by value (type-consistent per
    position, since every tuple of a spec has the same types)."""
    return tuple((values[i] is not None, values[i] if values[i] is not None else 0)
                 for i in order)


def _chunk_count(entries: int, n: int) -> int:
    """How many manifests :func:`_chunks` makes of ``entries`` entries asked for ``n``."""
    return min(max(1, n), entries)


def _live_entries(io: FileIO, m: ManifestFile) -> int:
    """A manifest's live entries: from the manifest list's counts, read when they are
    missing (optional in v1)."""
    if m.added_files_count is not None and m.existing_files_count is not None:
        return m.added_files_count + m.existing_files_count
    return len(read_entries(io, m, discard_deleted=True, lazy_stats=True))


def _chunks(entries: list[ManifestEntry], n: int) -> list[list[ManifestEntry]]:
    """``n`` contiguous runs of about equal size (Spark's range repartitioning)."""
    n = max(1, min(n, len(entries)))
    size, extra = divmod(len(entries), n)
    out: list[list[ManifestEntry]] = []
    start = 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(entries[start:end])
        start = end
    return [c for c in out if c]


class _RewriteManifests(PendingOperation):
    """The commit: replace ``rewritten`` by ``added`` in the branch head's manifest list."""

    def __init__(self, table: Table, rewritten: list[ManifestFile], added: list[ManifestFile],
                 snapshot_id: int, branch: str, entries: int) -> None:
        self.io = table.io
        self.rewritten = rewritten
        self.added = added
        self.snapshot_id = snapshot_id
        self.branch = branch
        self.entries = entries
        self.commit_uuid = uuid.uuid4()
        self.attempt = 0
        self.manifest_lists: list[str] = []

    def apply(self, base: TableMetadata) -> list[TableUpdate]:
        self.attempt += 1
        parent = base.snapshot_by_ref(self.branch) if self.branch in base.refs \
            else base.current_snapshot()
        if parent is None or parent.manifest_list is None:
            raise CommitConflict("cannot rewrite manifests: the table has no current snapshot")
        current = read_manifest_list(self.io, parent.manifest_list)
        current_paths = {m.manifest_path for m in current}
        gone = [m.manifest_path for m in self.rewritten if m.manifest_path not in current_paths]
        if gone:
            raise CommitConflict(
                f"cannot rewrite manifests: manifest {gone[0]} is no longer in snapshot "
                f"{parent.snapshot_id} (a concurrent commit replaced it)")
        replaced = {m.manifest_path for m in self.rewritten}
        kept = [m for m in current if m.manifest_path not in replaced]

        def live(ms: Sequence[ManifestFile]) -> int:
            return sum((m.added_files_count or 0) + (m.existing_files_count or 0) for m in ms)

        if live(self.added) != live(self.rewritten):
            raise ValidationError(
                f"replaced and created manifests must have the same number of live files: "
                f"{live(self.added)} (new), {live(self.rewritten)} (old)")
        sequence_number = base.next_sequence_number()
        list_path = (f"{base.location.rstrip('/')}/metadata/snap-{self.snapshot_id}-"
                     f"{self.attempt}-{self.commit_uuid}.avro")
        writer = ManifestListWriter(
            self.io, list_path, format_version=min(base.format_version, 2),
            snapshot_id=self.snapshot_id, parent_snapshot_id=parent.snapshot_id,
            sequence_number=sequence_number)
        self.manifest_lists.append(list_path)
        writer.add_manifests(self.added + kept)
        writer.close()
        summary = snapshot_summary(Operation.REPLACE, parent, [], [], {
            CREATED_MANIFESTS: str(len(self.added)), KEPT_MANIFESTS: str(len(kept)),
            REPLACED_MANIFESTS: str(len(self.rewritten)),
            PROCESSED_ENTRIES: str(self.entries)})
        summary.pop("changed-partition-count", None)
        snapshot = Snapshot(
            snapshot_id=self.snapshot_id, parent_snapshot_id=parent.snapshot_id,
            sequence_number=sequence_number, timestamp_ms=clock.now_ms(),
            manifest_list=list_path, summary=summary, schema_id=base.current_schema_id)
        return [AddSnapshot(snapshot), set_branch(base, self.branch, self.snapshot_id)]

    def clean_up(self, committed: bool) -> None:
        doomed = self.manifest_lists[:-1] if committed else \
            self.manifest_lists + [m.manifest_path for m in self.added]
        for path in doomed:
            try:
                self.io.delete(path, missing_ok=True)
            except (OSError, FloeError):
                pass


def check_rewrite_manifests(
    md: TableMetadata, *, table: Any, spec_id: int | None = None,
    sort_by: Sequence[str] | None = None, target_size_bytes: int | None = None,
    branch: str = MAIN_BRANCH,
) -> tuple[Snapshot, PartitionSpec, list[int], int]:
    """The checks :func:`rewrite_manifests` makes before reading any manifest (a caller may
    run them first, e.g. before queueing a task). Returns (branch head, spec, the partition
    field order to cluster by, target size); InvalidArgument naming the argument."""
    head = md.snapshot_by_ref(branch)
    if head is None or head.manifest_list is None:
        raise InvalidArgument("branch", f"table {table} has no snapshot on {branch!r} to "
                                        f"rewrite the manifests of")
    spec = md.spec() if spec_id is None else md.spec_by_id(spec_id)
    if spec is None:
        raise InvalidArgument("spec_id", f"table {table} has no partition spec {spec_id}")
    names = [f.name for f in spec.fields]
    if sort_by:
        unknown = [n for n in sort_by if n not in names]
        if unknown:
            raise InvalidArgument("sort_by", f"cannot cluster manifests by {unknown[0]!r}: "
                                             f"spec {spec.spec_id} has the partition fields "
                                             f"{names}")
        order = [names.index(n) for n in sort_by]
    else:
        order = list(range(len(names)))
    target = target_size_bytes or int_property(md, MANIFEST_TARGET_SIZE,
                                               MANIFEST_TARGET_SIZE_DEFAULT)
    if target <= 0:
        raise InvalidArgument("target_size_bytes",
                              f"the target manifest size must be positive, got {target}")
    return head, spec, order, target


def rewrite_manifests(
    table: Table,
    *,
    spec_id: int | None = None,
    sort_by: Sequence[str] | None = None,
    target_size_bytes: int | None = None,
    branch: str = MAIN_BRANCH,
    dry_run: bool = False,
    on_progress: ProgressCallback | None = None,
) -> RewriteManifestsResult:
    """Rewrite the manifests of spec ``spec_id`` (default: the table's default spec) in the
    branch head into clustered manifests of ``commit.manifest.target-size-bytes``; one
    ``replace`` commit. ``sort_by`` names partition fields to cluster by, in order."""
    md = table.metadata
    head, spec, order, target = check_rewrite_manifests(
        md, table=table.identifier, spec_id=spec_id, sort_by=sort_by,
        target_size_bytes=target_size_bytes, branch=branch)
    assert head.manifest_list is not None
    report(on_progress, "reading the manifest list")
    manifests = read_manifest_list(table.io, head.manifest_list)
    snapshot_id = new_snapshot_id()
    rewritten: list[ManifestFile] = []
    added: list[ManifestFile] = []
    planned: dict[str, int] = {}
    entries_seen = 0
    committed = False
    try:
        for content in (ManifestContent.DATA, ManifestContent.DELETES):
            matching = [m for m in manifests
                        if m.content == content and m.partition_spec_id == spec.spec_id]
            if not matching:
                continue
            count = -(-sum(m.manifest_length for m in matching) // target)
            if count == 1 and len(matching) == 1:
                continue
            label = "data" if content == ManifestContent.DATA else "delete"
            rewritten += matching
            if dry_run:  # the counts the run would see, without writing anything
                live = sum(_live_entries(table.io, m) for m in matching)
                entries_seen += live
                planned[label] = _chunk_count(live, count)
                continue
            entries: list[ManifestEntry] = []
            for i, m in enumerate(matching):
                report(on_progress, f"reading {label} manifests", i, len(matching))
                entries += read_entries(table.io, m, discard_deleted=True, lazy_stats=False)
            entries.sort(key=lambda e: _partition_key(tuple(e.data_file.partition), order))
            entries_seen += len(entries)
            chunks = _chunks(entries, count)
            planned[label] = len(chunks)
            for i, chunk in enumerate(chunks):
                report(on_progress, f"writing {label} manifests", i, len(chunks))
                path = (f"{md.location.rstrip('/')}/metadata/{uuid.uuid4()}-"
                        f"rewrite-m{len(added)}.avro")
                writer = ManifestWriter(
                    table.io, path, spec=spec, schema=md.schema(),
                    format_version=min(md.format_version, 2), snapshot_id=snapshot_id,
                    content=content)
                for e in chunk:
                    writer.existing(e)
                added.append(writer.close())
        kept = len(manifests) - len(rewritten)
        if dry_run or not rewritten:
            return RewriteManifestsResult(None, tuple(m.manifest_path for m in rewritten), (),
                                          entries_seen, dry_run, planned, kept)
        report(on_progress, "committing", len(rewritten), len(rewritten))
        txn = table.new_transaction()
        txn.add_operation(_RewriteManifests(table, rewritten, added, snapshot_id, branch,
                                            entries_seen))
        try:
            txn.commit()
        except CommitStateUnknown:
            committed = True  # maybe committed: the new manifests must stay
            raise
        committed = True
    finally:
        if not committed and not dry_run:
            # the transaction's clean-up already ran if the commit itself failed; this covers a
            # failure (or Cancelled) while writing, before anything was handed to it
            for m in added:
                try:
                    table.io.delete(m.manifest_path, missing_ok=True)
                except (OSError, FloeError):
                    pass
    return RewriteManifestsResult(snapshot_id, tuple(m.manifest_path for m in rewritten),
                                  tuple(m.manifest_path for m in added), entries_seen, False,
                                  planned, kept)
