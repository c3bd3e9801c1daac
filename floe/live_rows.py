"""How many rows a read of a table state returns (its live rows), and how that is known.

A snapshot summary (spec "Snapshot Summary") totals the rows stored in the data files
(``total-records``) and the delete records (``total-position-deletes``,
``total-equality-deletes``). Those fix the live rows only when there are no delete files:
a position delete removes at most one row (none when that row is already deleted or its data
file is no longer live), an equality delete removes every row that matches it, any number.
Subtracting the delete records is therefore no count at all; this module answers one of:

- ``summary``: no delete files, so ``total-records`` is the count (exact, nothing read);
- ``counted``: the work is bounded (at most ``max_files`` files, at most ``max_rows`` rows in
  the data files that have deletes), so the rows were counted: a data file without deletes
  by its manifest record count, one with deletes by reading it (one column) with its
  deletes applied, as a scan does;
- ``bounds``: otherwise, what the summary proves: at most ``total-records`` rows, at least
  ``total-records`` less the position deletes when there are no equality deletes (at least
  0 when there are);
- ``unknown``: the summary lacks the totals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from floe.scan.readers import ReadOptions, read_task
from floe.metadata import TableMetadata
from floe.scan import DEFAULT_CACHE, ManifestCache, plan_files
from floe.snapshots import Snapshot
from floe.types import PrimitiveType

__all__ = ["LiveRows", "live_rows", "MAX_FILES", "MAX_ROWS"]

#: Counting plans the snapshot (every manifest) only when it has at most this many files...
MAX_FILES = 1_000
#: ...and reads the data files that have deletes only when they hold at most this many rows.
MAX_ROWS = 200_000

SUMMARY, COUNTED, BOUNDS, UNKNOWN = "summary", "counted", "bounds", "unknown"


@dataclass(frozen=True, slots=True)
class LiveRows:
    """``count`` is exact when known (``how`` summary or counted); ``low``…``high`` bound it
    otherwise (equal to ``count`` when it is known). ``files_read``/``rows_read``: the data
    files read with their deletes applied to count (0 unless counted)."""

    how: str
    count: int | None
    low: int | None
    high: int | None
    records: int | None
    delete_files: int | None
    position_deletes: int | None
    equality_deletes: int | None
    files_read: int = 0
    rows_read: int = 0

    @property
    def exact(self) -> bool:
        return self.count is not None

    def to_json(self) -> dict[str, Any]:
        return {"how": self.how, "count": self.count, "low": self.low, "high": self.high,
                "files_read": self.files_read, "rows_read": self.rows_read}


def _summary_int(snapshot: Snapshot, key: str) -> int | None:
    try:
        value = snapshot.summary.get(key)
        return int(value) if value is not None else None
    except ValueError:
        return None


def live_rows(io: Any, md: TableMetadata, snapshot: Snapshot | None = None, *,
              max_files: int = MAX_FILES, max_rows: int = MAX_ROWS,
              cache: ManifestCache | None = DEFAULT_CACHE) -> LiveRows:
    """The live rows of ``snapshot`` (default: the current one); see the module docstring.
    With ``max_files=0`` nothing is read (``io`` is not used): the summary or its bounds."""
    snap = snapshot if snapshot is not None else md.current_snapshot()
    if snap is None:
        return LiveRows(SUMMARY, 0, 0, 0, 0, 0, 0, 0)
    records = _summary_int(snap, "total-records")
    data_files = _summary_int(snap, "total-data-files")
    delete_files = _summary_int(snap, "total-delete-files")
    pos = _summary_int(snap, "total-position-deletes")
    eq = _summary_int(snap, "total-equality-deletes")
    known: dict[str, Any] = dict(records=records, delete_files=delete_files,
                                 position_deletes=pos, equality_deletes=eq)
    if records is None:
        return LiveRows(UNKNOWN, None, None, None, **known)
    if delete_files == 0 or (delete_files is None and pos == 0 and eq == 0):
        return LiveRows(SUMMARY, records, records, records, **known)
    if max_files > 0 and data_files is not None and delete_files is not None \
            and data_files + delete_files <= max_files:
        counted = _count(io, md, snap, max_rows, cache)
        if counted is not None:
            count, files_read, rows_read = counted
            return LiveRows(COUNTED, count, count, count, **known, files_read=files_read,
                            rows_read=rows_read)
    low = max(0, records - pos) if pos is not None and eq == 0 else 0
    return LiveRows(BOUNDS, None, low, records, **known)


def _count(io: Any, md: TableMetadata, snap: Snapshot, max_rows: int,
           cache: ManifestCache | None) -> tuple[int, int, int] | None:
    """(live rows, files read, rows in them), or None when the files with deletes hold more
    than ``max_rows`` rows."""
    plan = plan_files(io, md, snapshot_id=snap.snapshot_id, cache=cache, processes=False)
    with_deletes = [t for t in plan.tasks if t.delete_files]
    rows_read = sum(t.data_file.record_count for t in with_deletes)
    if rows_read > max_rows:
        return None
    count = sum(t.data_file.record_count for t in plan.tasks if not t.delete_files)
    fields = plan.schema.fields
    # One column is enough to count rows; the reader adds the equality columns it needs.
    column = next((f for f in fields if isinstance(f.field_type, PrimitiveType)), fields[0])
    options = ReadOptions(md, plan.schema, [column.name])
    for task in with_deletes:
        count += sum(batch.num_rows for batch in read_task(io, task, options))
    return count, len(with_deletes), rows_read
