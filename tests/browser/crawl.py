"""Crawl a live explorer from its home page in headless Chromium, as a newcomer clicks
through it: every same-site link, bounded to one page per kind of URL (the path with ids and
numbers replaced, and the names of its query parameters), each checked for an HTTP status
below 400 (the page and everything it loads), no console error, and no horizontal overflow
at a 1,400 px window. Used by tests/browser/test_crawl.py (the demo warehouse) and
tests/interop/test_explorer_crawl_java.py (tables written by Spark + Iceberg Java)."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urldefrag, urljoin, urlsplit

from tests.conftest import ARTIFACTS

VIEWPORT = {"width": 1400, "height": 900}

# Links a person follows but a crawl must not: they change state, leave the site or download.
SKIP = re.compile(r"^/(accounts/logout|admin)/|[?&]format=(csv|parquet|json|api|yaml)\b"
                  r"|^/api/schema/|/download/")


def kind(path_and_query: str) -> str:
    """``/…/snapshots/123456789/manifests/0/?page=2`` → ``/…/snapshots/N/manifests/N/?page``."""
    parts = urlsplit(path_and_query)
    path = re.sub(r"/-?\d+(?=/)", "/N", parts.path)
    keys = sorted({k for k, _ in parse_qsl(parts.query, keep_blank_values=True)})
    return path + ("?" + "&".join(keys) if keys else "")


@dataclass
class Problem:
    url: str
    what: str


@dataclass
class CrawlResult:
    pages: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    post_only: list[str] = field(default_factory=list)

    def report(self) -> str:
        return "\n".join(f"{p.url}: {p.what}" for p in self.problems)


def crawl(browser: Any, site: str, *, name: str, max_pages: int = 400, start: str = "/",
          kind_of: Callable[[str], str] = kind) -> CrawlResult:
    """Visit every kind of page (``kind_of``) reachable from ``start``; screenshots (the
    window, not the whole page) go to ``test-artifacts/crawl-<name>/``."""
    out_dir = ARTIFACTS / f"crawl-{name}"
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.png"):
        old.unlink()
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(30_000)
    result = CrawlResult()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}")
            if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("response", lambda r: errors.append(f"{r.status} for {r.url}")
            if r.status >= 400 and r.url.startswith(site) else None)
    seen_kinds: set[str] = set()
    queue: deque[str] = deque([start])
    seen_kinds.add(kind_of(start))
    try:
        while queue and len(result.pages) < max_pages:
            url = queue.popleft()
            errors.clear()
            # Every script of a page runs before "load" (charts draw then), except Swagger UI's
            # (the API reference), which draws once it has fetched the schema.
            response = page.goto(site + url, wait_until="load")
            if page.locator("#swagger-ui").count():
                page.locator("#swagger-ui .opblock").first.wait_for()
            status = response.status if response is not None else 0
            if status == 405 and url.startswith("/api/") and "GET" not in (
                    response.headers.get("allow", "") if response is not None else ""):
                # The browsable API links its POST-only actions (the tasks' "preview"): the
                # page it shows is the form to post, with the right status.
                result.post_only.append(url)
                errors[:] = [e for e in errors if "405" not in e]
            elif status >= 400:
                result.problems.append(Problem(url, f"HTTP {status}"))
            width = page.evaluate("() => document.documentElement.scrollWidth")
            if width > VIEWPORT["width"]:
                result.problems.append(Problem(url, f"page is {width} px wide"))
            result.problems += [Problem(url, e) for e in errors]
            result.pages.append(url)
            slug = re.sub(r"[^A-Za-z0-9]+", "-", url).strip("-")[:150] or "home"
            page.screenshot(path=str(out_dir / f"{len(result.pages):03d}-{slug}.png"))
            hrefs = page.eval_on_selector_all(
                "a[href]:not([download])", "els => els.map(e => e.getAttribute('href'))")
            for href in hrefs:
                target = urldefrag(urljoin(site + url, href))[0]
                if not target.startswith(site + "/"):
                    continue
                rel = target[len(site):]
                if SKIP.search(rel):
                    continue
                k = kind_of(rel)
                if k not in seen_kinds:
                    seen_kinds.add(k)
                    queue.append(rel)
    finally:
        context.close()
    return result
