"""Reads for the partitions, scan-plan and preview pages (and the plan API).

Every function takes the :class:`floe.table.Table` that :func:`explorer.tables.selectors.table_load`
opened and reads through its ``io`` (files outside the catalog's warehouse are refused).
Plans are cached by (metadata file, selection, filter) so paging through a large plan plans
once; decoded manifests are shared through the planner's cache in :mod:`explorer.cache`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io as _pyio
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from django.conf import settings

from explorer.cache import CACHE
from explorer.values import CsvWriter
from floe.errors import InvalidArgument
from floe.expressions import bind, parse_filter
from floe.io.parquet import schema_to_arrow
from floe.maintenance.partition_stats import partition_stats_file_for
from floe.partition_stats import TablePartitionStats, from_statistics_file, partition_stats
from floe.scan import ScanPlan, plan_files, select_snapshot
from floe.scan.decide import DecidedFiles
from floe.scan.explain import DecidedDeletes, KeptFiles
from floe.scan.readers import read_plan
from floe.table import Table

#: Rows a preview shows at most, and rows an export writes at most (stated on the page).
PREVIEW_MAX_ROWS = 1000
PREVIEW_DEFAULT_ROWS = 100
EXPORT_MAX_ROWS = 100_000
EXPORT_FORMATS = ("csv", "parquet")


@dataclass(frozen=True, slots=True)
class Selection:
    """Which table state a request reads: at most one of the three."""

    snapshot_id: int | None = None
    as_of_ms: int | None = None
    ref: str | None = None

    def key(self) -> tuple[Any, ...]:
        return (self.snapshot_id, self.as_of_ms, self.ref)


# --- parsing the request ----------------------------------------------------------------------


def selection_parse(*, snapshot: str | None = None, as_of: str | None = None,
                    ref: str | None = None) -> Selection:
    """``snapshot`` an id, ``as_of`` epoch milliseconds or an ISO-8601 time (UTC when no
    offset), ``ref`` a branch or tag name; empty strings count as absent."""
    snapshot, as_of, ref = (v.strip() if v else None for v in (snapshot, as_of, ref))
    if sum(v is not None for v in (snapshot, as_of, ref)) > 1:
        raise InvalidArgument("snapshot", "choose at most one of snapshot, as_of and ref")
    snapshot_id = None
    if snapshot:
        try:
            snapshot_id = int(snapshot)
        except ValueError:
            raise InvalidArgument("snapshot",
                                  f"snapshot {snapshot!r} is not a snapshot id") from None
    as_of_ms = None
    if as_of:
        as_of_ms = _parse_time_ms(as_of)
    return Selection(snapshot_id, as_of_ms, ref or None)


def _parse_time_ms(text: str) -> int:
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument(
            "as_of", f"as_of {text!r} is neither epoch milliseconds nor an ISO-8601 time"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def limit_parse(text: str | None) -> int:
    """A preview's row count: empty is the default, else 1 to :data:`PREVIEW_MAX_ROWS`."""
    if not (text or "").strip():
        return PREVIEW_DEFAULT_ROWS
    try:
        n = int(text or "")
    except ValueError:
        raise InvalidArgument("limit", f"limit {text!r} is not a number") from None
    if not 1 <= n <= PREVIEW_MAX_ROWS:
        raise InvalidArgument("limit", f"limit must be between 1 and {PREVIEW_MAX_ROWS}")
    return n


def _when(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def selection_check(*, table: Table, selection: Selection) -> None:
    """InvalidArgument, in the table's name and dates, when the selection names no state of
    the table (floe's own messages name the table's directory and epoch milliseconds)."""
    md = table.metadata
    name = ".".join([*table.identifier.namespace, table.identifier.name])
    if selection.ref is not None and selection.ref not in md.refs and selection.ref != "main":
        known = ", ".join(sorted(md.refs)) or "none"
        raise InvalidArgument(
            "ref", f"{name} has no branch or tag named {selection.ref!r} (its refs: {known})")
    if selection.snapshot_id is not None and all(
            s.snapshot_id != selection.snapshot_id for s in md.snapshots):
        raise InvalidArgument("snapshot",
                              f"{selection.snapshot_id} is not a snapshot of {name}")
    if selection.as_of_ms is not None and md.snapshot_as_of(selection.as_of_ms) is None:
        times = sorted(entry.timestamp_ms for entry in md.snapshot_log)
        if not times:
            raise InvalidArgument("as_of", f"{name} has no snapshot log to read as of a time")
        if selection.as_of_ms < times[0]:
            raise InvalidArgument(
                "as_of", f"{_when(selection.as_of_ms)} is before the first snapshot of {name}"
                f" ({_when(times[0])}); choose a time from {_when(times[0])} on")


def filter_check(*, table: Table, selection: Selection, text: str) -> str | None:
    """The filter text if it parses and binds to the schema the selection reads with;
    FilterInvalid (with the position of a parse error) or FilterTooDeep otherwise."""
    text = text.strip()
    if not text:
        return None
    expr = parse_filter(text)
    schema = select_snapshot(table.metadata, selection.snapshot_id, selection.as_of_ms,
                             selection.ref).schema
    bind(schema, expr)
    return text


def columns_parse(*, table: Table, selection: Selection, text: str) -> list[str] | None:
    names = [c.strip() for c in text.split(",") if c.strip()]
    if not names:
        return None
    schema = select_snapshot(table.metadata, selection.snapshot_id, selection.as_of_ms,
                             selection.ref).schema
    known = {f.name for f in schema.fields}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InvalidArgument(
            "columns", f"unknown column {unknown[0]!r}; columns are {', '.join(sorted(known))}")
    return names


# --- plans ------------------------------------------------------------------------------------


#: A table state with this many data files or more (its snapshot summary's
#: ``total-data-files``; unknown counts as large) is planned under :func:`_large_plan`.
LARGE_PLAN_FILES = 100_000
_large_plans: threading.BoundedSemaphore | None = None
_large_plans_lock = threading.Lock()


@contextlib.contextmanager
def _large_plan(table: Table, selection: Selection) -> Iterator[None]:
    """At most ``FLOE_LARGE_PLANS_AT_ONCE`` explained plans of large states at once in this
    process: one holds a decision (~2 KB) per file while it is made, ~2 GB for a 1M-file
    table, so concurrent requests for different filters would otherwise add up. A request
    for a plan another thread is making waits for that one (the cache shares it)."""
    global _large_plans
    snap = select_snapshot(table.metadata, selection.snapshot_id, selection.as_of_ms,
                           selection.ref).snapshot
    files = snap.summary.get("total-data-files") if snap is not None else "0"
    if files is not None and files.isdigit() and int(files) < LARGE_PLAN_FILES:
        yield
        return
    with _large_plans_lock:
        if _large_plans is None:
            _large_plans = threading.BoundedSemaphore(settings.FLOE_LARGE_PLANS_AT_ONCE)
    with _large_plans:
        yield


def table_plan(*, table: Table, selection: Selection, row_filter: str | None) -> ScanPlan:
    """The explained plan of a table state (cached: paging through it plans once)."""
    def load() -> ScanPlan:
        with _large_plan(table, selection):
            return plan_files(table.io, table.metadata, snapshot_id=selection.snapshot_id,
                              as_of_ms=selection.as_of_ms, ref=selection.ref,
                              row_filter=row_filter, explain=True, cache=CACHE.live,
                              processes=False)

    plan: ScanPlan = CACHE.scans.get_or_load(
        (table.metadata_location, "plan", selection.key(), row_filter), load)
    return plan


def plan_summary(plan: ScanPlan) -> dict[str, Any]:
    """Selection, filter and funnel: the header of the plan page and of the API's JSON."""
    return {
        "snapshot_id": plan.snapshot_id,
        "schema_id": plan.schema.schema_id,
        "filter": None if plan.row_filter is None else str(plan.row_filter),
        "bound_filter": None if plan.bound_filter is None else str(plan.bound_filter),
        "snapshot_selection": plan.explain.snapshot_selection if plan.explain else None,
        "funnel": plan.funnel.to_json(),
    }


def plan_funnel_stages(plan: ScanPlan) -> list[dict[str, Any]]:
    f = plan.funnel
    return [
        {"stage": "manifests", "count": f.manifests_total},
        {"stage": "manifests with live files", "count": f.manifests_after_content},
        {"stage": "manifests after partition summaries", "count": f.manifests_after_summaries},
        {"stage": "data files", "count": f.data_files_total},
        {"stage": "after partition pruning", "count": f.data_files_after_partition},
        {"stage": "after metrics pruning", "count": f.data_files_after_metrics},
        {"stage": "delete files matched", "count": f.delete_files_matched},
    ]


def plan_manifests(plan: ScanPlan) -> list[Any]:
    return list(plan.explain.manifests) if plan.explain is not None else []


class PlanFiles:
    """The file decisions of a plan, ``status`` "all", "kept" or "pruned", in plan order, as
    a sequence a Paginator pages: counted per manifest (a manifest kept whole counts without
    building its decisions), a page built from the manifests it spans only."""

    def __init__(self, plan: ScanPlan, status: str) -> None:
        self._manifests = plan_manifests(plan)
        self._status = status
        self._counts: list[int] | None = None

    def _count(self, m: Any) -> int:
        if self._status == "all":
            return len(m.files)
        want = self._status == "kept"
        if isinstance(m.files, KeptFiles):
            return len(m.files) if want else 0
        if isinstance(m.files, (DecidedFiles, DecidedDeletes)):  # the decisions not built
            kept = m.files.kept_count
            return kept if want else len(m.files) - kept
        return sum(1 for f in m.files if f.kept == want)

    def counts(self) -> list[int]:
        if self._counts is None:
            self._counts = [self._count(m) for m in self._manifests]
        return self._counts

    def count(self) -> int:
        return sum(self.counts())

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, s: slice) -> list[tuple[Any, Any]]:
        start, stop = s.start or 0, s.stop if s.stop is not None else self.count()
        out: list[tuple[Any, Any]] = []
        first = 0  # index of the manifest's first row
        for m, n in zip(self._manifests, self.counts(), strict=True):
            if first + n > start and n:
                rows = [f for f in m.files if self._status == "all"
                        or f.kept == (self._status == "kept")]
                out += [(m, f) for f in rows[max(0, start - first):stop - first]]
            first += n
            if first >= stop:
                break
        return out


def plan_manifest_json(decisions: Sequence[Any]) -> list[dict[str, Any]]:
    """Explain records of some manifests, each kept data file with its residual."""
    out = []
    for m in decisions:
        doc = m.to_json()
        if isinstance(m.files, KeptFiles):  # every file kept, nothing left to check per row
            for f in doc["files"]:
                f["residual"] = None
        else:
            for f, decision in zip(doc["files"], m.files, strict=True):
                if f["kept"] and f["content"] == "data":
                    f["residual"] = None if decision.residual is None \
                        else str(decision.residual)
        out.append(doc)
    return out


# --- partitions -------------------------------------------------------------------------------


def table_partitions(*, table: Table, selection: Selection) -> TablePartitionStats:
    snap = select_snapshot(table.metadata, selection.snapshot_id, selection.as_of_ms,
                           selection.ref).snapshot
    snapshot_id = None if snap is None else snap.snapshot_id

    def load() -> TablePartitionStats:
        return partition_stats(table.io, table.metadata, snapshot_id, cache=CACHE.live,
                               processes=False)

    stats: TablePartitionStats = CACHE.scans.get_or_load(
        (table.metadata_location, "partitions", snapshot_id), load)
    return stats


@dataclass(frozen=True, slots=True)
class StatsFileStatus:
    """Whether a snapshot's partition numbers can come from a partition statistics file:
    ``current`` (a file of this snapshot), ``stale`` (only an ancestor's file: older
    numbers), ``missing`` (none), ``unpartitioned`` (a table without partitions has none)."""

    state: str
    path: str | None = None
    snapshot_id: int | None = None


def stats_file_status(*, table: Table, snapshot_id: int | None) -> StatsFileStatus:
    md = table.metadata
    if snapshot_id is None or all(s.is_unpartitioned for s in md.partition_specs):
        return StatsFileStatus("unpartitioned")
    own = partition_stats_file_for(md, snapshot_id)
    if own is not None:
        return StatsFileStatus("current", own.statistics_path, own.snapshot_id)
    by_snapshot = {f.snapshot_id: f for f in md.partition_statistics}
    for snap in md.ancestors_of(snapshot_id):
        older = by_snapshot.get(snap.snapshot_id)
        if older is not None:
            return StatsFileStatus("stale", older.statistics_path, older.snapshot_id)
    return StatsFileStatus("missing")


def _stats_file_partitions(table: Table, status: StatsFileStatus) -> TablePartitionStats:
    """The statistics file's rows as the page's per-partition numbers (no manifest read):
    each row's partition (in the table's unified partition type) labelled in its own spec."""
    stats_file = partition_stats_file_for(table.metadata, status.snapshot_id or 0)
    assert stats_file is not None
    return from_statistics_file(table.io, table.metadata, stats_file)


def table_partitions_from_stats_file(*, table: Table, selection: Selection
                                     ) -> tuple[TablePartitionStats | None, StatsFileStatus]:
    """The selection's per-partition numbers from its partition statistics file when it has
    one (None otherwise), and the file's status."""
    snap = select_snapshot(table.metadata, selection.snapshot_id, selection.as_of_ms,
                           selection.ref).snapshot
    status = stats_file_status(table=table, snapshot_id=None if snap is None
                               else snap.snapshot_id)
    if status.state != "current":
        return None, status
    stats: TablePartitionStats = CACHE.scans.get_or_load(
        (table.metadata_location, "partition-stats-file", status.path),
        lambda: _stats_file_partitions(table, status))
    return stats, status


# --- preview and export -----------------------------------------------------------------------


def table_preview(*, table: Table, selection: Selection, row_filter: str | None,
                  columns: list[str] | None, limit: int) -> tuple[ScanPlan, pa.Table]:
    """The first ``limit`` rows of a table state, deletes applied, read through floe."""
    plan = plan_files(table.io, table.metadata, snapshot_id=selection.snapshot_id,
                      as_of_ms=selection.as_of_ms, ref=selection.ref, row_filter=row_filter,
                      cache=CACHE.live, processes=False)
    batches: list[pa.RecordBatch] = []
    rows = 0
    schema = None
    reader = read_plan(table.io, plan, columns, batch_size=min(max(limit, 1), 65_536))
    try:
        for batch in reader:
            schema = batch.schema
            if rows >= limit:
                break
            batch = batch.slice(0, limit - rows)
            batches.append(batch)
            rows += batch.num_rows
    finally:
        close = getattr(reader, "close", None)
        if close is not None:
            close()
    if not batches:
        if schema is None:
            read_schema = plan.schema.select(*columns) if columns else plan.schema
            schema = schema_to_arrow(read_schema)
        return plan, schema.empty_table()
    return plan, pa.Table.from_batches(batches)


def table_export(*, table: Table, selection: Selection, row_filter: str | None,
                 columns: list[str] | None, fmt: str) -> tuple[bytes, int]:
    """At most :data:`EXPORT_MAX_ROWS` rows as CSV (explorer.values.CsvWriter: nested
    values as JSON text) or Parquet bytes, and the row count."""
    if fmt not in EXPORT_FORMATS:
        raise InvalidArgument("format",
                              f"format {fmt!r} is not one of {', '.join(EXPORT_FORMATS)}")
    plan, rows = table_preview(table=table, selection=selection, row_filter=row_filter,
                               columns=columns, limit=EXPORT_MAX_ROWS)
    sink = _pyio.BytesIO()
    if fmt == "csv":
        writer = CsvWriter(sink, plan.schema, rows.schema)
        writer.write_batch(rows)
        writer.close()
    else:
        pq.write_table(rows, sink)
    return sink.getvalue(), rows.num_rows

