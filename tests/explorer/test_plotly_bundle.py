"""Issue 19, point 11: the committed plotly.js bundle is the one scripts/build-plotly.sh
builds from scripts/plotly/ (the pinned versions and the traces of entry.js are in its
header; the browser half, tests/browser/test_charts.py, checks that the bundle registers
exactly the traces the pages draw)."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "frontend" / "static" / "floe" / "plotly-partial.min.js"
INPUTS = ROOT / "scripts" / "plotly"


def _header() -> str:
    text = BUNDLE.read_text(encoding="utf-8")
    assert text.startswith("/**")
    return text[: text.index("*/") + 2]


def test_the_bundle_names_the_pinned_versions_and_its_license() -> None:
    pins = json.loads((INPUTS / "package.json").read_text())["dependencies"]
    lock = json.loads((INPUTS / "package-lock.json").read_text())["packages"]
    header = _header()
    for name in ("plotly.js", "esbuild"):
        assert lock[f"node_modules/{name}"]["version"] == pins[name]
    assert f"plotly.js v{pins['plotly.js']}" in header
    assert f"esbuild {pins['esbuild']}" in header
    assert "Plotly, Inc." in header and "MIT license" in header


def test_the_bundle_holds_the_traces_of_its_entry_point() -> None:
    entry = (INPUTS / "entry.js").read_text()
    traces = re.findall(r'require\("plotly\.js/lib/(\w+)"\)', entry)
    assert traces[0] == "core"
    assert f"the traces\n* {', '.join(traces[1:])};" in _header()
