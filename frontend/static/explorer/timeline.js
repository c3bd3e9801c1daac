/* Snapshot timeline and totals charts, from the JSON the overview page embeds (snapshot
   summaries only). WebGL scatter traces for long histories, so 10k snapshots stay
   interactive, SVG for short ones (data-webgl-from snapshots on). A click on a
   point opens its snapshot page (each point's customdata is its snapshot id); with "pick two
   snapshots to compare" on, clicks pick the two ends of a diff instead (older → newer).
   Snapshot ids stay strings (the page sends them so: a JavaScript number rounds ids above
   2^53); names from the table (refs, operations) go through text() before plotly draws them,
   since plotly reads <b>, <a href> and the like in any text as markup. */
(function () {
  "use strict";
  // The server drew both charts as static SVG (explorer/tables/charts.py), on screen with the
  // page; plotly's interactive charts replace them.
  var el = document.getElementById("timeline");
  var dataEl = document.getElementById("timeline-data");
  if (!el || !dataEl) return;
  // plotly.js (named by this script's data-plotly) arrives after the page is shown.
  window.floe.plotly(document.currentScript.dataset.plotly).then(draw);

  function draw(Plotly) {
    var data = JSON.parse(dataEl.textContent);
    var c = data.columns;
    // Text for plotly: its entities (&lt; &gt; &amp;) are shown as the characters.
    function text(s) {
      return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
    }
    var lanes = data.lanes.map(text);
    // WebGL keeps a long history interactive; for a short one SVG draws sooner (no WebGL
    // context, no shaders to compile) and every point is an element of the page.
    var kind = data.count >= Number(el.getAttribute("data-webgl-from")) ? "scattergl" : "scatter";
    if (kind === "scattergl") Plotly.registerScattergl();  // bundled, registered on first use
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
                   text(c.operation[i]) + " · " + new Date(c.timestamp_ms[i]).toISOString()];
      summaryKeys.forEach(function (k) { if (c[k][i] !== null) lines.push(k.replace(/_/g, "-") + ": " + c[k][i]); });
      return lines.join("<br>");
    }
    function trace(name, idx, marker) {
      return {
        type: kind, mode: "markers", name: name,
        x: idx.map(function (i) { return new Date(c.timestamp_ms[i]); }),
        y: idx.map(function (i) { return lanes[c.lane[i]]; }),
        customdata: idx.map(function (i) { return c.snapshot_id[i]; }),
        text: idx.map(hover), hoverinfo: "text", marker: marker(idx)
      };
    }
    var byOp = {};
    for (var i = 0; i < data.count; i++) (byOp[c.operation[i]] = byOp[c.operation[i]] || []).push(i);
    var traces = Object.keys(byOp).map(function (op) {
      return trace(text(op), byOp[op], function (idx) {
        return { color: colours[op] || colours.unknown, size: idx.map(size), opacity: 0.8 };
      });
    });
    if (data.tags.length) {
      traces.push({
        type: kind, mode: "markers", name: "refs",
        x: data.tags.map(function (t) { return new Date(t.timestamp_ms); }),
        y: data.tags.map(function (t) { return lanes[t.lane]; }),
        customdata: data.tags.map(function (t) { return t.snapshot_id; }),
        text: data.tags.map(function (t) { return t.kind + " " + text(t.tag) + " → " + t.snapshot_id; }), hoverinfo: "text",
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
      yaxis: { type: "category", categoryorder: "array", categoryarray: lanes.slice().reverse(),
               automargin: true },
      xaxis: { type: "date" }
    };
    el.replaceChildren();  // the server's static chart, until now
    Plotly.newPlot(el, traces, layout,
                   { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["sendDataToCloud"], showSendToCloud: false, showEditInChartStudio: false });
    // Picking the two ends of a diff: the last two snapshots clicked, older first.
    var compare = document.getElementById("timeline-compare");
    var picked = [];
    var timeOf = {};
    for (var k = 0; k < data.count; k++) timeOf[c.snapshot_id[k]] = c.timestamp_ms[k];
    function showPicked() {
      var ends = picked.slice().sort(function (a, b) { return timeOf[a] - timeOf[b]; });
      var text = document.getElementById("compare-picked");
      var link = document.getElementById("compare-link");
      text.textContent = ends.length ? (ends.length === 1 ? "from " + ends[0] + ", now pick the other end"
                                                         : ends[0] + " → " + ends[1]) : "";
      link.hidden = ends.length !== 2;
      if (ends.length === 2) {
        link.href = el.getAttribute("data-diff-url") + "?from=" + ends[0] + "&to=" + ends[1];
      }
    }
    if (compare) compare.addEventListener("change", function () { picked = []; showPicked(); });
    function clicked(ev) {
      if (!ev.points || !ev.points.length || !ev.points[0].customdata) return;
      var id = String(ev.points[0].customdata);
      if (compare && compare.checked) {
        if (picked.indexOf(id) < 0) picked = picked.concat([id]).slice(-2);
        showPicked();
      } else {
        window.location.href = url(id);
      }
    }
    el.on("plotly_click", clicked);

    // Totals: three small charts over one time axis (rows, data files, size), one line per
    // branch along its own ancestry, whole-number ticks for counts.
    var totalsEl = document.getElementById("totals-chart");
    if (!totalsEl) return;
    var palette = ["#2563eb", "#d97706", "#7c3aed", "#059669", "#db2777", "#0891b2", "#65a30d"];
    function niceStep(max) {
      if (!(max > 0)) return 1;
      var raw = max / 4, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
      var step = (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
      return Math.max(1, Math.round(step));
    }
    var panels = [
      { key: "total_records", title: "rows in data files", axis: "y", integer: true },
      { key: "total_data_files", title: "data files", axis: "y2", integer: true },
      { key: "total_files_size", title: "size (MiB)", axis: "y3", scale: 1 / 1048576 }
    ];
    var totalsTraces = [];
    data.lineages.forEach(function (lineage, n) {
      var name = text(lineage.name);
      var colour = lineage.unjoined ? "#9ca3af" : palette[n % palette.length];
      panels.forEach(function (panel, k) {
        var idx = lineage.points.filter(function (i) { return c[panel.key][i] !== null; });
        totalsTraces.push({
          type: "scatter", mode: lineage.unjoined ? "markers" : "lines+markers",
          name: name, legendgroup: name, showlegend: k === 0,
          line: { color: colour, shape: "hv" }, marker: { color: colour, size: 5 },
          x: idx.map(function (i) { return new Date(c.timestamp_ms[i]); }),
          y: idx.map(function (i) { var v = c[panel.key][i]; return panel.scale ? v * panel.scale : v; }),
          customdata: idx.map(function (i) { return c.snapshot_id[i]; }),
          text: idx.map(function (i) { return name + " · " + c.snapshot_id[i]; }),
          hovertemplate: "%{text}<br>" + panel.title + ": %{y:,}<extra></extra>", yaxis: panel.axis
        });
      });
    });
    var totalsLayout = {
      margin: { l: 70, r: 20, t: 10, b: 40 }, hovermode: "closest", showlegend: true,
      legend: { orientation: "h", y: 1.08 }, grid: { rows: 3, columns: 1, pattern: "coupled" },
      xaxis: { type: "date" }
    };
    panels.forEach(function (panel, k) {
      var values = [];
      totalsTraces.forEach(function (t) { if (t.yaxis === panel.axis) values = values.concat(t.y); });
      var max = values.length ? Math.max.apply(null, values) : 0;
      var axis = { title: { text: panel.title, font: { size: 11 } }, rangemode: "tozero", separatethousands: true };
      if (panel.integer) { axis.tickformat = ",d"; axis.dtick = niceStep(max); }
      totalsLayout["yaxis" + (k ? k + 1 : "")] = axis;
    });
    totalsEl.replaceChildren();
    Plotly.newPlot(totalsEl, totalsTraces, totalsLayout,
                   { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["sendDataToCloud"], showSendToCloud: false, showEditInChartStudio: false });
    totalsEl.on("plotly_click", clicked);
  }
})();
