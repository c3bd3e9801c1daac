"""One table's pages over a real floe-written table: every page renders, the numbers are
floe.inspect's, bad input is a clear 400/404, a corrupt manifest names the file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

from explorer.tables import details, selectors
from floe import inspect
from floe.diff import schema_for_snapshot
from floe.io import FileIO
from floe.manifest import read_manifest, read_manifest_list
from tests.factories import HistoryTable
from tests.factories import history_metadata as _md

pytestmark = pytest.mark.django_db

BASE = "/catalogs/local/namespaces/shop/tables/orders/"


def _html(client: Client, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, response.content.decode()[:2000]
    return response.content.decode()


def _cell(html: str, row_attr: str, col: str) -> str:
    row = re.search(rf"<tr[^>]*{row_attr}.*?</tr>", html, re.S)
    assert row, row_attr
    m = re.search(rf'data-col="{col}"[^>]*>([^<]*)<', row.group(0))
    assert m, (row_attr, col)
    return m.group(1).strip()


def test_every_page_renders(client: Client, history: HistoryTable) -> None:
    sid = history.snapshot_ids[-1]
    for url in [
        BASE, BASE + "snapshots/", BASE + f"snapshots/{sid}/", BASE + f"snapshots/{sid}/manifests/0/",
        BASE + f"snapshots/{sid}/manifests/0/files/0/", BASE + "history/", BASE + "diff/",
        BASE + f"diff/?from={history.snapshot_ids[0]}&to={sid}",
        BASE + f"snapshots/{sid}/manifests/0/?status=existing&content=data&sort=-record_count",
    ]:
        _html(client, url)


def test_overview_shows_the_metadata_and_current_totals(client: Client, history: HistoryTable) -> None:
    md = _md(history)
    described = inspect.describe(md)
    html = _html(client, BASE)
    assert f"v{described['format_version']}" in html and described["table_uuid"] in html
    summary = md.current_snapshot().summary  # type: ignore[union-attr]
    totals = re.search(r'id="totals".*?</table>', html, re.S).group(0)  # type: ignore[union-attr]
    assert re.search(rf'data-col="records">{summary["total-records"]}<', totals)
    assert re.search(rf'data-col="data-files">{summary["total-data-files"]}<', totals)
    # schema tree with ids, specs and orders with the current one marked, refs
    for f in md.schema().as_struct().fields:
        assert f'data-field-id="{f.field_id}"' in html
    assert re.search(r'data-spec-id="1">spec 1 <span class="badge current">', html)
    assert "id_bucket = bucket[2](id)" in html
    assert 'data-ref="audit"' in html and 'data-ref="dev"' in html and 'data-ref="main"' in html
    # health panel, thresholds stated
    for key in ["small_file_ratio", "delete_file_ratio", "deleted_row_ratio", "manifests_per_snapshot",
                "snapshots_not_expired"]:
        assert f'data-metric="{key}"' in html
    assert "write.target-file-size-bytes (64.0 MiB) = 16.0 MiB" in html
    assert "history.expire.max-snapshot-age-ms (432000000 ms)" in html
    # timeline: data embedded, plotly served locally (loaded by the chart's script), no CDN
    assert 'id="timeline-data"' in html and "cdn" not in html.lower()
    assert re.search(r'data-plotly="/static/floe/plotly-partial\.min\.js"', html)


def test_timeline_data_comes_from_summaries(client: Client, history: HistoryTable) -> None:
    md = _md(history)
    table = selectors.table_load(catalog="local", namespace="shop", name="orders")
    data = details.snapshot_timeline(table=table)
    rows = inspect.snapshot_rows(md)
    cols = data["columns"]
    assert cols["snapshot_id"] == [str(r["snapshot_id"]) for r in rows]
    assert cols["operation"] == [r["operation"] for r in rows]
    assert cols["total_records"] == [int(r["summary"]["total-records"]) for r in rows]
    assert cols["added_records"][0] == 30
    assert data["lanes"][0] == "main" and "dev" in data["lanes"] and "tag: audit" in data["lanes"]
    dev = data["lanes"].index("dev")
    # dev points at the third snapshot, whose history is main's: it has no points of its own
    assert dev not in cols["lane"]
    assert [(t["tag"], t["kind"]) for t in data["tags"]] == [("main", "branch"), ("dev", "branch"), ("audit", "tag")]
    assert "(no branch)" not in data["lanes"]
    assert data["current"] == len(rows) - 1 and rows[-1]["is_current"]


def test_plotly_js_is_the_partial_bundle_served_as_a_static_file(
        client: Client, history: HistoryTable) -> None:
    """Hashed names, compression and the one-year cache of static files under `make run`:
    tests/explorer/test_run_supervisor.py."""
    html = _html(client, BASE)
    src = re.search(r'data-plotly="(/static/[^"]+)"', html).group(1)  # type: ignore[union-attr]
    response = client.get(src)
    assert response.status_code == 200
    head = b"".join(response.streaming_content)[:300]  # type: ignore[attr-defined]
    assert head.startswith(b"/**\n* plotly.js v") and b"partial bundle" in head
    assert client.get("/assets/plotly-7.1.0.min.js").status_code == 404


def test_snapshot_page_lists_manifests_with_inspect_counts(client: Client, history: HistoryTable) -> None:
    md = _md(history)
    io = FileIO()
    sid = history.snapshot_ids[-1]
    html = _html(client, BASE + f"snapshots/{sid}/")
    rows = inspect.manifest_rows(io, md, md.snapshot_by_id(sid))
    for i, m in enumerate(rows):
        assert _cell(html, f'data-manifest="{i}"', "added-files") == str(m["added_files_count"])
        assert _cell(html, f'data-manifest="{i}"', "existing-rows") == str(m["existing_rows_count"])
        assert m["path"] in html
    # decoded partition summaries (region strings, not bytes)
    assert "<code>region</code>: [" in html
    # parent chain
    parents = [s.snapshot_id for s in md.ancestors_of(sid)][1:]
    assert re.findall(r'<ol class="chain" id="parents">(.*?)</ol>', html, re.S)
    for p in parents:
        assert str(p) in html


def test_manifest_page_reads_only_that_manifest_and_filters(client: Client, history: HistoryTable, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    md = _md(history)
    io = FileIO()
    sid = history.snapshot_ids[-1]
    manifests = read_manifest_list(io, md.snapshot_by_id(sid).manifest_list)  # type: ignore[union-attr, arg-type]
    read: list[str] = []
    real = details.read_entries
    monkeypatch.setattr(details, "read_entries", lambda io, m, **kw: read.append(m.manifest_path) or real(io, m, **kw))
    idx = next(i for i, m in enumerate(manifests) if (m.deleted_files_count or 0) > 0)
    html = _html(client, BASE + f"snapshots/{sid}/manifests/{idx}/")
    assert read == [manifests[idx].manifest_path]
    entries = read_manifest(io, manifests[idx])
    assert len(re.findall(r"<tr data-position=", html)) == len(entries)
    html = _html(client, BASE + f"snapshots/{sid}/manifests/{idx}/?status=deleted")
    assert set(re.findall(r'data-status="(\w+)"', html)) == {"deleted"}
    html = _html(client, BASE + f"snapshots/{sid}/manifests/{idx}/?sort=-record_count")
    counts = [int(c) for c in re.findall(r'data-col="records">(\d+)<', html)]
    assert counts == sorted(counts, reverse=True)
    assert read == [manifests[idx].manifest_path]  # cached by path


def test_file_page_decodes_stats_with_the_snapshots_schema(client: Client, history: HistoryTable) -> None:
    md = _md(history)
    io = FileIO()
    first = md.snapshot_by_id(history.snapshot_ids[0])
    manifests = read_manifest_list(io, first.manifest_list)  # type: ignore[union-attr, arg-type]
    entry = read_manifest(io, manifests[0])[0]
    html = _html(client, BASE + f"snapshots/{first.snapshot_id}/manifests/0/files/0/")  # type: ignore[union-attr]
    schema = schema_for_snapshot(md, first)
    assert schema.schema_id == 0
    stats = inspect.column_stats(schema, entry)
    for s in stats:
        assert _cell(html, f'data-field-id="{s["field_id"]}"', "name") == f"<code>{s['name']}" or \
            f"<code>{s['name']}</code>" in html
        assert _cell(html, f'data-field-id="{s["field_id"]}"', "values") == str(s["value_count"])
    assert "<code>name</code>" in html and "<code>extra</code>" in html  # schema 0's names
    assert f">{entry.data_file.record_count}<" in html


def test_history_page_shows_schema_and_spec_evolution(client: Client, history: HistoryTable) -> None:
    md = _md(history)
    html = _html(client, BASE + "history/")
    for change in ["renamed", "promoted", "dropped", "added"]:
        assert f'data-change="{change}"' in html
    assert "int → long" in html and "name → label" in html
    assert "id_bucket = bucket[2](id)" in html
    for entry in md.snapshot_log:
        assert f'data-snapshot="{entry.snapshot_id}"' in html
    for entry in md.metadata_log:
        assert entry.metadata_file in html


def test_diff_page_lists_added_and_removed_files(client: Client, history: HistoryTable) -> None:
    md = _md(history)
    io = FileIO()
    a, b = history.snapshot_ids[0], history.snapshot_ids[-1]
    before = {r["file_path"]: r for r in inspect.file_rows(io, md, md.snapshot_by_id(a))}
    after = {r["file_path"]: r for r in inspect.file_rows(io, md, md.snapshot_by_id(b))}
    html = _html(client, BASE + f"diff/?from={a}&to={b}")
    added = re.search(r'id="added-files".*?</table>', html, re.S).group(0)  # type: ignore[union-attr]
    removed = re.search(r'id="removed-files".*?</table>', html, re.S).group(0)  # type: ignore[union-attr]
    assert set(re.findall(r'data-file="([^"]+)"', added)) == set(after) - set(before)
    assert set(re.findall(r'data-file="([^"]+)"', removed)) == set(before) - set(after)
    rows = sum(after[p]["record_count"] for p in set(after) - set(before))
    assert _cell(html, 'data-side="added"', "rows") == str(rows)
    assert 'data-change="renamed"' in html


@pytest.mark.parametrize(
    ("url", "status", "message"),
    [
        ("/catalogs/nope/namespaces/shop/tables/orders/", 404, "catalog &#x27;nope&#x27; does not exist"),
        ("/catalogs/local/namespaces/nope/tables/orders/", 404, "namespace"),
        ("/catalogs/local/namespaces/shop/tables/nope/", 404, "table shop.nope does not exist"),
        (BASE + "snapshots/12345/", 404, "snapshot 12345 does not exist"),
        (BASE + "snapshots/{sid}/manifests/99/", 404, "no manifest #99"),
        (BASE + "snapshots/{sid}/manifests/0/files/9999/", 404, "no entry #9999"),
        ("/catalogs/local/namespaces/shop/tables/../", 400, "invalid table name"),
        ("/catalogs/local/namespaces/../tables/orders/", 400, "invalid namespace"),
        ("/catalogs/local/namespaces/shop/tables/..orders/", 400, "invalid table name"),
        ("/catalogs/local/namespaces/shop..x/tables/orders/", 400, "invalid namespace"),
        (BASE + "diff/?from=abc&to=1", 400, "neither a snapshot id nor a branch or tag"),
    ],
)
def test_bad_input(client: Client, history: HistoryTable, url: str, status: int, message: str) -> None:
    html = _html(client, url.replace("{sid}", str(history.snapshot_ids[-1])), status)
    assert message in html


def test_a_corrupt_manifest_names_the_broken_file(client: Client, fresh_history: HistoryTable) -> None:
    history = fresh_history
    md = _md(history)
    sid = history.snapshot_ids[-1]
    manifests = read_manifest_list(FileIO(), md.snapshot_by_id(sid).manifest_list)  # type: ignore[union-attr, arg-type]
    Path(manifests[0].manifest_path).write_bytes(b"Obj\x01garbage")
    response = client.get(BASE + f"snapshots/{sid}/manifests/0/")
    assert response.status_code == 422
    assert manifests[0].manifest_path in response.content.decode()
    assert client.get(BASE + f"diff/?from={history.snapshot_ids[0]}&to={sid}").status_code == 422
    # the overview still renders; its health panel names the unreadable file
    html = _html(client, BASE)
    assert 'data-metric="unreadable"' in html and manifests[0].manifest_path in html


def test_a_corrupt_manifest_list_names_the_broken_file(client: Client, fresh_history: HistoryTable) -> None:
    md = _md(fresh_history)
    snap = md.snapshot_by_id(fresh_history.snapshot_ids[1])
    Path(snap.manifest_list).write_bytes(b"not avro")  # type: ignore[union-attr, arg-type]
    response = client.get(BASE + f"snapshots/{snap.snapshot_id}/")  # type: ignore[union-attr]
    assert response.status_code == 422
    assert snap.manifest_list in response.content.decode()  # type: ignore[union-attr, operator]


def test_table_list_links_rows_to_the_overview(client: Client, history: HistoryTable) -> None:
    html = _html(client, "/")
    assert f'href="{BASE}"' in html


def test_a_truncated_manifest_names_the_broken_file(client: Client, fresh_history: HistoryTable) -> None:
    md = _md(fresh_history)
    sid = fresh_history.snapshot_ids[-1]
    path = Path(read_manifest_list(FileIO(), md.snapshot_by_id(sid).manifest_list)[0].manifest_path)  # type: ignore[union-attr, arg-type]
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    response = client.get(BASE + f"snapshots/{sid}/manifests/0/")
    assert response.status_code == 422
    assert str(path) in response.content.decode()
