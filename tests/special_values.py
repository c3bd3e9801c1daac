"""A table of the values that are easy to show wrongly (issue 19: points 2, 3 and 14): NaN,
Infinity and -Infinity in float and double columns, a float32 that is not a double, booleans,
bytes that are not text, and struct, map and list columns; partitioned by the double column,
so its NaN and infinities reach partition values and partition summaries too."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pyarrow as pa

from floe.catalog.filesystem import FileSystemCatalog
from floe.io.parquet import schema_to_arrow
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.table import Table
from floe.types import (
    BINARY,
    BOOLEAN,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIMESTAMPTZ,
    ListType,
    MapType,
    NestedField,
    StructType,
)

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "f", FLOAT),
    NestedField(3, "d", DOUBLE),
    NestedField(4, "ok", BOOLEAN),
    NestedField(5, "raw", BINARY),
    NestedField(6, "device", StructType(NestedField(7, "os", STRING),
                                        NestedField(8, "version", INT),
                                        NestedField(9, "seen", TIMESTAMPTZ))),
    NestedField(10, "tags", MapType(11, STRING, 12, DOUBLE, value_required=False)),
    NestedField(13, "pages", ListType(14, STRING, element_required=False)),
    schema_id=0,
)

NAN, INF = math.nan, math.inf
#: id → (f, d, ok): the float and double columns hold 0.1, NaN, Infinity and -Infinity.
VALUES = {1: (0.1, 0.1, True), 2: (NAN, NAN, False), 3: (INF, INF, None), 4: (-INF, -INF, True)}
SEEN = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.UTC)


def rows() -> pa.Table:
    arrow = schema_to_arrow(SCHEMA)
    ids = sorted(VALUES)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "f": pa.array([VALUES[i][0] for i in ids], pa.float32()),
        "d": pa.array([VALUES[i][1] for i in ids], pa.float64()),
        "ok": pa.array([VALUES[i][2] for i in ids], pa.bool_()),
        "raw": pa.array([bytes([0, 255, i]) for i in ids], pa.large_binary()),
        "device": pa.array([{"os": "linux", "version": i, "seen": SEEN} for i in ids],
                           arrow.field("device").type),
        "tags": pa.array([[("k", VALUES[i][1]), ("x'y", 1.5)] for i in ids],
                         arrow.field("tags").type),
        "pages": pa.array([["/a", None, "/b \"c\""] for _ in ids], arrow.field("pages").type),
    }, schema=arrow)


def write_special_table(warehouse: Path | str, namespace: str = "lab",
                        name: str = "special") -> Table:
    """``namespace.name`` with :func:`rows`, partitioned by ``d`` (one file per value)."""
    catalog = FileSystemCatalog("local", str(warehouse))
    if (namespace,) not in catalog.list_namespaces():
        catalog.create_namespace((namespace,))
    table = catalog.create_table(f"{namespace}.{name}", SCHEMA,
                                 parse_partition_by("d", SCHEMA), format_version=2)
    table.append(rows())
    return table
