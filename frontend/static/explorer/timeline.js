/* Snapshot timeline and totals charts, from the JSON the overview page embeds (snapshot
   summaries only). WebGL scatter traces so 10k snapshots stay interactive. A click on a
   point opens its snapshot page (the URL is each point's customdata). */
(function () {
  "use strict";
  var el = document.getElementById("timeline");
  var dataEl = document.getElementById("timeline-data");
  if (!el || !dataEl || typeof Plotly === "undefined") return;
  var data = JSON.parse(dataEl.textContent);
  var urlTemplate = el.getAttribute("data-snapshot-url");
  var colours = { append: "#2563eb", overwrite: "#d97706", "delete": "#dc2626", replace: "#7c3aed", unknown: "#6b7280" };
  function url(id) { return urlTemplate.replace("{id}", id); }
  function size(p) {
    var n = p.added_records + p.deleted_records;
    return 6 + Math.min(24, Math.sqrt(n) / 4);
  }
  function hover(p) {
    var lines = ["<b>" + p.snapshot_id + "</b>" + (p.is_current ? " (current)" : ""), p.operation];
    Object.keys(p.summary).forEach(function (k) { if (k !== "operation") lines.push(k + ": " + p.summary[k]); });
    return lines.join("<br>");
  }
  var byOp = {};
  data.points.forEach(function (p) { (byOp[p.operation] = byOp[p.operation] || []).push(p); });
  var traces = Object.keys(byOp).map(function (op) {
    var pts = byOp[op];
    return {
      type: "scattergl", mode: "markers", name: op,
      x: pts.map(function (p) { return new Date(p.timestamp_ms); }),
      y: pts.map(function (p) { return p.lane; }),
      customdata: pts.map(function (p) { return url(p.snapshot_id); }),
      text: pts.map(hover), hoverinfo: "text",
      marker: { color: colours[op] || colours.unknown, size: pts.map(size), opacity: 0.8 }
    };
  });
  if (data.tags.length) {
    traces.push({
      type: "scattergl", mode: "markers", name: "tags",
      x: data.tags.map(function (t) { return new Date(t.timestamp_ms); }),
      y: data.tags.map(function (t) { return "tag: " + t.tag; }),
      customdata: data.tags.map(function (t) { return url(t.snapshot_id); }),
      text: data.tags.map(function (t) { return "tag " + t.tag + " → " + t.snapshot_id; }), hoverinfo: "text",
      marker: { symbol: "diamond", size: 11, color: "#0f766e" }
    });
  }
  var current = data.points.filter(function (p) { return p.is_current; });
  if (current.length) {
    traces.push({
      type: "scattergl", mode: "markers", name: "current",
      x: current.map(function (p) { return new Date(p.timestamp_ms); }),
      y: current.map(function (p) { return p.lane; }),
      customdata: current.map(function (p) { return url(p.snapshot_id); }),
      text: current.map(hover), hoverinfo: "text",
      marker: { symbol: "star", size: 18, color: "rgba(0,0,0,0)", line: { color: "#111827", width: 2 } }
    });
  }
  var layout = {
    margin: { l: 110, r: 20, t: 10, b: 40 }, hovermode: "closest", showlegend: true,
    yaxis: { type: "category", categoryorder: "array", categoryarray: data.lanes.slice().reverse() },
    xaxis: { type: "date" }
  };
  Plotly.newPlot(el, traces, layout, { responsive: true, displaylogo: false });
  el.on("plotly_click", function (ev) {
    if (ev.points && ev.points.length && ev.points[0].customdata) window.location.href = ev.points[0].customdata;
  });

  var totalsEl = document.getElementById("totals-chart");
  if (!totalsEl) return;
  var xs = data.points.map(function (p) { return new Date(p.timestamp_ms); });
  function series(key, name, axis) {
    return { type: "scattergl", mode: "lines+markers", name: name, x: xs, yaxis: axis,
             y: data.points.map(function (p) { return p[key]; }), marker: { size: 4 } };
  }
  Plotly.newPlot(totalsEl, [
    series("total_records", "records", "y"),
    series("total_data_files", "data files", "y2"),
    series("total_files_size", "bytes", "y3")
  ], {
    margin: { l: 60, r: 120, t: 10, b: 40 }, xaxis: { type: "date", domain: [0, 0.85] },
    yaxis: { title: { text: "records" } },
    yaxis2: { title: { text: "files" }, overlaying: "y", side: "right" },
    yaxis3: { title: { text: "bytes" }, overlaying: "y", side: "right", position: 0.95, anchor: "free" }
  }, { responsive: true, displaylogo: false });
})();
