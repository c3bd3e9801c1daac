"""A table's health over time: one :class:`TableMetrics` row per table state (metadata file)
Floe observes, with the numbers :func:`floe.health.table_metrics` counts.

Recorded by :func:`metrics_record` after a task of Floe's committed (the worker), by
:func:`metrics_record_commit` with a commit through the served REST catalog (from the
committed metadata only, in the transaction of its audit entry: nothing is read on an
engine's commit path), and by :func:`metrics_sweep`,
which lists every catalog's tables and reads the current metadata of each (one metadata read
per table that changed; unchanged files are cached), recording a state no Floe task or REST
commit of this site made as ``external`` with the engine its snapshot summary names. A state
is recorded once (the sweep after a task's commit adds nothing), except that the sweep
completes a REST commit's current row with what only the files say (manifests, small files,
live rows counted, partitions). Never raises into the change that caused it: a failure to
record is logged.

Besides the metadata, the worker and the sweep read: the manifest list and the live data
files' sizes (bounded, :func:`explorer.tables.details.health_inputs`), the metadata file's
size, the live rows as the overview counts them (:func:`explorer.tables.details.live_rows_get`,
bounded), and the current snapshot's partition statistics file when it has one (one Parquet
or Avro read; no statistics are computed).
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction

from explorer.audit.selectors import summary_engine
from explorer.models import AuditEntry, TableMetrics
from explorer.tables import selectors
from explorer.tables.details import health_inputs, live_rows_get
from floe.errors import FloeError
from floe.health import attention, table_health, table_metrics
from floe.live_rows import LiveRows, live_rows
from floe.maintenance.partition_stats import partition_stats_file_for, read_partition_stats
from floe.metadata import TableMetadata
from floe.table import Table

__all__ = ["SweepResult", "metrics_history", "metrics_record", "metrics_record_commit",
           "metrics_sweep"]

logger = logging.getLogger(__name__)

_FIELDS = [f.name for f in TableMetrics._meta.concrete_fields]
#: A table's own maintenance settings (explorer.maintenance.policies) start with this.
POLICY_PROPERTY_PREFIX = "floe.policy."


def _key(table: Table) -> dict[str, str]:
    ref = selectors.table_ref(table)
    return {"catalog": ref.catalog, "namespace": ref.namespace, "table": ref.name}


def _made_here(key: dict[str, str], location: str) -> bool:
    """A Floe task or REST commit of this site made the state (its audit entry says so)."""
    return AuditEntry.objects.filter(**key, metadata_after=location).exists()


def _live(rows: LiveRows | dict[str, Any]) -> dict[str, Any]:
    """The row's live-row fields: the count when exact, else the bounds."""
    if isinstance(rows, LiveRows):
        rows = {"live_records": rows.count, "live_exact": rows.exact, "live_min": rows.low,
                "live_max": rows.high}
    exact = bool(rows["live_exact"])
    return {"live_records": rows["live_records"] if exact else None, "live_exact": exact,
            "live_min": None if exact else rows["live_min"],
            "live_max": None if exact else rows["live_max"]}


def _partition_records(table: Table) -> list[int] | None:
    """Each partition's records in data files, from the current snapshot's partition
    statistics file (one read); None when it has none or it cannot be read (logged)."""
    md = table.metadata
    stats_file = (None if md.current_snapshot_id is None
                  else partition_stats_file_for(md, md.current_snapshot_id))
    if stats_file is None:
        return None
    try:
        return [s.data_record_count for s in read_partition_stats(table.io, md, stats_file)]
    except (FloeError, OSError) as exc:
        logger.warning("health of %s: partition statistics: %s", table.identifier, exc)
        return None


def _inputs(table: Table) -> dict[str, Any]:
    """What :func:`_row` judges a loaded table's current state from beyond its metadata."""
    manifests, sizes, _ = health_inputs(table)
    try:
        metadata_bytes: int | None = table.io.size(table.metadata_location)
    except (OSError, FloeError):
        metadata_bytes = None
    return {"manifests": manifests, "sizes": sizes, "metadata_bytes": metadata_bytes,
            "live": live_rows_get(table=table), "partition_records": _partition_records(table)}


def _row(key: dict[str, str], location: str, md: TableMetadata, *, source: str,
         external: bool, live: LiveRows | dict[str, Any], manifests: Any = None,
         sizes: list[int] | None = None, metadata_bytes: int | None = None,
         partition_records: list[int] | None = None) -> TableMetrics:
    """The (unsaved) row of one state: its numbers, warnings and attention."""
    now_ms = int(time.time() * 1000)
    numbers = table_metrics(md, now_ms=now_ms, manifests=manifests, data_file_sizes=sizes,
                            metadata_bytes=metadata_bytes, partition_records=partition_records)
    health = table_health(md, now_ms=now_ms, manifests=manifests, data_file_sizes=sizes,
                          partition_records=partition_records)
    snapshot = md.current_snapshot()
    engine = summary_engine(dict(snapshot.summary)) if snapshot is not None else None
    return TableMetrics(**key, metadata_location=location, source=source, external=external,
                        engine=(engine or "")[:255], current=True,
                        warnings=[m["key"] for m in health if m["status"] == "warn"],
                        attention=attention(health),
                        policy_properties={k: v for k, v in md.properties.items()
                                           if k.startswith(POLICY_PROPERTY_PREFIX)},
                        **_live(live), **{k: v for k, v in numbers.items() if k in _FIELDS})


def _lock_table(key: dict[str, str]) -> None:
    """Until the end of the transaction, the only one recording a state of this table.

    PostgreSQL (read committed): without it, two states of one table saved at once each
    clear the other rows' ``current`` without seeing the other's new row, and both stay
    current; a transaction-level advisory lock on the table's key serialises them (the
    second's UPDATE then sees the first's committed row). SQLite needs none: it has one
    writer at a time (explorer.settings begins transactions IMMEDIATE, taking the write
    lock at their start)."""
    if connection.vendor != "postgresql":
        return
    name = "\0".join((key["catalog"], key["namespace"], key["table"])).encode()
    lock = int.from_bytes(hashlib.blake2b(name, digest_size=8).digest(), "big", signed=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [lock])


def _save(row: TableMetrics) -> TableMetrics | None:
    """Store a new state as its table's current one; the stored row when another process
    recorded the same state meanwhile (a sweep beside a task)."""
    key = {"catalog": row.catalog, "namespace": row.namespace, "table": row.table}
    try:
        with transaction.atomic():
            _lock_table(key)
            row.save()
            _make_current(row, key)
    except IntegrityError:
        return TableMetrics.objects.filter(**key, metadata_location=row.metadata_location
                                           ).first()
    return row


def _make_current(row: TableMetrics, key: dict[str, str]) -> None:
    """The row is its table's current state (the fleet view's); under :func:`_lock_table`."""
    TableMetrics.objects.filter(**key, current=True).exclude(pk=row.pk).update(current=False)
    if not row.current:
        TableMetrics.objects.filter(pk=row.pk).update(current=True)
        row.current = True


def _heal_current(row: TableMetrics) -> bool:
    """The table's current metadata is this recorded row's, which is not marked current: an
    older state recorded at the same moment took the mark after it (two recorders, e.g. a
    task's and the sweep's). Mark it again; True when it was wrong."""
    if row.current:
        return False
    key = {"catalog": row.catalog, "namespace": row.namespace, "table": row.table}
    with transaction.atomic():
        _lock_table(key)
        _make_current(row, key)
    return True


def metrics_record(*, table: Table, source: str, external: bool | None = None
                   ) -> TableMetrics | None:
    """The row of the table's current state, recorded unless it is already (None when it
    could not be made: logged): from its metadata, the manifest list, the live data files'
    sizes (bounded, see :func:`explorer.tables.details.health_inputs`) and the metadata
    file's size, the live rows (bounded) and the current partition statistics file if any
    (see the module docstring). ``external``: None asks the audit trail."""
    key = _key(table)
    location = table.metadata_location
    try:
        found = TableMetrics.objects.filter(**key, metadata_location=location).first()
        if found is not None:
            return found
        inputs = _inputs(table)
        if external is None:
            external = not _made_here(key, location)
        return _save(_row(key, location, table.metadata, source=source, external=external,
                          **inputs))
    except Exception:  # the change is made: its health row is a side matter
        logger.exception("could not record the health of %s:%s.%s", key["catalog"],
                         key["namespace"], key["table"])
        return None


def metrics_record_commit(*, catalog: str, namespace: str, table: str, location: str,
                          metadata: TableMetadata, source: str) -> TableMetrics | None:
    """The row of a state this site just committed (a REST commit), from its metadata only:
    nothing more is read on an engine's commit path (the manifests, small-file numbers and
    partitions stay unknown for it, the live rows too unless the summary says them without
    a read; :func:`metrics_sweep` completes them). Written behind the commit's answer
    (explorer.rest.services.HealthWriter)."""
    key = {"catalog": catalog, "namespace": namespace, "table": table}
    try:
        # max_files=0: from the summary or its bounds, no FileIO at all (None)
        live = live_rows(None, metadata, max_files=0)
        return _save(_row(key, location, metadata, source=source, external=False, live=live))
    except Exception:  # the change is made: its health row is a side matter
        logger.exception("could not record the health of %s:%s.%s", catalog, namespace,
                         table)
        return None


#: What a row keeps however it is completed: which state it is, who saw it, when.
_KEPT = {"id", "catalog", "namespace", "table", "metadata_location", "observed_at", "source",
         "external", "engine", "current"}


def _complete(row: TableMetrics, table: Table) -> bool:
    """Fill in a REST commit's row of the table's current state with what only the files say
    (read as :func:`metrics_record` does), in place; False when the manifests stay unknown
    (logged; the next sweep tries again)."""
    inputs = _inputs(table)
    if inputs["manifests"] is None:
        return False
    fresh = _row(_key(table), row.metadata_location, table.metadata, source=row.source,
                 external=row.external, **inputs)
    fields = [f for f in _FIELDS if f not in _KEPT]
    for f in fields:
        setattr(row, f, getattr(fresh, f))
    row.save(update_fields=fields)
    return True


@dataclass
class SweepResult:
    catalogs: int = 0
    tables: int = 0
    recorded: int = 0
    external: int = 0
    completed: int = 0
    healed: int = 0
    errors: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def metrics_sweep(*, catalogs: list[str] | None = None) -> SweepResult:
    """Every table of every catalog (or of ``catalogs``): its current state recorded when
    it is new, its current row completed when a REST commit recorded it from the metadata
    alone (``completed``), and marked current again when an older state took the mark
    (``healed``; two recorders at once). A catalog or table that cannot be read is counted
    and logged, the rest go on."""
    result = SweepResult()
    names = catalogs if catalogs is not None else [c.name for c in selectors.catalog_list()]
    for name in names:
        try:
            refs = selectors.catalog_table_refs(catalog=name)
        except Exception as exc:  # one catalog down: the others are swept
            logger.warning("health sweep: catalog %s: %s", name, exc)
            result.errors += 1
            continue
        result.catalogs += 1
        for ref in refs:
            result.tables += 1
            try:
                table = selectors.table_load(catalog=ref.catalog, namespace=ref.namespace,
                                             name=ref.name)
            except Exception as exc:
                logger.warning("health sweep: %s:%s.%s: %s", ref.catalog, ref.namespace,
                               ref.name, exc)
                result.errors += 1
                continue
            key = _key(table)
            found = TableMetrics.objects.filter(
                **key, metadata_location=table.metadata_location).first()
            if found is not None:
                result.healed += _heal_current(found)
                if found.current and found.source == TableMetrics.Source.REST \
                        and found.manifests is None:
                    try:
                        done = _complete(found, table)
                    except Exception:  # one table's files: the others are swept
                        logger.exception("health sweep: could not complete %s", found)
                        done = False
                    result.completed += done
                    result.errors += not done
                continue
            row = metrics_record(table=table, source=TableMetrics.Source.SWEEP)
            if row is None:
                result.errors += 1
            else:
                result.recorded += 1
                result.external += row.external
    return result


def metrics_history(*, catalog: str, namespace: str, table: str, limit: int = 500
                    ) -> list[TableMetrics]:
    """The table's recorded states, oldest first (at most the newest ``limit``)."""
    rows = list(TableMetrics.objects.filter(catalog=catalog, namespace=namespace, table=table)
                .order_by("-id")[:limit])
    rows.reverse()
    return rows
