"""Issue 13 in a real browser, one test per defect of the pages (the client-side halves are
in tests/explorer/test_newcomer_pages.py and tests/api/test_api_newcomer.py): one navigation
for every table page, nothing wider than a 1,400 px window, a totals chart that follows each
branch with whole-number ticks, errors next to the form, diffs picked from lists, an API
reference served by the site, sortable lists, no "share" button to an external service."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.conftest import screenshot

pytestmark = pytest.mark.django_db(transaction=True)

EVENTS = "/catalogs/local/namespaces/web/tables/events/"
SESSIONS = "/catalogs/local/namespaces/web/tables/sessions/"
# Anonymous visitors (make run's default) also see the Actions tab saying how to get it.
TABS = ["Overview", "Snapshots", "Partitions", "Scan plan", "Preview", "History & evolution",
        "Diff", "Tasks", "Scans & commits", "Audit", "Actions · sign in"]


@pytest.fixture
def wide(browser: Any) -> Any:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def _tabs(page: Any) -> list[str]:
    return [t.strip() for t in page.locator("#table-tabs a").all_inner_texts()]


def test_every_table_page_is_reached_from_one_navigation(page: Any, site: str) -> None:
    """Defect 2: Partitions, Scan plan and Preview were not linked from the table's tabs."""
    page.goto(site + EVENTS)
    assert _tabs(page) == TABS
    for name, path in (("Partitions", "partitions/"), ("Scan plan", "plan/"),
                       ("Preview", "preview/"), ("Diff", "diff/")):
        with page.expect_navigation():
            page.locator("#table-tabs a", has_text=re.compile(f"^{name}$")).click()
        assert page.url.endswith(EVENTS + path)
        assert _tabs(page) == TABS  # the same navigation on every table page
        assert page.locator("#table-tabs a[aria-current=page]").inner_text() == name


def _width(page: Any) -> int:
    return int(page.evaluate("() => document.documentElement.scrollWidth"))


def test_wide_pages_scroll_inside_their_tables(wide: Any, site: str) -> None:
    """Defect 4: preview rows, scan-plan paths and manifest tables made the page wider than
    the window."""
    wide.goto(site + SESSIONS + "preview/?limit=50")
    assert wide.locator("#rows tbody tr").count() == 50
    assert _width(wide) <= 1400
    wide.goto(site + EVENTS + "plan/?files=all")
    assert _width(wide) <= 1400
    cut = wide.locator("#manifests td.mono").first
    assert cut.get_attribute("title"), "a cut-off path shows in full on hover"
    wide.goto(site + SESSIONS + "snapshots/")
    wide.locator("#snapshots tbody a").nth(0).click()
    wide.wait_for_selector("#manifests")
    assert _width(wide) <= 1400
    assert wide.locator("header.topbar").bounding_box()["width"] >= 1400 - 20
    screenshot(wide, "newcomer-snapshot")


def test_the_totals_chart_follows_each_branch_with_whole_number_ticks(page: Any, site: str
                                                                     ) -> None:
    """Defect 5: three stacked auto-scaled axes, fractional file-count ticks, and lines
    joining snapshots of different branches in time order."""
    page.goto(site + SESSIONS)
    page.wait_for_function("() => { const gd = document.getElementById('totals-chart');"
                           " return gd && gd._fullLayout && gd._fullLayout.yaxis3; }")
    traces = page.evaluate("() => document.getElementById('totals-chart')._fullData.map("
                           "t => ({name: t.name, axis: t.yaxis, y: Array.from(t.y)}))")
    rows = {t["name"]: t["y"] for t in traces if t["axis"] == "y"}
    assert set(rows) == {"main", "dev"}
    # main never shows dev's 95 rows, dev never shows main's later totals.
    assert 95 not in rows["main"] and rows["dev"] == [40, 70, 95]
    assert rows["main"][:2] == [40, 70]
    ticks = page.evaluate("() => { const L = document.getElementById('totals-chart')._fullLayout;"
                          " return [L.yaxis, L.yaxis2].flatMap(a => a._vals.map(v => v.text)); }")
    assert ticks and all(re.fullmatch(r"[\d,]+", t) for t in ticks), ticks
    titles = page.evaluate("() => { const L = document.getElementById('totals-chart')._fullLayout;"
                           " return [L.yaxis, L.yaxis2, L.yaxis3].map(a => a.domain[0]); }")
    assert len(set(titles)) == 3  # three panels, not three axes over one another
    screenshot(page, "newcomer-totals")


def test_no_share_button_to_an_external_service(page: Any, site: str) -> None:
    """Defect 11: plotly's toolbar offered to send the data to Chart Studio."""
    page.goto(site + EVENTS)
    page.wait_for_selector("#timeline .modebar", state="attached")
    titles = page.eval_on_selector_all(".modebar-btn", "els => els.map(e => e.dataset.title)")
    assert titles and not [t for t in titles if re.search("cloud|studio|share", t or "", re.I)]


def test_errors_keep_the_form_the_user_typed_into(page: Any, site: str) -> None:
    """Defect 6: Diff and Preview replaced the form with an error page naming a directory
    and epoch milliseconds."""
    page.goto(site + EVENTS + "preview/")
    page.fill("#id_as_of", "2001-01-01T00:00:00Z")
    page.fill("#id_columns", "event_id")
    with page.expect_navigation():
        page.click("#preview-form button[type=submit]")
    error = page.locator("#preview-error").inner_text()
    assert "web.events" in error and "2001-01-01 00:00:00 UTC" in error
    assert "/" not in error.split("UTC")[0] and not re.search(r"\d{13}", error)
    assert page.input_value("#id_as_of") == "2001-01-01T00:00:00Z"
    assert page.input_value("#id_columns") == "event_id"
    page.goto(site + EVENTS + "diff/")
    page.fill("#id_from", "nightly")
    page.fill("#id_to", "main")
    with page.expect_navigation():
        page.click("#diff-form button[type=submit]")
    assert "'nightly' is neither a snapshot id nor a branch or tag of web.events" in \
        page.locator("#diff-error").inner_text()
    assert page.input_value("#id_from") == "nightly"
    assert _tabs(page) == TABS


def test_diff_is_picked_from_the_snapshot_list_or_a_snapshot_page(page: Any, site: str) -> None:
    """Defect 7: two 19-digit ids typed by hand."""
    page.goto(site + SESSIONS + "snapshots/")
    radios = page.locator("#snapshots input[name=from]")
    radios.nth(radios.count() - 1).check()  # the oldest
    with page.expect_navigation():
        page.click("#compare-form button[type=submit]")
    assert "/diff/?" in page.url and "from=" in page.url and "to=" in page.url
    assert page.locator("#diff-summary").is_visible()
    page.goto(site + SESSIONS + "snapshots/")
    page.locator("#snapshots tbody tr").first.locator("td.mono a").click()
    with page.expect_navigation():
        page.click("#diff-parent")
    assert page.locator("#diff-summary tr[data-side=added]").is_visible()
    page.goto(site + SESSIONS + "diff/?from=v1&to=dev")
    assert page.locator("#diff-summary tr[data-side=added] [data-col=rows]").inner_text() == "25"


def test_diff_is_picked_on_the_timeline(page: Any, site: str) -> None:
    """Defect 7, on the chart: with "pick two snapshots to compare" on, two clicks on the
    timeline (in either order) link the diff from the older to the newer; off, a click opens
    the snapshot."""
    page.goto(site + EVENTS)
    page.wait_for_function("() => { const gd = document.getElementById('timeline');"
                           " return gd && gd._fullData; }")
    ids, times = page.evaluate("""() => {
        const d = JSON.parse(document.getElementById('timeline-data').textContent);
        return [d.columns.snapshot_id, d.columns.timestamp_ms]; }""")
    order = sorted(range(len(ids)), key=lambda i: times[i])
    older, newer = ids[order[0]], ids[order[-1]]

    def click(snapshot_id: str) -> None:
        # what plotly reports for a click on that point (WebGL picking needs a GPU; the
        # timeline test in test_pages.py clicks a drawn point where it can)
        page.evaluate("id => document.getElementById('timeline')"
                      ".emit('plotly_click', {points: [{customdata: id}]})", snapshot_id)

    page.check("#timeline-compare")
    click(newer)
    assert page.locator("#compare-picked").inner_text().startswith(f"from {newer}")
    assert page.locator("#compare-link").is_hidden()
    click(older)
    assert page.locator("#compare-picked").inner_text() == f"{older} → {newer}"
    with page.expect_navigation():
        page.click("#compare-link")
    assert page.url.endswith(f"diff/?from={older}&to={newer}")
    assert page.locator("#diff-summary tr[data-side=added]").is_visible()
    page.go_back()
    page.wait_for_function("() => { const gd = document.getElementById('timeline');"
                           " return gd && gd._fullData; }")
    page.uncheck("#timeline-compare")
    with page.expect_navigation():
        click(older)
    assert page.url.endswith(f"/snapshots/{older}/")


def test_the_api_reference_is_served_by_the_site_and_calls_the_api(page: Any, site: str) -> None:
    """Defect 8: the "API schema" link downloaded a YAML file. Now Swagger UI from the sidecar
    package: nothing fetched from elsewhere, every operation listed, "Try it out" calls the
    API."""
    page.goto(site + "/")
    with page.expect_navigation():
        page.click("header.topbar a:text-is('API')")
    assert page.url.endswith("/api/reference/")
    op = page.locator("#operations-catalogs-catalogs_namespaces_list")
    op.locator(".opblock-summary").click()
    op.locator("button.try-out__btn").click()
    op.locator("input[placeholder=catalog]").fill("local")
    op.locator("button.execute").click()
    response = op.locator(".live-responses-table tbody .response-col_status").first
    response.wait_for()
    assert response.inner_text().strip() == "200"
    assert '"name": "web"' in op.locator(".live-responses-table tbody .response-col_description pre"
                                         ).first.inner_text()
    # every operation of the schema is there
    schema = page.request.get(site + "/api/schema/?format=json").json()
    count = sum(len([m for m in item if m in ("get", "post", "put", "patch", "delete")])
                for item in schema["paths"].values())
    assert page.locator(".opblock").count() == count
    screenshot(page, "newcomer-api-reference")
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(site + "/api/reference/")
    page.locator(".opblock").first.wait_for()
    page.wait_for_load_state("networkidle")
    assert requested and all(u.startswith((site, "data:", "blob:")) for u in requested), \
        [u for u in requested if not u.startswith(site)]  # no CDN


def test_lists_sort_by_a_click_on_a_heading(page: Any, site: str) -> None:
    """Defect 11: the home page was one flat list; lists could not be sorted. A heading
    sorts on the server (every page of the list, not the rows on screen), within groups."""
    page.goto(site + "/")
    groups = page.eval_on_selector_all("#tables tbody", "els => els.map(e => e.dataset.group)")
    assert groups == ["local/iot", "local/sales", "local/web"]
    web = page.locator("#tables tbody[data-group='local/web'] tr[data-table]")
    assert web.evaluate_all("rows => rows.map(r => r.dataset.table)") == ["web.events",
                                                                         "web.sessions"]
    heading = "#tables thead th:has-text('Rows in data files') a"
    with page.expect_navigation():
        page.click(heading)  # numbers: largest first
    assert page.url.endswith("?sort=-records")
    assert page.locator("#tables thead th[data-sort-key=records]").get_attribute(
        "aria-sort") == "descending"
    assert web.evaluate_all("rows => rows.map(r => r.dataset.table)") == ["web.events",
                                                                         "web.sessions"]
    with page.expect_navigation():
        page.click(heading)  # ascending
    assert page.url.endswith("?sort=records")
    assert web.evaluate_all("rows => rows.map(r => r.dataset.table)") == ["web.sessions",
                                                                         "web.events"]
    assert page.eval_on_selector_all("#tables tbody", "els => els.map(e => e.dataset.group)"
                                     ) == groups
