"""Issue 19, point 13, in a real browser: ref names are text, never HTML, wherever plotly draws
them (lanes, legends, hover labels), and a snapshot id above 2^53 stays exact in the scripts
(JavaScript numbers round 9007199254740993 to ...992)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.table import snapshot_producer
from floe.types import LONG, STRING, NestedField
from tests.conftest import screenshot

pytestmark = pytest.mark.django_db(transaction=True)

BIG_ID = 9007199254740993  # 2^53 + 1: a JavaScript number cannot hold it
TAG = "<b>x</b><img src=x onerror=alert(1)>"
BRANCH = "<i>dev</i>&amp;"
#: A partition value that would end the figure's <script> element, then markup for plotly.
VALUE = "</script><script>window.pwned = 1</script><b>p</b>"
TABLE = "/catalogs/local/namespaces/db/tables/refs/"


@pytest.fixture
def site(tmp_path: Path, settings: Any, live_server: Any, monkeypatch: pytest.MonkeyPatch
         ) -> str:
    """``db.refs``: its first snapshot has id 2^53 + 1 and a tag named like HTML, a branch
    named like HTML gets a snapshot of its own, main one more."""
    catalog = FileSystemCatalog("local", str(tmp_path))
    catalog.create_namespace(("db",))
    schema = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "s", STRING))
    table = catalog.create_table("db.refs", schema)

    def rows(n: int) -> pa.Table:
        return pa.table({"id": pa.array(range(n), pa.int64()), "s": ["a"] * n})

    with monkeypatch.context() as m:
        m.setattr(snapshot_producer, "new_snapshot_id", lambda: BIG_ID)
        table = table.append(rows(3))
    assert table.current_snapshot().snapshot_id == BIG_ID
    table.manage_snapshots().create_tag(TAG, BIG_ID).create_branch(BRANCH, BIG_ID).commit()
    table = catalog.load_table("db.refs")
    table.append(rows(2), branch=BRANCH)
    table.append(rows(4))
    parts = catalog.create_table("db.parts", schema, parse_partition_by("s", schema))
    parts.append(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": [VALUE, "a", "a"]}))
    settings.FLOE_WAREHOUSE = str(tmp_path)
    settings.FLOE_ALLOW_ANONYMOUS = True
    return str(live_server.url)


def _drawn(page: Any) -> None:
    page.wait_for_function(
        "() => ['timeline', 'totals-chart'].every(id => { const gd = document.getElementById(id);"
        " return gd && gd._fullLayout && gd.querySelector('.main-svg'); })")


def test_ref_names_are_drawn_as_text(page: Any, site: str) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(site + TABLE)
    _drawn(page)
    lanes = page.evaluate("() => Array.from(document.querySelectorAll("
                          "'#timeline .ytick text')).map(t => t.textContent)")
    assert f"tag: {TAG}" in lanes and BRANCH in lanes, lanes
    legend = page.evaluate("() => Array.from(document.querySelectorAll("
                           "'#totals-chart .legendtext')).map(t => t.textContent)")
    assert BRANCH in legend, legend
    # nothing of the names became markup: no image, no bold or italic text, no alert
    assert page.locator("#timeline img, #totals-chart img").count() == 0
    styled = page.evaluate("() => Array.from(document.querySelectorAll("
                           "'#timeline tspan, #totals-chart tspan')).filter(t => "
                           "/bold|italic/.test(t.getAttribute('style') || '')).length")
    assert styled == 0
    # a hover label (the totals chart: SVG, so plotly hovers without WebGL) on the branch's
    # first point: the branch's name as text and the exact id
    label = page.evaluate("""id => {
        const gd = document.getElementById('totals-chart');
        const n = gd._fullData.findIndex(t => t.legendgroup !== 'main' &&
                                              Array.from(t.customdata).includes(id));
        Plotly.Fx.hover(gd, [{curveNumber: n,
                              pointNumber: Array.from(gd._fullData[n].customdata).indexOf(id)}]);
        return document.querySelector('#totals-chart .hoverlayer').textContent;
    }""", str(BIG_ID))
    assert f"{BRANCH} · {BIG_ID}" in label, label
    # the timeline's WebGL points hover only with a GPU: their labels as plotly reads them
    refs = page.evaluate("() => document.getElementById('timeline')._fullData"
                         ".find(t => t.name === 'refs').text")
    assert f"tag {TAG} → {BIG_ID}" in [html.unescape(t) for t in refs]
    assert not any("<" in t for t in refs), refs
    screenshot(page, "ref-names")
    assert not dialogs


def test_a_snapshot_id_above_2_53_stays_exact(page: Any, site: str) -> None:
    page.goto(site + TABLE)
    _drawn(page)
    ids = page.evaluate("() => document.getElementById('timeline')._fullData"
                        ".flatMap(t => Array.from(t.customdata))")
    assert str(BIG_ID) in ids and all(isinstance(i, str) for i in ids), ids
    # "pick two snapshots to compare": the link names the exact ids
    page.check("#timeline-compare")
    page.evaluate("""id => { const gd = document.getElementById('timeline');
        const newest = gd._fullData.find(t => t.name === 'append');
        gd.emit('plotly_click', {points: [{customdata: id}]});
        gd.emit('plotly_click', {points: [{customdata: newest.customdata[
            newest.customdata.length - 1]}]}); }""", str(BIG_ID))
    href = page.locator("#compare-link").get_attribute("href")
    assert f"from={BIG_ID}&" in href, href
    # a click on the point opens that snapshot, not its rounded neighbour
    page.uncheck("#timeline-compare")
    with page.expect_navigation():
        page.evaluate("id => document.getElementById('timeline')"
                      ".emit('plotly_click', {points: [{customdata: id}]})", str(BIG_ID))
    assert page.url.endswith(f"/snapshots/{BIG_ID}/")
    assert page.locator("#snapshot-id").inner_text() == str(BIG_ID)


def test_sorting_a_list_keeps_ids_above_2_53_apart(page: Any, site: str) -> None:
    """floe.js sorts table.sortable lists by their cells' numbers: two ids that differ only
    past 2^53 must not compare equal."""
    page.goto(site + TABLE)
    order = page.evaluate("""() => {
        const t = document.createElement('table');
        t.className = 'data sortable';
        t.innerHTML = '<thead><tr><th>id</th></tr></thead><tbody>' +
            ['9007199254740993', '9007199254740992', '12', '-9007199254740993']
              .map(v => '<tr><td>' + v + '</td></tr>').join('') + '</tbody>';
        document.querySelector('main').appendChild(t);
        window.floe.sortable(t);
        t.tHead.rows[0].cells[0].click();
        return Array.from(t.tBodies[0].rows).map(r => r.cells[0].textContent);
    }""")
    assert order == ["-9007199254740993", "12", "9007199254740992", "9007199254740993"]


def test_partition_values_are_text_in_the_charts(page: Any, site: str) -> None:
    """A partition value is drawn by plotly too (the skew chart's bars, a histogram's title),
    and was written into the page inside a <script> element."""
    parts = "/catalogs/local/namespaces/db/tables/parts/partitions/"
    page.goto(site + parts + "?source=manifests&partition=" + quote(f"s={VALUE}"))
    page.wait_for_selector("#chart-skew[data-drawn=true]")
    page.wait_for_selector("#chart-partition-histogram[data-drawn=true]")
    assert page.evaluate("() => window.pwned") is None
    ticks = page.evaluate("() => Array.from(document.querySelectorAll("
                          "'#chart-skew .xtick text')).map(t => t.textContent)")
    assert f"s={VALUE}" in ticks, ticks
    title = page.locator("#chart-partition-histogram .gtitle").text_content()
    assert title == f"File sizes, s={VALUE}"
    assert page.locator("#chart-skew tspan[style*=bold]").count() == 0


def test_json_read_by_the_scripts_keeps_ids_above_2_53(page: Any, site: str) -> None:
    """floe.parseJSON (floe.js), which tasks.js reads a run's JSON with: whole numbers past
    2^53 come back as exact strings, everything else as JSON.parse gives it."""
    page.goto(site + TABLE)
    got = page.evaluate("""() => window.floe.parseJSON(
        '{"id": 9007199254740993, "n": -9007199254740993, "small": 12, "f": 1.5e3,' +
        ' "s": "ids 9007199254740993 \\\\" 1", "list": [2571000000000000203, 0.5, null, true]}')""")
    assert got == {"id": "9007199254740993", "n": "-9007199254740993", "small": 12, "f": 1500,
                   "s": 'ids 9007199254740993 " 1',
                   "list": ["2571000000000000203", 0.5, None, True]}
