"""Reads for the partitions, scan-plan and preview pages (and the plan API).

Every table is addressed by catalog, namespace and name; :func:`table_state` refuses names
that would leave the warehouse (``..``, separators, symlinks pointing elsewhere) before any
file is opened. Plans are cached by (metadata file, selection, filter) so paging through a
large plan plans once; decoded manifests are shared with floe's planner cache.
"""

from __future__ import annotations

import datetime as dt
import io as _pyio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from django.conf import settings

from explorer.catalogs import Catalog
from explorer.selectors import METADATA_DIR, _LRU, cached_metadata, current_metadata_location
from floe.errors import NotFound, ValidationError
from floe.expressions import bind, parse_filter
from floe.io import FileIO
from floe.io.parquet import schema_to_arrow
from floe.io.readers import read_plan
from floe.metadata import TableMetadata
from floe.partition_stats import TablePartitionStats, partition_stats
from floe.scan import DEFAULT_CACHE, ScanPlan, plan_files, select_snapshot

_io = FileIO()

#: Rows a preview shows at most, and rows an export writes at most (stated on the page).
PREVIEW_MAX_ROWS = 1000
PREVIEW_DEFAULT_ROWS = 100
EXPORT_MAX_ROWS = 100_000
EXPORT_FORMATS = ("csv", "parquet")
_PLAN_CACHE_SIZE = 8
_STATS_CACHE_SIZE = 16


@dataclass(frozen=True, slots=True)
class TableState:
    """A table found inside its warehouse and its current metadata (nothing else read)."""

    catalog: str
    namespace: str
    name: str
    location: str
    metadata_location: str
    metadata: TableMetadata

    @property
    def identifier(self) -> str:
        return f"{self.namespace}.{self.name}"

    @property
    def url(self) -> str:
        """The table's overview page (paths from ARCHITECTURE.md)."""
        return f"/catalogs/{self.catalog}/namespaces/{self.namespace}/tables/{self.name}/"


@dataclass(frozen=True, slots=True)
class Selection:
    """Which table state a request reads: at most one of the three."""

    snapshot_id: int | None = None
    as_of_ms: int | None = None
    ref: str | None = None

    def key(self) -> tuple[Any, ...]:
        return (self.snapshot_id, self.as_of_ms, self.ref)


# --- finding a table safely -----------------------------------------------------------------


def _check_segment(kind: str, value: str) -> None:
    if not value or value in (".", "..") or any(c in value for c in "/\\\x00") \
            or value.startswith((".", "_")) or os.path.isabs(value):
        raise ValidationError(f"{kind} {value!r} is not a valid name")


def table_state(*, catalog: Catalog, namespace: str, name: str) -> TableState:
    """The table ``namespace.name`` of a file-system catalog; ValidationError for a name that
    tries to leave the warehouse, NotFound for one that is not there."""
    levels = namespace.split(".")
    for level in levels:
        _check_segment("namespace", level)
    _check_segment("table", name)
    if not catalog.exists:
        raise NotFound(f"warehouse {catalog.warehouse} of catalog {catalog.name!r} does not exist")
    root = os.path.realpath(catalog.warehouse)
    location = os.path.join(catalog.warehouse, *levels, name)
    real = os.path.realpath(location)
    if os.path.commonpath([root, real]) != root:
        # A symlink out of the warehouse: behave as if nothing were there, read nothing.
        raise NotFound(f"table {namespace}.{name} does not exist in catalog {catalog.name!r}")
    if not os.path.isdir(os.path.join(real, METADATA_DIR)):
        if not os.path.isdir(os.path.join(root, *levels)):
            raise NotFound(f"namespace {namespace!r} does not exist in catalog {catalog.name!r}")
        raise NotFound(f"table {namespace}.{name} does not exist in catalog {catalog.name!r}")
    metadata_location = current_metadata_location(location)
    if os.path.commonpath([root, os.path.realpath(metadata_location)]) != root:
        raise NotFound(f"table {namespace}.{name} does not exist in catalog {catalog.name!r}")
    return TableState(catalog.name, namespace, name, location, metadata_location,
                      cached_metadata(metadata_location))


# --- parsing the request ----------------------------------------------------------------------


def selection_parse(*, snapshot: str | None = None, as_of: str | None = None,
                    ref: str | None = None) -> Selection:
    """``snapshot`` an id, ``as_of`` epoch milliseconds or an ISO-8601 time (UTC when no
    offset), ``ref`` a branch or tag name; empty strings count as absent."""
    snapshot, as_of, ref = (v.strip() if v else None for v in (snapshot, as_of, ref))
    if sum(v is not None for v in (snapshot, as_of, ref)) > 1:
        raise ValidationError("choose at most one of snapshot, as_of and ref")
    snapshot_id = None
    if snapshot:
        try:
            snapshot_id = int(snapshot)
        except ValueError:
            raise ValidationError(f"snapshot {snapshot!r} is not a snapshot id") from None
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
        raise ValidationError(
            f"as_of {text!r} is neither epoch milliseconds nor an ISO-8601 time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def filter_check(*, state: TableState, selection: Selection, text: str) -> str | None:
    """The filter text if it parses and binds to the schema the selection reads with;
    ValidationError (with the position of a parse error) otherwise."""
    text = text.strip()
    if not text:
        return None
    expr = parse_filter(text)
    schema = select_snapshot(state.metadata, selection.snapshot_id, selection.as_of_ms,
                             selection.ref).schema
    bind(schema, expr)
    return text


def columns_parse(*, state: TableState, selection: Selection, text: str) -> list[str] | None:
    names = [c.strip() for c in text.split(",") if c.strip()]
    if not names:
        return None
    schema = select_snapshot(state.metadata, selection.snapshot_id, selection.as_of_ms,
                             selection.ref).schema
    known = {f.name for f in schema.fields}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValidationError(
            f"unknown column {unknown[0]!r}; columns are {', '.join(sorted(known))}")
    return names


# --- plans ------------------------------------------------------------------------------------

_plan_cache = _LRU()


def table_plan(*, state: TableState, selection: Selection, row_filter: str | None) -> ScanPlan:
    """The explained plan of a table state (cached: paging through it plans once)."""
    key = repr((state.metadata_location, selection.key(), row_filter))

    def load(_: str) -> ScanPlan:
        return plan_files(_io, state.metadata, snapshot_id=selection.snapshot_id,
                          as_of_ms=selection.as_of_ms, ref=selection.ref, row_filter=row_filter,
                          explain=True, cache=DEFAULT_CACHE, processes=False)

    plan: ScanPlan = _plan_cache.get_or_load(key, load, _PLAN_CACHE_SIZE)
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


def plan_manifest_json(plan: ScanPlan, decisions: Sequence[Any]) -> list[dict[str, Any]]:
    """Explain records of some manifests, each kept data file with its residual."""
    residuals = _residuals(plan)
    out = []
    for m in decisions:
        doc = m.to_json()
        for f in doc["files"]:
            if f["kept"] and f["content"] == "data":
                f["residual"] = residuals.get(f["path"])
        out.append(doc)
    return out


def _residuals(plan: ScanPlan) -> dict[str, str | None]:
    return {t.data_file.file_path: (None if t.residual is None else str(t.residual))
            for t in plan.tasks}


# --- partitions -------------------------------------------------------------------------------

_stats_cache = _LRU()


def table_partitions(*, state: TableState, selection: Selection) -> TablePartitionStats:
    snap = select_snapshot(state.metadata, selection.snapshot_id, selection.as_of_ms,
                           selection.ref).snapshot
    key = repr((state.metadata_location, None if snap is None else snap.snapshot_id))

    def load(_: str) -> TablePartitionStats:
        return partition_stats(_io, state.metadata, None if snap is None else snap.snapshot_id,
                               cache=DEFAULT_CACHE, processes=False)

    stats: TablePartitionStats = _stats_cache.get_or_load(key, load, _STATS_CACHE_SIZE)
    return stats


# --- preview and export -----------------------------------------------------------------------


def table_preview(*, state: TableState, selection: Selection, row_filter: str | None,
                  columns: list[str] | None, limit: int) -> tuple[ScanPlan, pa.Table]:
    """The first ``limit`` rows of a table state, deletes applied, read through floe."""
    plan = plan_files(_io, state.metadata, snapshot_id=selection.snapshot_id,
                      as_of_ms=selection.as_of_ms, ref=selection.ref, row_filter=row_filter,
                      cache=DEFAULT_CACHE, processes=False)
    batches: list[pa.RecordBatch] = []
    rows = 0
    schema = None
    reader = read_plan(_io, plan, columns, batch_size=min(max(limit, 1), 65_536))
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


def table_export(*, state: TableState, selection: Selection, row_filter: str | None,
                 columns: list[str] | None, fmt: str) -> tuple[bytes, int]:
    """At most :data:`EXPORT_MAX_ROWS` rows as CSV or Parquet bytes, and the row count."""
    if fmt not in EXPORT_FORMATS:
        raise ValidationError(f"format {fmt!r} is not one of {', '.join(EXPORT_FORMATS)}")
    _, table = table_preview(state=state, selection=selection, row_filter=row_filter,
                             columns=columns, limit=EXPORT_MAX_ROWS)
    sink = _pyio.BytesIO()
    if fmt == "csv":
        pacsv.write_csv(table, sink)
    else:
        pq.write_table(table, sink)
    return sink.getvalue(), table.num_rows


def clear_caches() -> None:
    _plan_cache.clear()
    _stats_cache.clear()
