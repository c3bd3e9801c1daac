"""Table values for people and for programs: one encoding each, used everywhere.

* **Text** (pages: the preview's cells, a file's bounds): :func:`value_text`, a value as
  Iceberg and SQL print it. Primitives by :func:`floe.conversions.to_human_string` (``true``
  / ``false``, a float32 in its shortest form ``0.1``, doubles as Java prints them,
  ``NaN``, ``Infinity``, ``-Infinity``, ISO dates and times, binary as base64); structs
  ``{a: 1}``, maps ``{'k': 1}``, lists ``[1, 2]``, strings quoted inside a nested value.
* **JSON** (the API's preview rows; the cells of nested columns in CSV exports):
  :func:`json_value`. Primitives by Iceberg's JSON single-value serialization
  (:func:`floe.conversions.to_json_value`: decimals as strings, binary as hex, ISO dates and
  times, a float32 in its shortest form); structs as objects keyed by field name; maps as
  objects when their keys are strings, else lists of ``[key, value]`` pairs; lists as
  arrays.
* **Non-finite floats in JSON**: the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``
  (what :func:`floe.conversions.from_json_value` reads back; JSON has no such numbers).
  :func:`json_safe` applies this to any document: every API response (api.renderers) and
  every JSON a page embeds (:func:`json_text`).
* **CSV** (the preview page's link, the API's export, the export task): :class:`CsvWriter`.
  Struct, map and list columns hold each value's JSON text (:func:`json_value`), binary,
  fixed and UUID columns hex (UUIDs 8-4-4-4-12); every other column as Arrow writes it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.csv as pacsv

from floe.conversions import to_human_string, to_json_value
from floe.schema import Schema
from floe.types import (
    IcebergType,
    ListType,
    MapType,
    PrimitiveType,
    StringType,
    StructType,
)

#: How JSON spells the floats it has no numbers for.
NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}
NAN = "NaN"


def _finite(value: float) -> float | str:
    if math.isfinite(value):
        return value
    return NAN if value != value else NON_FINITE[value]


def json_safe(doc: Any) -> Any:
    """``doc`` with every NaN and infinite float spelled as a string (the module's rule)."""
    if isinstance(doc, float):
        return _finite(doc)
    if isinstance(doc, dict):
        return {k: json_safe(v) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [json_safe(v) for v in doc]
    return doc


def json_text(doc: Any, **kwargs: Any) -> str:
    """``json.dumps`` of :func:`json_safe` ``(doc)``: strict JSON, for pages to embed."""
    return json.dumps(json_safe(doc), allow_nan=False, **kwargs)


# --- rows as Iceberg values --------------------------------------------------------------------


def _storage_type(t: pa.DataType) -> pa.DataType:
    """``t`` with times, dates and timestamps as the integers Iceberg stores (micros, days,
    micros or nanos), so that a row's values are floe's own representation."""
    if pa.types.is_timestamp(t) or pa.types.is_time64(t):
        return pa.int64()
    if pa.types.is_date32(t):
        return pa.int32()
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_storage_type(t.field(i).type))
                          for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_storage_type(t.key_field.type)),
                       t.item_field.with_type(_storage_type(t.item_field.type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_storage_type(t.value_field.type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_storage_type(t.value_field.type)))
    return t


def _column_values(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    storage = _storage_type(column.type)
    return (column if storage == column.type else column.cast(storage)).to_pylist()


def column_types(schema: Schema, names: Sequence[str]) -> list[IcebergType | None]:
    """The Iceberg type of each top-level column (None for a name the schema lacks)."""
    by_name = {f.name: f.field_type for f in schema.fields}
    return [by_name.get(name) for name in names]


def rows_of(data: pa.Table) -> list[tuple[Any, ...]]:
    """The rows of ``data`` as tuples of floe's values (temporal values as integers)."""
    return list(zip(*(_column_values(c) for c in data.columns), strict=True))


# --- text -------------------------------------------------------------------------------------


def value_text(t: IcebergType | None, value: Any, *, nested: bool = False) -> str:
    """A value as Iceberg and SQL print it (the module's rule for text)."""
    if value is None:
        return "null"
    if isinstance(t, StructType):
        types = {f.name: f.field_type for f in t.fields}
        return "{" + ", ".join(f"{k}: {value_text(types.get(k), v, nested=True)}"
                               for k, v in value.items()) + "}"
    if isinstance(t, MapType):
        return "{" + ", ".join(f"{value_text(t.key_type, k, nested=True)}: "
                               f"{value_text(t.value_type, v, nested=True)}"
                               for k, v in value) + "}"
    if isinstance(t, ListType):
        return "[" + ", ".join(value_text(t.element_type, v, nested=True) for v in value) + "]"
    if isinstance(t, StringType) or t is None and isinstance(value, str):
        return "'" + str(value).replace("'", "''") + "'" if nested else str(value)
    if isinstance(t, PrimitiveType):
        return to_human_string(t, value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def rows_text(schema: Schema, data: pa.Table) -> list[list[str]]:
    """Every cell of ``data`` (columns of ``schema``) as :func:`value_text`."""
    types = column_types(schema, data.column_names)
    return [[value_text(t, v) for t, v in zip(types, row, strict=True)] for row in rows_of(data)]


# --- JSON -------------------------------------------------------------------------------------


def json_value(t: IcebergType | None, value: Any) -> Any:
    """A value as JSON (the module's rule for JSON, non-finite floats included)."""
    if value is None:
        return None
    if isinstance(t, StructType):
        types = {f.name: f.field_type for f in t.fields}
        return {k: json_value(types.get(k), v) for k, v in value.items()}
    if isinstance(t, MapType):
        pairs = [(json_value(t.key_type, k), json_value(t.value_type, v)) for k, v in value]
        if all(isinstance(k, str) for k, _ in pairs):
            return dict(pairs)
        return [[k, v] for k, v in pairs]
    if isinstance(t, ListType):
        return [json_value(t.element_type, v) for v in value]
    if isinstance(t, PrimitiveType):
        return json_safe(to_json_value(t, value))
    return json_safe(value)


def rows_json(schema: Schema, data: pa.Table) -> list[list[Any]]:
    """Every row of ``data`` (columns of ``schema``) as a list of :func:`json_value`."""
    types = column_types(schema, data.column_names)
    return [[json_value(t, v) for t, v in zip(types, row, strict=True)] for row in rows_of(data)]


# --- CSV --------------------------------------------------------------------------------------


def _as_text(t: pa.DataType) -> bool:
    """Columns CSV cannot hold as Arrow writes them: nested ones, and bytes (not text)."""
    return (pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)
            or pa.types.is_fixed_size_binary(t) or isinstance(t, pa.ExtensionType))


class CsvWriter:
    """CSV of the rows of an Iceberg ``schema`` (the module's rule for CSV) into ``sink`` (a
    path or a binary file): a header, then one line per row; ``write_batch`` takes what
    floe's readers give, ``close`` ends the file."""

    def __init__(self, sink: str | BinaryIO, schema: Schema, arrow_schema: pa.Schema) -> None:
        self._types = column_types(schema, arrow_schema.names)
        self._text = [_as_text(f.type) for f in arrow_schema]
        self._schema = pa.schema([pa.field(f.name, pa.large_string()) if text else f
                                  for f, text in zip(arrow_schema, self._text, strict=True)])
        self._writer = pacsv.CSVWriter(sink, self._schema)

    def _cells(self, t: IcebergType | None, column: pa.Array | pa.ChunkedArray) -> pa.Array:
        if pa.types.is_nested(column.type):
            cells = [None if v is None else json.dumps(json_value(t, v), allow_nan=False)
                     for v in _column_values(column)]
        else:  # bytes: hex (a UUID: its text), as in JSON
            cells = [None if v is None else str(json_value(t, v)) if isinstance(t, PrimitiveType)
                     else v.hex() if isinstance(v, bytes) else str(v) for v in column.to_pylist()]
        return pa.array(cells, pa.large_string())

    def write_batch(self, data: pa.RecordBatch | pa.Table) -> None:
        if any(self._text):
            columns = [self._cells(t, c) if text else c for t, c, text in
                       zip(self._types, data.columns, self._text, strict=True)]
            data = pa.Table.from_arrays(columns, schema=self._schema)
        self._writer.write(data)

    def close(self) -> None:
        self._writer.close()
