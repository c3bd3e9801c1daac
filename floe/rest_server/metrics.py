"""Metrics reports an engine sends after a scan or a commit (the REST catalog's
``reportMetrics``: ``POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics``, body
the OpenAPI spec's ``ReportMetricsRequest``), parsed and checked into a :class:`MetricsReport`.

A report is a ``ScanReport`` (``table-name``, ``snapshot-id``, ``filter``, ``schema-id``,
``projected-field-ids``, ``projected-field-names``, ``metrics``, ``metadata``) or a
``CommitReport`` (``table-name``, ``snapshot-id``, ``sequence-number``, ``operation``,
``metrics``, ``metadata``), told apart by ``report-type``. ``metrics`` maps a name to a
``CounterResult`` (``{"unit", "value"}``) or a ``TimerResult`` (``{"count", "time-unit",
"total-duration"}``); the names are Java's ``ScanMetrics`` / ``CommitMetrics`` ones
(constants below). Anything else in a report is kept as sent (:attr:`MetricsReport.raw`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from floe.rest_server.errors import BadRequest

__all__ = [
    "COMMIT_REPORT",
    "REPORT_TYPES",
    "SCAN_REPORT",
    "Counter",
    "MetricsReport",
    "Timer",
    "filter_text",
    "report_from_json",
]

SCAN_REPORT = "scan-report"
COMMIT_REPORT = "commit-report"
REPORT_TYPES = (SCAN_REPORT, COMMIT_REPORT)

# ScanMetrics (Java org.apache.iceberg.metrics.ScanMetricsResult)
TOTAL_PLANNING_DURATION = "total-planning-duration"
RESULT_DATA_FILES = "result-data-files"
RESULT_DELETE_FILES = "result-delete-files"
TOTAL_DATA_MANIFESTS = "total-data-manifests"
TOTAL_DELETE_MANIFESTS = "total-delete-manifests"
SCANNED_DATA_MANIFESTS = "scanned-data-manifests"
SKIPPED_DATA_MANIFESTS = "skipped-data-manifests"
SKIPPED_DATA_FILES = "skipped-data-files"
SKIPPED_DELETE_FILES = "skipped-delete-files"
TOTAL_FILE_SIZE_IN_BYTES = "total-file-size-in-bytes"
# CommitMetrics (Java org.apache.iceberg.metrics.CommitMetricsResult)
TOTAL_DURATION = "total-duration"
ATTEMPTS = "attempts"
ADDED_DATA_FILES = "added-data-files"
REMOVED_DATA_FILES = "removed-data-files"
ADDED_DELETE_FILES = "added-delete-files"
REMOVED_DELETE_FILES = "removed-delete-files"
ADDED_RECORDS = "added-records"
REMOVED_RECORDS = "removed-records"

#: Nanoseconds per unit of a ``TimerResult``'s ``time-unit`` (Java's ``TimeUnit`` names).
_NANOS = {"nanoseconds": 1, "microseconds": 10**3, "milliseconds": 10**6, "seconds": 10**9,
          "minutes": 60 * 10**9, "hours": 3600 * 10**9, "days": 86400 * 10**9}
#: A report names at most this many metrics (Java sends about twenty).
MAX_METRICS = 1000
_LONG = (-(2**63), 2**63 - 1)


@dataclass(frozen=True, slots=True)
class Counter:
    """A ``CounterResult``: a count in ``unit`` (``count``, ``bytes``...)."""

    unit: str
    value: int


@dataclass(frozen=True, slots=True)
class Timer:
    """A ``TimerResult``: ``count`` measurements taking ``total_duration`` ``time_unit``s."""

    time_unit: str
    count: int
    total_duration: int

    @property
    def total_ms(self) -> float | None:
        """The total duration in milliseconds (None for a unit Java does not name)."""
        nanos = _NANOS.get(self.time_unit.lower())
        return None if nanos is None else self.total_duration * nanos / 1e6


@dataclass(frozen=True, slots=True)
class MetricsReport:
    """One ``ScanReport`` or ``CommitReport`` as sent (``raw``), its fields checked.
    ``filter`` is the expression's JSON (Java sanitizes the literals: ``"(2-digit-int)"``)."""

    report_type: str
    table_name: str
    snapshot_id: int
    metrics: Mapping[str, Counter | Timer]
    metadata: Mapping[str, str] = field(default_factory=dict)
    # a scan report's
    filter: Any = None
    schema_id: int | None = None
    projected_field_ids: tuple[int, ...] = ()
    projected_field_names: tuple[str, ...] = ()
    # a commit report's
    sequence_number: int | None = None
    operation: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_scan(self) -> bool:
        return self.report_type == SCAN_REPORT

    def counter(self, name: str) -> int | None:
        """The value of counter ``name`` (None when absent or a timer)."""
        result = self.metrics.get(name)
        return result.value if isinstance(result, Counter) else None

    def duration_ms(self, name: str) -> float | None:
        """The total duration of timer ``name`` in milliseconds (None when absent)."""
        result = self.metrics.get(name)
        return result.total_ms if isinstance(result, Timer) else None

    @property
    def filter_text(self) -> str:
        return filter_text(self.filter) if self.is_scan else ""


# -- parsing -------------------------------------------------------------------------------


def _long(doc: Mapping[str, Any], key: str, what: str, *, required: bool = True) -> int | None:
    value = doc.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{what}: {key!r} must be an integer, not {_shown(value)}")
    if not _LONG[0] <= value <= _LONG[1]:
        raise BadRequest(f"{what}: {key!r} {value} is out of the range of a long")
    return value


def _string(doc: Mapping[str, Any], key: str, what: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str):
        raise BadRequest(f"{what}: {key!r} must be a string, not {_shown(value)}")
    return value


def _shown(value: Any) -> str:
    if value is None:
        return "missing"
    return json.dumps(value)[:60] if isinstance(value, str | int | float | bool) \
        else type(value).__name__


def _metric(name: Any, doc: Any, what: str) -> Counter | Timer:
    where = f"{what}: metric {name!r}"
    if not isinstance(doc, dict):
        raise BadRequest(f"{where} must be an object ({{\"unit\", \"value\"}} or "
                         "{\"count\", \"time-unit\", \"total-duration\"})")
    if "time-unit" in doc:
        count = _long(doc, "count", where)
        total = _long(doc, "total-duration", where)
        assert count is not None and total is not None
        return Timer(_string(doc, "time-unit", where), count, total)
    if "unit" in doc or "value" in doc:
        value = _long(doc, "value", where)
        assert value is not None
        return Counter(_string(doc, "unit", where), value)
    raise BadRequest(f"{where} is neither a counter ({{\"unit\", \"value\"}}) nor a timer "
                     "({\"count\", \"time-unit\", \"total-duration\"})")


def _metrics(doc: Any, what: str) -> dict[str, Counter | Timer]:
    if not isinstance(doc, dict):
        raise BadRequest(f"{what}: 'metrics' must be an object of named results")
    if len(doc) > MAX_METRICS:
        raise BadRequest(f"{what}: {len(doc)} metrics; a report names at most {MAX_METRICS}")
    return {name: _metric(name, value, what) for name, value in doc.items()}


def report_from_json(doc: Any) -> MetricsReport:
    """A ``ReportMetricsRequest`` checked (400 :class:`BadRequest` naming the first field
    that is missing or of the wrong type, an unknown ``report-type``)."""
    if not isinstance(doc, dict):
        raise BadRequest(f"a metrics report must be a JSON object, not {type(doc).__name__}")
    kind = doc.get("report-type")
    if kind not in REPORT_TYPES:
        raise BadRequest(f"report-type must be one of {', '.join(REPORT_TYPES)}, not "
                         f"{_shown(kind)}")
    what = f"the {kind}"
    table_name = _string(doc, "table-name", what)
    snapshot_id = _long(doc, "snapshot-id", what)
    assert snapshot_id is not None
    metrics = _metrics(doc.get("metrics"), what)
    metadata = doc.get("metadata") or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise BadRequest(f"{what}: 'metadata' must be an object of strings")
    if kind == COMMIT_REPORT:
        return MetricsReport(kind, table_name, snapshot_id, metrics, metadata,
                             sequence_number=_long(doc, "sequence-number", what),
                             operation=_string(doc, "operation", what), raw=doc)
    if "filter" not in doc:
        raise BadRequest(f"{what}: 'filter' is missing (the scan's expression; true for "
                         "none)")
    expr = doc["filter"]
    if not isinstance(expr, bool | dict | str):
        raise BadRequest(f"{what}: 'filter' must be an expression, not {_shown(expr)}")
    ids = doc.get("projected-field-ids")
    if not isinstance(ids, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise BadRequest(f"{what}: 'projected-field-ids' must be an array of integers")
    names = doc.get("projected-field-names")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise BadRequest(f"{what}: 'projected-field-names' must be an array of strings")
    return MetricsReport(kind, table_name, snapshot_id, metrics, metadata, filter=expr,
                         schema_id=_long(doc, "schema-id", what), projected_field_ids=tuple(ids),
                         projected_field_names=tuple(names), raw=doc)


# -- the filter in words -------------------------------------------------------------------

_BINARY = {"lt": "<", "lt-eq": "<=", "gt": ">", "gt-eq": ">=", "eq": "=", "not-eq": "!=",
           "starts-with": "STARTS WITH", "not-starts-with": "NOT STARTS WITH"}
_UNARY = {"is-null": "IS NULL", "not-null": "IS NOT NULL", "is-nan": "IS NAN",
          "not-nan": "IS NOT NAN"}
_SET = {"in": "IN", "not-in": "NOT IN"}
#: A literal Java replaced by its shape (``ExpressionUtil.sanitize``): shown as it is.
_SANITIZED = re.compile(r"^\(.*\)$")
#: How long a filter's text may get (a scan may filter on thousands of values).
FILTER_TEXT_LIMIT = 2000


def _value(value: Any) -> str:
    if isinstance(value, str):
        return value if _SANITIZED.match(value) else "'" + value.replace("'", "''") + "'"
    return json.dumps(value)


def _term(term: Any) -> str:
    if isinstance(term, str):
        return term
    if isinstance(term, dict):
        if term.get("type") == "transform":
            return f"{term.get('transform')}({_term(term.get('term'))})"
        if "term" in term:
            return _term(term["term"])
    return json.dumps(term)


def _expr(doc: Any, depth: int) -> str:
    if depth > 50:
        return "…"
    if isinstance(doc, bool):
        return "true" if doc else "false"
    if not isinstance(doc, dict):
        return json.dumps(doc)
    kind = str(doc.get("type", "")).lower()
    if kind in ("true", "false"):
        return kind
    if kind in ("and", "or"):
        return (f"({_expr(doc.get('left'), depth + 1)} {kind.upper()} "
                f"{_expr(doc.get('right'), depth + 1)})")
    if kind == "not":
        return f"NOT {_expr(doc.get('child'), depth + 1)}"
    if kind in _UNARY:
        return f"{_term(doc.get('term'))} {_UNARY[kind]}"
    if kind in _BINARY:
        return f"{_term(doc.get('term'))} {_BINARY[kind]} {_value(doc.get('value'))}"
    if kind in _SET:
        values = doc.get("values")
        shown = ", ".join(_value(v) for v in values) if isinstance(values, list) else "…"
        return f"{_term(doc.get('term'))} {_SET[kind]} ({shown})"
    return json.dumps(doc, sort_keys=True)


def filter_text(doc: Any) -> str:
    """A scan report's ``filter`` (Java's ``ExpressionParser`` JSON) as SQL-like text:
    ``(id > (2-digit-int) AND cat = 'a')``; ``true`` for no filter."""
    text = _expr(doc, 0)
    if text.startswith("(") and text.endswith(")") and isinstance(doc, dict) and \
            str(doc.get("type", "")).lower() in ("and", "or"):
        text = text[1:-1]
    return text if len(text) <= FILTER_TEXT_LIMIT else text[:FILTER_TEXT_LIMIT - 1] + "…"
