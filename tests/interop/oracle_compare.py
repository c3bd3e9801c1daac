"""Turn floe's values into the JSON form the oracle's Spark rows use, for comparisons.

``oracle.rows_to_json`` writes timestamps as ISO strings (``+00:00`` for timestamptz), dates as
ISO dates, decimals as strings, binary as hex, NaN/Infinity as strings, maps with non-string
keys as ``[{"key": k, "value": v}]`` lists.
"""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from typing import Any

from floe.types import (
    BinaryType,
    DateType,
    DecimalType,
    FixedType,
    PrimitiveType,
    TimestampType,
    TimestamptzType,
    UUIDType,
)

EPOCH = datetime.datetime(1970, 1, 1)
EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def iso_ms(ms: int) -> str:
    """Epoch milliseconds as Spark's JSON for a timestamp (with time zone)."""
    return (EPOCH_UTC + datetime.timedelta(milliseconds=ms)).isoformat()


def spark_json(t: PrimitiveType, value: Any) -> Any:
    """An Iceberg value (floe's representation) in the oracle's JSON form for Spark type ``t``."""
    if value is None:
        return None
    if isinstance(t, DateType):
        return (EPOCH.date() + datetime.timedelta(days=value)).isoformat()
    if isinstance(t, TimestamptzType):
        return (EPOCH_UTC + datetime.timedelta(microseconds=value)).isoformat()
    if isinstance(t, TimestampType):
        return (EPOCH + datetime.timedelta(microseconds=value)).isoformat()
    if isinstance(t, DecimalType):
        assert isinstance(value, Decimal)
        return str(value)
    if isinstance(t, (BinaryType, FixedType)):
        return bytes(value).hex()
    if isinstance(t, UUIDType):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
    return value


def jmap(value: Any) -> dict[Any, Any] | None:
    """A map from Spark's JSON (an object, or a list of key/value objects) as a dict."""
    if value is None:
        return None
    if isinstance(value, dict):
        return dict(value)
    return {e["key"]: e["value"] for e in value}


def hex_map(value: dict[int, bytes] | None) -> dict[int, str] | None:
    if value is None:
        return None
    return {k: bytes(v).hex() for k, v in value.items()}


def json_diff(got: Any, expected: Any, path: str = "$") -> list[str]:
    """Every place where two JSON values differ, as ``path: got != expected`` lines."""
    if isinstance(got, dict) and isinstance(expected, dict):
        out: list[str] = []
        for k in expected:
            if k not in got:
                out.append(f"{path}.{k}: missing (expected {expected[k]!r})")
        for k in got:
            if k not in expected:
                out.append(f"{path}.{k}: unexpected {got[k]!r}")
            else:
                out += json_diff(got[k], expected[k], f"{path}.{k}")
        return out
    if isinstance(got, list) and isinstance(expected, list) and len(got) == len(expected):
        pairs = enumerate(zip(got, expected, strict=True))
        return [d for i, (g, e) in pairs for d in json_diff(g, e, f"{path}[{i}]")]
    if got != expected or type(got) is not type(expected):
        return [f"{path}: got {got!r}, expected {expected!r}"]
    return []
