"""Table properties: every key floe reads, its default, and the typed readers (Java
``TableProperties``). A property key and its default exist here and nowhere else.

Values are strings in the metadata; :func:`int_property`, :func:`bool_property` and
:func:`choice_property` read them from a :class:`~floe.metadata.TableMetadata` (or any object
with a ``properties`` mapping, or the mapping itself) and raise ``ValidationError`` naming the
key when a value is malformed, instead of guessing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from floe.errors import ValidationError

__all__ = [
    "int_property", "bool_property", "choice_property", "str_property",
    # metadata files
    "PREVIOUS_VERSIONS_MAX", "PREVIOUS_VERSIONS_MAX_DEFAULT",
    "DELETE_AFTER_COMMIT", "DELETE_AFTER_COMMIT_DEFAULT", "METADATA_COMPRESSION",
    # commits
    "COMMIT_NUM_RETRIES", "COMMIT_MIN_WAIT_MS", "COMMIT_MAX_WAIT_MS",
    "COMMIT_TOTAL_TIMEOUT_MS",
    "MANIFEST_MERGE_ENABLED", "MANIFEST_MERGE_ENABLED_DEFAULT",
    "MANIFEST_MIN_COUNT_TO_MERGE", "MANIFEST_MIN_COUNT_TO_MERGE_DEFAULT",
    "MANIFEST_TARGET_SIZE", "MANIFEST_TARGET_SIZE_DEFAULT",
    # writing data
    "TARGET_FILE_SIZE", "TARGET_FILE_SIZE_DEFAULT", "DELETE_TARGET_FILE_SIZE",
    "DELETE_TARGET_FILE_SIZE_DEFAULT",
    "METRICS_DEFAULT", "METRICS_COLUMN_PREFIX", "METRICS_MAX_INFERRED",
    "METRICS_MAX_INFERRED_DEFAULT", "PARQUET_BLOOM_FILTER_COLUMN_PREFIX",
    "PARQUET_STATS_COLUMN_PREFIX", "COLUMN_PROPERTY_PREFIXES", "DATA_PATH", "PARQUET_COMPRESSION",
    "PARQUET_COMPRESSION_DEFAULT",
    "DELETE_MODE", "UPDATE_MODE", "MERGE_MODE", "COPY_ON_WRITE", "MERGE_ON_READ",
    "DELETE_ISOLATION_LEVEL", "UPDATE_ISOLATION_LEVEL", "MERGE_ISOLATION_LEVEL",
    "SERIALIZABLE", "SNAPSHOT", "WAP_ENABLED", "WAP_ID",
    # reading
    "NAME_MAPPING", "SPLIT_SIZE", "SPLIT_SIZE_DEFAULT",
    # snapshot retention and garbage collection
    "MAX_SNAPSHOT_AGE_MS", "MAX_SNAPSHOT_AGE_MS_DEFAULT", "MIN_SNAPSHOTS_TO_KEEP",
    "MIN_SNAPSHOTS_TO_KEEP_DEFAULT", "MAX_REF_AGE_MS", "GC_ENABLED", "GC_ENABLED_DEFAULT",
]

# -- metadata files ---------------------------------------------------------------------------
PREVIOUS_VERSIONS_MAX = "write.metadata.previous-versions-max"
PREVIOUS_VERSIONS_MAX_DEFAULT = 100
DELETE_AFTER_COMMIT = "write.metadata.delete-after-commit.enabled"
DELETE_AFTER_COMMIT_DEFAULT = False
METADATA_COMPRESSION = "write.metadata.compression-codec"
#: Where metadata files are written instead of ``<location>/metadata``.
METADATA_PATH = "write.metadata.path"

# -- commits ----------------------------------------------------------------------------------
COMMIT_NUM_RETRIES = "commit.retry.num-retries"
COMMIT_MIN_WAIT_MS = "commit.retry.min-wait-ms"
COMMIT_MAX_WAIT_MS = "commit.retry.max-wait-ms"
COMMIT_TOTAL_TIMEOUT_MS = "commit.retry.total-timeout-ms"
MANIFEST_MERGE_ENABLED = "commit.manifest-merge.enabled"
MANIFEST_MERGE_ENABLED_DEFAULT = True
MANIFEST_MIN_COUNT_TO_MERGE = "commit.manifest.min-count-to-merge"
MANIFEST_MIN_COUNT_TO_MERGE_DEFAULT = 100
MANIFEST_TARGET_SIZE = "commit.manifest.target-size-bytes"
MANIFEST_TARGET_SIZE_DEFAULT = 8 * 1024 * 1024

# -- writing data -----------------------------------------------------------------------------
TARGET_FILE_SIZE = "write.target-file-size-bytes"
TARGET_FILE_SIZE_DEFAULT = 512 * 1024 * 1024
DELETE_TARGET_FILE_SIZE = "write.delete.target-file-size-bytes"
DELETE_TARGET_FILE_SIZE_DEFAULT = 64 * 1024 * 1024
METRICS_DEFAULT = "write.metadata.metrics.default"
METRICS_COLUMN_PREFIX = "write.metadata.metrics.column."
METRICS_MAX_INFERRED = "write.metadata.metrics.max-inferred-column-defaults"
METRICS_MAX_INFERRED_DEFAULT = 100
PARQUET_BLOOM_FILTER_COLUMN_PREFIX = "write.parquet.bloom-filter-enabled.column."
PARQUET_STATS_COLUMN_PREFIX = "write.parquet.stats-enabled.column."
#: Per-column properties whose key names the column (moved by renames, dropped with it).
COLUMN_PROPERTY_PREFIXES = (METRICS_COLUMN_PREFIX, PARQUET_BLOOM_FILTER_COLUMN_PREFIX,
                            PARQUET_STATS_COLUMN_PREFIX)
DATA_PATH = "write.data.path"
PARQUET_COMPRESSION = "write.parquet.compression-codec"
PARQUET_COMPRESSION_DEFAULT = "zstd"
#: Row-level operations: how ``DELETE`` / ``UPDATE`` / ``MERGE`` change files.
DELETE_MODE = "write.delete.mode"
UPDATE_MODE = "write.update.mode"
MERGE_MODE = "write.merge.mode"
COPY_ON_WRITE = "copy-on-write"
MERGE_ON_READ = "merge-on-read"
#: Which concurrent commits a row-level operation tolerates (Java ``IsolationLevel``).
DELETE_ISOLATION_LEVEL = "write.delete.isolation-level"
UPDATE_ISOLATION_LEVEL = "write.update.isolation-level"
MERGE_ISOLATION_LEVEL = "write.merge.isolation-level"
SERIALIZABLE = "serializable"
SNAPSHOT = "snapshot"
#: Write-audit-publish: snapshots written with a ``wap.id`` are staged, not made current.
WAP_ENABLED = "write.wap.enabled"
WAP_ID = "wap.id"

# -- reading ----------------------------------------------------------------------------------
NAME_MAPPING = "schema.name-mapping.default"
SPLIT_SIZE = "read.split.target-size"
SPLIT_SIZE_DEFAULT = 128 * 1024 * 1024

# -- snapshot retention and garbage collection ------------------------------------------------
MAX_SNAPSHOT_AGE_MS = "history.expire.max-snapshot-age-ms"
MAX_SNAPSHOT_AGE_MS_DEFAULT = 5 * 24 * 60 * 60 * 1000
MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
MIN_SNAPSHOTS_TO_KEEP_DEFAULT = 1
MAX_REF_AGE_MS = "history.expire.max-ref-age-ms"
GC_ENABLED = "gc.enabled"
GC_ENABLED_DEFAULT = True


def _props(source: Any) -> Mapping[str, str]:
    if isinstance(source, Mapping):
        return source
    props = getattr(source, "properties", None)
    return props if props is not None else {}


def str_property(source: Any, key: str, default: str | None = None) -> str | None:
    return _props(source).get(key, default)


def int_property(source: Any, key: str, default: int) -> int:
    """An integer property; ValidationError naming the key when it is not one."""
    raw = _props(source).get(key)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValidationError(f"table property {key}={raw!r} is not an integer") from None


def bool_property(source: Any, key: str, default: bool) -> bool:
    """``true`` / ``false`` (any case); ValidationError naming the key otherwise."""
    raw = _props(source).get(key)
    if raw is None:
        return default
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    raise ValidationError(f"table property {key}={raw!r} is not a boolean")


def choice_property(source: Any, key: str, choices: tuple[str, ...], default: str) -> str:
    """One of ``choices`` (case-insensitive); ValidationError listing them otherwise."""
    raw = _props(source).get(key)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value not in choices:
        raise ValidationError(
            f"table property {key}={raw!r} must be one of {', '.join(choices)}")
    return value
