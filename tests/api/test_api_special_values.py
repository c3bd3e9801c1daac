"""NaN, ±Infinity, float32 and nested values in the API (issue 19, points 2, 3 and 14): every
JSON response is strict JSON with non-finite floats spelled "NaN", "Infinity", "-Infinity" (the
preview answered 500 on ±Infinity, the manifests and files of a table partitioned by a double
did too); a float32 is its shortest form; CSV exports write nested values as JSON text."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.special_values import write_special_table

pytestmark = pytest.mark.django_db

LAB = "/api/catalogs/local/namespaces/lab/tables/special/"
SESSIONS = "/api/catalogs/local/namespaces/web/tables/sessions/"


def _no_constant(name: str) -> Any:
    raise AssertionError(f"not strict JSON: the bare constant {name}")


def _strict(response: Any) -> Any:
    """The body as strict JSON (Python's json would accept a bare NaN or Infinity)."""
    assert response.status_code == 200, response.content[:300]
    return json.loads(response.content, parse_constant=_no_constant)


@pytest.fixture
def lab(tmp_path: Path, settings: Any) -> Path:
    root = tmp_path / "warehouse"
    write_special_table(root)
    settings.FLOE_WAREHOUSE = str(root)
    settings.FLOE_ALLOW_ANONYMOUS = True
    return root


def test_preview_spells_nan_and_infinities_and_float32_shortest(lab: Path) -> None:
    body = _strict(Client().get(LAB + "preview/", {"columns": "id,f,d,ok"}))
    assert sorted(body["rows"]) == [[1, 0.1, 0.1, True], [2, "NaN", "NaN", False],
                                    [3, "Infinity", "Infinity", None],
                                    [4, "-Infinity", "-Infinity", True]]


def test_preview_nested_values_are_json_values(lab: Path) -> None:
    body = _strict(Client().get(LAB + "preview/", {"filter": "id = 2",
                                                   "columns": "raw,device,tags,pages"}))
    assert body["rows"] == [["00ff02",
                             {"os": "linux", "version": 2,
                              "seen": "2024-05-06T07:08:09.000000+00:00"},
                             {"k": "NaN", "x'y": 1.5}, ["/a", None, '/b "c"']]]


def test_manifest_bounds_and_partition_values_spell_infinities(lab: Path) -> None:
    client = Client()
    sid = _strict(client.get(LAB))["current_snapshot_id"]
    (manifest,) = _strict(client.get(LAB + f"snapshots/{sid}/manifests/"))
    assert manifest["partitions"] == [{"field": "d", "contains_null": False,
                                       "contains_nan": True, "lower_bound": "-Infinity",
                                       "upper_bound": "Infinity",
                                       "lower_bound_text": "-Infinity",
                                       "upper_bound_text": "Infinity"}]
    files = _strict(client.get(LAB + f"snapshots/{sid}/files/"))["results"]
    assert sorted(str(f["partition"]["d"]) for f in files) == [
        "-Infinity", "0.1", "Infinity", "NaN"]
    _strict(client.get(LAB + "partitions/"))
    _strict(client.get(LAB + "plan/", {"filter": "d > 0"}))


def test_the_encoding_is_documented_in_the_schema(lab: Path) -> None:
    openapi = _strict(Client().get("/api/schema/", {"format": "json"}))
    described = openapi["info"]["description"]
    assert '"NaN"' in described and '"Infinity"' in described and '"-Infinity"' in described
    preview = openapi["paths"]["/api/catalogs/{catalog}/namespaces/{ns}/tables/{table}/preview/"]
    assert "JSON" in preview["get"]["description"]
    export = openapi["paths"]["/api/catalogs/{catalog}/namespaces/{ns}/tables/{table}/export/"]
    assert "JSON text" in export["get"]["description"]


def _csv_rows(content: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(content.decode())))


def test_export_csv_writes_nested_values_as_json_text(lab: Path) -> None:
    response = Client().get(LAB + "export/", {"format": "csv", "filter": "id = 2"})
    assert response.status_code == 200, response.content[:300]
    (row,) = _csv_rows(response.content)
    assert json.loads(row["device"]) == {"os": "linux", "version": 2,
                                         "seen": "2024-05-06T07:08:09.000000+00:00"}
    assert json.loads(row["tags"]) == {"k": "NaN", "x'y": 1.5}
    assert json.loads(row["pages"]) == ["/a", None, '/b "c"']
    assert row["raw"] == "00ff02" and row["id"] == "2" and row["ok"] == "false"


def test_export_csv_of_the_demo_sessions(demo: Path) -> None:
    """The demo's web.sessions (struct, map, list): a bare 500 before."""
    response = Client().get(SESSIONS + "export/", {"format": "csv", "filter": "session_id = 5"})
    assert response.status_code == 200, response.content[:300]
    (row,) = _csv_rows(response.content)
    assert json.loads(row["device"]) == {"os": "android", "version": 10}
    assert json.loads(row["tags"]) == {"k1": 5}
    assert json.loads(row["pages"]) == ["/p0", "/p1", "/p2"]
    assert row["session_id"] == "5" and row["active"] == "true"
