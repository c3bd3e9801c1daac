"""Expire snapshots (Java ``RemoveSnapshots`` + ``ReachableFileCleanup``, Spark's
``ExpireSnapshotsSparkAction`` / ``expire_snapshots`` procedure).

Which snapshots go (Java ``RemoveSnapshots.internalApply``, evaluated at one ``now``):

* refs: ``main`` always stays; another branch or tag is removed when its snapshot is gone or
  older than its ``max-ref-age-ms`` (default ``history.expire.max-ref-age-ms``, unbounded);
* every kept branch keeps its newest ancestors: at least ``min-snapshots-to-keep`` of them
  and every one not older than ``now - max-snapshot-age-ms`` (the branch's own settings, else
  ``retain_last`` / ``older_than_ms``, else the table's ``history.expire.*`` properties:
  1 snapshot, 5 days); ancestry stops at a missing parent;
* a kept tag keeps its snapshot; a snapshot no kept ref reaches stays while it is not older
  than ``older_than_ms``;
* every other snapshot expires, and so do ``snapshot_ids`` (even inside a branch's retention,
  as in Java), unless a kept ref points at one (refused).

One commit removes the refs and the snapshots (and with ``clean_expired_metadata`` the schemas
and partition specs that neither a kept snapshot nor the current state uses). It goes through
the transaction's commit loop; each attempt recomputes the expiration from the refreshed table,
as Java's ``internalApply`` does on every retry, so a ref that a concurrent commit moved is
seen before anything is removed. Only after the commit succeeded are files deleted; when its
outcome is unknown, nothing is.

Which files go (Java ``ReachableFileCleanup``, which Spark's action matches): the manifest lists
of expired snapshots; the manifests they list that no kept snapshot lists; the data and delete
files live in those manifests and live in no manifest of a kept snapshot; the statistics and
partition-statistics files of expired snapshots that no kept snapshot uses. A deleted manifest
is read only when its counts say it holds live files; a kept manifest only when its content,
partition spec and partition summaries allow one of the candidate files. Files are deleted in
the order data and delete files, manifests, statistics, manifest lists.

Finishing an interrupted cleanup (a difference from Java, which leaves that to orphan-file
removal): because manifest lists go last, an expired snapshot whose manifest list still exists
may have files left. Each run looks for manifest lists (``snap-<id>-*.avro``) under the
table's ``metadata/`` directory of snapshots that are no longer in the table; for those that a
metadata file of the table's metadata log still describes, it plans their files too
(``previously_expired_snapshot_ids``). So re-running after a crash or a cancel, with nothing new
to expire, finishes the job; :func:`floe.maintenance.orphans.remove_orphan_files` also finds
such files (by age).

Other differences from Java: ``older_than_ms`` in the future is refused; a snapshot id that is
not in the table is ignored (as in Java) so that a re-run with the same ids still finishes;
a table without snapshots is "nothing to do" (Java: same); a manifest of a kept snapshot that
cannot be read stops the run before the commit (Java commits and skips deleting data files).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from floe.errors import (
    CommitStateUnknown,
    FloeError,
    InvalidArgument,
    MetadataError,
    NotFound,
    ValidationError,
)
from floe.io import FileIO
from floe.maintenance import ProgressCallback, report, utc_text
from floe.reachable import (
    ManifestLists,
    PartitionBox,
    delete_files,
    delete_in_phases,
    has_live_files,
    snapshot_manifests,
    statistics_paths,
)
from floe.scan.manifests import ManifestScanner
from floe.manifest import FileContent, ManifestContent, ManifestFile
from floe.metadata import TableMetadata, parse_metadata
from floe.properties import (
    GC_ENABLED,
    GC_ENABLED_DEFAULT,
    MAX_REF_AGE_MS,
    MAX_SNAPSHOT_AGE_MS,
    MAX_SNAPSHOT_AGE_MS_DEFAULT,
    MIN_SNAPSHOTS_TO_KEEP,
    MIN_SNAPSHOTS_TO_KEEP_DEFAULT,
    bool_property,
    int_property,
)
from floe.snapshots import MAIN_BRANCH, Snapshot, SnapshotRef
from floe.table.snapshot_producer import PendingOperation
from floe.table.updates import (
    RemovePartitionSpecs,
    RemovePartitionStatistics,
    RemoveSchemas,
    RemoveSnapshotRef,
    RemoveSnapshots,
    TableUpdate,
)

if TYPE_CHECKING:
    from floe.table.table import Table
    from floe.types import StructType

__all__ = ["ExpireResult", "ExpirationPlan", "check_expiration", "expire_snapshots",
           "plan_expiration"]

log = logging.getLogger(__name__)

#: Files are deleted and reported in batches of this many.
DELETE_BATCH = 100
#: Manifest-list names of Java, PyIceberg and floe: ``snap-<snapshot id>-<attempt>-<uuid>.avro``.
_LIST_NAME = re.compile(r"^snap-(-?\d+)-.*\.avro$")


# -- which snapshots and refs go ---------------------------------------------------------------


@dataclass(frozen=True)
class ExpirationPlan:
    """The metadata side of one expiration of ``base``."""

    expired_ids: tuple[int, ...]
    removed_refs: tuple[str, ...]
    removed_schema_ids: tuple[int, ...] = ()
    removed_spec_ids: tuple[int, ...] = ()

    @property
    def changes_metadata(self) -> bool:
        return bool(self.expired_ids or self.removed_refs or self.removed_schema_ids
                    or self.removed_spec_ids)

    def updates(self, base: TableMetadata) -> list[TableUpdate]:
        out: list[TableUpdate] = [RemoveSnapshotRef(n) for n in self.removed_refs]
        if self.expired_ids:
            out.append(RemoveSnapshots(self.expired_ids))
            gone = set(self.expired_ids)
            out += [RemovePartitionStatistics(s.snapshot_id)
                    for s in base.partition_statistics if s.snapshot_id in gone]
        if self.removed_spec_ids:
            out.append(RemovePartitionSpecs(self.removed_spec_ids))
        if self.removed_schema_ids:
            out.append(RemoveSchemas(self.removed_schema_ids))
        return out


def _ancestors(by_id: Mapping[int, Snapshot], snapshot_id: int) -> Iterable[Snapshot]:
    seen: set[int] = set()
    snap = by_id.get(snapshot_id)
    while snap is not None and snap.snapshot_id not in seen:
        yield snap
        seen.add(snap.snapshot_id)
        snap = by_id.get(snap.parent_snapshot_id) if snap.parent_snapshot_id is not None \
            else None


def plan_expiration(
    base: TableMetadata,
    *,
    now_ms: int,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
    snapshot_ids: Iterable[int] = (),
    clean_expired_metadata: bool = False,
    manifests_of: Any = None,
) -> ExpirationPlan:
    """Java ``RemoveSnapshots.internalApply`` on ``base`` (see the module docstring).
    ``manifests_of(snapshot) -> list[ManifestFile]`` is needed with ``clean_expired_metadata``
    (the partition specs the kept snapshots' manifests use)."""
    if older_than_ms is None:
        older_than_ms = now_ms - int_property(base, MAX_SNAPSHOT_AGE_MS,
                                              MAX_SNAPSHOT_AGE_MS_DEFAULT)
    if retain_last is None:
        retain_last = int_property(base, MIN_SNAPSHOTS_TO_KEEP, MIN_SNAPSHOTS_TO_KEEP_DEFAULT)
    raw_ref_age = base.properties.get(MAX_REF_AGE_MS)
    default_ref_age = None if raw_ref_age is None else int_property(base, MAX_REF_AGE_MS, 0)
    explicit = set(snapshot_ids)
    if not base.snapshots and not clean_expired_metadata:
        return ExpirationPlan((), ())
    by_id = {s.snapshot_id: s for s in base.snapshots}

    retained_refs: dict[str, SnapshotRef] = {}
    for name, ref in base.refs.items():
        if name == MAIN_BRANCH:
            retained_refs[name] = ref
            continue
        snap = by_id.get(ref.snapshot_id)
        if snap is None:
            log.warning("removing ref %r: its snapshot %s does not exist", name, ref.snapshot_id)
            continue
        max_age = ref.max_ref_age_ms if ref.max_ref_age_ms is not None else default_ref_age
        if max_age is None or now_ms - snap.timestamp_ms <= max_age:
            retained_refs[name] = ref

    held: dict[int, list[str]] = {}
    for name, ref in retained_refs.items():
        held.setdefault(ref.snapshot_id, []).append(name)
    for sid in sorted(explicit):
        if sid in held:
            names = ", ".join(repr(n) for n in sorted(held[sid]))
            raise InvalidArgument(
                "snapshot_ids", f"cannot expire snapshot {sid} of table {base.location}: it "
                                f"is still referenced by {names}")

    retain: set[int] = set(held)
    referenced: set[int] = set()
    for ref in retained_refs.values():
        if not ref.is_branch:
            referenced.add(ref.snapshot_id)
            continue
        cutoff = (now_ms - ref.max_snapshot_age_ms if ref.max_snapshot_age_ms is not None
                  else older_than_ms)
        keep = ref.min_snapshots_to_keep if ref.min_snapshots_to_keep is not None \
            else retain_last
        branch_kept: set[int] = set()
        cut = False
        for anc in _ancestors(by_id, ref.snapshot_id):
            referenced.add(anc.snapshot_id)
            if not cut and (len(branch_kept) < keep or anc.timestamp_ms >= cutoff):
                branch_kept.add(anc.snapshot_id)
            else:
                cut = True
        retain |= branch_kept
    retain |= {s.snapshot_id for s in base.snapshots
               if s.snapshot_id not in referenced and s.timestamp_ms >= older_than_ms}

    expired = explicit & by_id.keys()
    expired |= by_id.keys() - retain
    expired_ids = tuple(s.snapshot_id for s in base.snapshots if s.snapshot_id in expired)
    removed_refs = tuple(n for n in base.refs if n not in retained_refs)

    schemas: tuple[int, ...] = ()
    specs: tuple[int, ...] = ()
    if clean_expired_metadata:
        kept = [s for s in base.snapshots if s.snapshot_id not in expired]
        used_specs = {base.default_spec_id}
        used_schemas = {base.current_schema_id}
        for snap in kept:
            used_specs.update(m.partition_spec_id for m in manifests_of(snap))
            if snap.schema_id is not None:
                used_schemas.add(snap.schema_id)
        specs = tuple(s.spec_id for s in base.partition_specs if s.spec_id not in used_specs)
        schemas = tuple(s.schema_id for s in base.schemas if s.schema_id not in used_schemas)
    return ExpirationPlan(expired_ids, removed_refs, schemas, specs)


# -- the result ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExpireResult:
    """What an expiration did, or for a dry run would do. File paths are full, as stored in
    the metadata; a real run on an unchanged table deletes exactly the dry run's files."""

    dry_run: bool
    expired_snapshot_ids: tuple[int, ...] = ()
    removed_refs: tuple[str, ...] = ()
    removed_schema_ids: tuple[int, ...] = ()
    removed_spec_ids: tuple[int, ...] = ()
    previously_expired_snapshot_ids: tuple[int, ...] = ()
    data_files: tuple[str, ...] = ()
    position_delete_files: tuple[str, ...] = ()
    equality_delete_files: tuple[str, ...] = ()
    manifests: tuple[str, ...] = ()
    manifest_lists: tuple[str, ...] = ()
    statistics_files: tuple[str, ...] = ()
    partition_statistics_files: tuple[str, ...] = ()
    committed: bool = False
    metadata_location: str | None = None
    deleted_files: int = 0
    failed: tuple[tuple[str, str], ...] = ()
    warnings: tuple[str, ...] = ()
    #: Why nothing (or no file) expires, in a sentence; "" when there is work.
    note: str = ""

    @property
    def nothing_to_do(self) -> bool:
        """No snapshot, ref, schema, spec or file to remove: a real run would change
        nothing."""
        return not (self.expired_snapshot_ids or self.removed_refs or self.removed_schema_ids
                    or self.removed_spec_ids or self.files())

    def files(self) -> tuple[str, ...]:
        """Every file to delete, in deletion order."""
        return (self.data_files + self.position_delete_files + self.equality_delete_files
                + self.manifests + self.statistics_files + self.partition_statistics_files
                + self.manifest_lists)

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "committed": self.committed,
            "metadata_location": self.metadata_location,
            "expired_snapshot_ids": list(self.expired_snapshot_ids),
            "previously_expired_snapshot_ids": list(self.previously_expired_snapshot_ids),
            "removed_refs": list(self.removed_refs),
            "removed_schema_ids": list(self.removed_schema_ids),
            "removed_spec_ids": list(self.removed_spec_ids),
            "data_files": list(self.data_files),
            "position_delete_files": list(self.position_delete_files),
            "equality_delete_files": list(self.equality_delete_files),
            "manifests": list(self.manifests),
            "manifest_lists": list(self.manifest_lists),
            "statistics_files": list(self.statistics_files),
            "partition_statistics_files": list(self.partition_statistics_files),
            "deleted_files": self.deleted_files,
            "failed": [{"path": p, "error": e} for p, e in self.failed],
            "warnings": list(self.warnings),
            "note": self.note,
        }


@dataclass
class _FilePlan:
    content: dict[str, FileContent] = field(default_factory=dict)
    manifests: list[str] = field(default_factory=list)
    manifest_lists: list[str] = field(default_factory=list)
    statistics: list[str] = field(default_factory=list)
    partition_statistics: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def kinds(self) -> dict[str, tuple[str, ...]]:
        by: dict[FileContent, list[str]] = {c: [] for c in FileContent}
        for path, content in self.content.items():
            by[content].append(path)
        return {
            "data_files": tuple(sorted(by[FileContent.DATA])),
            "position_delete_files": tuple(sorted(by[FileContent.POSITION_DELETES])),
            "equality_delete_files": tuple(sorted(by[FileContent.EQUALITY_DELETES])),
            "manifests": tuple(sorted(self.manifests)),
            "manifest_lists": tuple(sorted(self.manifest_lists)),
            "statistics_files": tuple(sorted(self.statistics)),
            "partition_statistics_files": tuple(sorted(self.partition_statistics)),
        }


# -- which files go -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Expired:
    """An expired snapshot and the statistics files its metadata registered."""

    snapshot: Snapshot
    statistics: tuple[str, ...]
    partition_statistics: tuple[str, ...]


class _Cleanup:
    """Plans the files of expired snapshots that no kept snapshot needs (Java
    ``ReachableFileCleanup.cleanFiles``)."""

    def __init__(self, io: FileIO, lists: ManifestLists, on_progress: ProgressCallback | None
                 ) -> None:
        self.io = io
        self.lists = lists
        self.on_progress = on_progress

    def plan(self, md_after: TableMetadata, expired: list[_Expired],
             kept_stats: set[str]) -> _FilePlan:
        plan = _FilePlan()
        if not expired:
            return plan
        kept_lists = {s.manifest_list for s in md_after.snapshots}
        for snap in md_after.snapshots:
            if snap.manifest_list is None:
                snapshot_manifests(self.io, snap)  # raises the one refusal message
        for e in expired:
            if e.snapshot.manifest_list is None:
                snapshot_manifests(self.io, e.snapshot)

        def progress(done: int, total: int) -> None:
            report(self.on_progress, "reading manifest lists", done, total)

        self.lists.prefetch([s.manifest_list for s in [e.snapshot for e in expired]
                             + list(md_after.snapshots) if s.manifest_list is not None],
                            progress)
        candidates: dict[str, ManifestFile] = {}
        for e in expired:
            snap = e.snapshot
            assert snap.manifest_list is not None
            if snap.manifest_list not in kept_lists:
                plan.manifest_lists.append(snap.manifest_list)
            try:
                for m in self.lists.read(snap.manifest_list):
                    candidates.setdefault(m.manifest_path, m)
            except (NotFound, MetadataError) as ex:
                # its files cannot be known; orphan-file removal will find them
                plan.warnings.append(f"skipped the files of expired snapshot "
                                     f"{snap.snapshot_id}: {ex}")
        kept: dict[str, ManifestFile] = {}
        if candidates:
            for snap in md_after.snapshots:
                for m in self.lists.snapshot(snap):
                    kept.setdefault(m.manifest_path, m)
                    candidates.pop(m.manifest_path, None)
        plan.manifests = sorted(candidates)
        plan.content = self._content_files(md_after, list(candidates.values()), kept)
        for e in expired:
            plan.statistics += [p for p in e.statistics if p not in kept_stats]
            plan.partition_statistics += [p for p in e.partition_statistics
                                          if p not in kept_stats]
        plan.statistics = sorted(set(plan.statistics))
        plan.partition_statistics = sorted(set(plan.partition_statistics))
        return plan

    def _content_files(self, md: TableMetadata, doomed: list[ManifestFile],
                       kept: dict[str, ManifestFile]) -> dict[str, FileContent]:
        """Files live in a doomed manifest and in no kept one. A kept manifest is read only
        when it has live files of the content and partition spec of a doomed one, and its
        partition summaries overlap theirs."""
        scanner = ManifestScanner(self.io, md.location)
        groups: dict[tuple[ManifestContent, int], dict[str, FileContent]] = {}
        boxes: dict[tuple[ManifestContent, int], PartitionBox] = {}
        readable = [m for m in doomed if has_live_files(m)]
        for i, m in enumerate(readable, 1):
            report(self.on_progress, "reading expired manifests", i, len(readable))
            try:
                live = scanner.live_files(m)
            except NotFound:
                continue  # deleted by an earlier, interrupted run, after its files
            key = (m.content, m.partition_spec_id)
            groups.setdefault(key, {}).update(live)
            if key not in boxes:
                boxes[key] = PartitionBox(_partition_type(md, m.partition_spec_id))
            boxes[key].add(m.partitions)
        relevant = [m for m in kept.values() if has_live_files(m)
                    and (m.content, m.partition_spec_id) in groups
                    and boxes[(m.content, m.partition_spec_id)].may_overlap(m.partitions)]
        for i, m in enumerate(relevant, 1):
            report(self.on_progress, "reading kept manifests", i, len(relevant))
            group = groups[(m.content, m.partition_spec_id)]
            if group:
                for path in scanner.live_files(m):
                    group.pop(path, None)
        return {path: c for group in groups.values() for path, c in group.items()}


def _partition_type(md: TableMetadata, spec_id: int) -> StructType | None:
    from floe.inspect import partition_type_for

    spec = md.spec_by_id(spec_id)
    if spec is None:
        return None
    try:
        return partition_type_for(md, spec)
    except ValidationError:
        return None


def _previously_expired(io: FileIO, md: TableMetadata, lists: ManifestLists
                        ) -> list[_Expired]:
    """Snapshots an earlier expiration removed whose manifest list is still on disk (so its
    cleanup may be unfinished), as the table's logged metadata files describe them."""
    metadata_dir = f"{md.location.rstrip('/')}/metadata"
    current = {s.snapshot_id for s in md.snapshots}
    leftover: dict[int, set[str]] = {}
    for path in io.list(metadata_dir):
        name = path.rsplit("/", 1)[-1]
        m = _LIST_NAME.match(name)
        if m is not None and int(m.group(1)) not in current:
            leftover.setdefault(int(m.group(1)), set()).add(name)
    if not leftover:
        return []
    found: dict[int, _Expired] = {}
    for entry in reversed(md.metadata_log):
        if not leftover.keys() - found.keys():
            break
        location = entry.metadata_file
        if not location.startswith(metadata_dir + "/"):
            continue  # never trust metadata files of another table
        try:
            raw = io.read(location)
        except (NotFound, OSError, ValidationError):
            continue
        if not any(str(sid).encode() in raw for sid in leftover.keys() - found.keys()):
            continue
        try:
            old = parse_metadata(raw, location)
        except FloeError:
            continue
        if old.table_uuid != md.table_uuid:
            continue
        for snap in old.snapshots:
            sid = snap.snapshot_id
            if sid in leftover and sid not in found and snap.manifest_list is not None \
                    and snap.manifest_list.rsplit("/", 1)[-1] in leftover[sid] \
                    and io.exists(snap.manifest_list):
                found[sid] = _Expired(snap, _stats_of(old.statistics, sid),
                                      _stats_of(old.partition_statistics, sid))
    return [found[sid] for sid in sorted(found)]


# -- the commit ---------------------------------------------------------------------------------


class _ExpireOperation(PendingOperation):
    """Recomputes the expiration from every base the commit loop hands it (Java's
    ``internalApply`` on each retry) and remembers the last one."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        self.base: TableMetadata | None = None
        self.plan: ExpirationPlan | None = None

    def apply(self, base: TableMetadata) -> list[TableUpdate]:
        self.plan = plan_expiration(base, **self.options)
        self.base = base
        return self.plan.updates(base)


def check_expiration(md: TableMetadata, *, table: Any, now_ms: int,
                     older_than_ms: int | None = None, retain_last: int | None = None,
                     snapshot_ids: Iterable[int] = ()) -> None:
    """The checks :func:`expire_snapshots` makes before any work, on metadata alone (a
    caller may run them first, e.g. before queueing a task): gc.enabled, ``older_than_ms``
    not in the future, ``retain_last`` at least 1, and no snapshot of ``snapshot_ids`` held
    by a ref that stays. ValidationError, or InvalidArgument naming the argument."""
    if not bool_property(md, GC_ENABLED, GC_ENABLED_DEFAULT):
        raise ValidationError(
            f"cannot expire snapshots of table {table}: gc.enabled is false (deleting files "
            f"may corrupt other tables that share them)")
    if older_than_ms is not None and older_than_ms > now_ms:
        raise InvalidArgument(
            "older_than_ms", f"cannot expire snapshots of table {table}: older_than "
                             f"{older_than_ms} is in the future (now is {now_ms})")
    if retain_last is not None and retain_last < 1:
        raise InvalidArgument(
            "retain_last", f"cannot expire snapshots of table {table}: retain_last must be "
                           f"at least 1, got {retain_last}")
    plan_expiration(md, now_ms=now_ms, older_than_ms=older_than_ms, retain_last=retain_last,
                    snapshot_ids=snapshot_ids)


def expire_snapshots(
    table: Table,
    *,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
    snapshot_ids: Iterable[int] = (),
    clean_expired_metadata: bool = False,
    clean_expired_files: bool = True,
    dry_run: bool = False,
    on_progress: ProgressCallback | None = None,
) -> ExpireResult:
    """Expire snapshots of ``table`` and delete the files only they used (module docstring).

    ``older_than_ms``: expire snapshots older than this (default: now minus
    ``history.expire.max-snapshot-age-ms``, 5 days); ``retain_last``: keep at least this many
    ancestors of each branch without its own setting (default
    ``history.expire.min-snapshots-to-keep``, 1); ``snapshot_ids``: expire these too;
    ``clean_expired_metadata``: also remove unused schemas and partition specs;
    ``clean_expired_files=False`` commits without deleting anything (Java
    ``cleanExpiredFiles(false)``); ``dry_run``: plan only, commit and delete nothing.
    ``on_progress`` may raise :class:`Cancelled`: before the commit nothing has changed; after
    it the commit stands and a re-run deletes the rest.
    """
    now_ms = int(time.time() * 1000)
    snapshot_ids = tuple(snapshot_ids)
    table.refresh(force=True)
    md = table.metadata
    check_expiration(md, table=table.identifier, now_ms=now_ms, older_than_ms=older_than_ms,
                     retain_last=retain_last, snapshot_ids=snapshot_ids)
    io = table.io
    lists = ManifestLists(io)
    options: dict[str, Any] = dict(
        now_ms=now_ms, older_than_ms=older_than_ms, retain_last=retain_last,
        snapshot_ids=snapshot_ids, clean_expired_metadata=clean_expired_metadata,
        manifests_of=lists.snapshot)
    report(on_progress, "planning")
    plan = plan_expiration(md, **options)
    previous = _previously_expired(io, md, lists) if clean_expired_files else []
    files = _plan_files(io, lists, md, plan, previous, on_progress) if clean_expired_files \
        else _FilePlan()
    result = _result(dry_run, plan, previous, files)
    result = _replace(result, note=_note(md, result, now_ms=now_ms,
                                         older_than_ms=older_than_ms, retain_last=retain_last))
    if dry_run:
        return result
    report(on_progress, "committing")
    metadata_location = None
    if plan.changes_metadata:
        op = _ExpireOperation(options)
        txn = table.new_transaction().add_operation(op)
        try:
            txn.commit()
        except CommitStateUnknown:
            raise  # the outcome is unknown: nothing may be deleted
        metadata_location = table.metadata_location
        assert op.plan is not None and op.base is not None
        if op.plan != plan or op.base.snapshots != md.snapshots \
                or statistics_paths(op.base) != statistics_paths(md):
            # a concurrent commit landed first: the attempt that won was computed from a
            # newer table, and so must the files be
            plan = op.plan
            files = _plan_files(io, lists, op.base, plan, previous, on_progress) \
                if clean_expired_files else _FilePlan()
            result = _replace(_result(False, plan, previous, files), note=result.note)
    result = _replace(result, committed=plan.changes_metadata,
                      metadata_location=metadata_location)
    return _delete(io, result, on_progress)


def _result(dry_run: bool, plan: ExpirationPlan, previous: list[_Expired], files: _FilePlan
            ) -> ExpireResult:
    k = files.kinds()
    return ExpireResult(
        dry_run=dry_run, expired_snapshot_ids=plan.expired_ids, removed_refs=plan.removed_refs,
        removed_schema_ids=plan.removed_schema_ids, removed_spec_ids=plan.removed_spec_ids,
        previously_expired_snapshot_ids=tuple(e.snapshot.snapshot_id for e in previous),
        data_files=k["data_files"], position_delete_files=k["position_delete_files"],
        equality_delete_files=k["equality_delete_files"], manifests=k["manifests"],
        manifest_lists=k["manifest_lists"], statistics_files=k["statistics_files"],
        partition_statistics_files=k["partition_statistics_files"],
        warnings=tuple(files.warnings))


def _plan_files(io: FileIO, lists: ManifestLists, base: TableMetadata, plan: ExpirationPlan,
                previous: list[_Expired], on_progress: ProgressCallback | None) -> _FilePlan:
    gone = set(plan.expired_ids)
    after = [s for s in base.snapshots if s.snapshot_id not in gone]
    kept_ids = {s.snapshot_id for s in after}
    expired = [_Expired(s, _stats_of(base.statistics, s.snapshot_id),
                        _stats_of(base.partition_statistics, s.snapshot_id))
               for s in base.snapshots if s.snapshot_id in gone]
    expired += [e for e in previous if e.snapshot.snapshot_id not in kept_ids | gone]
    md_after = _without(base, gone)
    return _Cleanup(io, lists, on_progress).plan(md_after, expired, statistics_paths(md_after))


def _stats_of(files: Iterable[Any], snapshot_id: int) -> tuple[str, ...]:
    return tuple(f.statistics_path for f in files if f.snapshot_id == snapshot_id)


def _without(md: TableMetadata, gone: set[int]) -> TableMetadata:
    import dataclasses

    return dataclasses.replace(
        md, snapshots=tuple(s for s in md.snapshots if s.snapshot_id not in gone),
        statistics=tuple(s for s in md.statistics if s.snapshot_id not in gone),
        partition_statistics=tuple(s for s in md.partition_statistics
                                   if s.snapshot_id not in gone))



def _note(md: TableMetadata, result: ExpireResult, *, now_ms: int, older_than_ms: int | None,
          retain_last: int | None) -> str:
    """Why an expiration removes nothing (or no file), from the planner's inputs: the cutoff,
    and what keeps the snapshots older than it."""
    if result.nothing_to_do:
        if not md.snapshots:
            return "nothing to expire: the table has no snapshots"
        if older_than_ms is None:
            age = int_property(md, MAX_SNAPSHOT_AGE_MS, MAX_SNAPSHOT_AGE_MS_DEFAULT)
            cutoff = now_ms - age
            source = f"now minus {MAX_SNAPSHOT_AGE_MS} ({age} ms)"
        else:
            cutoff, source = older_than_ms, "older_than"
        older = [s for s in md.snapshots if s.timestamp_ms < cutoff]
        if not older:
            return (f"nothing to expire: every one of the {len(md.snapshots)} snapshot(s) is "
                    f"newer than the cutoff {utc_text(cutoff)} ({source})")
        keep = retain_last if retain_last is not None else int_property(
            md, MIN_SNAPSHOTS_TO_KEEP, MIN_SNAPSHOTS_TO_KEEP_DEFAULT)
        heads = sum(1 for s in older if any(r.snapshot_id == s.snapshot_id
                                            for r in md.refs.values()))
        return (f"nothing to expire: the {len(older)} snapshot(s) older than the cutoff "
                f"{utc_text(cutoff)} ({source}) are kept: {heads} as the head of a branch or tag, "
                f"{len(older) - heads} as one of the last {keep} snapshot(s) of a branch "
                "(retain_last) or by a ref's own retention settings")
    if result.expired_snapshot_ids and not result.files():
        return ("no file to delete: the snapshots that stay still use every file of the "
                "expired ones")
    return ""


def _replace(result: ExpireResult, **changes: Any) -> ExpireResult:
    import dataclasses

    return dataclasses.replace(result, **changes)


def _delete(io: FileIO, result: ExpireResult, on_progress: ProgressCallback | None
            ) -> ExpireResult:
    """Delete ``result.files()``: data and delete files, then manifests, then statistics,
    then manifest lists (whose presence tells a re-run that a cleanup may be unfinished). A
    Cancelled from the callback stops between batches: the commit stands, a re-run
    finishes."""
    phases = [result.data_files + result.position_delete_files + result.equality_delete_files,
              result.manifests, result.statistics_files + result.partition_statistics_files,
              result.manifest_lists]

    def progress(done: int, total: int) -> None:
        report(on_progress, "deleting files", done, total)

    deleted, failed = delete_in_phases(phases, lambda chunk: delete_files(io, chunk), progress,
                                       DELETE_BATCH)
    return _replace(result, deleted_files=deleted, failed=tuple(failed))
