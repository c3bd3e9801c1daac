"""Tables the Spark tests read and write, built with floe in a warehouse directory."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa

from floe.catalog.filesystem import FileSystemCatalog
from floe.io.parquet import schema_to_arrow
from floe.scan.readers import plan_to_table
from floe.partitioning import parse_partition_by
from floe.scan.planning import plan_files
from floe.schema import Schema
from floe.sorting import parse_sort_by
from floe.table import Table
from floe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    UUIDType,
)

UTC = dt.UTC

EVENTS_SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "cat", StringType()),
    NestedField(3, "v", DoubleType()),
    NestedField(4, "ts", TimestamptzType()),
    NestedField(5, "dec", DecimalType(9, 2)),
)


def events_rows(lo: int, hi: int) -> pa.Table:
    """Rows ``lo <= id < hi``: three categories (one null every 7th), NaN and -0.0 among the
    doubles, nulls sprinkled in."""
    ids = list(range(lo, hi))
    cats = [None if i % 7 == 6 else ("a", "b", "c")[i % 3] for i in ids]
    vs: list[float | None] = []
    for i in ids:
        vs.append(float("nan") if i % 11 == 5 else -0.0 if i % 13 == 4 else
                  None if i % 9 == 8 else i * 1.5)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "cat": cats,
        "v": pa.array(vs, pa.float64()),
        "ts": pa.array([dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(hours=i)
                        for i in ids], pa.timestamp("us", tz="UTC")),
        "dec": pa.array([None if i % 5 == 4 else Decimal(i) / 4 for i in ids],
                        pa.decimal128(9, 2)),
    })


@dataclass
class History:
    """``events`` with a history: every state the read tests select."""

    table: Table
    snapshots: list[int] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def location(self) -> str:
        return self.table.location


def build_events(warehouse: Path, name: str = "events", *, partition: str | None = "cat",
                 sort: str | None = None, properties: dict[str, str] | None = None
                 ) -> History:
    """Appends, a tag, merge-on-read position deletes, a branch with its own append,
    equality deletes on main, and a last append."""
    cat = FileSystemCatalog("t", str(warehouse))
    props = {"write.delete.mode": "merge-on-read", **(properties or {})}
    spec = parse_partition_by(partition, EVENTS_SCHEMA) if partition else None
    kwargs: dict[str, Any] = {"properties": props}
    if spec is not None:
        kwargs["spec"] = spec
    if sort:
        kwargs["sort_order"] = parse_sort_by(sort, EVENTS_SCHEMA)
    table = cat.create_table(f"db.{name}", EVENTS_SCHEMA, **kwargs)
    h = History(table)

    def snap() -> int:
        s = table.refresh().current_snapshot()
        assert s is not None
        h.snapshots.append(s.snapshot_id)
        return s.snapshot_id

    table.append(events_rows(0, 30))
    first = snap()
    table.manage_snapshots().create_tag("first", first).commit()
    table.append(events_rows(30, 60))
    second = snap()
    h.info["as_of"] = table.refresh().current_snapshot().timestamp_ms  # type: ignore[union-attr]
    table.manage_snapshots().create_branch("dev", second).commit()
    table.append(events_rows(100, 110), branch="dev")
    table.delete_where("id IN (3, 13, 33, 34)", mode="merge-on-read")
    snap()
    table.delete_equal(["id"], pa.table({"id": pa.array([5, 35], pa.int64())}))
    snap()
    table.append(events_rows(60, 90))
    snap()
    return h


def floe_rows(table: Table, **plan: Any) -> list[dict[str, Any]]:
    """floe's own rows of a table state (plan_files + plan_to_table), in a canonical order,
    NaN as the string "NaN" so that equal rows compare equal."""
    table.refresh()
    scan = plan_files(table.io, table.metadata, **plan)
    rows = plan_to_table(table.io, scan).to_pylist()
    return sort_rows([{k: _nan(v) for k, v in r.items()} for r in rows])


def _nan(v: Any) -> Any:
    return "NaN" if isinstance(v, float) and math.isnan(v) else v


def sort_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: repr(sorted(r.items())))


ALL_TYPES_SCHEMA = Schema(
    NestedField(1, "i", IntegerType(), required=True),
    NestedField(2, "l", LongType()),
    NestedField(3, "f", FloatType()),
    NestedField(4, "x", DoubleType()),
    NestedField(5, "dec", DecimalType(12, 3)),
    NestedField(6, "d", DateType()),
    NestedField(7, "ntz", TimestampType()),
    NestedField(8, "tz", TimestamptzType()),
    NestedField(9, "s", StringType()),
    NestedField(10, "u", UUIDType()),
    NestedField(11, "fx", FixedType(3)),
    NestedField(12, "bin", BinaryType()),
    NestedField(13, "bo", BooleanType()),
    NestedField(14, "st", StructType(NestedField(17, "a", IntegerType()),
                                     NestedField(18, "b", StringType()))),
    NestedField(15, "arr", ListType(19, LongType(), element_required=False)),
    NestedField(16, "m", MapType(20, StringType(), 21, DoubleType(), value_required=False)),
)


def all_types_rows() -> pa.Table:
    n = 6
    rows = {
        "i": list(range(n)),
        "l": [None, -(2 ** 63), 2 ** 63 - 1, 0, 7, -7],
        "f": [1.5, None, float("nan"), -0.0, 3.25, float("inf")],
        "x": [None, 1e300, -2.5, float("nan"), 0.0, 4.0],
        "dec": [Decimal("1.250"), None, Decimal("-999999999.999"), Decimal("0.000"),
                Decimal("3.100"), Decimal("42.000")],
        "d": [dt.date(1969, 12, 31), dt.date(2024, 2, 29), None, dt.date(1900, 1, 1),
              dt.date(1970, 1, 1), dt.date(2030, 6, 1)],
        "ntz": [dt.datetime(2024, 2, 29, 13, 45, 0, 123456), None,
                dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(1970, 1, 1),
                dt.datetime(2001, 1, 1), dt.datetime(1950, 5, 5)],
        "tz": [dt.datetime(2024, 2, 29, 13, 45, tzinfo=UTC), dt.datetime(1960, 1, 1, tzinfo=UTC),
               None, dt.datetime(1970, 1, 1, tzinfo=UTC), dt.datetime(2020, 5, 5, tzinfo=UTC),
               dt.datetime(2099, 12, 31, tzinfo=UTC)],
        "s": ["", "é", "日本語", None, "🧊ice", "plain"],
        "u": [uuid.UUID(int=i * 7919).bytes if i != 2 else None for i in range(n)],
        "fx": [b"abc", b"\x00\x01\x02", None, b"xyz", b"\xff\xff\xff", b"def"],
        "bin": [b"", b"\xde\xad", None, b"x" * 40, b"\x00", b"bin"],
        "bo": [True, False, None, True, False, True],
        "st": [{"a": 1, "b": "x"}, None, {"a": None, "b": "é"}, {"a": 4, "b": None},
               {"a": 5, "b": "y"}, {"a": 6, "b": "z"}],
        "arr": [[1, 2, None], None, [], [4], [5, 6], [7]],
        "m": [[("k", 1.0), ("n", float("nan"))], None, [], [("x", None)], [("y", 2.0)],
              [("z", 3.0)]],
    }
    return pa.table(rows, schema=schema_to_arrow(ALL_TYPES_SCHEMA))


def build_all_types(warehouse: Path, name: str = "all_types") -> Table:
    cat = FileSystemCatalog("t", str(warehouse))
    table = cat.create_table(f"db.{name}", ALL_TYPES_SCHEMA,
                             spec=parse_partition_by("bucket(2, i)", ALL_TYPES_SCHEMA))
    table.append(all_types_rows())
    return table


def table_files(location: str) -> set[str]:
    """Every file under a table directory (to see what an operation left behind)."""
    root = Path(location)
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
