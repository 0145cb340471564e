(function () {
  "use strict";
  var root = document.documentElement;
  root.setAttribute("data-js", "ready");
  if (window.getComputedStyle(root).getPropertyValue("--shoal-css").trim() === "1") {
    root.setAttribute("data-css", "ready");
  }
  function each(list, f) { Array.prototype.forEach.call(list, f); }
  function key(row, i, numeric) {
    var c = row.cells[i];
    if (!c) { return numeric ? -Infinity : ""; }
    var v = c.getAttribute("data-v");
    var t = v !== null ? v : c.textContent;
    if (numeric) { var n = parseFloat(t); return isNaN(n) ? -Infinity : n; }
    return t.toLowerCase();
  }
  function sortBy(table, th, i) {
    var asc = th.getAttribute("aria-sort") !== "ascending";
    each(table.tHead.rows[0].cells, function (h) { h.setAttribute("aria-sort", "none"); });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    var numeric = th.getAttribute("data-type") === "num";
    var body = table.tBodies[0];
    var keyed = Array.prototype.map.call(body.rows, function (r, j) { return [key(r, i, numeric), j, r]; });
    keyed.sort(function (a, b) {
      if (a[0] < b[0]) { return asc ? -1 : 1; }
      if (a[0] > b[0]) { return asc ? 1 : -1; }
      return a[1] - b[1];
    });
    var frag = document.createDocumentFragment();
    keyed.forEach(function (k) { frag.appendChild(k[2]); });
    body.appendChild(frag);
  }
  each(document.querySelectorAll("table.sortable"), function (table) {
    if (!table.tHead || !table.tBodies[0]) { return; }
    each(table.tHead.rows[0].cells, function (th, i) {
      th.tabIndex = 0;
      th.setAttribute("aria-sort", "none");
      th.addEventListener("click", function () { sortBy(table, th, i); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, th, i); }
      });
    });
  });
  function filter(box, table) {
    var q = box.querySelector("input.q");
    var sev = box.querySelector("select.sev");
    var text = q ? q.value.trim().toLowerCase() : "";
    var level = sev ? sev.value : "";
    var shown = 0;
    each(table.tBodies[0].rows, function (r) {
      var ok = (!level || r.getAttribute("data-sev") === level) &&
        (!text || r.textContent.toLowerCase().indexOf(text) >= 0);
      r.hidden = !ok;
      if (ok) { shown += 1; }
    });
    var out = box.querySelector(".shown");
    if (out) { out.textContent = shown + " of " + table.tBodies[0].rows.length + " shown"; }
  }
  each(document.querySelectorAll(".controls[data-for]"), function (box) {
    var table = document.getElementById(box.getAttribute("data-for"));
    if (!table || !table.tBodies[0]) { return; }
    var timer = null;
    var later = function () {
      if (timer !== null) { window.clearTimeout(timer); }
      timer = window.setTimeout(function () { timer = null; filter(box, table); }, 150);
    };
    each(box.querySelectorAll("input, select"), function (el) {
      el.addEventListener("input", later);
      el.addEventListener("change", later);
    });
  });
}());
