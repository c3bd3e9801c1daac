"""Health metrics: computed from metadata and the current manifest list, thresholds stated."""

from __future__ import annotations

import dataclasses

import pytest

from tests.factories import BASE_MS, write_history_table
from floe.catalog.filesystem import FileSystemCatalog
from floe.health import attention, partition_skew, table_health, table_metrics
from floe.inspect import file_rows
from floe.manifest import read_manifest_list
from floe.table import Table

DAY = 86_400_000


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Table:
    root = tmp_path_factory.mktemp("wh")
    write_history_table(root)
    return FileSystemCatalog("local", str(root)).load_table("shop.orders")


def _by_key(metrics: list[dict]) -> dict[str, dict]:  # type: ignore[type-arg]
    return {m["key"]: m for m in metrics}


def test_metrics_with_file_sizes(table: Table) -> None:
    md = table.metadata
    snap = md.current_snapshot()
    assert snap is not None
    sizes = [r["file_size_in_bytes"] for r in file_rows(table.io, md, snap) if r["content"] == "data"]
    metrics = _by_key(table_health(
        md, now_ms=snap.timestamp_ms, manifests=read_manifest_list(table.io, snap.manifest_list or ""),
        data_file_sizes=sizes))
    small = metrics["small_file_ratio"]
    assert small["value"] == 1.0 and small["status"] == "warn"
    assert "16777216" in small["threshold"]  # 1/4 of the table's 64 MiB target
    assert metrics["delete_file_ratio"]["value"] == 0.0
    assert metrics["manifests_per_snapshot"]["value"] == len(read_manifest_list(table.io, snap.manifest_list or ""))
    assert metrics["manifests_per_snapshot"]["status"] == "ok"
    assert all(m["threshold"] for m in metrics.values())


def test_snapshots_past_expiry_skip_referenced_ones(table: Table) -> None:
    md = table.metadata
    # Ten days after the first appends: the four early snapshots are old; the tag and the
    # branch hold two of them; the current one (committed now) is young.
    metrics = _by_key(table_health(md, now_ms=BASE_MS + 10 * DAY))
    referenced = {r.snapshot_id for r in md.refs.values()}
    old = [s for s in md.snapshots if s.timestamp_ms < BASE_MS + 5 * DAY and s.snapshot_id not in referenced]
    assert metrics["snapshots_not_expired"]["value"] == len(old) == 2
    assert metrics["snapshots_not_expired"]["status"] == "warn"
    longer = dataclasses.replace(md, properties={**md.properties, "history.expire.max-snapshot-age-ms": str(30 * DAY)})
    assert _by_key(table_health(longer, now_ms=BASE_MS + 10 * DAY))["snapshots_not_expired"]["value"] == 0


def test_without_file_sizes_the_small_file_ratio_uses_the_average(table: Table) -> None:
    metrics = _by_key(table_health(table.metadata, now_ms=BASE_MS))
    assert metrics["small_file_ratio"]["value"] is None
    assert "average" in metrics["small_file_ratio"]["detail"]
    assert metrics["manifests_per_snapshot"]["status"] == "unknown"


def test_empty_table(table: Table) -> None:
    md = dataclasses.replace(table.metadata, current_snapshot_id=None, snapshots=(), refs={})
    metrics = _by_key(table_health(md, now_ms=BASE_MS, manifests=[], data_file_sizes=[]))
    assert metrics["small_file_ratio"]["value"] is None
    assert metrics["snapshots_not_expired"]["value"] == 0


def test_partition_skew_is_judged_only_from_partition_statistics(table: Table) -> None:
    md = table.metadata
    assert "partition_skew" not in _by_key(table_health(md, now_ms=BASE_MS))  # no stats
    assert table_metrics(md, now_ms=BASE_MS)["partitions"] is None
    assert partition_skew([100, 100, 100, 100]) == 1.0
    assert partition_skew([]) is None and partition_skew([0, 0]) is None
    even = _by_key(table_health(md, now_ms=BASE_MS, partition_records=[10, 10, 10]))
    assert even["partition_skew"]["value"] == 1.0 and even["partition_skew"]["status"] == "ok"
    # one partition of 20 holds 209 of 228 rows: 209 / (228 / 20) = 18.3x the mean
    skewed = [209] + [1] * 19
    n = table_metrics(md, now_ms=BASE_MS, partition_records=skewed)
    assert n["partitions"] == 20 and n["partition_skew"] == pytest.approx(209 / (228 / 20))
    sign = _by_key(table_health(md, now_ms=BASE_MS, partition_records=skewed))["partition_skew"]
    assert sign["status"] == "warn" and "10×" in sign["threshold"]
    assert "20 partitions" in sign["detail"]
    # at the threshold: not flagged; empty partitions only: unknown
    ten = [10] + [0] * 9  # 10 / (10 / 10)
    assert _by_key(table_health(md, now_ms=BASE_MS, partition_records=ten)
                   )["partition_skew"]["status"] == "ok"
    assert _by_key(table_health(md, now_ms=BASE_MS, partition_records=[0])
                   )["partition_skew"]["status"] == "unknown"


def test_skew_is_one_warning_but_no_share_in_the_attention(table: Table) -> None:
    md = table.metadata
    plain = table_health(md, now_ms=BASE_MS)
    skewed = table_health(md, now_ms=BASE_MS, partition_records=[1000] + [1] * 99)
    assert attention(skewed) == pytest.approx(attention(plain) + 1)
