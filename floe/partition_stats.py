"""Partition layout of one table state: sizes, counts and delete files per partition.

Computed from the live entries of a snapshot's manifests (spec "Manifests": entries with
status ADDED or EXISTING), read through the scan planner's manifest cache so that a page
showing the partitions of a snapshot that was just planned decodes nothing again.

A partition is a ``(spec_id, partition tuple)`` pair: the same values under two specs are
two partitions, as the spec's delete-file scoping treats them.
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from floe.bulk import gc_paused
from floe.errors import ValidationError
from floe.manifest import (
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    read_manifest_list,
)
from floe.metadata import TableMetadata
from floe.scan.manifest_store import StoredEntries
from floe.scan.manifests import DEFAULT_CACHE, ManifestCache, read_live_entries
from floe.scan.planning import select_snapshot
from floe.snapshots import PartitionStatisticsFile
from floe.types import PrimitiveType

__all__ = [
    "SIZE_BUCKETS", "PartitionStats", "TablePartitionStats", "partition_stats",
    "from_statistics_file", "size_histogram",
]

#: Upper bounds (exclusive) of the file-size histogram buckets, powers of four from 4 KiB to
#: 1 GiB; the last bucket holds everything larger. Fixed so charts of two tables compare.
SIZE_BUCKETS: tuple[int, ...] = tuple(4 ** k * 1024 for k in range(1, 11))


@dataclass(slots=True)
class PartitionStats:
    spec_id: int
    partition: tuple[Any, ...]
    label: str
    record_count: int = 0
    file_count: int = 0
    total_size: int = 0
    delete_file_count: int = 0
    delete_record_count: int = 0
    file_sizes: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "spec_id": self.spec_id, "partition": self.label, "record_count": self.record_count,
            "file_count": self.file_count, "total_size": self.total_size,
            "delete_file_count": self.delete_file_count,
            "delete_record_count": self.delete_record_count,
        }


@dataclass(slots=True)
class TablePartitionStats:
    snapshot_id: int | None
    partitions: list[PartitionStats]

    @property
    def file_sizes(self) -> list[int]:
        return [s for p in self.partitions for s in p.file_sizes]

    def totals(self) -> dict[str, int]:
        return {
            "partitions": len(self.partitions),
            "record_count": sum(p.record_count for p in self.partitions),
            "file_count": sum(p.file_count for p in self.partitions),
            "total_size": sum(p.total_size for p in self.partitions),
            "delete_file_count": sum(p.delete_file_count for p in self.partitions),
        }

    def skew(self) -> dict[str, Any]:
        """Largest partition against the median partition, by total data-file size."""
        if not self.partitions:
            return {"largest": None, "largest_size": 0, "median_size": 0, "ratio": None}
        largest = max(self.partitions, key=lambda p: (p.total_size, p.label))
        median = statistics.median(p.total_size for p in self.partitions)
        ratio = (largest.total_size / median) if median else None
        return {"largest": largest.label, "largest_size": largest.total_size,
                "median_size": median, "ratio": ratio}

    def find(self, label: str) -> PartitionStats | None:
        return next((p for p in self.partitions if p.label == label), None)


def size_histogram(sizes: list[int]) -> list[dict[str, Any]]:
    """File counts per :data:`SIZE_BUCKETS` bucket: ``[{lower, upper, count}]`` (upper None
    for the open-ended last bucket)."""
    counts = [0] * (len(SIZE_BUCKETS) + 1)
    for size in sizes:
        counts[bisect.bisect_right(SIZE_BUCKETS, size)] += 1
    lowers = (0, *SIZE_BUCKETS)
    uppers: tuple[int | None, ...] = (*SIZE_BUCKETS, None)
    return [{"lower": lo, "upper": hi, "count": n}
            for lo, hi, n in zip(lowers, uppers, counts, strict=True)]


def partition_stats(
    io: Any, md: TableMetadata, snapshot_id: int | None = None, *, ref: str | None = None,
    cache: ManifestCache | None = DEFAULT_CACHE, processes: bool | None = False,
) -> TablePartitionStats:
    """Per-partition counts of a snapshot (the current one by default)."""
    selection = select_snapshot(md, snapshot_id=snapshot_id, ref=ref)
    snap = selection.snapshot
    if snap is None:
        return TablePartitionStats(None, [])
    if not snap.manifest_list:
        raise ValidationError(
            f"snapshot {snap.snapshot_id} lists its manifests inline, which floe does not read")
    manifests = read_manifest_list(io, snap.manifest_list)
    with gc_paused():  # bulk decoding: see floe.bulk.gc_paused
        partitions = _collect(md, manifests, read_live_entries(io, manifests, cache, processes))
    return TablePartitionStats(snap.snapshot_id, partitions)


def from_statistics_file(io: Any, md: TableMetadata,
                         stats_file: PartitionStatisticsFile) -> TablePartitionStats:
    """The per-partition numbers of a partition statistics file (floe's or Java's; no
    manifest read, so no file sizes): each row's partition, stored in the table's unified
    partition type, put back into its own spec and labelled as :func:`partition_stats` does."""
    from floe.maintenance.partition_stats import read_partition_stats, unified_partition_type

    unified_ids = [f.field_id for f in unified_partition_type(md).fields]
    labels = _Labeler(md)
    out = []
    for row in read_partition_stats(io, md, stats_file):
        spec = md.spec_by_id(row.spec_id)
        if spec is None:
            raise ValidationError(f"{stats_file.statistics_path}: spec {row.spec_id} is not a "
                                  f"spec of the table")
        values = tuple(row.partition[unified_ids.index(pf.field_id)]
                       if pf.field_id in unified_ids else None for pf in spec.fields)
        out.append(PartitionStats(
            row.spec_id, values, labels.label(row.spec_id, values),
            record_count=row.data_record_count, file_count=row.data_file_count,
            total_size=row.total_data_file_size_in_bytes,
            delete_file_count=row.position_delete_file_count + row.equality_delete_file_count
            + row.dv_count,
            delete_record_count=row.position_delete_record_count
            + row.equality_delete_record_count))
    return TablePartitionStats(stats_file.snapshot_id,
                               sorted(out, key=lambda p: (p.spec_id, p.label)))


def _collect(
    md: TableMetadata, manifests: list[ManifestFile], live: Iterable[list[ManifestEntry]]
) -> list[PartitionStats]:
    labels = _Labeler(md)
    by_key: dict[tuple[int, tuple[Any, ...]], PartitionStats] = {}
    for manifest, entries in zip(manifests, live, strict=True):
        is_delete_manifest = manifest.content == ManifestContent.DELETES
        groups = entries.partition_groups() if isinstance(entries, StoredEntries) else None
        if groups is not None:  # from the manifest cache's columns, no entry built
            for spec_id, partition, content, files, records, size, sizes in groups:
                if spec_id is None:
                    spec_id = manifest.partition_spec_id
                key = (spec_id, partition)
                stats = by_key.get(key)
                if stats is None:
                    stats = by_key[key] = PartitionStats(spec_id, partition, labels.label(*key))
                if is_delete_manifest or content != FileContent.DATA:
                    stats.delete_file_count += files
                    stats.delete_record_count += records
                else:
                    stats.file_count += files
                    stats.record_count += records
                    stats.total_size += size
                    stats.file_sizes += sizes
            continue
        for entry in entries:
            df = entry.data_file
            spec_id = df.spec_id if df.spec_id is not None else manifest.partition_spec_id
            key = (spec_id, tuple(df.partition))
            stats = by_key.get(key)
            if stats is None:
                stats = by_key[key] = PartitionStats(spec_id, key[1], labels.label(*key))
            if is_delete_manifest or df.content != FileContent.DATA:
                stats.delete_file_count += 1
                stats.delete_record_count += df.record_count
            else:
                stats.file_count += 1
                stats.record_count += df.record_count
                stats.total_size += df.file_size_in_bytes
                stats.file_sizes.append(df.file_size_in_bytes)
    return sorted(by_key.values(), key=lambda p: (p.spec_id, p.label))


class _Labeler:
    """``name=value, name=value`` with each transform's human string, one spec at a time."""

    def __init__(self, md: TableMetadata) -> None:
        self._md = md
        self._fields: dict[int, list[tuple[str, Any, PrimitiveType]]] = {}

    def label(self, spec_id: int, values: tuple[Any, ...]) -> str:
        fields = self._fields.get(spec_id)
        if fields is None:
            fields = self._fields[spec_id] = self._spec_fields(spec_id)
        if not fields:
            return "(unpartitioned)"
        parts = []
        for (name, transform, ptype), value in zip(fields, values, strict=False):
            parts.append(f"{name}={transform.to_human_string(ptype, value)}")
        return ", ".join(parts)

    def _spec_fields(self, spec_id: int) -> list[tuple[str, Any, PrimitiveType]]:
        from floe.inspect import partition_type_for

        spec = self._md.spec_by_id(spec_id)
        if spec is None:
            raise ValidationError(f"spec {spec_id} does not exist in table {self._md.location}")
        ptype = partition_type_for(self._md, spec)
        out = []
        for pf, nf in zip(spec.fields, ptype.fields, strict=True):
            assert isinstance(nf.field_type, PrimitiveType)
            out.append((pf.name, pf.transform, nf.field_type))
        return out
