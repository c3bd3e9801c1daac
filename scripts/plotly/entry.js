// The plotly.js the site ships: its core and the trace types the site draws, nothing else
// (tests/browser/test_charts.py checks that these are exactly the traces the pages use).
//   scatter    the overview's totals chart, and its timeline up to
//              views_table.TIMELINE_WEBGL_FROM snapshots (in the core, always registered)
//   bar        the partitions page's size histograms and skew chart
//   funnel     the scan plan's funnel
//   scattergl  the overview's timeline from TIMELINE_WEBGL_FROM snapshots on (WebGL: 10k
//              snapshots stay interactive); bundled, but registered by
//              Plotly.registerScattergl() only when a page draws it: until then its code
//              (a fifth of the bundle, with regl) is neither compiled nor run
var Plotly = require("plotly.js/lib/core");

Plotly.register([
  require("plotly.js/lib/bar"),
  require("plotly.js/lib/funnel"),
]);

var scattergl = false;
Plotly.registerScattergl = function () {
  if (!scattergl) Plotly.register(require("plotly.js/lib/scattergl"));
  scattergl = true;
};

module.exports = Plotly;
