"""Issue 19, point 11, in a real browser on the demo warehouse: every chart of the overview,
scan-plan and partitions pages still draws with the partial plotly.js bundle
(scripts/build-plotly.sh), the bundle registers exactly the trace types those pages use, and
plotly.js runs after the page's numbers are shown (preloaded, but not one of the scripts the
page waits for)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest

from tests.conftest import screenshot

pytestmark = pytest.mark.django_db(transaction=True)

SESSIONS = "/catalogs/local/namespaces/web/tables/sessions/"
EVENTS = "/catalogs/local/namespaces/web/tables/events/"

#: Every chart of the site: (page, chart element id, the SVG layer plotly draws its traces in;
#: None for WebGL traces, drawn on a canvas). The timeline is WebGL from
#: views_table.TIMELINE_WEBGL_FROM snapshots on ("?webgl": the tests lower it for that page).
CHARTS = [
    (SESSIONS, "timeline", ".scatterlayer .trace"),
    (SESSIONS + "?webgl", "timeline", None),
    (SESSIONS, "totals-chart", ".scatterlayer .trace"),
    (EVENTS + "plan/?filter=" + quote("ts >= TIMESTAMP '2025-03-05 00:00:00+00:00'"),
     "chart-funnel", ".funnellayer .trace"),
    (SESSIONS + "partitions/?source=manifests", "chart-table-histogram", ".barlayer .trace"),
    (SESSIONS + "partitions/?source=manifests", "chart-skew", ".barlayer .trace"),
    (SESSIONS + "partitions/?source=manifests&partition=" + quote("country=DE"),
     "chart-partition-histogram", ".barlayer .trace"),
]


@pytest.fixture
def charts(page: Any, site: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Opens a page of CHARTS in ``page`` (the live server runs in this process, so the
    WebGL threshold can be lowered for the "?webgl" page)."""
    from explorer.tables import views_table

    def goto(url: str) -> None:
        monkeypatch.setattr(views_table, "TIMELINE_WEBGL_FROM",
                            1 if url.endswith("?webgl") else 1_000, raising=False)
        page.goto(site + url)
    return goto


def _drawn(page: Any, chart: str, layer: str | None) -> list[str]:
    """Waits for plotly's SVG of ``chart`` and its traces; returns their trace types."""
    page.wait_for_function(
        "id => { const gd = document.getElementById(id);"
        " return gd && gd._fullData && gd.querySelector('svg.main-svg'); }", arg=chart)
    # WebGL traces draw on plotly's canvas, SVG traces into their layer
    page.wait_for_selector(f"#{chart} canvas.gl-canvas-context" if layer is None
                           else f"#{chart} {layer}", state="attached")
    return list(page.evaluate(
        "id => document.getElementById(id)._fullData.map(t => t.type)", chart))


def test_every_chart_on_every_page_draws(page: Any, charts: Any) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    for url, chart, layer in CHARTS:
        charts(url)
        assert _drawn(page, chart, layer), f"{chart} on {url} has no traces"
        screenshot(page, f"chart-{chart}{'-webgl' if layer is None else ''}")
    assert not errors


def test_the_bundle_registers_exactly_the_traces_the_pages_use(page: Any, charts: Any
                                                               ) -> None:
    """scattergl is registered by the page that draws it (Plotly.registerScattergl, see
    scripts/plotly/entry.js), the others by the bundle itself."""
    used: set[str] = set()
    registered: dict[str, set[str]] = {}
    for url, chart, layer in CHARTS:
        charts(url)
        used.update(_drawn(page, chart, layer))
        registered[url] = set(page.evaluate(
            "() => Object.keys(Plotly.PlotSchema.get().traces)"))
    assert used == {"scatter", "scattergl", "funnel", "bar"}
    assert set().union(*registered.values()) == used
    assert registered[SESSIONS + "?webgl"] == used
    assert registered[SESSIONS] == used - {"scattergl"}


def test_plotly_runs_after_the_numbers_are_shown(page: Any, site: str) -> None:
    """plotly.js is preloaded (its bytes arrive while the page is parsed), but it is not a
    script the page waits for: at DOMContentLoaded the overview's totals and health are in
    the page and plotly.js has not run, and it runs only once the page has been painted."""
    page.add_init_script("""(() => {
        let plotly;
        Object.defineProperty(window, 'Plotly', {configurable: true, get: () => plotly,
            set: value => {
                if (window.plotlyRan === undefined) window.plotlyRan = {
                    painted: performance.getEntriesByName('first-contentful-paint').length};
                plotly = value;
            }});
        document.addEventListener('DOMContentLoaded', () => {
            window.atDomContentLoaded = {
                plotly: typeof window.Plotly,
                totals: document.querySelectorAll('#totals td[data-col]').length,
                health: document.querySelectorAll('#health tbody tr').length};
        });
    })();""")
    html = page.goto(site + SESSIONS).text()
    _drawn(page, "timeline", ".scatterlayer .trace")
    seen = page.evaluate("() => window.atDomContentLoaded")
    assert seen["plotly"] == "undefined", seen
    assert seen["totals"] == 7 and seen["health"] >= 5, seen
    assert page.evaluate("() => window.plotlyRan") == {"painted": 1}
    assert not re.search(r'<script[^>]+src="[^"]*plotly', html)  # no blocking plotly script
    preload = re.findall(r'<link rel="preload" href="([^"]*plotly[^"]*)" as="script">', html)
    bundle = page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)"
                           ".filter(n => n.includes('plotly'))")
    assert len(bundle) == 1 and "/static/floe/plotly-partial.min" in bundle[0], bundle
    assert len(preload) == 1 and bundle[0].endswith(preload[0]), (preload, bundle)


def test_the_server_draws_the_overview_charts_until_plotly_replaces_them(page: Any,
                                                                        site: str) -> None:
    """The timeline and the totals are in the HTML as static SVG (explorer/tables/charts.py),
    so they are on screen with the page; plotly's interactive charts take their place, and
    without plotly.js (it cannot load) the static ones stay."""
    page.add_init_script("""document.addEventListener('DOMContentLoaded', () => {
        window.staticAtReady = ['timeline', 'totals-chart'].map(id =>
            document.querySelectorAll('#' + id + ' svg.static-chart').length);
        window.pointsAtReady = document.querySelectorAll('#timeline svg.static-chart circle')
            .length;
    });""")
    page.goto(site + SESSIONS)
    _drawn(page, "timeline", ".scatterlayer .trace")
    _drawn(page, "totals-chart", ".scatterlayer .trace")
    assert page.evaluate("() => window.staticAtReady") == [1, 1]
    assert page.evaluate("() => window.pointsAtReady") > 0
    assert page.locator("svg.static-chart").count() == 0  # replaced
    screenshot(page, "overview-charts-plotly")
    page.route("**/plotly-partial.min*.js", lambda route: route.abort())
    page.goto(site + SESSIONS)
    page.wait_for_load_state("load")
    assert page.locator("#timeline svg.static-chart").count() == 1
    assert page.locator("#totals-chart svg.static-chart path").count() >= 3  # a line a panel
    screenshot(page, "overview-charts-static")
