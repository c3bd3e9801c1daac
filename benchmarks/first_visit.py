"""First visit of a table's overview in headless Chromium, beside the server's time (issue 19,
point 11: 2.3–3.7 s before, while the server answered in ≤ 60 ms; target ≤ 1 s).

Serves the demo warehouse of ``make run`` (built under ``--dir`` when missing) as ``make run``
does: static files collected with hashed names and compressed copies, served by WhiteNoise
from waitress. Then, ``--runs`` times, a fresh browser context (an empty cache: a first visit)
opens the overview of ``--table`` and reports, in ms from the start of the navigation:

- **server**: from sending the request to the HTML's first byte (Navigation Timing);
- **html**: the whole HTML received;
- **numbers**: the first contentful paint (the totals and health are in the HTML);
- **ready**: DOMContentLoaded;
- **shown**: the frame that first shows both charts, the timeline and the totals (the server
  draws them as static SVG into the HTML, explorer/tables/charts.py);
- **plotly**: both charts drawn by plotly in their place, interactive (plotly.js is preloaded
  by the page's head and run after its first paint);
- the bytes of plotly.js transferred and decoded.

With the plotly Python package installed, the same visits are timed once more with its full
plotly.js (every trace type) answered in place of the site's partial bundle, for comparison
(answered by the browser's driver, so with no transfer time at all). ``server (cold)`` is the
first request of the overview to the fresh web process, outside the browser.

Usage::

    python benchmarks/first_visit.py [--dir DIR] [--runs 5] [--table web.sessions]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT)]

TARGET_MS = 1000.0
CHROMIUM = os.environ.get("FLOE_CHROMIUM", "/usr/bin/chromium")
#: As the browser tests start it (tests/conftest.py).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
#: Recorded in the page, at the frame that first shows them: both charts of the overview in any
#: form (the server's static SVG or plotly's), and both drawn by plotly.
CHARTS_DRAWN = """(() => {
    const ids = ['timeline', 'totals-chart'];
    const shown = () => ids.every(id => {
        const gd = document.getElementById(id);
        return gd && gd.querySelector('svg.static-chart, svg.main-svg');
    });
    const drawn = () => ids.every(id => {
        const gd = document.getElementById(id);
        return gd && gd._fullLayout && gd.querySelector('svg.main-svg');
    });
    const poll = () => {
        if (window.chartsShownAt === undefined && shown())
            window.chartsShownAt = performance.now();
        if (drawn()) window.chartsDrawnAt = performance.now();
        else requestAnimationFrame(poll);
    };
    requestAnimationFrame(poll);
})();"""
MEASURE = """() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const paint = performance.getEntriesByName('first-contentful-paint')[0];
    const plotly = performance.getEntriesByType('resource').filter(
        e => e.name.includes('plotly'));
    return {server: nav.responseStart - nav.requestStart, html: nav.responseEnd,
            numbers: paint ? paint.startTime : null, ready: nav.domContentLoadedEventEnd,
            shown: window.chartsShownAt, charts: window.chartsDrawnAt,
            plotly_transfer: plotly.reduce((n, e) => n + e.transferSize, 0),
            plotly_decoded: plotly.reduce((n, e) => n + e.decodedBodySize, 0)};
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(directory: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FLOE_", "DJANGO_", "CELERY_"))}
    env.pop("DATABASE_URL", None)
    env.update(FLOE_WAREHOUSE=str(directory / "warehouse"), FLOE_VAR_DIR=str(directory / "var"),
               FLOE_STATIC_ROOT=str(directory / "var" / "static"), FLOE_ALLOW_ANONYMOUS="true",
               DJANGO_SETTINGS_MODULE="explorer.settings", PYTHONPATH=str(ROOT))
    return env


def prepare(directory: Path) -> dict[str, str]:
    """The demo warehouse, the database and the collected static files, as `make run`."""
    env = _env(directory)
    warehouse = directory / "warehouse"
    if not (warehouse / ".floe-demo-complete").exists():
        subprocess.run([sys.executable, "-c", "import sys; from explorer.run import "
                        "ensure_demo_warehouse as e; e(sys.argv[1])", str(warehouse)],
                       env=env, cwd=ROOT, check=True)
    (directory / "var").mkdir(parents=True, exist_ok=True)
    for command in (["migrate", "--verbosity=0"], ["collectstatic", "--noinput", "--verbosity=0"]):
        subprocess.run([sys.executable, "-m", "django", *command], env=env, cwd=ROOT, check=True)
    return env


def _get_ms(url: str) -> float:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        response.read()
        assert response.status == 200, url
    return (time.perf_counter() - t0) * 1000


def serve(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    from explorer.run import web_command

    port = _free_port()
    proc = subprocess.Popen(web_command("127.0.0.1", port), env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc, base
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the web server did not start") from None
            time.sleep(0.1)


def _full_plotly() -> bytes | None:
    """The plotly Python package's plotly.js (every trace type), or None."""
    try:
        import plotly
    except ImportError:
        return None
    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.exists():
        return None
    # the site's bundle registers scattergl when a page asks (scripts/plotly/entry.js); the
    # full one has every trace registered already
    return path.read_bytes() + b"\nPlotly.registerScattergl = function () {};\n"


def visits(url: str, runs: int, replace_plotly: bytes | None = None) -> list[dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for _ in range(runs):
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                page = context.new_page()
                page.add_init_script(CHARTS_DRAWN)
                if replace_plotly is not None:
                    # answered by the browser's driver, without the network (the same
                    # file gzip-compressed is 1.47 MB)
                    page.route("**/plotly-partial.min*.js", lambda route: route.fulfill(
                        status=200, body=replace_plotly,
                        headers={"Content-Type": "text/javascript"}))
                page.goto(url)
                page.wait_for_function("() => window.chartsDrawnAt !== undefined",
                                       timeout=60_000)
                out.append(page.evaluate(MEASURE))
                context.close()
        finally:
            browser.close()
    return out


def _report(name: str, rows: list[dict[str, Any]]) -> bool:
    def p50(key: str) -> float:
        return statistics.median(r[key] for r in rows)

    kib = rows[-1]["plotly_transfer"] / 1024
    decoded = rows[-1]["plotly_decoded"] / 1024
    ok = p50("shown") <= TARGET_MS
    print(f"{name:<34} {p50('server'):8.0f} {p50('html'):6.0f} {p50('numbers'):8.0f} "
          f"{p50('ready'):7.0f} {p50('shown'):7.0f} {p50('charts'):7.0f} "
          f"{kib:8.0f}/{decoded:<6.0f} "
          f"{'ok' if ok else 'OVER'}")
    return ok


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "floe-first-visit"))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--table", default="web.sessions", help="namespace.table of the demo")
    args = p.parse_args(argv)
    directory = Path(args.dir)
    env = prepare(directory)
    ns, name = args.table.rsplit(".", 1)
    proc, base = serve(env)
    try:
        url = f"{base}/catalogs/local/namespaces/{ns}/tables/{name}/"
        cold = _get_ms(url)
        warm = statistics.median(_get_ms(url) for _ in range(10))
        print(f"overview of {args.table} at {url}")
        print(f"server (outside the browser): cold {cold:.0f} ms (first request to a fresh "
              f"web process), warm p50 {warm:.0f} ms")
        print(f"in headless Chromium, first visits (empty cache), p50 of {args.runs}; ms from "
              f"the start of the navigation; target: charts shown ≤ {TARGET_MS:.0f} ms")
        print(f"{'plotly.js':<34} {'server':>8} {'html':>6} {'numbers':>8} {'ready':>7} "
              f"{'shown':>7} {'plotly':>7} {'KiB sent/decoded':>15}")
        ok = _report("partial bundle (the site's)", visits(url, args.runs))
        full = _full_plotly()
        if full is not None:
            _report("full (plotly package), for comparison", visits(url, args.runs, full))
        print(json.dumps({"target_ms": TARGET_MS, "within_target": ok}))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
