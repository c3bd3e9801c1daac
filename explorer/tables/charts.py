"""The overview's two charts drawn by the server as static SVG, from the same timeline data the
page's script gives plotly (:func:`explorer.tables.details.snapshot_timeline`): the charts are
in the HTML, so they are on screen with the page's first paint; ``timeline.js`` puts plotly's
interactive charts (hover, zoom, a click opens a snapshot) in their place once plotly.js has
loaded, and when it cannot load, these stay.

Drawn as the script draws them: the timeline has a lane per branch (and for snapshots on no
branch, and per tag), a point per snapshot coloured by its operation and sized by the rows it
added and deleted, a diamond at each ref's head and a ring on the current snapshot; the
totals are three panels over one time axis (rows in data files, data files, size in MiB), a
step line per branch along its ancestry. Points that fall on the same pixel with the same
look are drawn once, so 10,000 snapshots stay a small document. Every name from the table
(a branch, a tag, an operation) is escaped: text, never markup.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

__all__ = ["timeline_svg", "totals_svg"]

#: The operations' colours (the same as timeline.js).
COLOURS = {"append": "#2563eb", "overwrite": "#d97706", "delete": "#dc2626",
           "replace": "#7c3aed", "unknown": "#6b7280"}
#: The branches' colours in the totals (the same as timeline.js).
PALETTE = ("#2563eb", "#d97706", "#7c3aed", "#059669", "#db2777", "#0891b2", "#65a30d")
UNJOINED = "#9ca3af"
WIDTH = 900
TIMELINE_HEIGHT = 380
TOTALS_HEIGHT = 520
_LEFT, _RIGHT, _TOP, _BOTTOM = 110, 20, 10, 40
_FONT = 'font-family="system-ui, sans-serif" font-size="11" fill="#374151"'


def _svg(height: int, label: str, body: list[str]) -> SafeString:
    return mark_safe(  # noqa: S308 - every text in body is escaped where it is made
        f'<svg class="static-chart" viewBox="0 0 {WIDTH} {height}" width="100%" '
        f'height="100%" role="img" aria-label="{escape(label)}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(body)}</svg>')


class _TimeAxis:
    """Milliseconds to x, between the plot's left and right edges, and its ticks."""

    def __init__(self, times: Sequence[int], left: float, right: float) -> None:
        lo, hi = (min(times), max(times)) if times else (0, 1)
        pad = max(1, (hi - lo) // 40) if hi > lo else 3_600_000
        self.lo, self.hi, self.left, self.right = lo - pad, hi + pad, left, right

    def x(self, ms: int) -> float:
        return self.left + (ms - self.lo) / (self.hi - self.lo) * (self.right - self.left)

    def ticks(self, y: float, bottom: float) -> list[str]:
        span = self.hi - self.lo
        fmt = "%Y-%m-%d" if span > 3 * 86_400_000 else "%m-%d %H:%M" if span > 3_600_000 \
            else "%H:%M:%S" if span > 60_000 else "%H:%M:%S.%f"
        out = []
        for k in range(5):
            ms = self.lo + span * (k + 0.5) / 5
            x = self.x(int(ms))
            when = dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime(fmt)
            when = when[:-3] if fmt.endswith("%f") else when  # milliseconds
            out.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{bottom}" '
                       'stroke="#e5e7eb"/>'
                       f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle" {_FONT}>'
                       f"{when}</text>")
        return out


def _size(columns: dict[str, list[Any]], i: int) -> float:
    """A point's diameter: as timeline.js sizes it, from the rows it added and deleted."""
    n = (columns["added_records"][i] or 0) + (columns["deleted_records"][i] or 0)
    return 6 + min(24.0, math.sqrt(n) / 4)


def timeline_svg(timeline: dict[str, Any]) -> SafeString:
    """The snapshot timeline (see the module's text)."""
    c, lanes = timeline["columns"], timeline["lanes"]
    bottom = TIMELINE_HEIGHT - _BOTTOM
    axis = _TimeAxis(c["timestamp_ms"] + [t["timestamp_ms"] for t in timeline["tags"]],
                     _LEFT, WIDTH - _RIGHT)
    step = (bottom - _TOP) / max(1, len(lanes))

    def lane_y(lane: int) -> float:  # the first lane (main) on top
        return _TOP + step * (lane + 0.5)

    body = [f'<rect x="0" y="0" width="{WIDTH}" height="{TIMELINE_HEIGHT}" fill="#fff"/>',
            *axis.ticks(_TOP, bottom)]
    for lane, name in enumerate(lanes):
        y = lane_y(lane)
        body.append(f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{WIDTH - _RIGHT}" y2="{y:.1f}" '
                    'stroke="#f3f4f6"/>'
                    f'<text x="{_LEFT - 8}" y="{y + 4:.1f}" text-anchor="end" {_FONT}>'
                    f"{escape(name)}</text>")
    drawn: set[tuple[str, int, int, int]] = set()
    for i in range(timeline["count"]):
        op = c["operation"][i]
        x, y, d = axis.x(c["timestamp_ms"][i]), lane_y(c["lane"][i]), _size(c, i)
        key = (op, round(x), c["lane"][i], round(d))
        if key in drawn:
            continue
        drawn.add(key)
        body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{d / 2:.1f}" '
                    f'fill="{COLOURS.get(op, COLOURS["unknown"])}" fill-opacity="0.8"/>')
    for t in timeline["tags"]:
        x, y = axis.x(t["timestamp_ms"]), lane_y(t["lane"])
        body.append(f'<path d="M{x:.1f} {y - 6:.1f}l6 6l-6 6l-6 -6z" fill="#0f766e">'
                    f"<title>{escape(t['kind'])} {escape(t['tag'])} → "
                    f"{escape(t['snapshot_id'])}</title></path>")
    if timeline["current"] is not None:
        i = timeline["current"]
        body.append(f'<circle cx="{axis.x(c["timestamp_ms"][i]):.1f}" '
                    f'cy="{lane_y(c["lane"][i]):.1f}" r="9" fill="none" stroke="#111827" '
                    'stroke-width="2"/>')
    ops = sorted({o for o in c["operation"]})
    for k, op in enumerate(ops):  # the legend: one swatch per operation drawn
        x = WIDTH - _RIGHT - 110 * (len(ops) - k)
        body.append(f'<circle cx="{x + 6}" cy="{TIMELINE_HEIGHT - 8}" r="5" '
                    f'fill="{COLOURS.get(op, COLOURS["unknown"])}"/>'
                    f'<text x="{x + 15}" y="{TIMELINE_HEIGHT - 4}" {_FONT}>{escape(op)}</text>')
    return _svg(TIMELINE_HEIGHT, f"snapshot timeline: {timeline['count']} snapshots in "
                                 f"{len(lanes)} lanes", body)


#: The totals' panels: the column, its title, the factor of its values.
PANELS = (("total_records", "rows in data files", 1.0),
          ("total_data_files", "data files", 1.0),
          ("total_files_size", "size (MiB)", 1 / 1048576))


def _number(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 or v == int(v) else f"{v:,.2f}"


def _steps(points: list[tuple[float, float]]) -> str:
    """A step line (across, then up or down) through the points in order, at most a few
    commands per pixel column: the points of one column draw its lowest to highest value and
    end at its last."""
    columns: dict[int, list[float]] = {}
    for x, y in points:
        columns.setdefault(round(x), []).append(round(y, 1))
    out, last = [], None
    for x, ys in columns.items():
        if last is None:
            out.append(f"M{x} {ys[0]}")
        else:
            out.append(f"H{x}" + (f"V{ys[0]}" if ys[0] != last else ""))
        if len(ys) > 1:
            out.append(f"V{min(ys)}V{max(ys)}V{ys[-1]}")
        last = ys[-1]
    return "".join(out)


def totals_svg(timeline: dict[str, Any]) -> SafeString:
    """The totals over time (see the module's text)."""
    c = timeline["columns"]
    left, bottom = 70, TOTALS_HEIGHT - _BOTTOM
    axis = _TimeAxis(c["timestamp_ms"], left, WIDTH - _RIGHT)
    top = _TOP + 20  # under the legend
    height = (bottom - top) / len(PANELS)
    body = [f'<rect x="0" y="0" width="{WIDTH}" height="{TOTALS_HEIGHT}" fill="#fff"/>',
            *axis.ticks(top, bottom)]
    for n, lineage in enumerate(timeline["lineages"]):
        colour = UNJOINED if lineage.get("unjoined") else PALETTE[n % len(PALETTE)]
        x = left + 130 * n
        body.append(f'<line x1="{x}" y1="{_TOP + 6}" x2="{x + 16}" y2="{_TOP + 6}" '
                    f'stroke="{colour}" stroke-width="2"/>'
                    f'<text x="{x + 20}" y="{_TOP + 10}" {_FONT}>{escape(lineage["name"])}'
                    "</text>")
    for k, (key, title, factor) in enumerate(PANELS):
        y0, y1 = top + k * height + 6, top + (k + 1) * height - 6
        values = [c[key][i] * factor for i in range(timeline["count"]) if c[key][i] is not None]
        peak = max(values, default=0) or 1

        def y(v: float, y0: float = y0, y1: float = y1, peak: float = peak) -> float:
            return y1 - v / peak * (y1 - y0)

        body.append(f'<line x1="{left}" y1="{y1:.1f}" x2="{WIDTH - _RIGHT}" y2="{y1:.1f}" '
                    'stroke="#d1d5db"/>'
                    f'<text x="{left - 6}" y="{y0 + 8:.1f}" text-anchor="end" {_FONT}>'
                    f"{_number(peak if values else 0)}</text>"
                    f'<text x="{left - 6}" y="{y1:.1f}" text-anchor="end" {_FONT}>0</text>'
                    f'<text x="{left + 4}" y="{y0 + 8:.1f}" {_FONT}>{escape(title)}</text>')
        for n, lineage in enumerate(timeline["lineages"]):
            colour = UNJOINED if lineage.get("unjoined") else PALETTE[n % len(PALETTE)]
            points = [(axis.x(c["timestamp_ms"][i]), y(c[key][i] * factor))
                      for i in lineage["points"] if c[key][i] is not None]
            if not points:
                continue
            if lineage.get("unjoined"):  # snapshots on no branch: points, not a line
                body.extend(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2.5" fill="{colour}"/>'
                            for px, py in dict.fromkeys((round(px), round(py))
                                                        for px, py in points))
                continue
            body.append(f'<path d="{_steps(points)}" fill="none" stroke="{colour}" '
                        'stroke-width="1.5"/>')
    return _svg(TOTALS_HEIGHT, f"totals over {timeline['count']} snapshots: rows, data files "
                               "and size", body)
