"""floe.io.parquet: field ids in the file and the metrics a manifest records."""

import datetime as dt
import math
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe import conversions
from floe.errors import ValidationError
from floe.io.parquet import write_parquet
from floe.schema import Schema
from floe.types import (
    BINARY, DATE, DOUBLE, INT, LONG, STRING, TIMESTAMPTZ, DecimalType, ListType, NestedField,
    StructType,
)

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "s", STRING),
    NestedField(3, "ts", TIMESTAMPTZ),
    NestedField(4, "d", DOUBLE),
    NestedField(5, "day", DATE),
    NestedField(6, "dec", DecimalType(9, 2)),
    NestedField(7, "tags", ListType(8, STRING)),
    NestedField(9, "st", StructType(NestedField(10, "x", INT))),
    NestedField(11, "b", BINARY),
)
UTC = dt.timezone.utc
ROWS = pa.table({
    "id": [3, -7, 12],
    "s": ["é" * 20, "b", None],
    "ts": [dt.datetime(1960, 1, 1, tzinfo=UTC), None, dt.datetime(2024, 1, 1, 0, 0, 1, tzinfo=UTC)],
    "d": [1.5, float("nan"), None],
    "day": [dt.date(2020, 1, 1), dt.date(1969, 12, 31), dt.date(2021, 6, 1)],
    "dec": [Decimal("1.25"), Decimal("-3.50"), None],
    "tags": [["x"], [], None],
    "st": [{"x": 1}, None, {"x": 3}],
    "b": [b"\xff" * 20, b"\x00", None],
})


@pytest.fixture(scope="module")
def written():
    return write_parquet(ROWS, SCHEMA)


def decode(fid, raw):
    return conversions.from_bytes(SCHEMA.find_type(fid), raw)


def test_field_ids_are_in_the_parquet_schema(written):
    data, _ = written
    arrow_schema = pq.read_schema(pa.BufferReader(data))
    ids = {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in arrow_schema}
    assert ids == {"id": 1, "s": 2, "ts": 3, "d": 4, "day": 5, "dec": 6, "tags": 7, "st": 9, "b": 11}
    assert pq.read_table(pa.BufferReader(data)).num_rows == 3


def test_counts(written):
    _, m = written
    assert m.record_count == 3
    assert m.value_counts[1] == 3 and m.null_value_counts[1] == 0
    assert m.null_value_counts[2] == 1 and m.null_value_counts[10] == 1
    assert m.nan_value_counts == {4: 1}
    assert 8 not in m.value_counts  # no counts for repeated leaves, as Java's default
    assert set(m.column_sizes) >= {1, 2, 3, 4, 5, 6, 8, 10, 11}
    assert m.file_size_in_bytes == len(written[0])


def test_bounds(written):
    _, m = written
    assert decode(1, m.lower_bounds[1]) == -7 and decode(1, m.upper_bounds[1]) == 12
    assert decode(3, m.lower_bounds[3]) == -315619200000000  # 1960-01-01, pre-epoch
    assert decode(4, m.lower_bounds[4]) == 1.5 == decode(4, m.upper_bounds[4])  # NaN excluded
    assert decode(5, m.lower_bounds[5]) == -1 and decode(5, m.upper_bounds[5]) == 18779
    assert decode(6, m.lower_bounds[6]) == Decimal("-3.50")
    assert decode(10, m.upper_bounds[10]) == 3


def test_string_and_binary_bounds_are_truncated_to_16(written):
    _, m = written
    assert decode(2, m.lower_bounds[2]) == "b"
    assert decode(2, m.upper_bounds[2]) == "é" * 15 + "ê"  # last code point incremented
    assert m.lower_bounds[11] == b"\x00"
    assert 11 not in m.upper_bounds  # 0xff * 16 cannot be incremented: no upper bound


def test_all_nan_column_has_no_bounds():
    schema = Schema(NestedField(1, "d", DOUBLE))
    _, m = write_parquet(pa.table({"d": [math.nan, math.nan]}), schema)
    assert m.nan_value_counts == {1: 2} and 1 not in m.lower_bounds


def test_rows_that_do_not_fit_the_schema():
    with pytest.raises(ValidationError, match="do not fit"):
        write_parquet(pa.table({"other": [1]}), SCHEMA)
