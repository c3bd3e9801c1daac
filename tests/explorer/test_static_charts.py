"""The overview's charts as the server draws them (explorer/tables/charts.py): in the HTML of
the overview, a point per snapshot, a lane per branch and tag, names escaped; a long history
stays a small document (points on one pixel drawn once)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from explorer.tables.charts import timeline_svg, totals_svg
from tests.explorer.tasks_support import load, make_table, rows

pytestmark = pytest.mark.django_db


def test_the_overview_has_both_charts_drawn_with_names_as_text(tmp_path: Path,
                                                                settings: Any) -> None:
    make_table(tmp_path, "ns")  # three appends
    table = load(tmp_path, "ns")
    table.manage_snapshots().create_tag("<b>v1</b>", table.current_snapshot().snapshot_id
                                        ).commit()
    table = load(tmp_path, "ns")
    table.append(rows(1000, 5))
    settings.FLOE_WAREHOUSE = str(tmp_path)
    settings.FLOE_ALLOW_ANONYMOUS = True
    html = Client().get("/catalogs/local/namespaces/ns/tables/events/").content.decode()
    timeline = re.search(r'<div id="timeline"[^>]*>(<svg class="static-chart".*?</svg>)</div>',
                         html, re.S)
    totals = re.search(r'<div id="totals-chart"[^>]*>(<svg class="static-chart".*?</svg>)',
                       html, re.S)
    assert timeline and totals
    svg = timeline.group(1)
    # four snapshots (points; one more ring on the current), main's and the tag's heads
    assert len(re.findall(r'<circle cx="[\d.]+" cy="[\d.]+" r="[\d.]+" fill="#', svg)) >= 4
    assert svg.count('fill="#0f766e"') == 2
    assert "&lt;b&gt;v1&lt;/b&gt;" in svg and "<b>" not in svg
    assert ">main</text>" in svg and ">append</text>" in svg
    assert totals.group(1).count('<path d="M') == 3  # main's line in each panel


def _timeline(n: int) -> dict[str, Any]:
    cols: dict[str, list[Any]] = {
        "snapshot_id": [str(i) for i in range(n)],
        "timestamp_ms": [1_700_000_000_000 + i * 60_000 for i in range(n)],
        "operation": ["append" if i % 5 else "delete" for i in range(n)],
        "lane": [0] * n, "added_records": [100] * n, "deleted_records": [0] * n}
    cols.update({k: [i * 10 for i in range(n)] for k in (
        "total_records", "total_data_files", "total_files_size")})
    return {"columns": cols, "count": n, "current": n - 1, "tags": [], "lanes": ["main"],
            "lineages": [{"name": "main", "points": list(range(n))}]}


def test_ten_thousand_snapshots_stay_a_small_document() -> None:
    small, big = _timeline(50), _timeline(10_000)
    assert len(timeline_svg(small)) < 20_000
    assert len(timeline_svg(big)) < 150_000 and len(totals_svg(big)) < 150_000
    # every snapshot of the small one is a point of its own
    assert len(re.findall(r"<circle ", timeline_svg(small))) == 50 + 1 + 2  # + ring, legend
