"""The demo pipeline (``make pipeline``): an events table lived through on Spark and floe.

In one warehouse (a file-system catalog, the explorer's ``local``), :func:`run_pipeline`

1. creates ``pipeline.events`` (format v2, partitioned by ``day(ts)``, sorted by ``ts``,
   merge-on-read deletes), replacing the one a previous run left;
2. appends ``batches`` batches of generated events through the floe data source (one Spark
   job and one snapshot each);
3. deletes the bot traffic merge-on-read (position delete files);
4. evolves the schema (a ``device`` column) and the partition spec (``bucket(8, user_id)``),
   then appends a batch that has devices (and, the bots being gone, no bots);
5. reads the table back through the source (now, and as of the first snapshot);
6. compacts it on Spark (every file rewritten into the current spec, deletes applied);
7. expires the snapshots older than the compaction.

Every step prints one line; the result says what the explorer will show.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from floe.catalog.filesystem import FileSystemCatalog
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.sorting import parse_sort_by
from floe.types import DOUBLE, LONG, STRING, TIMESTAMPTZ, NestedField

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from floe.table import Table

__all__ = ["run_pipeline", "PipelineResult", "NAMESPACE", "TABLE", "EVENTS_SCHEMA"]

NAMESPACE = "pipeline"
TABLE = "events"
EVENTS_SCHEMA = Schema(
    NestedField(1, "event_id", LONG, required=True),
    NestedField(2, "user_id", LONG, required=True),
    NestedField(3, "kind", STRING, required=True),
    NestedField(4, "ts", TIMESTAMPTZ, required=True),
    NestedField(5, "country", STRING),
    NestedField(6, "amount", DOUBLE),
)
_KINDS = ("view", "click", "purchase", "signup", "bot")
_COUNTRIES = ("DE", "FR", "JP", "US", "BR", "IN", "ZA", "Ελλάδα")
_DEVICES = ("ios", "android", "web")
_START = "2025-03-01 00:00:00"
_SECONDS_PER_BATCH = 86_400  # one day of events per batch: one new partition each


@dataclass
class PipelineResult:
    """What a run did: the table, its snapshots and the rows at the end."""

    warehouse: str
    location: str
    snapshots: list[tuple[str, int]] = field(default_factory=list)
    rows: int = 0
    rows_by_kind: dict[str, int] = field(default_factory=dict)
    compaction: dict[str, Any] = field(default_factory=dict)
    expired: int = 0

    @property
    def identifier(self) -> str:
        return f"local:{NAMESPACE}.{TABLE}"


def _events(spark: SparkSession, batch: int, rows: int, *, devices: bool = False
            ) -> DataFrame:
    """``rows`` generated events of day ``batch`` (deterministic)."""
    from pyspark.sql import functions as F

    first = batch * rows
    df = spark.range(first, first + rows)
    kind = F.element_at(F.array(*[F.lit(k) for k in _KINDS]), (F.col("id") % 5 + 1).cast("int"))
    country = F.element_at(F.array(*[F.lit(c) for c in _COUNTRIES]),
                           (F.col("id") % len(_COUNTRIES) + 1).cast("int"))
    seconds = batch * _SECONDS_PER_BATCH + (F.col("id") * 7919) % _SECONDS_PER_BATCH
    columns = [
        F.col("id").alias("event_id"),
        (F.col("id") * 31 % 1000).alias("user_id"),
        kind.alias("kind"),
        (F.unix_timestamp(F.lit(_START)) + seconds).cast("timestamp").alias("ts"),
        F.when(F.col("id") % 20 == 0, F.lit(None)).otherwise(country).alias("country"),
        F.when(kind == "purchase", (F.col("id") % 30_000) / 100.0).alias("amount"),
    ]
    if devices:
        columns.append(F.element_at(F.array(*[F.lit(d) for d in _DEVICES]),
                                    (F.col("id") % 3 + 1).cast("int")).alias("device"))
    return df.select(*columns)


def _create(warehouse: str) -> Table:
    catalog = FileSystemCatalog("local", warehouse)
    ident = f"{NAMESPACE}.{TABLE}"
    if catalog.table_exists(ident):
        catalog.drop_table(ident, purge=True)
    return catalog.create_table(
        ident, EVENTS_SCHEMA, spec=parse_partition_by("day(ts)", EVENTS_SCHEMA),
        sort_order=parse_sort_by("ts", EVENTS_SCHEMA),
        properties={"write.delete.mode": "merge-on-read", "commit.manifest-merge.enabled":
                    "false"},
        format_version=2)


def run_pipeline(spark: SparkSession, warehouse: str, *, batches: int = 4,
                 rows_per_batch: int = 200_000, say: Callable[[str], None] = print
                 ) -> PipelineResult:
    """Run every step (module docstring) in ``warehouse``; ``say`` gets one line per step."""
    from pyspark.sql import functions as F

    from floe.spark import read, spark_errors, write
    from floe.spark.compaction import compact

    if batches < 1 or rows_per_batch < 1:
        raise ValueError("batches and rows per batch must be positive")
    t0 = time.monotonic()

    def step(text: str) -> None:
        say(f"[{time.monotonic() - t0:6.1f}s] {text}")

    table = _create(warehouse)
    result = PipelineResult(warehouse, table.location)
    location = table.location
    step(f"created {result.identifier} at {location}")

    def snapshot(label: str) -> None:
        snap = table.refresh().current_snapshot()
        assert snap is not None
        result.snapshots.append((label, snap.snapshot_id))

    for b in range(batches):
        sid = write(_events(spark, b, rows_per_batch), location)
        snapshot(f"append {b + 1}")
        step(f"appended batch {b + 1}/{batches}: {rows_per_batch:,} events (snapshot {sid})")

    table.delete_where("kind = 'bot'", mode="merge-on-read")
    snapshot("delete bots")
    step("deleted the bot events merge-on-read (position delete files)")

    table.update_schema().add_column("device", "string").commit()
    table.update_spec().add_field("bucket(8, user_id)").commit()
    step("evolved the schema (+ device) and the partition spec (+ bucket(8, user_id))")
    sid = write(_events(spark, batches, rows_per_batch, devices=True).filter("kind != 'bot'"),
                location)
    snapshot("append with devices")
    step(f"appended a batch with devices into the new spec (snapshot {sid})")

    with spark_errors():
        df = read(spark, location)
        counts = {r["kind"]: r["n"] for r in df.groupBy("kind").agg(F.count("*").alias("n"))
                  .collect()}
        first = read(spark, location, snapshot_id=result.snapshots[0][1]).count()
    result.rows_by_kind = dict(sorted(counts.items()))
    result.rows = sum(counts.values())
    kinds = ", ".join(f"{k} {v:,}" for k, v in result.rows_by_kind.items())
    step(f"read back {result.rows:,} events ({kinds}); {first:,} as of the first snapshot")

    def progress(p: Any) -> None:
        if p.stage == "committing":
            step(f"compaction: committing {p.detail}")

    compacted = compact(table, spark=spark, options={"rewrite-all": "true",
                                                    "remove-dangling-deletes": "true"},
                        on_progress=progress)
    snapshot("compaction")
    result.compaction = {"rewritten": compacted.rewritten_data_files_count,
                         "added": compacted.added_data_files_count,
                         "removed_delete_files": compacted.removed_delete_files_count}
    step(f"compacted on Spark: {compacted.rewritten_data_files_count} data files rewritten "
         f"into {compacted.added_data_files_count}, "
         f"{compacted.removed_delete_files_count} delete files removed")

    result.expired = _expire(table, step)
    return result


def _expire(table: Table, step: Callable[[str], None]) -> int:
    """Expire every snapshot older than the last one (:mod:`floe.maintenance.expire`)."""
    from floe.maintenance.expire import expire_snapshots

    current = table.refresh().current_snapshot()
    assert current is not None
    expired = expire_snapshots(table, older_than_ms=current.timestamp_ms, retain_last=1)
    count = len(expired.expired_snapshot_ids)
    step(f"expired {count} snapshots older than the compaction "
         f"({len(table.refresh().snapshots())} left)")
    return count
