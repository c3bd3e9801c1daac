// The evolve form's change rows: each row's inputs say what they mean for the operation
// picked (placeholders; inputs the operation does not use are disabled and cleared, so
// they do not post), and
// "Add a change" appends a blank row. Without this script the rows still post as they are.
(function () {
  "use strict";

  function fit(row) {
    var select = row.querySelector('[data-input="op"]');
    var opt = select.options[select.selectedIndex];
    var picked = select.value !== "";
    function set(name, enabled, hint) {
      var el = row.querySelector('[data-input="' + name + '"]');
      el.disabled = picked && !enabled;
      if (el.disabled && el.tagName === "INPUT") el.value = "";
      if (el.tagName === "INPUT" && hint !== undefined) el.placeholder = hint;
    }
    set("target", true, picked ? opt.dataset.target : "");
    set("value", !!opt.dataset.value, picked ? opt.dataset.value : "");
    set("doc", !!opt.dataset.doc, opt.dataset.doc ? "doc" : "");
    set("position", !!opt.dataset.position);
    set("required", !!opt.dataset.required);
  }

  // rows post as changes-<row>-<input>, numbered from 0 in page order
  function renumber(tbody) {
    Array.prototype.forEach.call(tbody.rows, function (row, i) {
      row.querySelector(".row-number").textContent = String(i + 1);
      row.querySelectorAll("[data-input]").forEach(function (el) {
        el.name = "changes-" + i + "-" + el.dataset.input;
      });
    });
  }

  document.querySelectorAll("table.change-rows").forEach(function (table) {
    var tbody = table.tBodies[0];
    Array.prototype.forEach.call(tbody.rows, fit);
    tbody.addEventListener("change", function (ev) {
      if (ev.target.dataset.input === "op") fit(ev.target.closest("tr"));
    });
    var add = document.querySelector('.add-change-row[data-table="' + table.id + '"]');
    if (add) add.addEventListener("click", function () {
      var row = tbody.rows[tbody.rows.length - 1].cloneNode(true);
      row.querySelectorAll("input").forEach(function (el) { el.value = ""; el.disabled = false; });
      row.querySelectorAll("select").forEach(function (el) { el.selectedIndex = 0; el.disabled = false; });
      tbody.appendChild(row);
      fit(row);
      renumber(tbody);
      row.querySelector("select").focus();
    });
  });
})();
