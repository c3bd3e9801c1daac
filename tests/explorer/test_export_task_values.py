"""The export task writes what the page and the API write (issue 19, point 2): a CSV export of a
table with struct, map and list columns failed on the worker after it was queued
(``ArrowInvalid: Unsupported Type:struct<…>``); now each nested value is its JSON text, binary
is hex, and the Parquet export keeps the nested types."""

from __future__ import annotations

import csv
import io
import json

import pyarrow.parquet as pq
import pytest

from tests.explorer.tasks_support import Worker, client_for, finished, unique, user_with
from tests.special_values import SEEN, write_special_table

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def _export(on_worker: Worker, fmt: str) -> bytes:
    namespace = unique("values")
    write_special_table(on_worker.warehouse, namespace)
    client = client_for(user_with("mia", "maintainer"))
    response = client.post("/api/tasks/", {"kind": "export", "params": {
        "namespace": namespace, "table": "special", "format": fmt}}, format="json")
    assert response.status_code == 201, response.content
    done = finished(response.json()["id"], worker=on_worker)
    assert done.state == "SUCCEEDED", (done.error, on_worker.log_tail())
    assert done.result["rows"] == 4
    download = client.get(client.get(f"/api/tasks/{done.pk}/").json()["download"])
    assert download.status_code == 200
    return b"".join(download.streaming_content)


def test_a_csv_export_task_writes_nested_values_as_json_text(on_worker: Worker) -> None:
    rows = {r["id"]: r for r in csv.DictReader(io.StringIO(_export(on_worker, "csv").decode()))}
    assert sorted(rows) == ["1", "2", "3", "4"]
    seen = SEEN.isoformat(timespec="microseconds")
    assert json.loads(rows["3"]["device"]) == {"os": "linux", "version": 3, "seen": seen}
    assert json.loads(rows["2"]["tags"]) == {"k": "NaN", "x'y": 1.5}
    assert json.loads(rows["1"]["pages"]) == ["/a", None, '/b "c"']
    assert rows["4"]["raw"] == "00ff04" and rows["1"]["ok"] == "true"


def test_a_parquet_export_task_keeps_the_nested_types(on_worker: Worker) -> None:
    table = pq.read_table(io.BytesIO(_export(on_worker, "parquet"))).sort_by("id")
    assert table.column("device").to_pylist()[0] == {"os": "linux", "version": 1, "seen": SEEN}
    assert table.column("tags").to_pylist()[0] == [("k", 0.1), ("x'y", 1.5)]
