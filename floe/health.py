"""Table health: signs that a table needs maintenance, each with the threshold it is judged by.

Cheap by construction: everything comes from the table metadata (snapshot summaries) and at
most the current snapshot's manifest list. Per-file sizes (for the small-file ratio) are
passed in by the caller, who reads the current data manifests only when their entry count
(known from the manifest list) is bounded; otherwise the ratio is reported as unknown and
the average file size from the summary is shown instead. Partition skew is judged only when
the caller passes the record count of each partition from the current snapshot's partition
statistics file (spec "Partition Statistics"); this module computes no statistics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from floe.manifest import ManifestContent, ManifestFile
from floe.errors import ValidationError
from floe.metadata import TableMetadata
from floe.properties import (
    MANIFEST_MIN_COUNT_TO_MERGE as MIN_COUNT_TO_MERGE,
)
from floe.properties import (
    MANIFEST_MIN_COUNT_TO_MERGE_DEFAULT as MIN_COUNT_TO_MERGE_DEFAULT,
)
from floe.properties import (
    MAX_SNAPSHOT_AGE_MS as MAX_SNAPSHOT_AGE,
)
from floe.properties import (
    MAX_SNAPSHOT_AGE_MS_DEFAULT as MAX_SNAPSHOT_AGE_DEFAULT,
)
from floe.properties import (
    MIN_SNAPSHOTS_TO_KEEP,
    MIN_SNAPSHOTS_TO_KEEP_DEFAULT,
    TARGET_FILE_SIZE,
    TARGET_FILE_SIZE_DEFAULT,
    int_property,
)

__all__ = ["attention", "partition_skew", "table_health", "table_metrics"]

#: A data file is "small" below this fraction of the target file size.
SMALL_FILE_FRACTION = 0.25
#: Above these ratios a table is flagged.
SMALL_FILE_RATIO_WARN = 0.5
DELETE_FILE_RATIO_WARN = 0.1
DELETED_ROW_RATIO_WARN = 0.1
#: Partition skew: the largest partition's rows in data files over the mean rows per
#: partition (1.0 when even; at most the number of partitions). Flagged above this.
PARTITION_SKEW_WARN = 10.0
#: The signs whose value is a share (0..1): :func:`attention` ranks by the largest of them.
_SHARES = ("small_file_ratio", "delete_file_ratio", "deleted_row_ratio")

OK, WARN, UNKNOWN = "ok", "warn", "unknown"


def _int_property(md: TableMetadata, key: str, default: int) -> int:
    """Health reports on any table: a malformed property counts as its default here."""
    try:
        return int_property(md, key, default)
    except ValidationError:
        return default


def _summary_int(summary: dict[str, str], key: str) -> int | None:
    try:
        return int(summary[key]) if key in summary else None
    except ValueError:
        return None


def _ratio(part: int | None, whole: int | None) -> float | None:
    return None if part is None or not whole else part / whole


def _metric(key: str, label: str, value: Any, threshold: str, warn: bool | None, detail: str
            ) -> dict[str, Any]:
    status = UNKNOWN if warn is None else (WARN if warn else OK)
    return {"key": key, "label": label, "value": value, "threshold": threshold,
            "status": status, "detail": detail}


def _expirable(md: TableMetadata, now_ms: int) -> int:
    """Snapshots older than the table's max age, not referenced, beyond the ones to keep."""
    max_age = _int_property(md, MAX_SNAPSHOT_AGE, MAX_SNAPSHOT_AGE_DEFAULT)
    keep = _int_property(md, MIN_SNAPSHOTS_TO_KEEP, MIN_SNAPSHOTS_TO_KEEP_DEFAULT)
    referenced = {ref.snapshot_id for ref in md.refs.values()}
    if md.current_snapshot_id is not None:
        referenced.add(md.current_snapshot_id)
    expirable = [s for s in md.snapshots
                 if s.timestamp_ms < now_ms - max_age and s.snapshot_id not in referenced]
    return len(expirable[: max(0, len(md.snapshots) - keep)])


def partition_skew(partition_records: Sequence[int]) -> float | None:
    """The largest partition's records over the mean records per partition (None when there
    is no partition or no record)."""
    total = sum(partition_records)
    if not partition_records or total <= 0:
        return None
    return max(partition_records) / (total / len(partition_records))


def table_metrics(
    md: TableMetadata, *, now_ms: int, manifests: Sequence[ManifestFile] | None = None,
    data_file_sizes: Sequence[int] | None = None, metadata_bytes: int | None = None,
    partition_records: Sequence[int] | None = None,
) -> dict[str, Any]:
    """The numbers of the current table state, flat (what a history of a table's health
    keeps; None where unknown): files, records, deletes and sizes from the current snapshot's
    summary; small-file ratio from ``data_file_sizes`` (the live data files' sizes, when
    read); manifests from ``manifests`` (the current manifest list, when read); snapshots,
    those past expiry and the last commit from the metadata; ``metadata_bytes`` as given;
    partitions and their skew (:func:`partition_skew`) from ``partition_records`` (each
    partition's records in data files, from the current snapshot's partition statistics
    file, when it has one and it was read)."""
    snapshot = md.current_snapshot()
    summary = dict(snapshot.summary) if snapshot is not None else {}

    def total(key: str) -> int | None:
        return _summary_int(summary, key) if snapshot is not None else 0

    target = _int_property(md, TARGET_FILE_SIZE, TARGET_FILE_SIZE_DEFAULT)
    small_below = int(target * SMALL_FILE_FRACTION)
    data_files, delete_files = total("total-data-files"), total("total-delete-files")
    records, size = total("total-records"), total("total-files-size")
    pos, eq = total("total-position-deletes"), total("total-equality-deletes")
    deleted = None if pos is None and eq is None else (pos or 0) + (eq or 0)
    small = None if data_file_sizes is None else sum(1 for s in data_file_sizes
                                                      if s < small_below)
    return {
        "data_files": data_files, "delete_files": delete_files, "records": records,
        "total_bytes": size,
        "avg_data_file_bytes": size // data_files if size is not None and data_files else None,
        "target_file_bytes": target, "small_file_bytes": small_below,
        "small_files": small,
        "small_file_ratio": None if data_file_sizes is None
        else _ratio(small, len(data_file_sizes)),
        "delete_file_ratio": _ratio(delete_files, None if data_files is None
                                    or delete_files is None else data_files + delete_files),
        "position_deletes": pos, "equality_deletes": eq,
        "deleted_row_ratio": _ratio(deleted, records),
        "manifests": len(manifests) if manifests is not None else None,
        "data_manifests": None if manifests is None
        else sum(1 for m in manifests if m.content == ManifestContent.DATA),
        "snapshots": len(md.snapshots), "snapshots_past_expiry": _expirable(md, now_ms),
        "metadata_bytes": metadata_bytes,
        "snapshot_id": md.current_snapshot_id,
        "last_commit_ms": md.last_updated_ms,
        "partitions": None if partition_records is None else len(partition_records),
        "partition_skew": None if partition_records is None
        else partition_skew(partition_records),
    }


def table_health(
    md: TableMetadata, *, now_ms: int, manifests: Sequence[ManifestFile] | None = None,
    data_file_sizes: Sequence[int] | None = None,
    partition_records: Sequence[int] | None = None,
) -> list[dict[str, Any]]:
    """Health metrics of the current table state, each judged by its threshold.

    ``manifests``: the current snapshot's manifest list (None when not read);
    ``data_file_sizes``: sizes of the current live data files (None when not read);
    ``partition_records``: each partition's records in data files, from the current
    snapshot's partition statistics (None when it has none or they were not read: then
    there is no partition-skew sign).
    """
    n = table_metrics(md, now_ms=now_ms, manifests=manifests, data_file_sizes=data_file_sizes,
                      partition_records=partition_records)
    target, small_below = n["target_file_bytes"], n["small_file_bytes"]
    data_files, delete_files = n["data_files"], n["delete_files"]
    metrics = []

    if data_file_sizes is not None:
        ratio = n["small_file_ratio"]
        detail = (f"{n['small_files']} of {len(data_file_sizes)} data files are smaller than "
                  f"{small_below} bytes")
        metrics.append(_metric(
            "small_file_ratio", "Small data files", ratio,
            f"small = under {SMALL_FILE_FRACTION:g} × {TARGET_FILE_SIZE} ({target} bytes) = "
            f"{small_below} bytes; flagged above {SMALL_FILE_RATIO_WARN:.0%}",
            None if ratio is None else ratio > SMALL_FILE_RATIO_WARN, detail))
    else:
        average = n["avg_data_file_bytes"]
        metrics.append(_metric(
            "small_file_ratio", "Small data files", None,
            f"small = under {SMALL_FILE_FRACTION:g} × {TARGET_FILE_SIZE} ({target} bytes) = "
            f"{small_below} bytes",
            None if average is None else average < small_below,
            "too many files to read their sizes; judged by the average file size "
            f"({average if average is not None else 'unknown'} bytes) from the snapshot summary"))

    ratio = n["delete_file_ratio"]
    metrics.append(_metric(
        "delete_file_ratio", "Delete files", ratio,
        f"delete files / all files; flagged above {DELETE_FILE_RATIO_WARN:.0%}",
        None if ratio is None else ratio > DELETE_FILE_RATIO_WARN,
        f"{delete_files} delete files, {data_files} data files (snapshot summary)"))

    pos, eq = n["position_deletes"], n["equality_deletes"]
    deleted = None if pos is None and eq is None else (pos or 0) + (eq or 0)
    ratio = n["deleted_row_ratio"]
    metrics.append(_metric(
        "deleted_row_ratio", "Deleted rows", ratio,
        f"(position + equality deletes) / records; flagged above {DELETED_ROW_RATIO_WARN:.0%}",
        None if ratio is None else ratio > DELETED_ROW_RATIO_WARN,
        f"{deleted} deletes over {n['records']} records (snapshot summary)"))

    merge_at = _int_property(md, MIN_COUNT_TO_MERGE, MIN_COUNT_TO_MERGE_DEFAULT)
    count, data_manifests = n["manifests"], n["data_manifests"] or 0
    metrics.append(_metric(
        "manifests_per_snapshot", "Manifests in the current snapshot", count,
        f"flagged at {MIN_COUNT_TO_MERGE} ({merge_at}) or more",
        None if count is None else count >= merge_at,
        "no current snapshot" if md.current_snapshot() is None else
        f"{data_manifests} data and {(count or 0) - data_manifests} delete manifests"))

    max_age = _int_property(md, MAX_SNAPSHOT_AGE, MAX_SNAPSHOT_AGE_DEFAULT)
    keep = _int_property(md, MIN_SNAPSHOTS_TO_KEEP, MIN_SNAPSHOTS_TO_KEEP_DEFAULT)
    expirable = n["snapshots_past_expiry"]
    metrics.append(_metric(
        "snapshots_not_expired", "Snapshots past expiry", expirable,
        f"older than {MAX_SNAPSHOT_AGE} ({max_age} ms) and not referenced by a ref; "
        f"keeping at least {MIN_SNAPSHOTS_TO_KEEP} ({keep})",
        expirable > 0,
        f"{n['snapshots']} snapshots in the metadata"))

    if partition_records is not None:
        skew, count = n["partition_skew"], n["partitions"]
        metrics.append(_metric(
            "partition_skew", "Partition skew", skew,
            "rows in the largest partition / mean rows per partition; flagged above "
            f"{PARTITION_SKEW_WARN:g}×",
            None if skew is None else skew > PARTITION_SKEW_WARN,
            f"{count} partitions, the largest with {max(partition_records, default=0)} rows "
            "(partition statistics of the current snapshot)"))
    return metrics


def attention(health: Sequence[dict[str, Any]]) -> float:
    """How much a table needs attention, to rank tables worst first: one per sign that warns,
    plus (under one) the largest of its shares, so that among tables with as many warnings
    the one with more small files, delete files or deleted rows comes first."""
    warnings = sum(1 for m in health if m["status"] == WARN)
    ratios = [m["value"] for m in health
              if m["key"] in _SHARES and isinstance(m["value"], float)]
    return warnings + 0.99 * min(1.0, max(ratios, default=0.0))
