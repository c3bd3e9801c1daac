"""floe.conversions: Appendix D binary and JSON single values, human strings."""

import math
import random
import uuid
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from floe.conversions import (
    civil_from_days,
    days_from_civil,
    decimal_to_min_bytes,
    from_bytes,
    from_json_value,
    to_bytes,
    to_human_string,
    to_json_value,
)
from floe.errors import ValidationError
from floe.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UNKNOWN,
    UUID,
    VARIANT,
    DecimalType,
    FixedType,
    GeometryType,
    ListType,
)

SPEC_UUID = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")


def micros(*args: int) -> int:
    """Microseconds from the epoch of a UTC wall-clock time."""
    delta = datetime(*args, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def days(y: int, m: int, d: int) -> int:
    return (date(y, m, d) - date(1970, 1, 1)).days


# 2017-11-16T22:31:08.123456, the spec's example instant
TS = micros(2017, 11, 16, 22, 31, 8, 123456)


# -- binary --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "t, value, hex_bytes",
    [
        (BOOLEAN, False, "00"),
        (BOOLEAN, True, "01"),
        (INT, 34, "22000000"),
        (INT, -1, "ffffffff"),
        (LONG, 34, "2200000000000000"),
        (LONG, -2, "feffffffffffffff"),
        (FLOAT, 1.0, "0000803f"),
        (DOUBLE, -2.5, "00000000000004c0"),
        (DATE, days(2017, 11, 16), "4e440000"),
        (TIME, 81_068_123_456, "406509e012000000"),
        (TIMESTAMP, TS, "40a5282d215e0500"),
        (TIMESTAMPTZ, TS, "40a5282d215e0500"),
        (TIMESTAMP_NS, TS * 1000 + 789, "1585c56698b1f714"),
        (TIMESTAMPTZ_NS, TS * 1000 + 789, "1585c56698b1f714"),
        (STRING, "iceberg", "69636562657267"),
        (STRING, "é😀", "c3a9f09f9880"),
        (STRING, "", ""),
        (UUID, SPEC_UUID, "f79c3e09677c4bbda4793f349cb785e7"),
        (FixedType(4), b"\x00\x01\x02\x03", "00010203"),
        (BINARY, b"\x00\x01\x02\xff", "000102ff"),
        (DecimalType(9, 2), Decimal("14.20"), "058c"),
        (DecimalType(9, 2), Decimal("-14.20"), "fa74"),
        (DecimalType(9, 2), Decimal("0.00"), "00"),
        (DecimalType(9, 2), Decimal("1.28"), "0080"),
        (DecimalType(9, 2), Decimal("-1.28"), "80"),
        (DecimalType(38, 0), Decimal(10**37), "0785ee10d5da46d900f436a000000000"),
    ],
)
def test_known_bytes(t, value, hex_bytes):
    assert to_bytes(t, value).hex() == hex_bytes
    back = from_bytes(t, bytes.fromhex(hex_bytes))
    assert back == value
    assert type(back) is type(value)


@pytest.mark.parametrize(
    "unscaled, hex_bytes",
    [(0, "00"), (1, "01"), (127, "7f"), (128, "0080"), (255, "00ff"), (-1, "ff"),
     (-128, "80"), (-129, "ff7f"), (32767, "7fff"), (-32768, "8000"), (-32769, "ff7fff")],
)
def test_decimal_bytes_are_minimal_like_java_biginteger(unscaled, hex_bytes):
    assert decimal_to_min_bytes(unscaled).hex() == hex_bytes


@pytest.mark.parametrize(
    "t, value",
    [
        (INT, -(2**31)), (INT, 2**31 - 1), (INT, 0),
        (LONG, -(2**63)), (LONG, 2**63 - 1),
        (FLOAT, -0.0), (FLOAT, math.inf), (FLOAT, 3.4028234663852886e38),
        (DOUBLE, 5e-324), (DOUBLE, -math.inf), (DOUBLE, 0.1),
        (DATE, -719_162), (DATE, 2_932_896), (DATE, -1),
        (TIME, 0), (TIME, 86_399_999_999),
        (TIMESTAMP, -1), (TIMESTAMPTZ, -62_135_596_800_000_000),
        (TIMESTAMP_NS, -(2**63)), (TIMESTAMPTZ_NS, 2**63 - 1),
        (STRING, "a\u0000b"), (STRING, "日本語"),
        (UUID, uuid.UUID(int=0)), (UUID, uuid.UUID(int=2**128 - 1)),
        (FixedType(0), b""), (BINARY, b""), (BINARY, bytes(range(256))),
        (DecimalType(38, 10), Decimal("-9999999999999999999999999999.9999999999")),
        (DecimalType(38, 38), Decimal("0.00000000000000000000000000000000000001")),
        (DecimalType(5, 0), Decimal(-1)),
        (DecimalType(3, -2), Decimal("-1.23E+4")),
        (GeometryType(), b"\x01\x01\x00\x00\x00"),
    ],
)
def test_round_trip(t, value):
    back = from_bytes(t, to_bytes(t, value))
    assert back == value
    if isinstance(value, float):
        assert math.copysign(1, back) == math.copysign(1, value)
    if isinstance(value, Decimal):
        assert back.as_tuple().exponent == -t.scale


def test_nan_round_trips():
    assert math.isnan(from_bytes(DOUBLE, to_bytes(DOUBLE, math.nan)))
    assert math.isnan(from_bytes(FLOAT, to_bytes(FLOAT, math.nan)))


def test_decimal_is_written_at_the_type_scale():
    t = DecimalType(9, 2)
    assert to_bytes(t, Decimal("14.2")) == to_bytes(t, Decimal("14.20"))
    assert str(from_bytes(t, to_bytes(t, Decimal(14)))) == "14.00"


@pytest.mark.parametrize(
    "t, data, expected",
    [
        (LONG, (-5).to_bytes(4, "little", signed=True), -5),  # int promoted to long
        (DOUBLE, bytes.fromhex("0000c03f"), 1.5),  # float promoted to double
        (TIMESTAMP, (-1).to_bytes(4, "little", signed=True), -86_400_000_000),  # v3 date → ts
        (TIMESTAMP_NS, (1).to_bytes(4, "little", signed=True), 86_400_000_000_000),
        (BOOLEAN, b"\x02", True),  # any non-zero byte is true
    ],
)
def test_tolerant_reads(t, data, expected):
    assert from_bytes(t, data) == expected


@pytest.mark.parametrize(
    "t, data",
    [
        (BOOLEAN, b""), (BOOLEAN, b"\x00\x00"), (INT, b"\x00" * 3), (INT, b"\x00" * 8),
        (LONG, b"\x00" * 5), (LONG, b""), (FLOAT, b"\x00" * 8), (DOUBLE, b"\x00" * 2),
        (DATE, b"\x00" * 8), (TIME, b"\x00" * 4), (TIMESTAMPTZ, b"\x00" * 4),
        (TIMESTAMPTZ_NS, b"\x00" * 4), (TIMESTAMP, b"\x00" * 7), (UUID, b"\x00" * 15),
        (DecimalType(9, 2), b""),
    ],
)
def test_wrong_length_is_a_validation_error(t, data):
    with pytest.raises(ValidationError, match=f"{len(data)} bytes"):
        from_bytes(t, data)


def test_invalid_utf8_is_a_validation_error():
    with pytest.raises(ValidationError, match="UTF-8"):
        from_bytes(STRING, b"\xff\xfe")


@pytest.mark.parametrize(
    "t, value",
    [
        (INT, 2**31), (LONG, 2**63), (INT, "1"), (FLOAT, 1e39),
        (DecimalType(9, 2), Decimal("1.234")),  # would need rounding
        (DecimalType(3, 2), Decimal("10.00")),  # precision overflow
        (DecimalType(9, 2), Decimal("NaN")), (DecimalType(9, 2), 1.5),
        (FixedType(4), b"\x00"), (BINARY, "text"), (STRING, b"bytes"), (UUID, "f79c"),
    ],
)
def test_unserializable_values(t, value):
    with pytest.raises(ValidationError):
        to_bytes(t, value)


@pytest.mark.parametrize("t", [UNKNOWN, VARIANT, ListType(1, INT)])
def test_types_without_binary_form(t):
    with pytest.raises(ValidationError):
        to_bytes(t, 1)
    with pytest.raises(ValidationError):
        from_bytes(t, b"\x01")


# -- JSON ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "t, value, json_value",
    [
        (BOOLEAN, True, True),
        (INT, 34, 34),
        (LONG, 34, 34),
        (FLOAT, 1.0, 1.0),
        (DOUBLE, 1.0, 1.0),
        (DecimalType(9, 2), Decimal("14.20"), "14.20"),
        (DecimalType(9, 2), Decimal("-0.05"), "-0.05"),
        (DecimalType(9, -20), Decimal("2E+20"), "2E+20"),
        (DecimalType(10, 7), Decimal("0.0000001"), "0.0000001"),  # never E notation
        (DecimalType(5, 0), Decimal(12), "12"),
        (DATE, days(2017, 11, 16), "2017-11-16"),
        (DATE, days(1, 1, 1), "0001-01-01"),
        (DATE, days(1969, 12, 31), "1969-12-31"),
        (DATE, days(9999, 12, 31) + 1, "+10000-01-01"),
        (DATE, days(1, 1, 1) - 366, "0000-01-01"),
        (TIME, 81_068_123_456, "22:31:08.123456"),
        (TIME, 81_068_000_000, "22:31:08.000000"),
        (TIMESTAMP, TS, "2017-11-16T22:31:08.123456"),
        (TIMESTAMP, -1, "1969-12-31T23:59:59.999999"),
        (TIMESTAMPTZ, TS, "2017-11-16T22:31:08.123456+00:00"),
        (TIMESTAMP_NS, TS * 1000 + 789, "2017-11-16T22:31:08.123456789"),
        (TIMESTAMPTZ_NS, TS * 1000 + 789, "2017-11-16T22:31:08.123456789+00:00"),
        (TIMESTAMPTZ_NS, -1, "1969-12-31T23:59:59.999999999+00:00"),
        (STRING, "iceberg", "iceberg"),
        (UUID, SPEC_UUID, "f79c3e09-677c-4bbd-a479-3f349cb785e7"),
        (FixedType(4), b"\x00\x01\x02\xff", "000102ff"),
        (BINARY, b"\x00\x01\x02\xff", "000102ff"),
    ],
)
def test_json_single_values(t, value, json_value):
    assert to_json_value(t, value) == json_value
    assert from_json_value(t, json_value) == value


@pytest.mark.parametrize(("value", "json_value"), [
    (0.10000000149011612, 0.1),  # 0.1f widened to a double
    (0.3333333432674408, 0.33333334),
    (3.4028234663852886e38, 3.4028235e38),
    (1e-45, 1e-45),
    (-2.5, -2.5),
])
def test_a_float32_is_written_in_its_shortest_form(value, json_value):
    """As Java's ``Float.toString``: the shortest number that reads back as the same float."""
    assert to_json_value(FLOAT, value) == json_value
    assert to_bytes(FLOAT, from_json_value(FLOAT, json_value)) == to_bytes(FLOAT, value)


def test_json_null():
    assert to_json_value(LONG, None) is None
    assert from_json_value(LONG, None) is None


@pytest.mark.parametrize(
    "t, json_value, expected",
    [
        (TIMESTAMPTZ, "2017-11-16T14:31:08-08:00", micros(2017, 11, 16, 22, 31, 8)),
        (TIMESTAMPTZ, "2017-11-16T22:31:08Z", micros(2017, 11, 16, 22, 31, 8)),
        (TIMESTAMPTZ_NS, "2017-11-17T00:01:08.5+01:30", micros(2017, 11, 16, 22, 31, 8) * 1000
         + 500_000_000),
        (TIMESTAMP, "2017-11-16T22:31:08", micros(2017, 11, 16, 22, 31, 8)),
        (TIMESTAMP, "2017-11-16T22:31", micros(2017, 11, 16, 22, 31)),
        (TIMESTAMP, "2017-11-16T22:31:08.123456000", TS),
        (TIME, "22:31:08", 81_068_000_000),
        (TIME, "22:31:08.1", 81_068_100_000),
        (DOUBLE, 3, 3.0),
        (DOUBLE, "NaN", math.nan),
        (DATE, "2000-02-29", days(2000, 2, 29)),
        (UUID, "F79C3E09-677C-4BBD-A479-3F349CB785E7", SPEC_UUID),
    ],
)
def test_json_tolerant_reads(t, json_value, expected):
    got = from_json_value(t, json_value)
    assert got == expected or (math.isnan(expected) and math.isnan(got))


@pytest.mark.parametrize(
    "t, json_value",
    [
        (BOOLEAN, 1), (INT, True), (INT, 2**31), (LONG, 1.0), (LONG, "34"), (DOUBLE, "1.0"),
        (DecimalType(9, 2), "14.2"),  # scale must match
        (DecimalType(9, 2), 14.20), (DecimalType(9, 2), "abc"), (DecimalType(3, 2), "10.00"),
        (DATE, "2017-02-29"), (DATE, "2017-13-01"), (DATE, "20171116"), (DATE, 17486),
        (TIME, "24:00:00"), (TIME, "22:31:08.1234567"),  # finer than micros
        (TIMESTAMP, "2017-11-16T22:31:08+00:00"),  # no zone allowed
        (TIMESTAMPTZ, "2017-11-16T22:31:08"),  # zone required
        (TIMESTAMP, "2017-11-16 22:31:08"), (TIMESTAMPTZ_NS, "2017-11-16T22:31:08+19:00"),
        (STRING, 1), (UUID, "not-a-uuid"), (BINARY, "0g"), (FixedType(2), "000102"),
        (VARIANT, "x"),
    ],
)
def test_json_rejects(t, json_value):
    with pytest.raises(ValidationError):
        from_json_value(t, json_value)


def test_json_round_trips_random_instants():
    rng = random.Random(7)
    for _ in range(300):
        d = rng.randint(-800_000, 3_000_000)
        assert from_json_value(DATE, to_json_value(DATE, d)) == d
        ts = rng.randint(-(2**62), 2**62)
        for t in (TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS):
            assert from_json_value(t, to_json_value(t, ts)) == ts
        tm = rng.randrange(86_400_000_000)
        assert from_json_value(TIME, to_json_value(TIME, tm)) == tm


# -- calendar ------------------------------------------------------------------------------


def test_civil_conversions_match_datetime_inside_its_range():
    rng = random.Random(3)
    for d in [days(1, 1, 1), days(9999, 12, 31), 0, -1, *(rng.randint(-719_162, 2_932_896)
                                                       for _ in range(500))]:
        expected = date(1970, 1, 1).toordinal() + d
        got = civil_from_days(d)
        assert date(*got).toordinal() == expected
        assert days_from_civil(*got) == d


def test_civil_conversions_round_trip_outside_datetime_range():
    for d in [*range(-719_162 - 800, -719_162), *range(2_932_897, 2_932_897 + 800),
              -10**9, 10**9, -146_097 * 5 - 1]:
        y, m, day = civil_from_days(d)
        assert days_from_civil(y, m, day) == d
        assert 1 <= m <= 12 and 1 <= day <= 31
    assert civil_from_days(days(1, 1, 1) - 1) == (0, 12, 31)
    assert civil_from_days(days(9999, 12, 31) + 1) == (10000, 1, 1)


# -- human strings -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "t, value, text",
    [
        (LONG, None, "null"),
        (BOOLEAN, True, "true"),
        (INT, -5, "-5"),
        (DOUBLE, 1.0, "1.0"),
        (DOUBLE, 1e10, "1.0E10"),
        (DOUBLE, 1e-4, "1.0E-4"),
        (DOUBLE, 0.001, "0.001"),
        (DOUBLE, 1234567.5, "1234567.5"),
        (DOUBLE, -0.0, "-0.0"),
        (DOUBLE, math.nan, "NaN"),
        (DOUBLE, -math.inf, "-Infinity"),
        (FLOAT, 0.1, "0.1"),
        (FLOAT, 1 / 3, "0.33333334"),
        (DecimalType(9, 2), Decimal("14.20"), "14.20"),
        (DATE, days(2024, 1, 1), "2024-01-01"),
        (DATE, -1, "1969-12-31"),
        (TIME, 36_000_000_000, "10:00"),
        (TIME, 36_030_000_000, "10:00:30"),
        (TIME, 36_030_500_000, "10:00:30.500"),
        (TIME, 123_456, "00:00:00.123456"),
        (TIMESTAMP, micros(2024, 1, 1, 10), "2024-01-01T10:00:00"),
        (TIMESTAMP, micros(2024, 1, 1, 10) + 500_000, "2024-01-01T10:00:00.5"),
        (TIMESTAMP, -1, "1969-12-31T23:59:59.999999"),
        (TIMESTAMPTZ, micros(2024, 1, 1, 10), "2024-01-01T10:00:00+00:00"),
        (TIMESTAMP_NS, 1, "1970-01-01T00:00:00.000000001"),
        (TIMESTAMPTZ_NS, 1_000_000_000, "1970-01-01T00:00:01+00:00"),
        (STRING, "a/b c", "a/b c"),
        (UUID, SPEC_UUID, "f79c3e09-677c-4bbd-a479-3f349cb785e7"),
        (UUID, SPEC_UUID.bytes, "f79c3e09-677c-4bbd-a479-3f349cb785e7"),  # as Arrow holds it
        (FLOAT, 0.10000000149011612, "0.1"),
        (FLOAT, math.inf, "Infinity"),
        (FLOAT, 3.4028234663852886e38, "3.4028235E38"),  # the largest float32
        (BOOLEAN, False, "false"),
        (BINARY, b"\x00\x01\x02\xff", "AAEC/w=="),
        (FixedType(3), b"abc", "YWJj"),
    ],
)
def test_human_strings(t, value, text):
    assert to_human_string(t, value) == text
