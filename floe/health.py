"""Table health: signs that a table needs maintenance, each with the threshold it is judged by.

Cheap by construction: everything comes from the table metadata (snapshot summaries) and at
most the current snapshot's manifest list. Per-file sizes (for the small-file ratio) are
passed in by the caller, who reads the current data manifests only when their entry count
(known from the manifest list) is bounded; otherwise the ratio is reported as unknown and
the average file size from the summary is shown instead.
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

__all__ = ["table_health"]

#: A data file is "small" below this fraction of the target file size.
SMALL_FILE_FRACTION = 0.25
#: Above these ratios a table is flagged.
SMALL_FILE_RATIO_WARN = 0.5
DELETE_FILE_RATIO_WARN = 0.1
DELETED_ROW_RATIO_WARN = 0.1

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


def table_health(
    md: TableMetadata, *, now_ms: int, manifests: Sequence[ManifestFile] | None = None,
    data_file_sizes: Sequence[int] | None = None,
) -> list[dict[str, Any]]:
    """Health metrics of the current table state.

    ``manifests``: the current snapshot's manifest list (None when not read);
    ``data_file_sizes``: sizes of the current live data files (None when not read).
    """
    snapshot = md.current_snapshot()
    summary = dict(snapshot.summary) if snapshot is not None else {}
    target = _int_property(md, TARGET_FILE_SIZE, TARGET_FILE_SIZE_DEFAULT)
    small_below = int(target * SMALL_FILE_FRACTION)
    data_files = _summary_int(summary, "total-data-files") if snapshot is not None else 0
    delete_files = _summary_int(summary, "total-delete-files") if snapshot is not None else 0
    records = _summary_int(summary, "total-records") if snapshot is not None else 0
    size = _summary_int(summary, "total-files-size") if snapshot is not None else 0
    metrics = []

    if data_file_sizes is not None:
        small = sum(1 for s in data_file_sizes if s < small_below)
        ratio = _ratio(small, len(data_file_sizes))
        detail = (f"{small} of {len(data_file_sizes)} data files are smaller than "
                  f"{small_below} bytes")
        metrics.append(_metric(
            "small_file_ratio", "Small data files", ratio,
            f"small = under {SMALL_FILE_FRACTION:g} × {TARGET_FILE_SIZE} ({target} bytes) = "
            f"{small_below} bytes; flagged above {SMALL_FILE_RATIO_WARN:.0%}",
            None if ratio is None else ratio > SMALL_FILE_RATIO_WARN, detail))
    else:
        average = size // data_files if size is not None and data_files else None
        metrics.append(_metric(
            "small_file_ratio", "Small data files", None,
            f"small = under {SMALL_FILE_FRACTION:g} × {TARGET_FILE_SIZE} ({target} bytes) = "
            f"{small_below} bytes",
            None if average is None else average < small_below,
            "too many files to read their sizes; judged by the average file size "
            f"({average if average is not None else 'unknown'} bytes) from the snapshot summary"))

    ratio = _ratio(delete_files, None if data_files is None or delete_files is None
                   else data_files + delete_files)
    metrics.append(_metric(
        "delete_file_ratio", "Delete files", ratio,
        f"delete files / all files; flagged above {DELETE_FILE_RATIO_WARN:.0%}",
        None if ratio is None else ratio > DELETE_FILE_RATIO_WARN,
        f"{delete_files} delete files, {data_files} data files (snapshot summary)"))

    pos = _summary_int(summary, "total-position-deletes") if snapshot is not None else 0
    eq = _summary_int(summary, "total-equality-deletes") if snapshot is not None else 0
    deleted = None if pos is None and eq is None else (pos or 0) + (eq or 0)
    ratio = _ratio(deleted, records)
    metrics.append(_metric(
        "deleted_row_ratio", "Deleted rows", ratio,
        f"(position + equality deletes) / records; flagged above {DELETED_ROW_RATIO_WARN:.0%}",
        None if ratio is None else ratio > DELETED_ROW_RATIO_WARN,
        f"{deleted} deletes over {records} records (snapshot summary)"))

    merge_at = _int_property(md, MIN_COUNT_TO_MERGE, MIN_COUNT_TO_MERGE_DEFAULT)
    count = len(manifests) if manifests is not None else None
    data_manifests = sum(1 for m in manifests or [] if m.content == ManifestContent.DATA)
    metrics.append(_metric(
        "manifests_per_snapshot", "Manifests in the current snapshot", count,
        f"flagged at {MIN_COUNT_TO_MERGE} ({merge_at}) or more",
        None if count is None else count >= merge_at,
        "no current snapshot" if snapshot is None else
        f"{data_manifests} data and {(count or 0) - data_manifests} delete manifests"))

    max_age = _int_property(md, MAX_SNAPSHOT_AGE, MAX_SNAPSHOT_AGE_DEFAULT)
    keep = _int_property(md, MIN_SNAPSHOTS_TO_KEEP, MIN_SNAPSHOTS_TO_KEEP_DEFAULT)
    referenced = {ref.snapshot_id for ref in md.refs.values()}
    if md.current_snapshot_id is not None:
        referenced.add(md.current_snapshot_id)
    expirable = [s for s in md.snapshots
                 if s.timestamp_ms < now_ms - max_age and s.snapshot_id not in referenced]
    expirable = expirable[: max(0, len(md.snapshots) - keep)]
    metrics.append(_metric(
        "snapshots_not_expired", "Snapshots past expiry", len(expirable),
        f"older than {MAX_SNAPSHOT_AGE} ({max_age} ms) and not referenced by a ref; "
        f"keeping at least {MIN_SNAPSHOTS_TO_KEEP} ({keep})",
        len(expirable) > 0,
        f"{len(md.snapshots)} snapshots in the metadata"))
    return metrics
