// Live task progress: every element with data-task-id whose data-state is QUEUED or RUNNING
// polls its run in the JSON API (data-api) until it finishes, updating its state badge,
// progress bar, percent and stage text (the API's progress_text: what happened, once it
// finished). An element with data-reload-on-finish reloads the page when its run finishes
// (to show the result and the next steps). The run is parsed by floe.parseJSON (floe.js): its
// snapshot ids stay exact strings.
(function () {
  "use strict";
  var ACTIVE = { QUEUED: true, RUNNING: true };
  var INTERVAL = 500;

  function field(el, name) { return el.querySelector('[data-field="' + name + '"]'); }

  function show(el, run) {
    el.dataset.state = run.state;
    var state = field(el, "state");
    if (state) { state.textContent = run.state; state.className = "badge state-" + run.state.toLowerCase(); }
    var bar = field(el, "progress");
    if (bar) { bar.setAttribute("aria-valuenow", run.progress); bar.firstElementChild.style.width = run.progress + "%"; }
    var pct = field(el, "percent");
    if (pct) pct.textContent = run.progress + "%";
    // the server words it (explorer.task_outcomes): counts and sizes for people, and once
    // the run finished what happened
    var stage = field(el, "stage");
    if (stage) { stage.textContent = run.progress_text; stage.classList.toggle("muted", ACTIVE[run.state] === true); }
    var error = field(el, "error");
    if (error && run.error) error.textContent = run.error;
  }

  function poll(el) {
    fetch(el.dataset.api, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text().then(window.floe.parseJSON) : null; })
      .then(function (run) {
        if (run) show(el, run);
        if (run && !ACTIVE[run.state]) {
          if (el.hasAttribute("data-reload-on-finish")) window.location.reload();
          return;
        }
        setTimeout(function () { poll(el); }, INTERVAL);
      })
      .catch(function () { setTimeout(function () { poll(el); }, INTERVAL * 4); });
  }

  function start() {  // after DOMContentLoaded: floe.js (deferred) has run
    document.querySelectorAll("[data-task-id]").forEach(function (el) {
      if (ACTIVE[el.dataset.state]) poll(el);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
