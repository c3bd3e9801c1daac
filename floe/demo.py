"""A small demo warehouse written by floe itself, for ``make run`` without ``FLOE_WAREHOUSE``.

Tables are laid out as Spark's Hadoop catalog writes them
(``<warehouse>/<namespace>/<table>/metadata/v<N>.metadata.json``) and carry a history of
several appends, so every page of the explorer has something to show. Each commit is stamped
when it happens: the history spans the seconds the demo takes to write, while the rows
themselves (event times, order dates, sensor readings) span days and months.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import pyarrow as pa

from floe.io import FileIO
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.sorting import parse_sort_by
from floe.table.append import append, create_table
from floe.types import (
    DATE,
    DOUBLE,
    INT,
    LONG,
    STRING,
    TIMESTAMPTZ,
    DecimalType,
    NestedField,
)

__all__ = ["create_demo_warehouse"]

_UTC = dt.UTC
_COUNTRIES = ["DE", "FR", "JP", "US", "BR", "IN", "CN", "ZA", "Ελλάδα"]
_EVENTS = ["view", "click", "purchase", "signup"]


def _events(rng: random.Random, day: dt.date, n: int) -> pa.Table:
    start = dt.datetime(day.year, day.month, day.day, tzinfo=_UTC)
    return pa.table({
        "event_id": pa.array(range(n), pa.int64()),
        "user_id": pa.array([rng.randrange(1, 500) for _ in range(n)], pa.int64()),
        "kind": [rng.choice(_EVENTS) for _ in range(n)],
        "ts": pa.array([start + dt.timedelta(seconds=rng.randrange(86_400)) for _ in range(n)],
                       pa.timestamp("us", tz="UTC")),
        "country": [rng.choice(_COUNTRIES) if rng.random() > 0.05 else None for _ in range(n)],
        "amount": [round(rng.uniform(0, 300), 2) if rng.random() > 0.3 else None for _ in range(n)],
    })


def _orders(rng: random.Random, first_id: int, n: int) -> pa.Table:
    return pa.table({
        "order_id": pa.array(range(first_id, first_id + n), pa.int64()),
        "region": [rng.choice(["emea", "apac", "amer"]) for _ in range(n)],
        "order_date": pa.array([dt.date(2025, 1, 1) + dt.timedelta(days=rng.randrange(365))
                                for _ in range(n)], pa.date32()),
        "quantity": pa.array([rng.randrange(1, 20) for _ in range(n)], pa.int32()),
        "price": pa.array([Decimal(rng.randrange(100, 100_000)) / 100 for _ in range(n)],
                          pa.decimal128(10, 2)),
    })


def create_demo_warehouse(path: str, *, seed: int = 7) -> list[str]:
    """Write the demo tables under ``path``; returns their table locations."""
    io = FileIO()
    rng = random.Random(seed)
    root = path.rstrip("/")

    events_schema = Schema(
        NestedField(1, "event_id", LONG, required=True),
        NestedField(2, "user_id", LONG, required=True),
        NestedField(3, "kind", STRING, required=True),
        NestedField(4, "ts", TIMESTAMPTZ, required=True),
        NestedField(5, "country", STRING),
        NestedField(6, "amount", DOUBLE),
    )
    events = f"{root}/web/events"
    create_table(
        io, events, events_schema,
        spec=parse_partition_by("day(ts), bucket(4, user_id)", events_schema),
        sort_order=parse_sort_by("ts", events_schema),
        properties={"write.target-file-size-bytes": str(128 * 1024 * 1024)},
        format_version=2,
    )
    for i in range(6):
        day = dt.date(2025, 3, 1) + dt.timedelta(days=i)
        rows = _events(rng, day, 400 + 150 * i)
        append(io, events, rows)

    orders_schema = Schema(
        NestedField(1, "order_id", LONG, required=True),
        NestedField(2, "region", STRING, required=True),
        NestedField(3, "order_date", DATE),
        NestedField(4, "quantity", INT),
        NestedField(5, "price", DecimalType(10, 2)),
    )
    orders = f"{root}/sales/orders"
    create_table(
        io, orders, orders_schema,
        spec=parse_partition_by("region, month(order_date)", orders_schema),
        format_version=1,
    )
    for i in range(4):
        append(io, orders, _orders(rng, i * 1000, 250))

    readings_schema = Schema(
        NestedField(1, "sensor", STRING, required=True),
        NestedField(2, "ts", TIMESTAMPTZ, required=True),
        NestedField(3, "value", DOUBLE),
    )
    readings = f"{root}/iot/readings"
    create_table(io, readings, readings_schema, format_version=2)
    for i in range(3):
        start = dt.datetime(2025, 6, 1, tzinfo=_UTC) + dt.timedelta(hours=i)
        n = 300
        append(io, readings, pa.table({
            "sensor": [f"s-{rng.randrange(10)}" for _ in range(n)],
            "ts": pa.array([start + dt.timedelta(seconds=s * 10) for s in range(n)],
                           pa.timestamp("us", tz="UTC")),
            "value": [rng.gauss(20, 5) if rng.random() > 0.01 else float("nan") for _ in range(n)],
        }))
    return [events, orders, readings]
