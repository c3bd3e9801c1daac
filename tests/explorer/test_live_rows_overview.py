"""Issue 19, point 6: the overview's live rows on the demo's ``web.sessions`` (position
deletes and a partition-scoped equality delete) against an actual scan: counted when cheap and
labelled so, a labelled bound when not; never a number on either side of the truth."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from floe.catalog.filesystem import directory_table
from floe.scan import plan_files
from floe.scan.readers import plan_to_table

pytestmark = pytest.mark.django_db

SESSIONS = "/catalogs/local/namespaces/web/tables/sessions/"


def _scanned(demo: Path) -> tuple[int, int]:
    """(rows a scan returns, rows in the data files) of the demo's web.sessions."""
    table = directory_table(str(demo / "web" / "sessions"))
    rows = plan_to_table(table.io, plan_files(table.io, table.metadata, cache=None)).num_rows
    snap = table.current_snapshot()
    assert snap is not None
    return rows, int(snap.summary["total-records"])


def _live_cell(html: str) -> tuple[str, str]:
    cell = re.search(r'data-col="live-records" data-how="(\w+)">(.*?)</td>', html, re.S)
    assert cell, "no live-records cell"
    return cell.group(1), re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", cell.group(2))).strip()


def _note(html: str) -> str:
    note = re.search(r'id="live-note">(.*?)</p>', html, re.S)
    assert note
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", note.group(1))).strip()


def test_the_demo_sessions_live_rows_are_counted_and_match_a_scan(demo: Path) -> None:
    truth, records = _scanned(demo)
    assert truth < records - 6  # the equality delete removes more than one row per record
    page = Client().get(SESSIONS).content.decode()
    how, text = _live_cell(page)
    assert (how, text) == ("counted", f"{truth:,} counted")
    note = _note(page)
    assert "counted" in note and "estimate" not in note and "≈" not in page


def test_the_api_gives_the_same_count(demo: Path) -> None:
    truth, _ = _scanned(demo)
    totals = Client().get("/api" + SESSIONS, HTTP_ACCEPT="application/json").json()["totals"]
    assert (totals["live_records"], totals["live_exact"], totals["live_how"],
            totals["live_min"], totals["live_max"]) == (truth, True, "counted", truth, truth)


def test_too_much_to_count_shows_a_labelled_bound_that_holds(demo: Path, monkeypatch: Any
                                                               ) -> None:
    from explorer.tables import details

    monkeypatch.setattr(details, "LIVE_COUNT_MAX_ROWS", 0)
    truth, records = _scanned(demo)
    page = Client().get(SESSIONS).content.decode()
    how, text = _live_cell(page)
    assert (how, text) == ("bounds", f"at most {records:,}")
    assert truth <= records
    summary = directory_table(str(demo / "web" / "sessions")).metadata.current_snapshot().summary
    note = _note(page)
    assert note.startswith(
        f"At most {records:,} live rows: {summary['total-position-deletes']} position and "
        f"{summary['total-equality-deletes']} equality deletes in "
        f"{summary['total-delete-files']} delete files remove an unknown number of rows")
    assert "preview" in note
    totals = Client().get("/api" + SESSIONS, HTTP_ACCEPT="application/json").json()["totals"]
    assert (totals["live_records"], totals["live_exact"], totals["live_how"],
            totals["live_min"], totals["live_max"]) == (None, False, "bounds", 0, records)


def test_a_table_without_deletes_is_exact_from_its_summary(demo: Path) -> None:
    page = Client().get("/catalogs/local/namespaces/web/tables/events/").content.decode()
    assert _live_cell(page) == ("summary", "4,650")
    assert "exact" in _note(page)
