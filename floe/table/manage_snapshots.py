"""Snapshot management: rollback, set-current, cherry-pick, branches and tags, write-audit-publish
(Java ``ManageSnapshots``: ``SetSnapshotOperation``, ``CherryPickOperation``,
``UpdateSnapshotReferencesOperation``; spec "Snapshot References").

:class:`ManageSnapshots` is a builder over one transaction: each call stages an operation that
is re-applied to the refreshed table at every commit attempt, so the checks it makes (is the
target still an ancestor, was the snapshot already picked) always hold for the metadata that is
actually committed. Every ref a call changes is also asserted unchanged since the builder was
made: two writers moving the same branch never silently overwrite each other.

Deliberate differences from Java, both toward not losing a concurrent commit:

* a rollback or set-current fails with :class:`CommitConflict` when ``main`` moved after the
  builder read it (Java re-applies the rollback on top of the newer state, which silently drops
  the concurrent commit from ``main``);
* ``rollback_to_time(ts)`` picks the newest ancestor committed *at or before* ``ts`` (Java: strictly
  before), so rolling back to a snapshot's own commit time lands on that snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from floe.errors import CommitConflict, NotFound, ValidationError
from floe.manifest import DataFile, ManifestContent, ManifestEntryStatus
from floe.metadata import TableMetadata
from floe.properties import (
    MANIFEST_MERGE_ENABLED,
    MANIFEST_MERGE_ENABLED_DEFAULT,
    WAP_ID,
    bool_property,
)
from floe.snapshots import MAIN_BRANCH, Operation, Snapshot, SnapshotRef, SnapshotRefType
from floe.table.snapshot_producer import PendingOperation, SnapshotProducer, set_branch
from floe.table.updates import (
    AssertRefSnapshotId,
    RemoveSnapshotRef,
    SetSnapshotRef,
    TableRequirement,
    TableUpdate,
)
from floe.scan.history import entries_added_by
from floe.table.validation import CommitValidation

if TYPE_CHECKING:
    from floe.table.table import Table
    from floe.table.transaction import Transaction

__all__ = ["ManageSnapshots", "SOURCE_SNAPSHOT_ID", "PUBLISHED_WAP_ID", "REPLACE_PARTITIONS",
           "is_ancestor", "snapshot_as_of_ancestor", "staged_wap_snapshot"]

# Java SnapshotSummary keys
SOURCE_SNAPSHOT_ID = "source-snapshot-id"
PUBLISHED_WAP_ID = "published-wap-id"
REPLACE_PARTITIONS = "replace-partitions"


def _ancestor_ids(md: TableMetadata, head: Snapshot | None) -> Iterator[int]:
    if head is not None:
        for snap in md.ancestors_of(head.snapshot_id):
            yield snap.snapshot_id


def is_ancestor(md: TableMetadata, snapshot_id: int, of: int | None = None) -> bool:
    """Is ``snapshot_id`` the snapshot ``of`` (default: the current one) or one of its
    ancestors?"""
    head = md.current_snapshot() if of is None else md.snapshot_by_id(of)
    return snapshot_id in set(_ancestor_ids(md, head))


def snapshot_as_of_ancestor(md: TableMetadata, timestamp_ms: int) -> Snapshot | None:
    """The newest ancestor of the current snapshot committed at or before ``timestamp_ms``."""
    best: Snapshot | None = None
    head = md.current_snapshot()
    if head is None:
        return None
    for snap in md.ancestors_of(head.snapshot_id):
        if snap.timestamp_ms <= timestamp_ms and (best is None
                                                  or snap.timestamp_ms > best.timestamp_ms):
            best = snap
    return best


def staged_wap_snapshot(md: TableMetadata, wap_id: str) -> Snapshot:
    """The snapshot staged with ``wap.id = wap_id`` (Spark's ``publish_changes``)."""
    staged = [s for s in md.snapshots if s.summary.get(WAP_ID) == wap_id]
    if not staged:
        raise NotFound(f"no snapshot of table {md.location} was staged with wap.id {wap_id!r}")
    return staged[-1]


def _wap_published(md: TableMetadata, wap_id: str) -> int | None:
    """The ancestor of the current snapshot that staged or published ``wap_id`` (Java
    ``WapUtil.isWapIdPublished``)."""
    for snap in md.ancestors_of(md.current_snapshot_id) if md.current_snapshot_id else ():
        if wap_id in (snap.summary.get(WAP_ID), snap.summary.get(PUBLISHED_WAP_ID)):
            return snap.snapshot_id
    return None


def _require(md: TableMetadata, snapshot_id: int, what: str) -> Snapshot:
    snap = md.snapshot_by_id(snapshot_id)
    if snap is None:
        raise NotFound(f"cannot {what}: snapshot {snapshot_id} does not exist in table "
                       f"{md.location}")
    return snap


# -- operations ---------------------------------------------------------------------------------


class _SetCurrent(PendingOperation):
    """Point ``main`` at a snapshot; a rollback also requires it to be an ancestor."""

    def __init__(self, target: int, rollback: bool, expected_main: int | None) -> None:
        self.target = target
        self.rollback = rollback
        self.requirements = [AssertRefSnapshotId(MAIN_BRANCH, expected_main)]

    def apply(self, base: TableMetadata) -> list[TableUpdate]:
        _require(base, self.target, "roll back" if self.rollback else "set the current snapshot")
        if self.rollback and not is_ancestor(base, self.target):
            raise ValidationError(
                f"cannot roll back to snapshot {self.target}: it is not an ancestor of the "
                f"current snapshot {base.current_snapshot_id} (use set-current to move to any "
                f"snapshot)")
        return [set_branch(base, MAIN_BRANCH, self.target)]


class _RefChange(PendingOperation):
    """A change to refs computed from the base at every attempt (``change(base) ->
    updates``)."""

    def __init__(self, change: Callable[[TableMetadata], list[TableUpdate]],
                 requirements: list[TableRequirement]) -> None:
        self.change = change
        self.requirements = requirements

    def apply(self, base: TableMetadata) -> list[TableUpdate]:
        return self.change(base)


class _CherryPick(PendingOperation):
    """Java ``CherryPickOperation``: an append is re-applied as a new snapshot (the same
    added files), a dynamic partition overwrite likewise when none of its partitions changed
    since its parent, and any snapshot whose parent is the current one is fast-forwarded to."""

    def __init__(self, table: Table, start: TableMetadata, snapshot_id: int) -> None:
        self.io = table.io
        picked = _require(start, snapshot_id, "cherry-pick")
        self.picked = picked
        self.wap_id = picked.summary.get(WAP_ID) or None
        op = picked.operation
        self.replace_partitions = (op == Operation.OVERWRITE and picked.summary.get(
            REPLACE_PARTITIONS, "false").lower() == "true")
        self.producer: SnapshotProducer | None = None
        if is_ancestor(start, snapshot_id):
            raise CommitConflict(f"cannot cherry-pick snapshot {snapshot_id}: it is already an "
                                 f"ancestor of the current snapshot")
        if self.wap_id is not None:
            self._check_wap(start)
        if op == Operation.APPEND or self.replace_partitions:
            if self.replace_partitions and picked.parent_snapshot_id is not None \
                    and not is_ancestor(start, picked.parent_snapshot_id):
                raise ValidationError(
                    f"cannot cherry-pick overwrite snapshot {snapshot_id}: it is not based on "
                    f"an ancestor of the current state")
            added, removed = self._changes(picked)
            summary = {SOURCE_SNAPSHOT_ID: str(snapshot_id)}
            if self.wap_id is not None:
                summary[PUBLISHED_WAP_ID] = self.wap_id
            validation = None
            if self.replace_partitions:
                validation = CommitValidation(
                    picked.parent_snapshot_id,
                    conflict_partitions={(f.spec_id, tuple(f.partition)) for f in added},
                    no_new_data=True)
            self.producer = SnapshotProducer(
                self.io, added=added, deleted=removed, operation=op,
                merge=bool_property(start, MANIFEST_MERGE_ENABLED,
                                    MANIFEST_MERGE_ENABLED_DEFAULT),
                summary_properties=summary, checks=[self._check_not_picked],
                validation=validation)
            if not self._fast_forward(start):
                self._check_not_picked(start)
        elif not self._fast_forward(start):
            raise ValidationError(
                f"cannot cherry-pick snapshot {snapshot_id} ({op}): only appends, dynamic "
                f"partition overwrites and snapshots whose parent is the current snapshot can "
                f"be cherry-picked")

    def _changes(self, picked: Snapshot) -> tuple[list[DataFile], list[str]]:
        added: list[DataFile] = []
        removed: list[str] = []
        for _, e in entries_added_by(self.io, [picked], ManifestContent.DATA,
                                     {picked.operation} if picked.operation else ()):
            if e.status == ManifestEntryStatus.ADDED:
                added.append(e.data_file)
            elif e.status == ManifestEntryStatus.DELETED:
                removed.append(e.data_file.file_path)
        return added, removed

    def _fast_forward(self, md: TableMetadata) -> bool:
        parent = self.picked.parent_snapshot_id
        if md.current_snapshot_id is None:
            return parent is None
        return parent == md.current_snapshot_id

    def _check_wap(self, md: TableMetadata) -> None:
        assert self.wap_id is not None
        by = _wap_published(md, self.wap_id)
        if by is not None:
            raise CommitConflict(
                f"cannot cherry-pick snapshot {self.picked.snapshot_id}: wap.id "
                f"{self.wap_id!r} was already published by snapshot {by}")

    def _check_not_picked(self, md: TableMetadata) -> None:
        sid = self.picked.snapshot_id
        if is_ancestor(md, sid):
            raise CommitConflict(f"cannot cherry-pick snapshot {sid}: it is already an "
                                 f"ancestor of the current snapshot")
        for snap in md.ancestors_of(md.current_snapshot_id) if md.current_snapshot_id else ():
            if snap.summary.get(SOURCE_SNAPSHOT_ID) == str(sid):
                raise CommitConflict(
                    f"cannot cherry-pick snapshot {sid}: it was already cherry-picked as "
                    f"snapshot {snap.snapshot_id}")
        if self.wap_id is not None:
            self._check_wap(md)

    def apply(self, base: TableMetadata) -> list[TableUpdate]:
        if base.snapshot_by_id(self.picked.snapshot_id) is None:
            raise CommitConflict(f"cannot cherry-pick snapshot {self.picked.snapshot_id}: it "
                                 f"was expired by a concurrent commit")
        if self._fast_forward(base):
            if self.wap_id is not None:
                self._check_wap(base)
            return [set_branch(base, MAIN_BRANCH, self.picked.snapshot_id)]
        if self.producer is None:
            raise CommitConflict(
                f"cannot cherry-pick snapshot {self.picked.snapshot_id}: it can only be "
                f"fast-forwarded and the current snapshot moved")
        return self.producer.apply(base)

    def clean_up(self, committed: bool) -> None:
        if self.producer is not None:
            self.producer.clean_up(committed)


# -- the builder ---------------------------------------------------------------------------------


class ManageSnapshots:
    """Rollback, set-current, cherry-pick and ref changes, committed together by
    :meth:`commit` (``table.manage_snapshots()`` or ``transaction.manage_snapshots()``)."""

    def __init__(self, transaction: Transaction, *, autocommit: bool = False) -> None:
        self.transaction = transaction
        self.autocommit = autocommit
        self.start = transaction.base_metadata
        # the refs as the staged changes leave them, to validate later calls of this builder
        self._refs: dict[str, SnapshotRef] = dict(self.start.refs)

    @property
    def _table(self) -> Table:
        return self.transaction.table

    def _stage(self, op: PendingOperation) -> ManageSnapshots:
        self.transaction.add_operation(op)
        return self

    def _main(self) -> int | None:
        ref = self._refs.get(MAIN_BRANCH)
        return ref.snapshot_id if ref is not None else self.start.current_snapshot_id

    # -- main ------------------------------------------------------------------------------

    def rollback_to(self, snapshot_id: int) -> ManageSnapshots:
        """Make an ancestor of the current snapshot current again."""
        _require(self.start, snapshot_id, "roll back")
        if not is_ancestor(self.start, snapshot_id, self._main()):
            raise ValidationError(
                f"cannot roll back to snapshot {snapshot_id}: it is not an ancestor of the "
                f"current snapshot {self._main()} (use set-current to move to any snapshot)")
        return self._set_main(snapshot_id, rollback=True)

    def rollback_to_time(self, timestamp_ms: int) -> ManageSnapshots:
        """Roll back to the newest ancestor committed at or before ``timestamp_ms``."""
        snap = snapshot_as_of_ancestor(self.start, timestamp_ms)
        if snap is None:
            raise NotFound(f"cannot roll back: no ancestor of the current snapshot of table "
                           f"{self.start.location} was committed at or before {timestamp_ms}")
        return self._set_main(snap.snapshot_id, rollback=True)

    def set_current(self, snapshot_id: int) -> ManageSnapshots:
        """Make any snapshot of the table current (Java ``setCurrentSnapshot``)."""
        _require(self.start, snapshot_id, "set the current snapshot")
        return self._set_main(snapshot_id, rollback=False)

    def _set_main(self, snapshot_id: int, rollback: bool) -> ManageSnapshots:
        op = _SetCurrent(snapshot_id, rollback, self.start.refs[MAIN_BRANCH].snapshot_id
                         if MAIN_BRANCH in self.start.refs else self.start.current_snapshot_id)
        main = self._refs.get(MAIN_BRANCH)
        self._refs[MAIN_BRANCH] = SnapshotRef(
            snapshot_id, SnapshotRefType.BRANCH,
            *(() if main is None else (main.min_snapshots_to_keep, main.max_snapshot_age_ms,
                                       main.max_ref_age_ms)))
        return self._stage(op)

    def cherry_pick(self, snapshot_id: int) -> ManageSnapshots:
        """Apply the changes of another snapshot (a staged or a branch's) to ``main``."""
        return self._stage(_CherryPick(self._table, self.start, snapshot_id))

    def publish_wap(self, wap_id: str) -> ManageSnapshots:
        """Write-audit-publish: cherry-pick the snapshot staged with ``wap.id = wap_id``."""
        return self.cherry_pick(staged_wap_snapshot(self.start, wap_id).snapshot_id)

    # -- branches and tags -----------------------------------------------------------------

    def _ref(self, name: str, kind: SnapshotRefType | None = None) -> SnapshotRef:
        ref = self._refs.get(name)
        if ref is None:
            what = "ref" if kind is None else str(kind)
            raise NotFound(f"table {self.start.location} has no {what} named {name!r}")
        if kind is not None and ref.ref_type is not kind:
            raise ValidationError(f"{name!r} is a {ref.ref_type}, not a {kind}")
        return ref

    def _put(self, names: list[str], change: Callable[[TableMetadata], list[TableUpdate]]
             ) -> ManageSnapshots:
        """Stage a ref change, asserting that the refs it touches did not move since."""
        reqs: list[TableRequirement] = []
        for n in names:
            ref = self.start.refs.get(n)
            reqs.append(AssertRefSnapshotId(n, ref.snapshot_id if ref is not None else None))
        return self._stage(_RefChange(change, reqs))

    def _new_ref(self, name: str) -> None:
        if not name or not name.strip():
            raise ValidationError("a branch or tag name must not be empty")
        if name in self._refs:
            raise ValidationError(f"cannot create {name!r}: a {self._refs[name].ref_type} "
                                  f"with that name already exists")

    def _target(self, snapshot_id: int | None) -> int:
        if snapshot_id is None:
            current = self._main()
            if current is None:
                raise ValidationError(f"table {self.start.location} has no current snapshot "
                                      f"to create a ref at")
            return current
        _require(self.start, snapshot_id, "point a ref at it")
        return snapshot_id

    def create_branch(self, name: str, snapshot_id: int | None = None, *,
                      min_snapshots_to_keep: int | None = None,
                      max_snapshot_age_ms: int | None = None,
                      max_ref_age_ms: int | None = None) -> ManageSnapshots:
        """A new branch at ``snapshot_id`` (default: the current snapshot)."""
        self._new_ref(name)
        ref = SnapshotRef(self._target(snapshot_id), SnapshotRefType.BRANCH,
                          min_snapshots_to_keep, max_snapshot_age_ms, max_ref_age_ms)
        return self._set_ref(name, ref)

    def create_tag(self, name: str, snapshot_id: int | None = None, *,
                   max_ref_age_ms: int | None = None) -> ManageSnapshots:
        """A new tag at ``snapshot_id`` (default: the current snapshot)."""
        self._new_ref(name)
        ref = SnapshotRef(self._target(snapshot_id), SnapshotRefType.TAG,
                          max_ref_age_ms=max_ref_age_ms)
        return self._set_ref(name, ref)

    def replace_branch(self, name: str, snapshot_id: int) -> ManageSnapshots:
        """Move an existing branch to any snapshot (retention settings kept)."""
        ref = self._ref(name, SnapshotRefType.BRANCH)
        return self._set_ref(name, _moved(ref, self._target(snapshot_id)))

    def replace_tag(self, name: str, snapshot_id: int) -> ManageSnapshots:
        ref = self._ref(name, SnapshotRefType.TAG)
        return self._set_ref(name, _moved(ref, self._target(snapshot_id)))

    def fast_forward(self, branch: str, to: str) -> ManageSnapshots:
        """Move ``branch`` to the head of ref ``to``, which must descend from it (Java
        ``fastForwardBranch``; a missing ``branch`` is created there)."""
        target = self._ref(to)
        ref = self._refs.get(branch)
        if ref is None:
            return self.create_branch(branch, target.snapshot_id)
        if not ref.is_branch:
            raise ValidationError(f"cannot fast-forward {branch!r}: it is a tag, not a branch")
        if ref.snapshot_id == target.snapshot_id:
            return self
        if not is_ancestor(self.start, ref.snapshot_id, target.snapshot_id):
            raise ValidationError(
                f"cannot fast-forward {branch!r} to {to!r}: {branch!r} (snapshot "
                f"{ref.snapshot_id}) is not an ancestor of {to!r} (snapshot "
                f"{target.snapshot_id})")
        return self._set_ref(branch, _moved(ref, target.snapshot_id))

    def rename_branch(self, name: str, new_name: str) -> ManageSnapshots:
        if name == MAIN_BRANCH:
            raise ValidationError("cannot rename the main branch")
        ref = self._ref(name, SnapshotRefType.BRANCH)
        self._new_ref(new_name)
        del self._refs[name]
        self._refs[new_name] = ref
        return self._put([name, new_name], lambda md: [
            RemoveSnapshotRef(name), _set_ref_update(new_name, ref)])

    def remove_branch(self, name: str) -> ManageSnapshots:
        if name == MAIN_BRANCH:
            raise ValidationError("cannot remove the main branch")
        self._ref(name, SnapshotRefType.BRANCH)
        del self._refs[name]
        return self._put([name], lambda md: [RemoveSnapshotRef(name)])

    def remove_tag(self, name: str) -> ManageSnapshots:
        self._ref(name, SnapshotRefType.TAG)
        del self._refs[name]
        return self._put([name], lambda md: [RemoveSnapshotRef(name)])

    def set_retention(self, name: str, *, min_snapshots_to_keep: int | None = None,
                      max_snapshot_age_ms: int | None = None,
                      max_ref_age_ms: int | None = None) -> ManageSnapshots:
        """Change a ref's retention; only the given settings change (tags take only
        ``max_ref_age_ms``)."""
        ref = self._ref(name)
        new = SnapshotRef(
            ref.snapshot_id, ref.ref_type,
            min_snapshots_to_keep if min_snapshots_to_keep is not None
            else ref.min_snapshots_to_keep,
            max_snapshot_age_ms if max_snapshot_age_ms is not None
            else ref.max_snapshot_age_ms,
            max_ref_age_ms if max_ref_age_ms is not None else ref.max_ref_age_ms)
        return self._set_ref(name, new)

    def _set_ref(self, name: str, ref: SnapshotRef) -> ManageSnapshots:
        self._refs[name] = ref
        return self._put([name], lambda md: [_set_ref_update(name, ref)])

    # -- commit ----------------------------------------------------------------------------

    def commit(self) -> Any:
        """Stage into the transaction; with autocommit (from ``Table.manage_snapshots()``)
        commit it and return the table."""
        if self.autocommit:
            return self.transaction.commit()
        return self.transaction


def _moved(ref: SnapshotRef, snapshot_id: int) -> SnapshotRef:
    return SnapshotRef(snapshot_id, ref.ref_type, ref.min_snapshots_to_keep,
                       ref.max_snapshot_age_ms, ref.max_ref_age_ms)


def _set_ref_update(name: str, ref: SnapshotRef) -> SetSnapshotRef:
    return SetSnapshotRef(name, ref.snapshot_id, ref.ref_type, ref.min_snapshots_to_keep,
                          ref.max_snapshot_age_ms, ref.max_ref_age_ms)
