// Draws every plotly figure embedded as <script type="application/json" data-chart="ID">,
// with the plotly.js its own script element names (data-plotly).
// Strings of a figure come from the table (partition values, names): plotly would read <b>,
// <a href> and the like in them as markup, so every string is escaped to its entities
// (which plotly shows as the characters) except the templates the server writes as such.
(function () {
  var TEMPLATES = { hovertemplate: true, texttemplate: true };
  function text(value, key) {
    if (typeof value === "string") {
      return TEMPLATES[key] ? value
        : value.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
    }
    if (Array.isArray(value)) return value.map(function (v) { return text(v, key); });
    if (value && typeof value === "object") {
      var out = {};
      Object.keys(value).forEach(function (k) { out[k] = text(value[k], k); });
      return out;
    }
    return value;
  }
  function draw(Plotly) {
    document.querySelectorAll("script[data-chart]").forEach(function (el) {
      var target = document.getElementById(el.dataset.chart);
      if (!target) return;
      var fig = text(JSON.parse(el.textContent), "");
      Plotly.newPlot(target, fig.data, fig.layout, {displaylogo: false, responsive: true, modeBarButtonsToRemove: ["sendDataToCloud"], showSendToCloud: false, showEditInChartStudio: false})
        .then(function () { target.dataset.drawn = "true"; });
    });
  }
  // plotly.js arrives after the page is shown (floe.plotly); this script is deferred.
  if (document.querySelector("script[data-chart]")) {
    window.floe.plotly(document.currentScript.dataset.plotly).then(draw);
  }
})();
