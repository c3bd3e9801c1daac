// Draws every plotly figure embedded as <script type="application/json" data-chart="ID">.
(function () {
  function draw() {
    document.querySelectorAll("script[data-chart]").forEach(function (el) {
      var target = document.getElementById(el.dataset.chart);
      if (!target || !window.Plotly) return;
      var fig = JSON.parse(el.textContent);
      window.Plotly.newPlot(target, fig.data, fig.layout, {displaylogo: false, responsive: true, modeBarButtonsToRemove: ["sendDataToCloud"], showSendToCloud: false, showEditInChartStudio: false})
        .then(function () { target.dataset.drawn = "true"; });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw);
  else draw();
})();
