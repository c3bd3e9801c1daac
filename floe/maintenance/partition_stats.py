"""Partition statistics files (spec "Partition Statistics"; Java ``PartitionStatsHandler``).

(:mod:`floe.partition_stats` is another thing: the partition layout the explorer draws,
computed from the manifests; it can start from these files' counts.)

One Parquet file per snapshot, registered in the metadata's ``partition-statistics``: a row
per (spec id, partition) with fields 1–12 of the spec (13, ``dv_count``, on v3), sorted by
partition. The partition is coerced to the table's unified partition type (Java
``Partitioning.partitionType``: every partition field of every spec whose source column is
in the current schema, by field id, named as in the newest spec).

Computing follows Java 1.10 (``computeAndWriteStatsFile``): when an ancestor of the snapshot
has a statistics file, the new one is that file plus the manifests added since (ADDED
entries counted, DELETED entries subtracted); otherwise every manifest of the snapshot is
read (live entries counted, deleted ones only move ``last_updated_*``). A snapshot that has
a file already is a no-op. ``total_record_count`` stays null, as in Java (it needs the data).
The file is written under ``metadata/partition-stats-<snapshot id>-<uuid>.parquet`` and
registered with one commit through the commit loop; a failed commit deletes it.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa
import pyarrow.parquet as pq

from floe.errors import CommitStateUnknown, FloeError, NotFound, ValidationError
from floe.io import FileIO
from floe.maintenance import ProgressCallback, report
from floe.manifest import (
    FileContent,
    ManifestEntryStatus,
    ManifestFile,
    read_manifest_list,
)
from floe.scan.manifests import read_entries
from floe.metadata import TableMetadata
from floe.schema import Schema
from floe.snapshots import PartitionStatisticsFile, Snapshot
from floe.types import INT, LONG, NestedField, PrimitiveType, StructType

if TYPE_CHECKING:
    from floe.table.table import Table

__all__ = ["PartitionStatsRow", "PartitionStatsResult", "PartitionStatsPlan",
           "check_partition_stats", "compute_partition_stats", "plan_partition_stats",
           "compute_stats", "read_partition_stats", "stats_schema", "unified_partition_type",
           "partition_stats_file_for", "write_partition_stats"]

COUNTERS = ("data_record_count", "data_file_count", "total_data_file_size_in_bytes",
            "position_delete_record_count", "position_delete_file_count",
            "equality_delete_record_count", "equality_delete_file_count")


def unified_partition_type(md: TableMetadata) -> StructType:
    """Java ``Partitioning.partitionType(table)``."""
    from floe.inspect import partition_type_for

    current = md.schema()
    chosen: dict[int, tuple[Any, NestedField]] = {}
    names: dict[int, str] = {}
    for spec in sorted(md.partition_specs, key=lambda s: -s.spec_id):
        ptype = partition_type_for(md, spec)
        for pf, sf in zip(spec.fields, ptype.fields, strict=True):
            try:
                current.find_field(pf.source_id)
            except (ValidationError, KeyError, NotFound):
                continue
            void = str(pf.transform) == "void"
            if pf.field_id not in chosen:
                chosen[pf.field_id] = (void, sf)
                names[pf.field_id] = sf.name
            elif chosen[pf.field_id][0] and not void:
                chosen[pf.field_id] = (void, sf)  # a dropped v1 field: the real type
    return StructType(*[NestedField(fid, names[fid], chosen[fid][1].field_type, False)
                        for fid in sorted(chosen)])


def stats_schema(partition_type: StructType, format_version: int) -> Schema:
    """The statistics file's schema (Java ``PartitionStatsHandler.schema``)."""
    if not partition_type.fields:
        raise ValidationError("partition statistics need a partitioned table")
    v3 = format_version >= 3
    fields = [NestedField(1, "partition", partition_type, True),
              NestedField(2, "spec_id", INT, True),
              NestedField(3, "data_record_count", LONG, True),
              NestedField(4, "data_file_count", INT, True),
              NestedField(5, "total_data_file_size_in_bytes", LONG, True),
              NestedField(6, "position_delete_record_count", LONG, v3),
              NestedField(7, "position_delete_file_count", INT, v3),
              NestedField(8, "equality_delete_record_count", LONG, v3),
              NestedField(9, "equality_delete_file_count", INT, v3),
              NestedField(10, "total_record_count", LONG, False),
              NestedField(11, "last_updated_at", LONG, False),
              NestedField(12, "last_updated_snapshot_id", LONG, False)]
    if v3:
        fields.append(NestedField(13, "dv_count", INT, True))
    return Schema(*fields)


@dataclass
class PartitionStatsRow:
    """One row: a partition (values in the unified partition type's order) of one spec."""

    partition: tuple[Any, ...]
    spec_id: int
    data_record_count: int = 0
    data_file_count: int = 0
    total_data_file_size_in_bytes: int = 0
    position_delete_record_count: int = 0
    position_delete_file_count: int = 0
    equality_delete_record_count: int = 0
    equality_delete_file_count: int = 0
    total_record_count: int | None = None
    last_updated_at: int | None = None
    last_updated_snapshot_id: int | None = None
    dv_count: int = 0

    def _touch(self, snapshot: Snapshot | None) -> None:
        if snapshot is not None and (self.last_updated_at is None
                                     or self.last_updated_at < snapshot.timestamp_ms):
            self.last_updated_at = snapshot.timestamp_ms
            self.last_updated_snapshot_id = snapshot.snapshot_id

    def add_file(self, df: Any, snapshot: Snapshot | None, sign: int = 1) -> None:
        content = int(df.content)
        if content == FileContent.DATA:
            self.data_record_count += sign * df.record_count
            self.data_file_count += sign
            self.total_data_file_size_in_bytes += sign * df.file_size_in_bytes
        elif content == FileContent.POSITION_DELETES:
            self.position_delete_record_count += sign * df.record_count
            if str(df.file_format).upper() == "PUFFIN":
                self.dv_count += sign
            else:
                self.position_delete_file_count += sign
        else:
            self.equality_delete_record_count += sign * df.record_count
            self.equality_delete_file_count += sign
        self._touch(snapshot)

    def merge(self, other: PartitionStatsRow) -> None:
        for name in (*COUNTERS, "dv_count"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if other.total_record_count is not None:
            self.total_record_count = (self.total_record_count or 0) + other.total_record_count
        if other.last_updated_at is not None and (
                self.last_updated_at is None or self.last_updated_at < other.last_updated_at):
            self.last_updated_at = other.last_updated_at
            self.last_updated_snapshot_id = other.last_updated_snapshot_id

    def to_json(self, partition_type: StructType) -> dict[str, Any]:
        from floe import conversions

        part = {f.name: (None if v is None else conversions.to_json_value(
                    cast(PrimitiveType, f.field_type), v))  # partition values are primitive
                for f, v in zip(partition_type.fields, self.partition, strict=True)}
        return {"partition": part, "spec_id": self.spec_id,
                **{n: getattr(self, n) for n in (*COUNTERS, "total_record_count",
                                                 "last_updated_at", "last_updated_snapshot_id",
                                                 "dv_count")}}


Key = tuple[int, tuple[Any, ...]]


class _Coercer:
    """A spec's partition tuple as a tuple of the unified type (Java ``coercePartition``)."""

    def __init__(self, md: TableMetadata, unified: StructType) -> None:
        self.md = md
        self.ids = [f.field_id for f in unified.fields]
        self._by_spec: dict[int, list[int | None]] = {}

    def __call__(self, spec_id: int, partition: Sequence[Any]) -> tuple[Any, ...]:
        where = self._by_spec.get(spec_id)
        if where is None:
            spec = self.md.spec_by_id(spec_id)
            pos = {pf.field_id: i for i, pf in enumerate(spec.fields if spec else ())}
            where = self._by_spec[spec_id] = [pos.get(fid) for fid in self.ids]
        values = tuple(partition)
        return tuple(None if i is None or i >= len(values) else values[i] for i in where)


def _entries(io: FileIO, manifests: Iterable[ManifestFile], on_manifest: Any
             ) -> Iterator[tuple[ManifestFile, Any]]:
    manifests = list(manifests)
    for done, m in enumerate(manifests, 1):
        for e in read_entries(io, m, lazy_stats=True):
            yield m, e
        on_manifest(done, len(manifests))


def compute_stats(io: FileIO, md: TableMetadata, manifests: Iterable[ManifestFile],
                  incremental: bool = False, on_manifest: Any = None
                  ) -> dict[Key, PartitionStatsRow]:
    """Java ``computeStats``: per (spec id, partition) over these manifests' entries."""
    coerce = _Coercer(md, unified_partition_type(md))
    out: dict[Key, PartitionStatsRow] = {}
    on_manifest = on_manifest or (lambda done, total: None)
    for m, e in _entries(io, manifests, on_manifest):
        df = e.data_file
        spec_id = m.partition_spec_id
        part = coerce(spec_id, df.partition)
        key = (spec_id, part)
        stats = out.get(key)
        if stats is None:
            stats = out[key] = PartitionStatsRow(part, spec_id)
        snapshot = md.snapshot_by_id(e.snapshot_id) if e.snapshot_id is not None else None
        status = e.status
        if status != ManifestEntryStatus.DELETED:
            if not incremental or status == ManifestEntryStatus.ADDED:
                stats.add_file(df, snapshot)
        elif incremental:
            stats.add_file(df, snapshot, sign=-1)
        else:
            stats._touch(snapshot)
    return out


def _sort_key(value: Any) -> tuple[Any, ...]:
    return (0,) if value is None else (1, value)


def sorted_stats(stats: Iterable[PartitionStatsRow]) -> list[PartitionStatsRow]:
    """By partition, nulls first, field by field (Java ``Comparators.forType``)."""
    return sorted(stats, key=lambda s: tuple(_sort_key(v) for v in s.partition))


def write_partition_stats(io: FileIO, md: TableMetadata, snapshot_id: int,
                          stats: Sequence[PartitionStatsRow]) -> PartitionStatisticsFile:
    """Write a statistics file for ``snapshot_id`` (not registered)."""
    from floe.io.parquet import schema_to_arrow

    schema = stats_schema(unified_partition_type(md), md.format_version)
    arrow = schema_to_arrow(schema)
    ptype = arrow.field("partition").type
    names = [f.name for f in schema.fields]
    columns: dict[str, list[Any]] = {n: [] for n in names}
    for s in sorted_stats(stats):
        columns["partition"].append({ptype.field(i).name: v
                                     for i, v in enumerate(s.partition)})
        for n in names[1:]:
            columns[n].append(getattr(s, n))
    table = pa.table({n: pa.array(columns[n], type=arrow.field(n).type) for n in names},
                     schema=arrow)
    location = (f"{md.location.rstrip('/')}/metadata/partition-stats-{snapshot_id}-"
                f"{uuid.uuid4()}.parquet")
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    data = sink.getvalue().to_pybytes()
    io.write(location, data)
    return PartitionStatisticsFile(snapshot_id, location, len(data))


def read_partition_stats(io: FileIO, md: TableMetadata, stats_file: PartitionStatisticsFile
                         ) -> list[PartitionStatsRow]:
    """The rows of a statistics file (Parquet or Avro, floe's or Java's), columns found by
    field id; the partition read into the table's unified partition type."""
    unified = unified_partition_type(md)
    path = stats_file.statistics_path
    try:
        raw = io.read(path)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        raise NotFound(f"{path}: partition statistics file does not exist") from None
    try:
        return _stats_rows(_avro_rows(raw) if path.endswith(".avro") else _parquet_rows(raw),
                           unified)
    except FloeError:
        raise
    except Exception as e:  # noqa: BLE001 - anyone's bytes through pyarrow and fastavro,
        # whose errors on a damaged file are many (fastavro has no class of its own)
        raise FloeError(f"{path}: not a readable partition statistics file: "
                        f"{type(e).__name__}: {e}") from None


def _stats_rows(records: list[dict[int, Any]], unified: StructType) -> list[PartitionStatsRow]:
    out = []
    for rec in records:
        part = rec.get(1) or {}
        stats = PartitionStatsRow(tuple(part.get(f.field_id) for f in unified.fields),
                               int(rec[2]))
        for fid, name in enumerate(("data_record_count", "data_file_count",
                                    "total_data_file_size_in_bytes",
                                    "position_delete_record_count",
                                    "position_delete_file_count",
                                    "equality_delete_record_count",
                                    "equality_delete_file_count"), start=3):
            setattr(stats, name, int(rec.get(fid) or 0))
        stats.total_record_count = rec.get(10)
        stats.last_updated_at = rec.get(11)
        stats.last_updated_snapshot_id = rec.get(12)
        stats.dv_count = int(rec.get(13) or 0)
        out.append(stats)
    return out


def _field_id(f: pa.Field) -> int | None:
    from floe.io.parquet import FIELD_ID_KEY

    raw = (f.metadata or {}).get(FIELD_ID_KEY)
    return int(raw) if raw is not None else None


def _parquet_rows(raw: bytes) -> list[dict[int, Any]]:
    import datetime as dt

    table = pq.read_table(pa.BufferReader(raw))
    ids = [_field_id(f) for f in table.schema]
    part_field = table.schema.field(ids.index(1))
    part_ids = [_field_id(part_field.type.field(i)) for i in range(part_field.type.num_fields)]
    part_names = [part_field.type.field(i).name for i in range(part_field.type.num_fields)]
    epoch = dt.datetime(1970, 1, 1)

    def internal(v: Any) -> Any:  # Arrow's Python values to floe's internal ones
        if isinstance(v, dt.datetime):
            naive = v.replace(tzinfo=None) if v.tzinfo is None else \
                v.astimezone(dt.timezone.utc).replace(tzinfo=None)
            return (naive - epoch) // dt.timedelta(microseconds=1)
        if isinstance(v, dt.date):
            return (v - epoch.date()).days
        if isinstance(v, dt.time):
            return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
        return v  # numbers, strings, bytes and decimals are floe's values already

    rows = []
    for rec in table.to_pylist():
        row: dict[int, Any] = {}
        for fid, name in zip(ids, table.column_names, strict=True):
            if fid is None:
                continue
            if fid == 1:
                p = rec[name] or {}
                row[1] = {pid: internal(p.get(pn)) for pid, pn in zip(part_ids, part_names,
                                                                      strict=True)}
            else:
                row[fid] = rec[name]
        rows.append(row)
    return rows


def _avro_rows(raw: bytes) -> list[dict[int, Any]]:
    import io as _io

    import fastavro

    reader = fastavro.reader(_io.BytesIO(raw))
    schema: Any = reader.writer_schema
    fields = {f["name"]: f.get("field-id") for f in schema["fields"]}
    ptype = next(f["type"] for f in schema["fields"] if f.get("field-id") == 1)
    ptype = ptype if isinstance(ptype, dict) else next(t for t in ptype if t != "null")
    pids = {f["name"]: f.get("field-id") for f in ptype["fields"]}
    rows = []
    for rec in reader:
        assert isinstance(rec, dict)
        row: dict[int, Any] = {}
        for name, value in rec.items():
            fid = fields.get(name)
            if fid == 1:
                row[1] = {pids[k]: v for k, v in (value or {}).items()}
            elif fid is not None:
                row[fid] = value
        rows.append(row)
    return rows


def partition_stats_file_for(md: TableMetadata, snapshot_id: int
                             ) -> PartitionStatisticsFile | None:
    """The statistics file of ``snapshot_id`` itself, if registered."""
    return next((s for s in md.partition_statistics if s.snapshot_id == snapshot_id), None)


def _latest_stats_file(md: TableMetadata, snapshot_id: int) -> PartitionStatisticsFile | None:
    """Java ``latestStatsFile``: the file of the nearest ancestor (the snapshot included)."""
    by_snapshot = {s.snapshot_id: s for s in md.partition_statistics}
    for snap in md.ancestors_of(snapshot_id):
        if snap.snapshot_id in by_snapshot:
            return by_snapshot[snap.snapshot_id]
    return None


@dataclass(frozen=True)
class PartitionStatsResult:
    snapshot_id: int | None
    statistics_file: PartitionStatisticsFile | None
    partitions: int = 0
    incremental_from: int | None = None
    reused: bool = False
    committed: bool = False
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        f = self.statistics_file
        return {"snapshot_id": self.snapshot_id,
                "statistics_file": None if f is None else f.to_json(),
                "partitions": self.partitions, "incremental_from": self.incremental_from,
                "reused": self.reused, "committed": self.committed,
                "warnings": list(self.warnings)}


def _manifests_since(io: FileIO, md: TableMetadata, snapshot: Snapshot,
                     previous: PartitionStatisticsFile) -> list[ManifestFile]:
    """The manifests added after the snapshot of ``previous`` up to ``snapshot``."""
    since = []
    for snap in md.ancestors_of(snapshot.snapshot_id):
        if snap.snapshot_id == previous.snapshot_id:
            break
        since += [m for m in read_manifest_list(io, snap.manifest_list or "")
                  if m.added_snapshot_id == snap.snapshot_id]
    return since


def _stats_for(io: FileIO, md: TableMetadata, snapshot: Snapshot,
               on_progress: ProgressCallback | None
               ) -> tuple[list[PartitionStatsRow], int | None, list[str]]:
    progress = functools.partial(report, on_progress, "reading manifests")
    previous = _latest_stats_file(md, snapshot.snapshot_id)
    warnings: list[str] = []
    if previous is not None:
        try:
            old = {(s.spec_id, s.partition): s for s in read_partition_stats(io, md, previous)}
            since = _manifests_since(io, md, snapshot, previous)
            diff = compute_stats(io, md, since, incremental=True,
                                 on_manifest=lambda d, t: progress(d, t))
            for key, value in diff.items():
                if key in old:
                    old[key].merge(value)
                else:
                    old[key] = value
            return list(old.values()), previous.snapshot_id, warnings
        except FloeError as e:  # Java: InvalidStatsFileException -> full compute
            warnings.append(f"previous statistics file unusable ({e}); computed in full")
    manifests = read_manifest_list(io, snapshot.manifest_list or "")
    full = compute_stats(io, md, manifests, on_manifest=lambda d, t: progress(d, t))
    return list(full.values()), None, warnings


def check_partition_stats(md: TableMetadata, *, table: Any, snapshot_id: int | None = None
                          ) -> Snapshot | None:
    """The checks :func:`compute_partition_stats` makes before reading any manifest (a caller
    may run them first, e.g. before queueing a task): a partitioned table, a snapshot that
    exists. Returns the snapshot (None: the table has none yet)."""
    if not any(not s.is_unpartitioned for s in md.partition_specs):
        raise ValidationError(f"table {table} is not partitioned: partition statistics need a "
                              "partitioned table")
    if snapshot_id is None:
        return md.current_snapshot()
    snap = md.snapshot_by_id(snapshot_id)
    if snap is None:
        raise NotFound(f"snapshot {snapshot_id} does not exist in table {table}")
    return snap


@dataclass(frozen=True)
class PartitionStatsPlan:
    """What :func:`compute_partition_stats` would do, from the metadata and manifest lists
    only: the snapshot, its statistics file if it has one already (then nothing is done),
    else the ancestor whose file it would start from and the manifests it would read, with
    the entries (data and delete files) listed in them (None: a manifest does not count
    them)."""

    snapshot_id: int | None
    existing_file: str | None = None
    incremental_from: int | None = None
    manifests: int = 0
    entries: int | None = 0

    def to_json(self) -> dict[str, Any]:
        return {"snapshot_id": self.snapshot_id, "existing_file": self.existing_file,
                "incremental_from": self.incremental_from, "manifests": self.manifests,
                "entries": self.entries}


def _entry_count(m: ManifestFile) -> int | None:
    counts = (m.added_files_count, m.existing_files_count, m.deleted_files_count)
    return None if None in counts else sum(c or 0 for c in counts)


def plan_partition_stats(table: Table, snapshot_id: int | None = None) -> PartitionStatsPlan:
    """The plan of :func:`compute_partition_stats` for the table as loaded (nothing is
    written; the statistics files are not read, so one that turns out unusable makes the run
    read every manifest of the snapshot instead)."""
    md = table.metadata
    snap = check_partition_stats(md, table=table.identifier, snapshot_id=snapshot_id)
    if snap is None:
        return PartitionStatsPlan(None)
    existing = partition_stats_file_for(md, snap.snapshot_id)
    if existing is not None:
        return PartitionStatsPlan(snap.snapshot_id, existing.statistics_path)
    previous = _latest_stats_file(md, snap.snapshot_id)
    manifests = (read_manifest_list(table.io, snap.manifest_list or "") if previous is None
                 else _manifests_since(table.io, md, snap, previous))
    counts = [_entry_count(m) for m in manifests]
    return PartitionStatsPlan(
        snap.snapshot_id, None, previous.snapshot_id if previous is not None else None,
        len(manifests), None if None in counts else sum(c or 0 for c in counts))


def compute_partition_stats(table: Table, snapshot_id: int | None = None, *,
                            on_progress: ProgressCallback | None = None
                            ) -> PartitionStatsResult:
    """Compute, write and register the partition statistics file of a snapshot (default:
    the current one); see the module docstring. Returns what was done."""
    from floe.table.updates import SetPartitionStatistics

    table.refresh()
    md = table.metadata
    snap = check_partition_stats(md, table=table.identifier, snapshot_id=snapshot_id)
    if snap is None:
        return PartitionStatsResult(None, None)
    existing = partition_stats_file_for(md, snap.snapshot_id)
    if existing is not None:
        return PartitionStatsResult(snap.snapshot_id, existing, reused=True)
    stats, since, warnings = _stats_for(table.io, md, snap, on_progress)
    if not stats:
        return PartitionStatsResult(snap.snapshot_id, None, warnings=tuple(warnings))
    report(on_progress, "writing", 0, 1)
    written = write_partition_stats(table.io, md, snap.snapshot_id, stats)
    try:
        table.new_transaction().add_updates([SetPartitionStatistics(written)]).commit()
    except CommitStateUnknown:
        raise  # the file may be registered: keep it
    except Exception:
        from floe.reachable import delete_file

        delete_file(table.io, written.statistics_path)
        raise
    report(on_progress, "writing", 1, 1)
    return PartitionStatsResult(snap.snapshot_id, written, len(stats), since, committed=True,
                                warnings=tuple(warnings))
