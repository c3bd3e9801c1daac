"""What happened between two snapshots of a branch (Java ``SnapshotUtil.ancestorsBetween`` and
``MergingSnapshotProducer.validationHistory``): the snapshots committed since a starting one,
and the manifest entries each of them wrote, read from the manifests that snapshot added only.

Commit validation (:mod:`floe.table.validation`), cherry-pick and incremental reads
(:mod:`floe.scan.incremental`) all ask these questions; this is the one place that answers.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from typing import Any

from floe.errors import CommitConflict
from floe.manifest import (
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    read_manifest_list,
)
from floe.scan.manifests import read_entries
from floe.metadata import TableMetadata
from floe.snapshots import Operation, Snapshot

__all__ = ["snapshots_since", "entries_added_by"]


def snapshots_since(md: TableMetadata, head: Snapshot | None, start_id: int | None
                    ) -> list[Snapshot]:
    """The ancestors of ``head`` committed after ``start_id``, newest first.

    CommitConflict when ``start_id`` is not an ancestor of ``head`` (the branch was rolled
    back or replaced meanwhile, so what happened since cannot be told).
    """
    out: list[Snapshot] = []
    snap = head
    while snap is not None and snap.snapshot_id != start_id:
        out.append(snap)
        if snap.parent_snapshot_id is None:
            snap = None
            break
        snap = md.snapshot_by_id(snap.parent_snapshot_id)
    if snap is None and start_id is not None:
        raise CommitConflict(
            f"cannot determine the history between the starting snapshot {start_id} and "
            f"snapshot {head.snapshot_id if head else None}: the branch no longer descends "
            f"from it (rolled back or replaced by a concurrent commit)")
    return out


def entries_added_by(io: Any, snapshots: Iterable[Snapshot], content: ManifestContent,
                     operations: Collection[Operation]) -> Iterator[tuple[Snapshot,
                                                                           ManifestEntry]]:
    """The ADDED and DELETED entries each snapshot wrote, reading only the manifests that
    snapshot added (Java ``validationHistory``)."""
    for snap in snapshots:
        if snap.operation not in operations or snap.manifest_list is None:
            continue
        for m in read_manifest_list(io, snap.manifest_list):
            if m.content != content or m.added_snapshot_id != snap.snapshot_id:
                continue
            for e in read_entries(io, m):
                if e.status != ManifestEntryStatus.EXISTING and e.snapshot_id == snap.snapshot_id:
                    yield snap, e
