/* Snapshot timeline and totals charts, from the JSON the overview page embeds (snapshot
   summaries only). WebGL scatter traces so 10k snapshots stay interactive. A click on a
   point opens its snapshot page (the URL is each point's customdata). */
(function () {
  "use strict";
  var el = document.getElementById("timeline");
  var dataEl = document.getElementById("timeline-data");
  if (!el || !dataEl || typeof Plotly === "undefined") return;
  var data = JSON.parse(dataEl.textContent);
  var c = data.columns;
  var urlTemplate = el.getAttribute("data-snapshot-url");
  var colours = { append: "#2563eb", overwrite: "#d97706", "delete": "#dc2626", replace: "#7c3aed", unknown: "#6b7280" };
  var summaryKeys = ["added_records", "deleted_records", "added_data_files", "deleted_data_files",
                     "added_delete_files", "removed_delete_files", "total_records", "total_data_files",
                     "total_delete_files", "total_files_size"];
  function url(id) { return urlTemplate.replace("{id}", id); }
  function size(i) {
    var n = (c.added_records[i] || 0) + (c.deleted_records[i] || 0);
    return 6 + Math.min(24, Math.sqrt(n) / 4);
  }
  function hover(i) {
    var lines = ["<b>" + c.snapshot_id[i] + "</b>" + (i === data.current ? " (current)" : ""),
                 c.operation[i] + " · " + new Date(c.timestamp_ms[i]).toISOString()];
    summaryKeys.forEach(function (k) { if (c[k][i] !== null) lines.push(k.replace(/_/g, "-") + ": " + c[k][i]); });
    return lines.join("<br>");
  }
  function trace(name, idx, marker) {
    return {
      type: "scattergl", mode: "markers", name: name,
      x: idx.map(function (i) { return new Date(c.timestamp_ms[i]); }),
      y: idx.map(function (i) { return data.lanes[c.lane[i]]; }),
      customdata: idx.map(function (i) { return url(c.snapshot_id[i]); }),
      text: idx.map(hover), hoverinfo: "text", marker: marker(idx)
    };
  }
  var byOp = {};
  for (var i = 0; i < data.count; i++) (byOp[c.operation[i]] = byOp[c.operation[i]] || []).push(i);
  var traces = Object.keys(byOp).map(function (op) {
    return trace(op, byOp[op], function (idx) {
      return { color: colours[op] || colours.unknown, size: idx.map(size), opacity: 0.8 };
    });
  });
  if (data.tags.length) {
    traces.push({
      type: "scattergl", mode: "markers", name: "refs",
      x: data.tags.map(function (t) { return new Date(t.timestamp_ms); }),
      y: data.tags.map(function (t) { return data.lanes[t.lane]; }),
      customdata: data.tags.map(function (t) { return url(t.snapshot_id); }),
      text: data.tags.map(function (t) { return t.kind + " " + t.tag + " → " + t.snapshot_id; }), hoverinfo: "text",
      marker: { symbol: "diamond", size: 11, color: "#0f766e" }
    });
  }
  if (data.current !== null) {
    traces.push(trace("current", [data.current], function () {
      return { symbol: "star", size: 18, color: "rgba(0,0,0,0)", line: { color: "#111827", width: 2 } };
    }));
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
  var xs = c.timestamp_ms.map(function (t) { return new Date(t); });
  function series(key, name, axis) {
    return { type: "scattergl", mode: "lines+markers", name: name, x: xs, yaxis: axis,
             y: c[key], marker: { size: 4 } };
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
