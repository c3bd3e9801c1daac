/* Every page: wide tables scroll inside their own box (never the page), cut-off cells show
   their whole value on hover, and tables with class "sortable" (lists that are not paged;
   paged ones sort on the server, explorer/sorting.py) sort by a click on a column heading
   (within each tbody: a group's rows stay in their group). Whole numbers past 2^53 (snapshot
   ids) compare as BigInt: as JavaScript numbers two ids could round to the same value; every
   script reads JSON with ids through floe.parseJSON for the same reason. */
(function () {
  "use strict";
  function wrap(table) {
    if (table.parentElement && table.parentElement.classList.contains("scroll")) return;
    var box = document.createElement("div");
    box.className = "scroll";
    table.parentNode.insertBefore(box, table);
    box.appendChild(table);
  }
  function titles(root) {
    root.querySelectorAll("td, dd, code").forEach(function (cell) {
      if (!cell.title && cell.scrollWidth > cell.clientWidth + 1) cell.title = cell.textContent.trim();
    });
  }
  function key(cell) {
    if (!cell) return "";
    var raw = cell.getAttribute("data-sort");
    if (raw === null) raw = cell.textContent.trim();
    var digits = raw.replace(/,/g, "");
    var n = Number(digits);
    if (raw === "" || isNaN(n)) return raw.toLowerCase();
    return /^-?\d+$/.test(digits) && !Number.isSafeInteger(n) ? BigInt(digits) : n;
  }
  function compare(x, y) {
    var numbers = { number: true, bigint: true };
    if (!numbers[typeof x] || !numbers[typeof y]) {
      if (typeof x !== typeof y) { x = String(x); y = String(y); }
    }
    return x < y ? -1 : x > y ? 1 : 0;  // a number and a BigInt compare exactly
  }
  function sortable(table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, col) {
      th.classList.add("sort-head");
      th.setAttribute("role", "button");
      th.title = "Sort by " + th.textContent.trim();
      th.addEventListener("click", function () {
        var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
        Array.prototype.forEach.call(table.tBodies, function (body) {
          var rows = Array.prototype.filter.call(body.rows, function (r) { return !r.classList.contains("group"); });
          rows.sort(function (a, b) { return dir * compare(key(a.cells[col]), key(b.cells[col])); });
          rows.forEach(function (r) { body.appendChild(r); });
        });
      });
    });
  }
  // JSON.parse, except that whole numbers past 2^53 (snapshot ids) come back as strings:
  // as numbers JavaScript would round them. Strings are matched first, so digits inside a
  // string are left alone.
  var TOKENS = /"(?:[^"\\]|\\.)*"|-?\d+(\.\d+)?([eE][+-]?\d+)?/g;
  function parseJSON(text) {
    return JSON.parse(text.replace(TOKENS, function (token, fraction, exponent) {
      if (token[0] === '"' || fraction || exponent || Number.isSafeInteger(Number(token))) {
        return token;
      }
      return '"' + token + '"';
    }));
  }
  // plotly.js is large (scripts/build-plotly.sh): a page's numbers come first, its charts
  // after. A page with charts preloads it (explorer/plotly_preload.html: the bytes arrive and
  // compile while the page is parsed and painted); the first call runs it once the browser
  // reports the page's first contentful paint (a busy machine reports it some frames after
  // the first one), or after a second at most. Every call resolves with window.Plotly.
  function afterFirstPaint(fn) {
    var done = false;
    function go() { if (!done) { done = true; setTimeout(fn, 0); } }
    var types = window.PerformanceObserver && PerformanceObserver.supportedEntryTypes;
    if (!types || types.indexOf("paint") < 0) {
      window.requestAnimationFrame(function () { setTimeout(go, 0); });
      return;
    }
    var seen = new PerformanceObserver(function (list) {
      if (list.getEntriesByName("first-contentful-paint").length) { seen.disconnect(); go(); }
    });
    seen.observe({ type: "paint", buffered: true });
    setTimeout(function () { seen.disconnect(); go(); }, 1000);
  }
  var plotlyLoaded = null;
  function plotly(src) {
    if (!plotlyLoaded) {
      plotlyLoaded = new Promise(function (resolve, reject) {
        afterFirstPaint(function () {
          var script = document.createElement("script");
          script.src = src;
          script.onload = function () { resolve(window.Plotly); };
          script.onerror = function () { reject(new Error("could not load " + src)); };
          document.head.appendChild(script);
        });
      });
    }
    return plotlyLoaded;
  }
  window.floe = { sortable: sortable, parseJSON: parseJSON, plotly: plotly };
  function init() {
    document.querySelectorAll("main table.data").forEach(wrap);
    document.querySelectorAll("table.sortable").forEach(sortable);
    titles(document);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
