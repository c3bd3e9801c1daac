"""Scan planning (spec "Scan Planning"): which files a scan reads, with which deletes.

1. Select the snapshot (current, by id, as of a timestamp, or by branch/tag) and the schema
   the scan reads with.
2. Read the manifest list. Delete manifests first: skip those without live files and those
   whose partition summaries cannot match, index the live delete files whose partition can
   match (:class:`~floe.scan.delete_index.DeleteFileIndex`).
3. Data manifests: skip by content counts, then by partition summaries (one evaluator per
   spec id); data files pruned by their partition (inclusive projection of the filter
   through the spec), then by their column metrics.
4. Each kept data file becomes a :class:`FileScanTask` with its delete files and the
   residual filter rows still have to pass.

With ``explain=True`` every decision is recorded (:mod:`floe.scan.explain`).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, overload

from floe.bulk import LazyList, gc_paused, sequence_eq
from floe.errors import NotFound, ValidationError
from floe.manifest import (
    DataFile,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    file_content_name,
    read_manifest_list,
)
from floe.metadata import TableMetadata
from floe.scan.delete_index import DeleteFile, DeleteFileIndex, DeleteMatch
from floe.scan.explain import (
    DecidedDeletes,
    FileDecision,
    Funnel,
    KeptFiles,
    ManifestDecision,
    PlanExplain,
)
from floe.scan.filters import ScanFilter
from floe.scan.manifest_store import StoredEntries
from floe.scan.manifests import DEFAULT_CACHE, ManifestCache, read_live_entries
from floe.schema import Schema
from floe.snapshots import Snapshot

if TYPE_CHECKING:  # Arrow is imported when a block is written as JSON
    import pyarrow as pa

__all__ = ["FileScanTask", "ScanPlan", "PlanStream", "TaskBlock", "TaskList", "plan_files",
           "stream_plan", "select_snapshot", "SnapshotSelection"]


class FileScanTask(NamedTuple):
    """One data file to read (Java's ``BaseFileScanTask``): its deletes and residual.

    ``start``/``length`` describe the byte range; floe plans whole files (one task per file).
    """

    data_file: DataFile
    delete_files: tuple[DeleteFile, ...]
    residual: Any
    spec_id: int
    sequence_number: int
    start: int = 0
    length: int | None = None

    @property
    def file_path(self) -> str:
        return self.data_file.file_path


class TaskBlock(LazyList[FileScanTask]):
    """Every live file of one manifest as a scan task: what a plan keeps when it has nothing
    to decide per file (no filter left for the manifest's spec; no deletes, or deletes that
    name their data file, found by path). Only the number
    of files is needed to plan; the task objects are built on first read, so entries from
    the persistent manifest cache (:class:`~floe.scan.manifest_store.StoredEntries`) stay
    unbuilt until a caller reads the tasks. Blocks are shared between plans and threads
    (the in-memory manifest cache keeps them)."""

    __slots__ = ("_spec_id", "_deletes", "_index")

    def __init__(self, live: Sequence[ManifestEntry], spec_id: int,
                 deletes: dict[int, list[Any]] | None = None,
                 index: DeleteFileIndex | None = None) -> None:
        super().__init__(live, len(live))
        self._spec_id = spec_id
        #: The delete files of the tasks that have any, by position (deletes that name
        #: their data file: :attr:`DeleteFileIndex.by_path_only`), as delete files or as
        #: rows of ``index`` (built when first read)
        self._deletes: dict[int, Any] = deletes or {}
        self._index = index

    @property
    def deletes(self) -> dict[int, tuple[DeleteFile, ...]]:
        """The delete files of the tasks that have any, by position (built on first read)."""
        index = self._index
        if index is not None:
            got = self._deletes
            built = iter(index.build([f for files in got.values() for f in files]))
            self._deletes = {i: tuple(next(built) for _ in files) for i, files in got.items()}
            self._index = None
        return self._deletes

    def delete_paths(self) -> dict[int, list[str]]:
        """The paths of :attr:`deletes`, read without building them."""
        index = self._index
        if index is None:
            return {i: [d.path for d in files] for i, files in self._deletes.items()}
        return {i: [index.path_of(f) for f in files] for i, files in self._deletes.items()}

    def delete_keys(self) -> list[tuple[str, int | None]]:
        """What the plan counts the delete files of :attr:`deletes` by (path and content
        offset: :meth:`DeleteFileIndex.key_of`), read without building them."""
        index = self._index
        files = [f for got in self._deletes.values() for f in got]
        if index is None:
            return [(d.path, d.data_file.content_offset) for d in files]
        return [index.key_of(f) for f in files]

    def _build(self, source: Sequence[ManifestEntry]) -> list[FileScanTask]:
        tasks = _full_tasks_of(source, self._spec_id)
        for i, got in self.deletes.items():
            tasks[i] = tasks[i]._replace(delete_files=got)
        return tasks

    def tasks(self) -> list[FileScanTask]:
        return self.items()

    def column(self, name: str) -> list[Any]:
        """``file_path``, ``record_count`` or ``sequence_number`` of every task, without
        building the tasks when they are not built yet."""
        live = self.source
        if live is None:
            tasks = self.items()
            if name == "sequence_number":
                return [t.sequence_number for t in tasks]
            return [getattr(t.data_file, name) for t in tasks]
        if isinstance(live, StoredEntries):
            got = live.data_file_column(name)
        elif name == "sequence_number":
            got = [e.sequence_number for e in live]
        else:
            got = [getattr(e.data_file, name) for e in live]
        return [v or 0 for v in got] if name == "sequence_number" else got

    def arrow_column(self, name: str) -> pa.Array:
        """:meth:`column` as an Arrow array (``file_path`` a string, the others int64)."""
        import pyarrow as pa
        from floe import arrow_compute as pc

        live = self.source
        got = live.arrow_column(name) if isinstance(live, StoredEntries) else None
        if got is None:
            return pa.array(self.column(name), pa.string() if name == "file_path"
                            else pa.int64())
        return pc.fill_null(got, 0) if name == "sequence_number" else got

    @property
    def spec_id(self) -> int:
        return self._spec_id

    def __repr__(self) -> str:
        return f"TaskBlock({len(self)} tasks of spec {self._spec_id})"


class TaskList(Sequence[FileScanTask]):
    """The tasks of a plan, in plan order: whole-manifest :class:`TaskBlock` s (built when
    read) and tasks appended one by one. A list in every way a caller reads one (length,
    index, slice, iteration, equality with a list)."""

    __slots__ = ("_parts", "_len", "_starts")

    def __init__(self, tasks: Iterable[FileScanTask] = ()) -> None:
        self._parts: list[Sequence[FileScanTask]] = []
        self._len = 0
        self._starts: list[int] | None = None
        self.extend(tasks)

    def append(self, task: FileScanTask) -> None:
        last = self._parts[-1] if self._parts else None
        if not isinstance(last, list):
            last = []
            self._parts.append(last)
        last.append(task)
        self._len += 1
        self._starts = None

    def extend(self, tasks: Iterable[FileScanTask]) -> None:
        if isinstance(tasks, TaskBlock):
            if len(tasks):
                self._parts.append(tasks)
                self._len += len(tasks)
                self._starts = None
            return
        for t in tasks:
            self.append(t)

    def blocks(self) -> list[Sequence[FileScanTask]]:
        """The parts in order: :class:`TaskBlock` s and lists of single tasks."""
        return list(self._parts)

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, i: int) -> FileScanTask: ...
    @overload
    def __getitem__(self, i: slice) -> list[FileScanTask]: ...
    def __getitem__(self, i: int | slice) -> FileScanTask | list[FileScanTask]:
        if isinstance(i, slice):
            return list(self)[i]
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("task index out of range")
        if self._starts is None:
            self._starts = list(itertools.accumulate((len(p) for p in self._parts), initial=0))
        k = bisect.bisect_right(self._starts, i) - 1
        return self._parts[k][i - self._starts[k]]

    def __iter__(self) -> Iterator[FileScanTask]:
        # whoever iterates reads every task: build the blocks in one pass without the cyclic
        # collector (a pause per block lets it re-scan the growing heap between blocks)
        unbuilt = [p for p in self._parts if isinstance(p, TaskBlock) and not p.built]
        if len(unbuilt) > 1:
            with gc_paused():
                for block in unbuilt:
                    block.tasks()
        return itertools.chain.from_iterable(self._parts)

    def __eq__(self, other: object) -> bool:
        return sequence_eq(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TaskList({self._len} tasks)"


@dataclass(frozen=True, slots=True)
class SnapshotSelection:
    """The snapshot a scan reads and the schema it reads with."""

    snapshot: Snapshot | None
    schema: Schema
    how: str


@dataclass(slots=True)
class ScanPlan:
    """The result of :func:`plan_files`."""

    metadata: TableMetadata
    snapshot: Snapshot | None
    schema: Schema
    row_filter: Any
    bound_filter: Any = None
    tasks: TaskList = field(default_factory=TaskList)
    funnel: Funnel = field(default_factory=Funnel)
    explain: PlanExplain | None = None
    case_sensitive: bool = True

    @property
    def snapshot_id(self) -> int | None:
        return None if self.snapshot is None else self.snapshot.snapshot_id

    def to_json(self) -> dict[str, Any]:
        """JSON-able summary (and the explain records when planned with ``explain=True``)."""
        from floe.scan.explain import plan_to_json

        return plan_to_json(self)


def select_snapshot(
    md: TableMetadata,
    snapshot_id: int | None = None,
    as_of_ms: int | None = None,
    ref: str | None = None,
) -> SnapshotSelection:
    """Which snapshot and schema a scan reads (at most one selector may be given).

    Like Iceberg Java (``SnapshotUtil.schemaFor``): a snapshot id, a timestamp or a tag read
    with the schema the snapshot was written with; the current state and a branch read with
    the table's current schema.
    """
    given = [x for x in (snapshot_id, as_of_ms, ref) if x is not None]
    if len(given) > 1:
        raise ValidationError("give at most one of a snapshot id, a timestamp and a ref")
    if snapshot_id is not None:
        snap = md.snapshot_by_id(snapshot_id)
        if snap is None:
            raise NotFound(f"snapshot {snapshot_id} does not exist in table {md.location}")
        return SnapshotSelection(snap, _snapshot_schema(md, snap), f"snapshot {snapshot_id}")
    if as_of_ms is not None:
        snap = md.snapshot_as_of(as_of_ms)
        if snap is None:
            first = min((e.timestamp_ms for e in md.snapshot_log), default=None)
            if first is None:
                raise NotFound(f"table {md.location} has no snapshot log to travel back in")
            raise NotFound(
                f"timestamp {as_of_ms} is before the first snapshot of table {md.location} "
                f"(committed at {first})"
            )
        return SnapshotSelection(snap, _snapshot_schema(md, snap), f"as of {as_of_ms}")
    if ref is not None:
        r = md.refs.get(ref)
        if r is None:
            if ref == "main":
                return SnapshotSelection(md.current_snapshot(), md.schema(), "branch main")
            raise NotFound(f"table {md.location} has no branch or tag named {ref!r}")
        snap = md.snapshot_by_id(r.snapshot_id)
        if snap is None:
            raise NotFound(f"ref {ref!r} points to snapshot {r.snapshot_id}, which is missing")
        kind = str(r.ref_type).lower()
        schema = md.schema() if kind == "branch" else _snapshot_schema(md, snap)
        return SnapshotSelection(snap, schema, f"{kind} {ref}")
    return SnapshotSelection(md.current_snapshot(), md.schema(), "current")


def _snapshot_schema(md: TableMetadata, snap: Snapshot) -> Schema:
    if snap.schema_id is not None:
        s = md.schema_by_id(snap.schema_id)
        if s is not None:
            return s
    return md.schema()


def plan_files(
    io: Any,
    metadata: TableMetadata,
    snapshot_id: int | None = None,
    as_of_ms: int | None = None,
    ref: str | None = None,
    row_filter: Any = None,
    case_sensitive: bool = True,
    explain: bool = False,
    cache: ManifestCache | None = DEFAULT_CACHE,
    processes: bool | None = None,
    schema: Schema | None = None,
) -> ScanPlan:
    """Plan a scan: the data files to read, each with its delete files and residual.

    ``row_filter`` is a filter string (parsed with :func:`floe.expressions.parse_filter`),
    an unbound expression, or None for every row. ``schema`` overrides the schema the scan
    reads and binds with (:func:`select_snapshot`'s choice by default; the REST protocol's
    ``use-snapshot-schema=false`` reads an old snapshot with the table's schema). Raises
    NotFound for an unknown snapshot or ref and for a timestamp before the first snapshot;
    ValidationError for a bad filter.
    """
    sel, scan_filter, plan = _start(metadata, snapshot_id, as_of_ms, ref, row_filter,
                                    case_sensitive, explain, schema)
    if sel.snapshot is None:
        return plan
    manifests = _manifest_list(io, sel.snapshot)
    with gc_paused():
        _Planner(io, metadata, sel.schema, scan_filter, plan, cache, processes).run(manifests)
    return plan


def _start(metadata: TableMetadata, snapshot_id: int | None, as_of_ms: int | None,
           ref: str | None, row_filter: Any, case_sensitive: bool, explain: bool,
           schema: Schema | None = None) -> tuple[SnapshotSelection, ScanFilter, ScanPlan]:
    sel = select_snapshot(metadata, snapshot_id, as_of_ms, ref)
    if schema is not None:
        sel = SnapshotSelection(sel.snapshot, schema, sel.how)
    scan_filter = ScanFilter(metadata, sel.schema, row_filter, case_sensitive, explain)
    plan = ScanPlan(metadata, sel.snapshot, sel.schema, scan_filter.expression,
                    scan_filter.bound, case_sensitive=case_sensitive)
    if explain:
        plan.explain = PlanExplain(snapshot_selection=sel.how)
    return sel, scan_filter, plan


def _manifest_list(io: Any, snapshot: Snapshot) -> list[ManifestFile]:
    if not snapshot.manifest_list:
        raise ValidationError(
            f"snapshot {snapshot.snapshot_id} lists its manifests inline (format v1 "
            "without a manifest list), which floe does not read")
    return read_manifest_list(io, snapshot.manifest_list)


class _Planner:
    def __init__(self, io: Any, md: TableMetadata, schema: Schema, scan_filter: ScanFilter,
                 plan: ScanPlan, cache: ManifestCache | None, processes: bool | None) -> None:
        self.io = io
        self.md = md
        self.schema = schema
        self.filter = scan_filter
        self.plan = plan
        self.cache = cache
        self.processes = processes
        self.funnel = plan.funnel
        self.explain = plan.explain

    def run(self, manifests: Sequence[ManifestFile]) -> None:
        deletes = [m for m in manifests if m.content == ManifestContent.DELETES]
        data = [m for m in manifests if m.content != ManifestContent.DELETES]
        index = self._delete_index(deletes)
        self._data(data, index)

    def _keep_manifest(self, m: ManifestFile) -> tuple[bool, str, str]:
        """(kept, stage, reason) for one manifest."""
        if not (m.has_added_files() or m.has_existing_files()):
            return False, "manifest-content", "no added or existing files"
        spec_filter = self.filter.for_spec(m.partition_spec_id)
        ok, reason = spec_filter.manifest(m)
        return ok, "partition-summary", reason

    def _select(self, manifests: Sequence[ManifestFile], content: str
                ) -> list[ManifestFile]:
        kept: list[ManifestFile] = []
        f = self.funnel
        for m in manifests:
            ok, stage, reason = self._keep_manifest(m)
            if content == "data":
                f.manifests_total += 1
                f.data_files_in_snapshot += (m.added_files_count or 0) + \
                    (m.existing_files_count or 0)
                if stage != "manifest-content":
                    f.manifests_after_content += 1
                if ok:
                    f.manifests_after_summaries += 1
            else:
                f.delete_manifests_total += 1
                if ok:
                    f.delete_manifests_kept += 1
            if self.explain is not None:
                self.explain.add(ManifestDecision(
                    m.manifest_path, content, m.partition_spec_id, ok,
                    None if ok else stage, reason))
            if ok:
                kept.append(m)
        return kept

    def _delete_index(self, manifests: Sequence[ManifestFile]) -> DeleteFileIndex:
        unpartitioned = [s.spec_id for s in self.md.partition_specs if s.is_unpartitioned]
        index = DeleteFileIndex(self.schema, unpartitioned)
        kept = self._select(manifests, "deletes")
        if not kept:
            return index
        entries = read_live_entries(self.io, kept, self.cache, self.processes)
        explain = self.explain
        for m, live in zip(kept, entries, strict=True):
            spec_id = m.partition_spec_id
            spec_filter = self.filter.for_spec(spec_id)
            mdec = explain.manifest(m.manifest_path) if explain is not None else None
            stored = live if isinstance(live, StoredEntries) and \
                len(live) > BULK_MIN_FILES and live.source is not None else None
            if stored is not None:
                # decided over the columns and explained from them: nothing to decide per
                # file (no filter), or by partition
                from floe.scan.decide import partition_rows, referenced_paths

                named = referenced_paths(stored)
                uniform = spec_filter.uniform_reason
                kept_rows: list[bool] | None = None
                reasons: str | list[str]
                if spec_filter.always_true and uniform is not None:
                    reasons = uniform
                else:
                    kept_rows, reasons = partition_rows(spec_filter, stored)
                if mdec is not None:
                    mdec.files = DecidedDeletes(stored.arrow_column("file_path"),
                                                stored.arrow_column("content"), reasons,
                                                kept_rows)
                self.funnel.delete_files_total += len(stored)
                if named is not None:  # those naming their data file indexed by row
                    for e in stored.take(index.add_rows(stored, spec_id, named, kept_rows)):
                        index.add(e, spec_id, None)
                else:
                    for e, ok in zip(stored, kept_rows or itertools.repeat(True)):
                        if ok:
                            index.add(e, spec_id)
                continue
            for e in live:
                self.funnel.delete_files_total += 1
                ok, reason = spec_filter.partition(e.data_file)
                if mdec is not None:
                    mdec.add(FileDecision(
                        e.data_file.file_path, file_content_name(e.data_file.content), ok,
                        None if ok else "partition", reason))
                if ok:
                    index.add(e, spec_id)
        return index

    def _full_tasks(self, m: ManifestFile, live: Sequence[ManifestEntry]) -> TaskBlock:
        key = ("full-tasks", m.partition_spec_id)
        got = self.cache.derived(m.manifest_path, key) if self.cache is not None else None
        if got is None:
            got = TaskBlock(live, m.partition_spec_id)
            if self.cache is not None:
                self.cache.put_derived(m.manifest_path, key, got)
        return got

    def _data(self, manifests: Sequence[ManifestFile], index: DeleteFileIndex) -> None:
        tasks = self.plan.tasks
        for _, got in self.iter_data(manifests, index):
            tasks.extend(got)

    def iter_data(self, manifests: Sequence[ManifestFile], index: DeleteFileIndex,
                  chunk_entries: int | None = None
                  ) -> Iterator[tuple[ManifestFile, Sequence[FileScanTask]]]:
        """The tasks of each kept data manifest, in manifest-list order; the funnel is
        complete when the iterator is. ``chunk_entries`` bounds how many manifest entries
        are decoded at once (None: all kept manifests at once)."""
        kept = self._select(manifests, "data")
        explain = self.explain
        funnel = self.funnel
        matched: set[tuple[str, int | None]] = set()
        has_deletes = index.has_deletes
        for group in _chunks(kept, chunk_entries):
            entries = read_live_entries(self.io, group, self.cache, self.processes)
            for m, live in zip(group, entries, strict=True):
                spec_id = m.partition_spec_id
                spec_filter = self.filter.for_spec(spec_id)
                funnel.data_files_total += len(live)
                if spec_filter.always_true and (not has_deletes or index.by_path_only) and (
                        explain is None or spec_filter.uniform_reason is not None):
                    # the common full scan: nothing to evaluate per file, and the tasks of an
                    # immutable manifest can be kept with it; explained, every file has the
                    # same decision. Deletes that name their data file are looked up by path
                    funnel.data_files_after_partition += len(live)
                    funnel.data_files_after_metrics += len(live)
                    matches: dict[int, list[DeleteMatch]] | None = None
                    if has_deletes:
                        full, matches = _path_deleted(live, spec_id, index, explain is not None)
                        matched.update(full.delete_keys())
                    else:
                        full = self._full_tasks(m, live)
                    funnel.tasks += len(full)
                    if explain is not None:
                        explain.manifest(m.manifest_path).files = KeptFiles(
                            full, spec_filter.uniform_reason, matches)
                    yield m, full
                    continue
                mdec = explain.manifest(m.manifest_path) if explain is not None else None
                tasks: list[FileScanTask] = []
                append = tasks.append

                def keep(e: ManifestEntry, reason: str, spec_filter: Any = spec_filter,
                         spec_id: int = spec_id) -> FileDecision | None:
                    """The task of a kept entry (and its decision, explained)."""
                    df = e.data_file
                    seq = e.sequence_number or 0
                    deletes: tuple[DeleteFile, ...] = ()
                    if has_deletes:
                        deletes = tuple(index.for_data_file(df, seq, spec_id))
                        # a deletion vector is one blob of a Puffin file that may hold
                        # many (Spark writes one per data file): each counts, as in
                        # delete_files_total
                        matched.update((d.path, d.data_file.content_offset) for d in deletes)
                    residual = spec_filter.residual_for(df.partition)
                    append(FileScanTask(df, deletes, residual, spec_id, seq))
                    if mdec is None:
                        return None
                    dec = FileDecision(df.file_path, "data", True, None, reason,
                                       residual=residual)
                    if has_deletes:
                        dec.delete_files = index.explain_for(df, seq, spec_id)
                    return dec

                stored = live if isinstance(live, StoredEntries) else None
                decided = None
                if stored is not None and len(stored) > BULK_MIN_FILES:
                    # imported here: it loads pyarrow, which `floe` commands that plan
                    # nothing do not need
                    from floe.scan.decide import DecidedFiles, decide, kept_reasons

                    decided = decide(spec_filter, stored)
                if decided is not None:
                    # decided over the columns: entries built for the kept files only
                    assert stored is not None
                    if has_deletes:  # their deletes built together
                        index.keep_named(e.data_file.file_path for e in decided.built)
                    funnel.data_files_after_partition += decided.after_partition
                    funnel.data_files_after_metrics += len(decided.kept)
                    reasons = kept_reasons(spec_filter, decided) if mdec is not None \
                        else [""] * len(decided.built)
                    explained = [keep(e, r) for e, r in zip(decided.built, reasons, strict=True)]
                    if mdec is not None:
                        mdec.files = DecidedFiles(stored, decided, spec_filter,
                                                  [d for d in explained if d is not None])
                else:
                    for e in live if stored is None else stored.fresh():
                        df = e.data_file
                        ok, reason = spec_filter.partition(df)
                        stage = "partition"
                        if ok:
                            funnel.data_files_after_partition += 1
                            ok, reason = spec_filter.metrics(df)
                            stage = "metrics"
                            if ok:
                                funnel.data_files_after_metrics += 1
                        if ok:
                            dec = keep(e, reason)
                        else:
                            dec = None if mdec is None else \
                                FileDecision(df.file_path, "data", False, stage, reason)
                        if mdec is not None and dec is not None:
                            mdec.add(dec)
                funnel.tasks += len(tasks)
                funnel.delete_files_matched = len(matched)
                yield m, tasks
        funnel.delete_files_matched = len(matched)


#: A manifest of at most this many live files is decided file by file on its entries:
#: deciding and explaining a manifest over its columns takes Arrow calls whose number does
#: not depend on its size, which cost more than the scalar evaluators on a few files.
BULK_MIN_FILES = 32


def _chunks(manifests: list[ManifestFile], max_entries: int | None
            ) -> Iterator[list[ManifestFile]]:
    """Consecutive groups of manifests holding about ``max_entries`` live entries each."""
    if max_entries is None:
        yield manifests
        return
    group: list[ManifestFile] = []
    size = 0
    for m in manifests:
        group.append(m)
        size += (m.added_files_count or 0) + (m.existing_files_count or 0)
        if size >= max_entries:
            yield group
            group, size = [], 0
    if group:
        yield group


class PlanStream:
    """A scan plan produced one manifest at a time, for callers that only pass the tasks on
    (``floe plan --json``, ``floe files``): memory stays bounded by one chunk of manifests,
    not the number of files. ``plan`` holds the selection and the funnel (complete after
    iterating; ``plan.tasks`` stays empty) and, with ``explain``, the decisions: delete
    manifests' in full, data manifests' with their files filled as each is yielded (a
    caller that wrote them may clear ``files``)."""

    def __init__(self, planner: _Planner | None, plan: ScanPlan,
                 manifests: Sequence[ManifestFile], chunk_entries: int) -> None:
        self._planner = planner
        self.plan = plan
        self._manifests = manifests
        self._chunk = chunk_entries

    def __iter__(self) -> Iterator[tuple[ManifestFile, Sequence[FileScanTask]]]:
        if self._planner is None:
            return
        with gc_paused():
            deletes = [m for m in self._manifests if m.content == ManifestContent.DELETES]
            data = [m for m in self._manifests if m.content != ManifestContent.DELETES]
            index = self._planner._delete_index(deletes)
            yield from self._planner.iter_data(data, index, self._chunk)


def stream_plan(
    io: Any,
    metadata: TableMetadata,
    snapshot_id: int | None = None,
    as_of_ms: int | None = None,
    ref: str | None = None,
    row_filter: Any = None,
    case_sensitive: bool = True,
    explain: bool = False,
    cache: ManifestCache | None = None,
    chunk_entries: int = 200_000,
) -> PlanStream:
    """:func:`plan_files` as a :class:`PlanStream` (same tasks, same funnel, same explain
    records, in the same order). No manifest cache by default: a one-shot process gains
    nothing from keeping what it decoded."""
    sel, scan_filter, plan = _start(metadata, snapshot_id, as_of_ms, ref, row_filter,
                                    case_sensitive, explain)
    if sel.snapshot is None:
        return PlanStream(None, plan, [], chunk_entries)
    manifests = _manifest_list(io, sel.snapshot)
    planner = _Planner(io, metadata, sel.schema, scan_filter, plan, cache, None)
    return PlanStream(planner, plan, manifests, chunk_entries)


def _path_deleted(live: Sequence[ManifestEntry], spec_id: int, index: DeleteFileIndex,
                  explain: bool) -> tuple[TaskBlock, dict[int, list[DeleteMatch]] | None]:
    """Every file of a manifest as a task, with the delete files that name it
    (:attr:`DeleteFileIndex.by_path_only`), and, explained, the verdict on each delete file
    that names a file, by the file's position."""
    block = TaskBlock(live, spec_id)
    paths = block.column("file_path")
    rows = index.path_rows(paths)
    if not rows:
        return block, {} if explain else None
    seqs = block.column("sequence_number")
    deletes = {}
    for i in rows:
        got = index.naming(paths[i], seqs[i])
        if got:
            deletes[i] = got
    explained = {i: index.explain_path(paths[i], seqs[i]) for i in rows} if explain else None
    return TaskBlock(live, spec_id, deletes, index), explained


def _full_tasks_of(live: Sequence[ManifestEntry], spec_id: int) -> list[FileScanTask]:
    new = tuple.__new__
    return [new(FileScanTask, (e.data_file, (), None, spec_id, e.sequence_number or 0, 0, None))
            for e in live]

