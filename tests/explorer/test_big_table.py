"""Browsing a big table reads only what a page shows (issue 4, "a table with 10k snapshots
and 1M files is browsable").

Scale here: 1,000 snapshots and 100,000 live files (100 per snapshot, a merged manifest of
1,000 entries every 10 snapshots, so the current manifest list holds 100 manifests), built
once per session by ``benchmarks/big_table.py``; ``benchmarks/web.py`` times the same pages
on the full 10k / 1M table. Reads are counted by :mod:`floe.stats` (every manifest and
manifest list decoded), per request, with the explorer's caches cold before the first one.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import time
from pathlib import Path
from types import ModuleType
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.test import Client

from floe import stats
from floe.catalog.filesystem import FileSystemCatalog, resolve_metadata_location
from floe.io import FileIO
from floe.manifest import ManifestWriter, read_manifest, read_manifest_list
from floe.metadata import TableMetadata

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

SNAPSHOTS, FILES, MERGE_EVERY = 1_000, 100_000, 10
PAGE_SIZE = 50
BASE = "/catalogs/local/namespaces/bench/tables/big/"
API = "/api/catalogs/local/namespaces/bench/tables/big/"


def _big_table_module() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "big_table.py"
    spec = importlib.util.spec_from_file_location("big_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("big_table", module)
    spec.loader.exec_module(module)
    return module


big_table = _big_table_module()


@pytest.fixture(scope="session")
def big_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("big") / "warehouse"
    big_table.build_big_table(str(root / big_table.NAMESPACE / big_table.TABLE), SNAPSHOTS,
                              FILES, merge_every=MERGE_EVERY, workers=1)
    return root


@pytest.fixture
def warehouse(big_warehouse: Path, settings) -> Path:  # type: ignore[no-untyped-def]
    """The big table in the ``local`` catalog; the explorer's cache starts empty (conftest)."""
    settings.FLOE_WAREHOUSE = str(big_warehouse)
    settings.FLOE_PAGE_SIZE = PAGE_SIZE
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "PAGE_SIZE": PAGE_SIZE}
    return big_warehouse


@pytest.fixture
def md(warehouse: Path) -> TableMetadata:
    return FileSystemCatalog("local", str(warehouse)).load_table("bench.big").metadata


def _get(client: Client, url: str) -> tuple[str, dict[str, int]]:
    """The page and the manifests / manifest lists it decoded."""
    stats.reset()
    response = client.get(url)
    assert response.status_code == 200, response.content.decode()[:2000]
    reads = stats.reads()
    return response.content.decode(), {k: reads.get(k, 0) for k in (stats.MANIFEST, stats.MANIFEST_LIST)}


def _reads(manifests: int, lists: int) -> dict[str, int]:
    return {stats.MANIFEST: manifests, stats.MANIFEST_LIST: lists}


NOTHING = _reads(0, 0)


# --- the fixture table is what it says ----------------------------------------------------------


def test_the_table_has_the_stated_size_and_readers_agree(md: TableMetadata) -> None:
    assert len(md.snapshots) == SNAPSHOTS and len(md.snapshot_log) == SNAPSHOTS
    current = md.current_snapshot()
    assert current is not None and current.summary["total-data-files"] == str(FILES)
    io = FileIO()
    manifests = read_manifest_list(io, current.manifest_list)
    assert len(manifests) == SNAPSHOTS // MERGE_EVERY
    assert sum(m.added_files_count + m.existing_files_count for m in manifests) == FILES  # type: ignore[operator]
    entries = read_manifest(io, manifests[-1])
    assert len(entries) == manifests[-1].added_files_count + manifests[-1].existing_files_count  # type: ignore[operator]
    df = entries[0].data_file
    assert df.partition[1] in range(16) and len(df.lower_bounds or {}) == 10
    assert dict(df.value_counts or {}) == {c: df.record_count for c in range(1, 11)}


def test_manifests_are_written_as_floe_writes_them(warehouse: Path) -> None:
    schema = big_table.big_table_schema()
    spec = big_table.big_table_spec(schema)
    writer = ManifestWriter(FileIO(), str(warehouse / "unused.avro"), spec, schema, 2, 1)
    assert big_table.manifest_avro_schema(schema, spec) == writer.avro_schema()
    assert big_table._manifest_metadata(schema, spec) == writer._metadata()


def test_hand_encoded_data_files_are_fastavros_encoding() -> None:
    import io

    import fastavro

    schema = big_table.big_table_schema()
    avro = big_table.manifest_avro_schema(schema, big_table.big_table_spec(schema))
    parsed = fastavro.parse_schema(next(f for f in avro["fields"] if f["name"] == "data_file")["type"])
    plan = big_table._Plan("/t", 10, 1000, 5, 0, tuple(range(1, 11)))
    pool = big_table._stat_pool(0)
    for f in big_table._files(plan, 0)[:3] + big_table._files(plan, 9)[-3:]:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, big_table.data_file_record(f, pool))
        assert big_table.encode_data_file(f, pool) == buf.getvalue()


def test_pyiceberg_plans_every_file(md: TableMetadata, warehouse: Path) -> None:
    from pyiceberg.table import StaticTable

    location = resolve_metadata_location(FileIO(), str(warehouse / "bench" / "big"))
    table = StaticTable.from_metadata(location)
    assert len(table.metadata.snapshots) == SNAPSHOTS
    assert len(table.scan().plan_files()) == FILES


# --- what each page reads -------------------------------------------------------------------------


def test_overview_with_timeline_reads_no_manifest(client: Client, warehouse: Path) -> None:
    """Timeline and totals come from snapshot summaries; health reads the current manifest
    list only (its counts say the current manifests hold too many files to size them)."""
    html, reads = _get(client, BASE)
    assert reads == _reads(0, 1)
    assert 'id="timeline-data"' in html
    assert _get(client, BASE)[1] == NOTHING


def _rows(html: str, attr: str) -> int:
    return len(re.findall(rf"<tr {attr}=", html))


def _has_next(html: str) -> bool:
    return bool(re.search(r'page=2">Next', html))


def test_snapshot_list_is_paged_and_reads_no_manifest(client: Client, warehouse: Path) -> None:
    html, reads = _get(client, BASE + "snapshots/")
    assert reads == NOTHING
    assert _rows(html, "data-snapshot") == PAGE_SIZE and _has_next(html)
    html, reads = _get(client, BASE + "snapshots/?page=3")
    assert reads == NOTHING and _rows(html, "data-snapshot") == PAGE_SIZE


def test_history_is_paged_and_reads_no_manifest(client: Client, warehouse: Path) -> None:
    html, reads = _get(client, BASE + "history/")
    assert reads == NOTHING
    assert _rows(html, "data-snapshot") == PAGE_SIZE and _has_next(html)


def test_snapshot_page_reads_no_manifest(client: Client, md: TableMetadata) -> None:
    for snapshot in (md.current_snapshot(), md.snapshots[SNAPSHOTS // 2 + 3]):
        assert snapshot is not None
        url = BASE + f"snapshots/{snapshot.snapshot_id}/"
        html, reads = _get(client, url)
        assert reads == _reads(0, 1)
        assert _get(client, url)[1] == NOTHING
    # the current snapshot's manifest list is long: the page shows one page of it
    current = md.current_snapshot()
    assert current is not None
    total = len(read_manifest_list(FileIO(), current.manifest_list))
    html, _ = _get(client, BASE + f"snapshots/{current.snapshot_id}/")
    assert total > settings.FLOE_PAGE_SIZE
    assert html.count("data-manifest=") == settings.FLOE_PAGE_SIZE and "Next" in html
    last_page = -(-total // settings.FLOE_PAGE_SIZE)
    html, _ = _get(client, BASE + f"snapshots/{current.snapshot_id}/?page={last_page}")
    assert f'data-manifest="{total - 1}"' in html and "Next" not in html


@pytest.mark.parametrize("url", [BASE + "snapshots/{id}/", API + "snapshots/{id}/manifests/"])
def test_snapshot_manifests_decode_the_manifest_list_once(client: Client, md: TableMetadata,
                                                          url: str) -> None:
    current = md.current_snapshot()
    assert current is not None
    assert _get(client, url.format(id=current.snapshot_id))[1] == _reads(0, 1)


def test_manifest_page_reads_one_manifest_and_is_paged(client: Client, md: TableMetadata) -> None:
    current = md.current_snapshot()
    assert current is not None
    url = BASE + f"snapshots/{current.snapshot_id}/manifests/0/"
    html, reads = _get(client, url)
    assert reads == _reads(1, 1)
    assert _rows(html, "data-position") == PAGE_SIZE and _has_next(html)
    assert _get(client, url)[1] == NOTHING
    # another page, a filter and a sort of the same manifest: decoded once, cached by path
    for more in ("?page=4", "?status=existing&sort=-record_count", "files/7/"):
        assert _get(client, url + more)[1] == NOTHING


def test_api_snapshot_list_is_paged_and_reads_no_manifest(client: Client, warehouse: Path) -> None:
    body, reads = _get(client, API + "snapshots/")
    assert reads == NOTHING
    page = json.loads(body)
    assert page["count"] == SNAPSHOTS and len(page["results"]) == PAGE_SIZE
    assert page["next"] and "page=2" in page["next"]


def test_api_files_read_only_the_manifests_of_the_page(client: Client, md: TableMetadata) -> None:
    current = md.current_snapshot()
    assert current is not None
    url = API + f"snapshots/{current.snapshot_id}/files/"
    body, reads = _get(client, url)
    assert reads == _reads(1, 1)
    page = json.loads(body)
    assert page["count"] == FILES and len(page["results"]) == PAGE_SIZE and page["next"]
    # a page deep in the list: the manifest list's counts locate it
    body, reads = _get(client, url + "?page=1500")
    assert reads == _reads(1, 0) and len(json.loads(body)["results"]) == PAGE_SIZE
    assert _get(client, url + "?page=1500")[1] == NOTHING


def test_api_snapshot_and_manifests(client: Client, md: TableMetadata) -> None:
    current = md.current_snapshot()
    assert current is not None
    assert _get(client, API + f"snapshots/{current.snapshot_id}/")[1] == NOTHING
    body, reads = _get(client, API + f"snapshots/{current.snapshot_id}/manifests/")
    assert reads == _reads(0, 1) and len(json.loads(body)) == SNAPSHOTS // MERGE_EVERY
    assert _get(client, API + "history/")[1] == NOTHING


def _recent_filter(md: TableMetadata) -> str:
    current = md.current_snapshot()
    assert current is not None
    day = time.strftime("%Y-%m-%d", time.gmtime(current.timestamp_ms / 1000 - 86_400))
    return urlencode({"filter": f"ts >= TIMESTAMP '{day} 00:00:00'"})


@pytest.mark.parametrize("base", [BASE, API])
def test_plan_reads_only_the_manifests_its_partition_filter_keeps(
    client: Client, md: TableMetadata, base: str
) -> None:
    url = base + "plan/?" + _recent_filter(md)
    _, reads = _get(client, url)
    assert 0 < reads[stats.MANIFEST] <= 5 and reads[stats.MANIFEST_LIST] >= 1
    assert _get(client, url)[1] == NOTHING


def test_partitions_page_reads_every_manifest_of_the_snapshot_once(
    client: Client, md: TableMetadata
) -> None:
    """The one page that reads every manifest of a snapshot, by design: per-partition counts
    and the file-size histogram need every live file. It decodes each manifest once; the
    second request decodes nothing."""
    _, reads = _get(client, BASE + "partitions/")
    assert reads[stats.MANIFEST] == SNAPSHOTS // MERGE_EVERY
    assert _get(client, BASE + "partitions/")[1] == NOTHING
