"""Maintenance of delete files: rewriting position delete files (Java
``RewritePositionDeleteFilesSparkAction`` with ``BinPackRewritePositionDeletePlanner`` at
1.10) and removing dangling delete files (``RemoveDanglingDeletesSparkAction``).

**Rewrite position deletes.** Live position delete files are grouped per partition (spec and
partition tuple), selected and bin-packed with the size rules of compaction
(:mod:`floe.maintenance.compaction_plan`, the target defaulting to
``write.delete.target-file-size-bytes``). Each group is read, the entries naming data files
that are no longer live in the delete's partition are dropped, and the rest is written sorted
by file path and position into new delete files, which take the highest data sequence number
of the files they replace; one ``replace`` commit (or one per batch with partial progress).

**Dangling deletes.** A delete file is dangling when it can apply to no live data file
(spec "Scan Planning"): a position delete file whose partition holds no live data file of a
data sequence number up to its own (or, when it names one data file, whose data file is
gone), an equality delete file whose partition holds no live data file of a lower data
sequence number. They are removed in one ``replace`` commit.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from floe.errors import CommitConflict, CommitStateUnknown, ValidationError
from floe.inspect import partition_json
from floe.io import FileIO
from floe.table.delete_writer import POSITION_DELETE_SCHEMA, write_position_deletes
from floe.io.parquet import schema_to_arrow
from floe.scan.readers import ReadOptions, read_task
from floe.maintenance import Cancelled, ProgressCallback, report
from floe.maintenance.compaction import remove_written
from floe.maintenance.compaction_plan import (
    JOB_ORDER_KEYS,
    CompactionPlan,
    RewriteOptions,
    live_data_files,
    pack_groups,
    parse_options,
    referenced_data_file,
)
from floe.manifest import DataFile, FileContent, ManifestContent, read_manifest_list
from floe.metadata import TableMetadata
from floe.scan.delete_index import DeleteFile
from floe.scan.filters import ScanFilter
from floe.scan.manifests import DEFAULT_CACHE, read_live_entries
from floe.scan.planning import FileScanTask
from floe.snapshots import MAIN_BRANCH, Operation, Snapshot
from floe.table.snapshot_producer import SnapshotProducer, branch_head

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = [
    "DanglingDeletesResult",
    "DeleteGroup",
    "PositionDeletePlan",
    "RewritePositionDeletesResult",
    "dangling_after_compaction",
    "find_dangling_deletes",
    "plan_position_delete_rewrite",
    "remove_dangling_deletes",
    "rewrite_position_deletes",
]

log = logging.getLogger(__name__)

LiveData = Mapping[str, tuple[int, tuple[Any, ...], int]]


def _live_deletes(io: FileIO, snapshot: Snapshot | None) -> list[DeleteFile]:
    """Live delete files of a snapshot with their data sequence numbers."""
    if snapshot is None or snapshot.manifest_list is None:
        return []
    manifests = [m for m in read_manifest_list(io, snapshot.manifest_list)
                 if m.content == ManifestContent.DELETES]
    out = []
    for m, live in zip(manifests, read_live_entries(io, manifests, DEFAULT_CACHE), strict=True):
        out += [DeleteFile(e.data_file, e.sequence_number or 0, m.partition_spec_id)
                for e in live]
    return out


# -- dangling deletes ----------------------------------------------------------------------------


def find_dangling_deletes(io: FileIO, md: TableMetadata, snapshot: Snapshot | None, *,
                          live: LiveData | None = None,
                          anywhere: Iterable[tuple[int, int]] = ()) -> list[DataFile]:
    """The live delete files of ``snapshot`` that apply to no live data file.

    ``live`` overrides the live data files (path → spec id, partition, data sequence
    number); ``anywhere`` adds ``(spec id, sequence number)`` pairs for data that may land in
    any partition of that spec (a dry run cannot know where rewritten rows go).

    Java's rule (``RemoveDanglingDeletesSparkAction``): per spec and partition, the smallest
    data sequence number of the live data files; a position delete below it, an equality
    delete at or below it, or any delete of a partition without data is dangling; a deletion
    vector (floe: any position delete that names one data file) whose data file is not live
    is dangling. Unlike Java, an equality delete of an unpartitioned spec is global and is
    compared with every live data file of the table, so evolving the spec never lets it go
    while it still applies.
    """
    data = live if live is not None else live_data_files(io, snapshot)
    by_partition: dict[tuple[int, tuple[Any, ...]], int] = {}
    overall: int | None = None
    for spec_id, partition, seq in data.values():
        key = (spec_id, tuple(partition))
        by_partition[key] = min(seq, by_partition.get(key, seq))
        overall = seq if overall is None else min(overall, seq)
    wild: dict[int, int] = {}
    for spec_id, seq in anywhere:
        wild[spec_id] = min(seq, wild.get(spec_id, seq))
        overall = seq if overall is None else min(overall, seq)
    unpartitioned = {s.spec_id for s in md.partition_specs if s.is_unpartitioned}
    out = []
    for d in _live_deletes(io, snapshot):
        df = d.data_file
        if df.content == FileContent.POSITION_DELETES:
            ref = referenced_data_file(df)
            if ref is not None:
                info = data.get(ref)
                if info is None or info[2] > d.sequence_number:
                    out.append(df)
                continue
            lowest = _lowest(by_partition.get((d.spec_id, tuple(df.partition))),
                             wild.get(d.spec_id))
            if lowest is None or d.sequence_number < lowest:
                out.append(df)
        elif df.content == FileContent.EQUALITY_DELETES:
            if d.spec_id in unpartitioned:
                lowest = overall
            else:
                lowest = _lowest(by_partition.get((d.spec_id, tuple(df.partition))),
                                 wild.get(d.spec_id))
            if lowest is None or d.sequence_number <= lowest:
                out.append(df)
    return out


def _lowest(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else min(a, b)


def dangling_after_compaction(io: FileIO, plan: CompactionPlan) -> list[DataFile]:
    """The delete files a compaction's ``remove-dangling-deletes`` would remove (dry run): the
    live data files after the plan's groups are rewritten are simulated; rows of a group that
    changes spec or partition may land in any partition of the output spec."""
    md = plan.metadata
    head = md.snapshot_by_id(plan.starting_snapshot_id) \
        if plan.starting_snapshot_id is not None else None
    live = dict(live_data_files(io, head))
    use_start = plan.options.use_starting_sequence_number and md.format_version >= 2
    seq = plan.starting_sequence_number if use_start and plan.starting_sequence_number \
        is not None else md.next_sequence_number()
    anywhere = []
    for g in plan.groups:
        for df in g.data_files:
            live.pop(df.file_path, None)
        if g.needs_repartition:
            anywhere.append((g.output_spec_id, seq))
        else:
            live[f"\x00new file of group {g.global_index}"] = (
                g.output_spec_id, tuple(g.tasks[0].data_file.partition), seq)
    removed_by_compaction = set(plan.removed_delete_files)
    return [f for f in find_dangling_deletes(io, md, head, live=live, anywhere=anywhere)
            if f.file_path not in removed_by_compaction]


@dataclass(frozen=True)
class DanglingDeletesResult:
    """Delete files removed (or, in a dry run, to remove) as dangling."""

    table: str
    dry_run: bool
    snapshot_id: int | None
    removed_delete_files: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "dry_run": self.dry_run, "snapshot_id": self.snapshot_id,
                "removed_delete_files": list(self.removed_delete_files)}


def remove_dangling_deletes(table: Table, *, branch: str = MAIN_BRANCH, dry_run: bool = False,
                            on_progress: ProgressCallback | None = None
                            ) -> DanglingDeletesResult:
    """Remove the delete files of ``branch`` that apply to no live data file
    (:func:`find_dangling_deletes`) in one ``replace`` commit; nothing to remove commits
    nothing. Each file must still be live when the commit lands (else CommitConflict)."""
    report(on_progress, "finding dangling deletes")
    md = table.metadata
    head = branch_head(md, branch)
    dangling = find_dangling_deletes(table.io, md, head)
    paths = tuple(f.file_path for f in dangling)
    if dry_run or not paths:
        return DanglingDeletesResult(table.location, dry_run, None, paths)
    report(on_progress, "committing", 0, 1, f"removing {len(paths)} dangling delete file(s)")
    producer = SnapshotProducer(table.io, deleted=paths, operation=Operation.REPLACE,
                                branch=branch)
    table.new_transaction().add_operation(producer).commit()
    assert producer.committed_snapshot is not None
    return DanglingDeletesResult(table.location, False, producer.committed_snapshot.snapshot_id,
                                 paths)


# -- planning a position delete rewrite ----------------------------------------------------------


@dataclass(frozen=True)
class DeleteGroup:
    """Position delete files of one partition rewritten together (Java
    ``RewritePositionDeletesGroup``); the new files take ``max_data_sequence_number``."""

    global_index: int
    partition_index: int
    spec_id: int
    partition: tuple[Any, ...]
    files: tuple[DeleteFile, ...]
    max_output_file_size: int
    input_split_size: int
    expected_output_files: int

    @property
    def input_size(self) -> int:
        return sum(d.data_file.file_size_in_bytes for d in self.files)

    @property
    def input_files_count(self) -> int:
        return len(self.files)

    @property
    def max_data_sequence_number(self) -> int:
        return max(d.sequence_number for d in self.files)

    def to_json(self, md: TableMetadata) -> dict[str, Any]:
        return {
            "global_index": self.global_index,
            "partition_index": self.partition_index,
            "spec_id": self.spec_id,
            "partition": partition_json(md, self.spec_id, self.partition),
            "input_files_count": len(self.files),
            "input_size_bytes": self.input_size,
            "expected_output_files": self.expected_output_files,
            "max_data_sequence_number": self.max_data_sequence_number,
            "input_files": [{"file_path": d.path, "file_size_in_bytes":
                             d.data_file.file_size_in_bytes, "record_count":
                             d.data_file.record_count, "sequence_number": d.sequence_number}
                            for d in self.files],
        }


@dataclass(frozen=True)
class PositionDeletePlan:
    """What a position delete rewrite would rewrite, planned at ``starting_snapshot_id``."""

    metadata: TableMetadata
    table_location: str
    branch: str
    row_filter: str | None
    options: RewriteOptions
    starting_snapshot_id: int | None
    groups: tuple[DeleteGroup, ...]
    total_group_count: int
    note: str = ""

    @property
    def groups_per_commit(self) -> int:
        commits = max(1, self.options.partial_progress_max_commits)
        return max(1, -(-self.total_group_count // commits))

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table_location,
            "branch": self.branch,
            "filter": self.row_filter,
            "starting_snapshot_id": self.starting_snapshot_id,
            "options": self.options.to_json(),
            "total_group_count": self.total_group_count,
            "groups": [g.to_json(self.metadata) for g in self.groups],
            "note": self.note,
        }


def plan_position_delete_rewrite(
    source: Table | TableMetadata, io: FileIO | None = None, *,
    filter: Any = None,  # noqa: A002 - Java's and the CLI's name
    options: Mapping[str, str] | None = None, branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
) -> PositionDeletePlan:
    """Plan a rewrite of position delete files (Java
    ``BinPackRewritePositionDeletePlanner``): the delete files whose partition may hold rows
    matching ``filter``, per partition those outside the size range bin-packed into groups,
    and the groups with enough files or content. Deviation: Java groups delete files by their
    partition coerced to the table's union partition type, which can mix files of different
    specs (and then writes them all in one spec, where they no longer apply to the other
    spec's data); floe groups by spec and partition."""
    from floe.table.table import Table as _Table

    if isinstance(source, _Table):
        md, io = source.metadata, io if io is not None else source.io
    else:
        md, io = source, io if io is not None else FileIO()
    opts = parse_options(md, options, position_deletes=True)
    if md.format_version > 2:
        raise ValidationError(
            f"cannot rewrite the position deletes of table {md.location}: format version "
            f"{md.format_version} rewrites them into deletion vectors, which floe does not write")
    head = branch_head(md, branch)
    schema = md.schema()
    scan_filter = ScanFilter(md, schema, filter, case_sensitive)
    row_filter = None if scan_filter.expression is None else str(scan_filter.expression)
    if head is None:
        return PositionDeletePlan(md, md.location, branch, row_filter, opts, None, (), 0,
                                  f"table {md.location} has no snapshot on branch {branch}: "
                                  "nothing to rewrite")
    by_partition: dict[tuple[int, tuple[Any, ...]], list[DeleteFile]] = {}
    for d in _live_deletes(io, head):
        if d.content != FileContent.POSITION_DELETES or d.is_deletion_vector:
            continue
        if not scan_filter.for_spec(d.spec_id).partition(d.data_file)[0]:
            continue
        by_partition.setdefault((d.spec_id, tuple(d.data_file.partition)), []).append(d)
    planned = {key: _delete_groups(opts, files) for key, files in by_partition.items()}
    groups: list[DeleteGroup] = []
    for (spec_id, partition), packed in planned.items():
        for k, files in enumerate(packed):
            size = sum(d.data_file.file_size_in_bytes for d in files)
            groups.append(DeleteGroup(
                len(groups) + 1, k + 1, spec_id, partition, tuple(files),
                opts.write_max_file_size, opts.input_split_size(size),
                opts.expected_output_files(size)))
    if opts.rewrite_job_order in JOB_ORDER_KEYS:
        groups.sort(key=JOB_ORDER_KEYS[opts.rewrite_job_order])
    return PositionDeletePlan(md, md.location, branch, row_filter, opts, head.snapshot_id,
                              tuple(groups), len(groups),
                              "" if groups else "no position delete files need rewriting")


def _delete_groups(o: RewriteOptions, files: Sequence[DeleteFile]) -> list[list[DeleteFile]]:
    """Java: files outside the size range, bin-packed; groups with enough files or content
    (``rewrite-all``: every file, every group)."""
    def size(d: DeleteFile) -> int:
        return d.data_file.file_size_in_bytes

    chosen = list(files) if o.rewrite_all else [
        d for d in files if size(d) < o.min_file_size_bytes or size(d) > o.max_file_size_bytes]
    packed = pack_groups(chosen, size, o.max_file_group_size_bytes)
    if o.rewrite_all:
        return packed

    def keep(group: list[DeleteFile]) -> bool:
        total = sum(size(d) for d in group)
        return ((len(group) > 1 and len(group) >= o.min_input_files)
                or (len(group) > 1 and total > o.target_file_size_bytes)
                or total > o.max_file_size_bytes)

    return [g for g in packed if keep(g)]


# -- executing a position delete rewrite ---------------------------------------------------------


@dataclass(frozen=True)
class DeleteGroupResult:
    """One group of a position delete rewrite."""

    global_index: int
    partition: tuple[tuple[str, Any], ...]
    rewritten_delete_files: tuple[str, ...]
    rewritten_bytes: int
    added_delete_files: tuple[str, ...] = ()
    added_bytes: int = 0
    snapshot_id: int | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"global_index": self.global_index, "partition": dict(self.partition),
                "rewritten_delete_files": list(self.rewritten_delete_files),
                "rewritten_bytes": self.rewritten_bytes,
                "added_delete_files": list(self.added_delete_files),
                "added_bytes": self.added_bytes, "snapshot_id": self.snapshot_id,
                "error": self.error}


@dataclass(frozen=True)
class RewritePositionDeletesResult:
    """The outcome of :func:`rewrite_position_deletes` (counts named like the output columns
    of Spark's ``rewrite_position_delete_files`` procedure)."""

    table: str
    dry_run: bool
    starting_snapshot_id: int | None
    groups: tuple[DeleteGroupResult, ...]
    failures: tuple[DeleteGroupResult, ...] = ()
    snapshot_ids: tuple[int, ...] = ()
    note: str = ""

    @property
    def rewritten_delete_files_count(self) -> int:
        return sum(len(g.rewritten_delete_files) for g in self.groups)

    @property
    def added_delete_files_count(self) -> int:
        return sum(len(g.added_delete_files) for g in self.groups)

    @property
    def rewritten_bytes_count(self) -> int:
        return sum(g.rewritten_bytes for g in self.groups)

    @property
    def added_bytes_count(self) -> int:
        return sum(g.added_bytes for g in self.groups)

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "dry_run": self.dry_run,
                "starting_snapshot_id": self.starting_snapshot_id,
                "snapshot_ids": list(self.snapshot_ids),
                "rewritten_delete_files_count": self.rewritten_delete_files_count,
                "added_delete_files_count": self.added_delete_files_count,
                "rewritten_bytes_count": self.rewritten_bytes_count,
                "added_bytes_count": self.added_bytes_count,
                "groups": [g.to_json() for g in self.groups],
                "failures": [g.to_json() for g in self.failures], "note": self.note}


@dataclass(frozen=True)
class _Written:
    group: DeleteGroup
    added: tuple[DataFile, ...]
    written: tuple[str, ...]


def _group_result(md: TableMetadata, group: DeleteGroup, out: _Written | None = None,
                  snapshot_id: int | None = None, error: str | None = None
                  ) -> DeleteGroupResult:
    return DeleteGroupResult(
        group.global_index, tuple(partition_json(md, group.spec_id, group.partition).items()),
        tuple(d.path for d in group.files), group.input_size,
        () if out is None else tuple(f.file_path for f in out.added),
        0 if out is None else sum(f.file_size_in_bytes for f in out.added), snapshot_id, error)


def _read_deletes(io: FileIO, md: TableMetadata, group: DeleteGroup) -> pa.Table:
    options = ReadOptions(md, POSITION_DELETE_SCHEMA)
    batches = []
    for d in group.files:
        task = FileScanTask(d.data_file, (), None, d.spec_id, d.sequence_number)
        batches += list(read_task(io, task, options))
    return pa.Table.from_batches(batches, schema=schema_to_arrow(POSITION_DELETE_SCHEMA))


def _rewrite_delete_group(io: FileIO, plan: PositionDeletePlan, group: DeleteGroup,
                          live: LiveData, on_progress: ProgressCallback | None) -> _Written:
    """Read the group's deletes, keep those naming live data files of the partition, write
    them sorted into about ``expected_output_files`` files."""
    md = plan.metadata
    rows = _read_deletes(io, md, group)
    here = [p for p, (spec_id, partition, _) in live.items()
            if spec_id == group.spec_id and partition == group.partition]
    paths = rows.column("file_path")
    valid = rows.filter(pc.is_in(paths, value_set=pa.array(here, paths.type)))
    valid = valid.sort_by([("file_path", "ascending"), ("pos", "ascending")])
    written: list[str] = []
    added: list[DataFile] = []
    op = uuid.uuid4()
    try:
        if valid.num_rows:
            n = group.expected_output_files
            per_file = max(1, -(-valid.num_rows // n))
            for k, start in enumerate(range(0, valid.num_rows, per_file)):
                report(on_progress, "writing", k, n,
                       f"delete group {group.global_index}: delete file {k + 1}")
                added.append(write_position_deletes(
                    io, md, group.spec_id, group.partition, valid.slice(start, per_file),
                    operation_id=op, task_id=k + 1, written=written))
    except BaseException:
        remove_written(io, written)
        raise
    return _Written(group, tuple(added), tuple(written))


def _commit_deletes(table: Table, plan: PositionDeletePlan, batch: Sequence[_Written]
                    ) -> Snapshot:
    """One ``replace`` commit (Java ``RewritePositionDeletesCommitManager``). Java gives each
    group's new files that group's highest data sequence number; floe's snapshot producer
    takes one number per commit, so a commit of several groups uses the highest of all
    (a position delete names its data files by path, so a higher number applies to nothing
    more)."""
    producer = SnapshotProducer(
        table.io, added=[f for w in batch for f in w.added],
        deleted=[d.path for w in batch for d in w.group.files], operation=Operation.REPLACE,
        owned_files=[p for w in batch for p in w.written], branch=plan.branch,
        data_sequence_number=max(w.group.max_data_sequence_number for w in batch))
    table.new_transaction().add_operation(producer).commit()
    assert producer.committed_snapshot is not None
    return producer.committed_snapshot


def rewrite_position_deletes(
    table: Table,
    plan: PositionDeletePlan | Mapping[str, str] | None = None,
    *,
    filter: Any = None,  # noqa: A002 - Java's and the CLI's name
    options: Mapping[str, str] | None = None,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
    dry_run: bool = False,
    on_progress: ProgressCallback | None = None,
) -> RewritePositionDeletesResult:
    """Rewrite position delete files (Java ``rewrite_position_delete_files``): bin-pack them
    per partition, drop entries naming data files no longer live, commit the new files in
    place of the old. ``plan`` is a plan or the options mapping; ``dry_run`` lists the groups
    without writing. Cancelled from ``on_progress`` deletes the uncommitted files written."""
    report(on_progress, "planning")
    if isinstance(plan, PositionDeletePlan):
        the_plan = plan
    else:
        opts = {**(plan or {}), **(options or {})}
        the_plan = plan_position_delete_rewrite(table, filter=filter, options=opts,
                                                branch=branch, case_sensitive=case_sensitive)
    md = the_plan.metadata
    if dry_run or not the_plan.groups:
        return RewritePositionDeletesResult(
            table.location, dry_run, the_plan.starting_snapshot_id,
            tuple(_group_result(md, g) for g in the_plan.groups) if dry_run else (),
            note=the_plan.note)
    head = md.snapshot_by_id(the_plan.starting_snapshot_id) \
        if the_plan.starting_snapshot_id is not None else None
    live = live_data_files(table.io, head)
    partial = the_plan.options.partial_progress_enabled
    pending: list[_Written] = []
    done: list[DeleteGroupResult] = []
    failures: list[DeleteGroupResult] = []
    snapshot_ids: list[int] = []

    def commit() -> None:
        nonlocal pending
        batch, pending = pending, []
        try:
            snap = _commit_deletes(table, the_plan, batch)
        except CommitStateUnknown:
            raise
        except (CommitConflict, ValidationError) as e:
            if not partial:
                raise CommitConflict(
                    f"cannot commit the position delete rewrite of table {table.identifier}: "
                    f"{e}") from e
            failures.extend(_group_result(md, w.group, w, error=str(e)) for w in batch)
            return
        snapshot_ids.append(snap.snapshot_id)
        done.extend(_group_result(md, w.group, w, snap.snapshot_id) for w in batch)

    groups = the_plan.groups
    try:
        for i, group in enumerate(groups):
            report(on_progress, "rewriting", i, len(groups),
                   f"delete group {group.global_index}: {len(group.files)} files")
            try:
                pending.append(_rewrite_delete_group(table.io, the_plan, group, live,
                                                     on_progress))
            except Cancelled:
                raise
            except Exception as e:
                if not partial:
                    raise
                failures.append(_group_result(md, group, error=str(e)))
                continue
            if partial and len(pending) >= the_plan.groups_per_commit:
                commit()
        if pending:
            report(on_progress, "committing")
            commit()
    except BaseException:
        for w in pending:
            remove_written(table.io, w.written)
        raise
    return RewritePositionDeletesResult(table.location, False, the_plan.starting_snapshot_id,
                                        tuple(done), tuple(failures), tuple(snapshot_ids),
                                        the_plan.note)
