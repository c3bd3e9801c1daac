// The plotly.js the site ships: its core and the trace types the site draws, nothing else
// (tests/browser/test_charts.py checks that these are exactly the traces the pages use).
//   scatter    the overview's totals chart (in the core, always registered)
//   scattergl  the overview's snapshot timeline (WebGL: 10k snapshots stay interactive)
//   bar        the partitions page's size histograms and skew chart
//   funnel     the scan plan's funnel
var Plotly = require("plotly.js/lib/core");

Plotly.register([
  require("plotly.js/lib/scattergl"),
  require("plotly.js/lib/bar"),
  require("plotly.js/lib/funnel"),
]);

module.exports = Plotly;
